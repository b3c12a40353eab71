"""The CLI's shared vocabulary: options, config-derived flags, scopes, output paths, consoles.

Every command builds its options from here, so one word means one thing
everywhere: ``--tasks/-t SPEC`` (the grammar of :func:`ace_env.tasksets.parse_task_spec`),
``--experiment/-e``, ``--policy/-p``, ``--checkpoint/-c``, ``--scope E/P/C``, ``--json``,
``--out`` (:func:`ace_env.workspace.check_out`: refused when it exists, unless ``--force``).
Flags that set a config dataclass's fields are derived from the dataclass
(:func:`config_options`), so each default, help text and bound is written once, in the
dataclass, and checked by its ``__post_init__``.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import inspect
import io
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import typing
from dataclasses import MISSING, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable

import typer

from ace.errors import Stopped
from ace_env.environments import spec_of_results
from ace_env.fields import bound_error, bounds_text
from ace_env.tasksets import TASK_SPEC_HELP, environment_of_spec, parse_task_spec
from ace_env.worker import Budget
from ace_env.workspace import check_name, check_readable
from ace_graph.errors import ConfigError
from ace_graph.queries import INT64_MAX

SCOPE_HELP = "Scope experiment/policy/checkpoint (see `ace scopes`)."

#: Maxima of the number flags that are not config fields (docs/cli.md lists them): tasks a --limit or --skip
#: counts, a capability-history round.
MAX_TASKS, MAX_ROUND = 1_000_000, 1_000_000_000


def shared(info: Any, what: str) -> Any:
    """Mark a typer option as one of this module's shared flags (``--json``, ``--out``, ``--tasks``, ...): its
    default and help are written here once; tests/unit/test_cli_config.py counts it as not typed by hand."""
    info.ace_shared = what
    return info


def check_task_spec(value: Any) -> Any:
    """A typer callback: ``--tasks`` must follow the task-spec grammar (checked before any work)."""
    if isinstance(value, str):
        parse_task_spec(value)
    return value


def tasks_option(default: Any = ..., *flags: str, note: str = "") -> Any:
    """The one ``--tasks/-t SPEC`` option (other ``flags`` for a second task set, e.g. ``--eval-tasks``).

    Every command that takes tasks declares it through here; the spec is parsed by
    :func:`ace_env.tasksets.parse_task_spec` and loaded by :func:`ace_env.tasksets.load_task_set`.
    """
    info = typer.Option(default, *(flags or ("--tasks", "-t")), help=f"{note} {TASK_SPEC_HELP}".strip(),
                        callback=check_task_spec)
    info.ace_tasks = True  # type: ignore[attr-defined]  # tests/unit/test_cli_vocabulary.py finds it
    return shared(info, "tasks")


def check_name_option(param: typer.CallbackParam, value: Any) -> Any:
    """A typer callback: a name flag (``-e``, ``-p`` as a name, ``-c``, ``--name``) goes through
    :func:`ace_env.workspace.check_name` at parse time (one printable line, not ``.``/``..``, no ``/``)."""
    if value is not None:
        check_name(value, "/".join(param.opts))
    return value


def check_scope_option(value: Any) -> Any:
    """A typer callback: ``--scope E/P/C`` is three names (:func:`parse_scope`), checked at parse time."""
    if value is not None:
        parse_scope(value)
    return value


def name_option(default: Any, *flags: str, help: str) -> Any:
    """A flag whose value is a name (a folder under ``$ACE_HOME/runs`` and a part of a scope key)."""
    info = typer.Option(default, *flags, help=help, callback=check_name_option)
    info.ace_name = True  # type: ignore[attr-defined]  # tests/unit/test_cli_bounds.py finds it
    return shared(info, "name")


def experiment_option(default: Any = ..., help: str = "Experiment name.") -> Any:
    return name_option(default, "--experiment", "-e", help=help)


def policy_option(default: Any = ..., help: str = "Policy (agent) name.") -> Any:
    return name_option(default, "--policy", "-p", help=help)


def checkpoint_option(default: Any = ..., help: str = "Checkpoint name; its last number is the round.") -> Any:
    return name_option(default, "--checkpoint", "-c", help=help)


def scope_option(default: Any = None, help: str = SCOPE_HELP) -> Any:
    info = typer.Option(default, "--scope", "-s", help=help, callback=check_scope_option)
    info.ace_name = True  # type: ignore[attr-defined]
    return shared(info, "scope")


def json_option(help: str = "Print the result as JSON on stdout.") -> Any:
    return shared(typer.Option(False, "--json", help=help), "json")


def out_option(default: Any = ..., help: str = "File to write.",
               refused: str = "Refused if it exists, unless --force.") -> Any:
    return shared(typer.Option(default, "--out", "-o", help=f"{help} {refused}"), "out")


def force_option(help: str = "Replace --out if it exists.") -> Any:
    return shared(typer.Option(False, "--force", help=help), "force")


def check_policy_spec(spec: str, flag: str = "--policy") -> str:
    """A policy spec whose part after ``kind:`` is not empty (``sim:`` alone silently meant the default agent)."""
    kind, sep, rest = (spec or "").partition(":")
    examples = {"hf": "hf:smollm2-135m", "openai": "openai:MODEL@http://127.0.0.1:8000/v1", "sim": "sim:W.toml"}
    if sep and kind in examples and not rest.strip():
        raise ConfigError(f"{flag} {spec!r} names no {'weakness file' if kind == 'sim' else 'model'}; "
                          f"give e.g. {examples[kind]}")
    return spec


# --------------------------------------------------------------------------- scopes


def parse_scope(text: str) -> tuple[str, str, str]:
    """``"E/P/C"`` -> ``(E, P, C)``; anything else is a one-line error."""
    parts = (text or "").split("/")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ConfigError(f"scope {text!r} is not experiment/policy/checkpoint (e.g. demo/sim/round-0); see `ace scopes`")
    for what, part in zip(("experiment", "policy", "checkpoint"), parts):
        check_name(part, f"scope {text!r}: {what}")
    return parts[0], parts[1], parts[2]


def resolve_scope(
    scope: str | None, experiment: str | None = None, policy: str | None = None, checkpoint: str | None = None
) -> tuple[str, str, str]:
    """One scope from ``--scope E/P/C`` or from ``-e E -p P -c C`` (not both, unless they agree)."""
    if scope:
        e, p, c = parse_scope(scope)
        for flag, given, got in (("--experiment", experiment, e), ("--policy", policy, p), ("--checkpoint", checkpoint, c)):
            if given is not None and given != got:
                raise ConfigError(f"--scope {scope} disagrees with {flag} {given}; pass one or the other")
        return e, p, c
    missing = [f for f, v in (("--experiment", experiment), ("--policy", policy), ("--checkpoint", checkpoint)) if not v]
    if missing:
        raise ConfigError(f"give --scope E/P/C, or all of --experiment, --policy and --checkpoint (missing {', '.join(missing)})")
    for flag, value in (("--experiment", experiment), ("--policy", policy), ("--checkpoint", checkpoint)):
        check_name(value, flag)
    return experiment, policy, checkpoint  # type: ignore[return-value]


# --------------------------------------------------------------------------- paths


@contextlib.contextmanager
def signals_interrupt(signals: Iterable[int] = (signal.SIGTERM, signal.SIGHUP)):
    """While inside, SIGTERM and SIGHUP raise :class:`Stopped`, so a command that is killed runs its
    cleanup (a writer removes its temporary file) and ends with one error line (exit 1)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: Any) -> None:
        raise Stopped(f"stopped by {signal.Signals(signum).name} before it finished; its partial output was removed")

    saved = {sig: signal.signal(sig, interrupt) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def check_input(path: Path, what: str = "file") -> Path:
    """An input file: a regular file that can be read (:func:`ace_env.workspace.check_readable`, the one rule,
    which task, weakness and rollout readers below the CLI apply too); a folder, a FIFO, a socket or a device
    is refused in one line, before anything is opened."""
    return check_readable(path, what)


STDIN = "-"
#: The most standard input (``-``) that a command copies to its temporary file: an endless pipe
#: (`yes | ace ingest -`) filled the temporary folder's disk.  A larger input is named as a file.
MAX_STDIN_BYTES = 1 << 30


class _Capped(io.RawIOBase):
    """A binary stream that ends after ``limit`` bytes of ``stream``."""

    def __init__(self, stream: Any, limit: int):
        self._stream, self._left = stream, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(min(len(buffer), self._left)) if self._left > 0 else b""
        buffer[:len(data)] = data
        self._left -= len(data)
        return len(data)


def _spool_stdin() -> Path:
    """Standard input copied to a private temporary file (removed when the process exits), so a reader that
    looks at a file twice (format detection, then the read) sees all of it; named ``stdin``.  More than
    :data:`MAX_STDIN_BYTES` is refused in one line, and the copy removed."""
    folder = Path(tempfile.mkdtemp(prefix="ace-stdin-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "stdin"
    with open(path, "wb") as f:
        shutil.copyfileobj(io.BufferedReader(_Capped(sys.stdin.buffer, MAX_STDIN_BYTES + 1)), f, 1 << 20)
        copied = f.tell()
    if copied > MAX_STDIN_BYTES:
        shutil.rmtree(folder, ignore_errors=True)
        raise ConfigError(f"standard input (-) holds more than {MAX_STDIN_BYTES // (1 << 20):,} MiB, the most a "
                          "command copies from it; write it to a file and name the file instead")
    return path


def expand_inputs(paths: Iterable[Path], pattern: str = "*.jsonl", what: str = "rollout file",
                  stdin: bool = False) -> list[Path]:
    """Files named (each checked by :func:`check_input`), plus the regular ``pattern`` files inside folders
    named (sorted); at least one.  With ``stdin``, ``-`` (once) reads standard input (a pipe), which is
    copied to a temporary file first."""
    out: list[Path] = []
    read_stdin = False
    for p in paths:
        if stdin and str(p) == STDIN:
            if read_stdin:
                raise ConfigError("standard input (-) is named twice; name it once")
            read_stdin = True
            out.append(_spool_stdin())
            continue
        p = Path(p)
        if check_readable(p, what, folder=True).is_dir():
            found = sorted(x for x in p.glob(pattern) if x.is_file())
            if not found:
                raise ConfigError(f"folder {str(p)!r} holds no {pattern} files")
            out.extend(found)
        else:
            out.append(check_input(p, what))
    if not out:
        raise ConfigError(f"name at least one {what} or folder")
    return out


ROLLOUT_FORMATS = ("auto", "tau2-results")


def format_option() -> Any:
    return shared(typer.Option(ROLLOUT_FORMATS[0], "--format", help="The rollout files' format: auto (detected by "
                               "content: ACE JSONL, OpenAI messages, BFCL result files, τ²-bench result files) or "
                               "tau2-results (τ²-bench's own result JSON; refused when a file is not one)."), "format")


RAY_HELP = ("Spread verification over a Ray cluster: its address (host:port), `auto` (the running local one) or "
            "`local` (a private one, started and stopped by this command).")


def ray_option(help: str = RAY_HELP) -> Any:
    """``--ray ADDRESS``: where a command spreads its work over Ray (left out: in this process)."""
    return shared(typer.Option(None, "--ray", metavar="ADDRESS", help=help), "ray")


def strict_option() -> Any:
    return shared(typer.Option(
        False, "--strict", help="Also count as failures ACE's rules stricter than the benchmark's own evaluator "
                                "(τ²: a call that errored, a gold read skipped, the gold's order). Without it a "
                                "rollout fails where the benchmark fails it, and the stricter rules it breaks are "
                                "only listed (stricter_because)."), "strict")


def inputs_task_spec(paths: list[Path], tasks: str | None, fmt: str = "auto",
                     default: str = "bfcl:all") -> tuple[str, str | None]:
    """(task spec, agent named by the files) for rollout files.

    τ²-bench result files say their domain and agent: their tasks are that domain's (``--tasks``, when
    given, must name it) and the agent is ``info.agent_info.llm`` when the files agree on one.  Other
    files take ``--tasks`` (``default`` when absent).  τ² result files are not mixed with other files in
    one command: a scope's rollouts come from one kind of source."""
    if fmt not in ROLLOUT_FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(ROLLOUT_FORMATS)}")
    specs = {p: spec_of_results(p) for p in paths}  # the spec a benchmark's own result file names (its entry's)
    results = [p for p in paths if specs[p] is not None]
    if fmt == "tau2-results" and len(results) != len(paths):
        other = next(p for p in paths if p not in results)
        raise ConfigError(f"--format tau2-results: {other} is not a τ²-bench result file (a JSON document with "
                          "info, tasks and simulations)")
    if not results:
        return tasks or default, None
    if len(results) != len(paths):
        other = next(p for p in paths if p not in results)
        raise ConfigError(f"{other} is not a τ²-bench result file while {results[0]} is; give τ² result files "
                          "and other rollout files in separate commands")
    env = environment_of_spec(str(specs[results[0]]))  # a result file's spec names its environment
    agent_of = env.results_agent if env is not None else None
    domain = {p: parse_task_spec(str(specs[p])).tau2_domains[0] for p in results}
    domains = sorted(set(domain.values()))
    if tasks is not None:
        named = parse_task_spec(tasks).tau2_domains or ()
        missing = [d for d in domains if d not in named]
        if missing:
            raise ConfigError(f"--tasks {tasks} does not name τ² {', '.join(missing)}, the domain of "
                              f"{next(Path(p).resolve() for p in results if domain[p] in missing)}; leave --tasks out (the files "
                              "say their domain)")
    policies = {agent_of(p) if agent_of is not None else None for p in results}
    prefix = str(specs[results[0]]).partition(":")[0]
    return tasks or f"{prefix}:" + ",".join(domains), (policies.pop() if len(policies) == 1 else None)


# --------------------------------------------------------------------------- config-derived flags


def check_int64(value: Any) -> Any:
    """A typer callback: an integer flag must fit Neo4j's 64-bit integers."""
    if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise typer.BadParameter(f"{value} does not fit a 64-bit integer")
    return value


def bounded(metadata: dict[str, Any]) -> Callable[..., Any]:
    """A typer callback that holds a number flag to ``metadata``'s ``min``/``max`` (and to a finite value),
    at parse time, before any work: one line naming the flag, e.g. ``--rounds must be at most 100 (...), not
    1000000000; give a value from 1 to 100`` (:func:`ace_env.fields.bound_error`)."""

    def check(param: typer.CallbackParam, value: Any) -> Any:
        if value is None:  # left out (a flag read from the environment, or optional)
            return value
        error = bound_error("/".join(param.opts), value, metadata)
        if error:
            raise ConfigError(error)
        return value

    return check


def number_option(default: Any, *flags: str, min: int | float, max: int | float, help: str, **kwargs: Any) -> Any:
    """A count, budget, round, size or seed flag typed in a command (not derived from a config field): its
    bounds are shown in the help (``(1 to 100)``) and enforced at parse time by :func:`bounded`.  Every number
    flag of ``ace`` has a maximum (tests/unit/test_cli_bounds.py walks them all)."""
    metadata = {"min": min, "max": max}
    info = typer.Option(default, *flags, help=f"{help} ({bounds_text(metadata)})", callback=bounded(metadata),
                        **kwargs)
    info.ace_bounds = metadata  # type: ignore[attr-defined]  # tests/unit/test_cli_bounds.py finds it
    return info


#: ``config_options(names=...)`` for a ``policy`` field: the flag is ``--policy/-p``, as everywhere.
POLICY_FLAGS = {"policy": ("--policy", "-p")}


def limit_field(help: str) -> Any:
    """A config field for ``--limit N``: only the first N tasks (after any ``--skip``); ``None``, all of them."""
    return field(default=None, metadata={"help": help, "min": 1, "max": MAX_TASKS})


def skip_field(help: str) -> Any:
    """A config field for ``--skip N``: leave out the first N tasks (0, none)."""
    return field(default=0, metadata={"help": help, "min": 0, "max": MAX_TASKS})


@functools.lru_cache(maxsize=None)
def _attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings written under dataclass fields (``x: int = 1`` then ``\"\"\"help\"\"\"``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def field_help(cls: type) -> dict[str, str]:
    """Field name -> help text: ``metadata["help"]``, else the docstring under the field."""
    docs = _attribute_docs(cls)
    return {f.name: f.metadata.get("help") or docs.get(f.name, "") for f in fields(cls)}


def config_options(
    cls: type,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    defaults: dict[str, Any] | None = None,
    names: dict[str, Any] | None = None,
    param: str = "config",
    env: bool = False,
    in_place: bool = False,
    before: dict[str, str] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add one ``--field-name`` option per field of the dataclass ``cls`` to a command.

    The command receives ``<param>=cls(**values)``; defaults, help texts and bounds
    (``metadata={"help": ..., "min": ..., "max": ...}``, shown in the help) are the
    dataclass's (``defaults`` overrides a default for this command only (a field
    that is not a flag keeps that value),
    ``names`` renames a flag, or gives it aliases as a tuple).  A field named ``tasks``
    is the shared ``--tasks/-t`` option.  With ``env``, a flag left out is ``None`` and
    the config is ``cls.from_env(**values)`` (an environment variable, else the field's
    default, which the help shows).  Integers are bounded to Neo4j's int64; the
    dataclass's own ``__post_init__`` checks the rest, and its errors are
    one-line :class:`ConfigError` messages.  Each option carries ``ace_field``
    ``(cls, field, default)`` so a test can hold every flag to its field.

    The flags come after the command's own parameters; with ``in_place`` they stand where
    the command declares ``<param>``, so a command orders its help as it orders its parameters; ``before`` stands
    a field's flag just before one of the command's own parameters instead (field -> parameter name), so one
    config's flags can sit among shared ones where the help has always shown them.  A ``bool`` field is a
    ``--x/--no-x`` switch unless its metadata says ``"negatable": False`` (then ``--x``
    alone turns it on); a ``Path`` field is a path flag; a field that is not an int/float/str/bool/Path (``Optional[list[Path]]``,
    say) takes its type from the dataclass's annotation and its default must be ``None``.  A field without a
    default is a required flag (``[required]`` in the help).
    """
    wanted = None if include is None else list(include)
    skip = set(exclude)
    overrides = dict(defaults or {})
    renames = dict(names or {})
    positions = dict(before or {})

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        helps = field_help(cls)
        hints = typing.get_type_hints(cls)
        chosen = [f for f in fields(cls) if f.name not in skip and (wanted is None or f.name in wanted)]
        sig = inspect.signature(fn, eval_str=True)
        own = sig.parameters.get(param)
        params = [p for p in sig.parameters.values() if p.name != param]
        targets = {p.name: p for p in params}
        for name, target in positions.items():
            if name not in {f.name for f in chosen} or target not in targets:
                raise TypeError(f"config_options({cls.__name__}): before={{{name!r}: {target!r}}} needs a field "
                                f"that is a flag and a parameter of {fn.__name__}")
        at = list(sig.parameters).index(param) if in_place and own is not None else len(params)
        kind_of_added = own.kind if in_place and own is not None else inspect.Parameter.KEYWORD_ONLY
        taken = {p.name for p in params}
        added, keys = [], []
        placed: dict[str, list[inspect.Parameter]] = {}  # a command parameter -> the flags that stand before it
        shown: dict[str, str] = {}  # field -> its flags as the user types them, for error messages
        fixed = {k: v for k, v in overrides.items() if k not in {f.name for f in chosen}}  # set, not a flag
        for f in chosen:
            required = f.name not in overrides and f.default is MISSING and f.default_factory is MISSING
            if required:  # a field without a default is a flag the user must give
                default, kind = ..., hints[f.name]
            else:
                default = overrides.get(f.name, f.default if f.default is not MISSING else f.default_factory())  # type: ignore[misc]
                kind = type(default)
            annotation: Any = kind
            if isinstance(default, Path):  # a file the dataclass names by default
                kind = annotation = Path
            elif kind not in (int, float, str, bool):
                if default is not None:
                    raise TypeError(f"{cls.__name__}.{f.name}: only int/float/str/bool/Path fields, or fields "
                                    "whose default is None, become flags")
                annotation = hints[f.name]
            default_flags = ("--tasks", "-t") if f.name == "tasks" else "--" + f.name.replace("_", "-")
            flag = renames.get(f.name, default_flags)
            flags = (flag,) if isinstance(flag, str) else tuple(flag)
            if kind is bool and len(flags) == 1 and "/" not in flags[0] and f.metadata.get("negatable", True):
                flags = (f"{flags[0]}/--no-{flags[0][2:]}",)  # a switch that can be turned either way
            extra: dict[str, Any] = {}
            if bounds_text(f.metadata):  # its bounds, at parse time (an Optional[int] field's too)
                extra["callback"] = bounded(f.metadata)
            elif kind in (int, float):  # int64 where a number field has no maximum
                extra["callback"] = check_int64
            if f.name == "tasks":
                extra["callback"] = check_task_spec
            text = helps.get(f.name) or f.name
            bounds = bounds_text(f.metadata)
            if bounds:
                text = f"{text} ({bounds})"
            if f.name == "tasks":
                text = f"{text} {TASK_SPEC_HELP}"
            pname = f"{param}__{f.name}" if f.name in taken else f.name
            keys.append((pname, f.name))
            shown[f.name] = "/".join(flags)
            info = typer.Option(None if env and not required else default, *flags, help=text,
                                show_default=str(default) if env and not required else True, **extra)
            info.ace_field = (cls, f.name, default)  # type: ignore[attr-defined]
            if f.name == "tasks":
                info.ace_tasks = True  # type: ignore[attr-defined]
            if f.name in positions:
                target = targets[positions[f.name]]
                placed.setdefault(target.name, []).append(
                    inspect.Parameter(pname, target.kind, annotation=annotation, default=info))
            else:
                added.append(inspect.Parameter(pname, kind_of_added, annotation=annotation, default=info))

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {**fixed, **{name: kwargs.pop(pname) for pname, name in keys}}
            try:
                config = cls.from_env(**values) if env else cls(**values)  # type: ignore[attr-defined]
            except ConfigError as e:
                # "RolloutConfig.n_per_task must be ..." reads as "-G/--n-per-task must be ..." on the command line
                text = str(e)
                for name, flag in shown.items():
                    if text.startswith(f"{cls.__name__}.{name} "):
                        raise ConfigError(flag + text[len(cls.__name__) + 1 + len(name):]) from e
                raise
            except (TypeError, ValueError) as e:
                raise ConfigError(f"{cls.__name__}: {e}") from e
            return fn(*args, **{param: config}, **kwargs)

        ordered: list[inspect.Parameter] = []
        for i, p in enumerate([*params, None]):
            if i == at:
                ordered.extend(added)
            if p is not None:
                ordered.extend(placed.get(p.name, []))
                ordered.append(p)
        wrapper.__signature__ = sig.replace(parameters=ordered)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def budget_options(param: str = "budget") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--call-timeout`` and ``--memory-limit``: the tool-call budget (:class:`ace_env.worker.Budget`), from
    its fields; a flag left out falls back to ``ACE_CALL_TIMEOUT`` / ``ACE_MEMORY_LIMIT_MB``, then the default."""
    return config_options(Budget, names={"call_seconds": "--call-timeout", "memory_mb": "--memory-limit"},
                          param=param, env=True)
