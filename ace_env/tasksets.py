"""Task sets: the ``--tasks/-t`` spec every command takes, parsed and loaded once.

A task set is named ``bfcl:CATEGORY[,CATEGORY...]`` (``base``, ``long_context``,
``miss_func``, ``miss_param`` or ``all``) or is a JSONL file of ACE tasks (one
:meth:`ace_env.tasks.Task.to_dict` per line).  ``tau2:DOMAIN[,DOMAIN...]`` (``airline``, ``retail``,
``telecom`` or ``all``; ``tau2`` alone: all) names τ²-bench tasks: :func:`load_tau2_task_set` loads
them (:mod:`ace_env.tau2`); ``ace env replay tau2`` replays their gold; :func:`load_task_set`, which the
other commands call, gives airline and retail tasks to a command that says it takes them (``ace sim
rollouts``, ``ace ingest``: ``any_environment=True``) and otherwise refuses τ² tasks in one line.  What the skill graph
needs of τ² tasks (their class, the gold steps the tagger reads) it imports from here, not from
:mod:`ace_env.tau2`.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace_env import bfcl, twins
from ace_env.bounded import BoundedVerifier
from ace_env.environments import ENVIRONMENTS, ToolEnvironment, environment_named
from ace_env.errors import TaskLoadError
from ace_env.executor import RolloutState
from ace_env.taskfile import task_file_lines
from ace_env.tasks import Task
from ace_env.tau2 import DOMAINS as TAU2_DOMAINS
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.tasks import load_tasks as load_tau2_tasks
from ace_env.tau2.tasks import tau2_tool_info as tau2_tool_info
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget
from ace_env.workspace import check_readable

#: The task-spec grammar, as every command's ``--tasks/-t`` help states it.
TASK_SPEC_HELP = ("Tasks: bfcl:CATEGORY[,CATEGORY...] (base, long_context, miss_func, miss_param, all; bfcl alone: "
                  "all), a task JSONL file, or a folder of BFCL files (`ace export --format bfcl`).")


@dataclass(frozen=True)
class TaskSpec:
    """A parsed task spec: BFCL ``categories`` (in order, once each), or a ``path`` (a task file or BFCL folder)."""

    categories: tuple[str, ...] = ()
    path: Path | None = None
    tau2_domains: tuple[str, ...] = ()  # tau2:DOMAIN[,DOMAIN...]: τ²-bench domains, in order, once each
    environment: str = ""  # NAME[:GROUP,...] of another registered environment: its name ...
    groups: tuple[str, ...] = ()  # ... and its groups, in order, once each (NAME alone: all)


def parse_task_spec(spec: str) -> TaskSpec:
    """The one task-spec grammar: ``bfcl``, ``bfcl:CAT[,CAT...]``, or a path that exists.

    Checks the grammar only (categories known, the path there), not the tasks, so a command can
    refuse a bad ``--tasks`` before any work; :func:`load_task_set` loads what it names.

    >>> parse_task_spec("bfcl:base, miss_func,base").categories
    ('base', 'miss_func')
    """
    if not isinstance(spec, str) or not spec.strip():
        raise TaskLoadError(f"task set {spec!r} is empty; give bfcl:CATEGORY[,CATEGORY...], a task JSONL file or "
                            "a folder of BFCL files")
    if spec.strip() == "bfcl":
        return TaskSpec(categories=("all",))
    if spec.startswith("bfcl:"):
        categories = [c.strip() for c in spec.partition(":")[2].split(",")]
        if not all(categories):
            raise TaskLoadError(f"task set {spec!r} names an empty category; give bfcl:CATEGORY[,CATEGORY...] "
                                f"({', '.join(bfcl.CATEGORIES)}, all)")
        categories = [c.removeprefix("multi_turn_") for c in categories]  # BFCL's own file names say multi_turn_X
        if "composite" in categories:
            raise TaskLoadError(f"task set {spec!r}: BFCL's multi_turn_composite set is not scored by BFCL and its "
                                "ground truth is stale (most tasks contain broken calls); ACE does not load it. Use "
                                f"{', '.join(bfcl.CATEGORIES)} or all")
        unknown = [c for c in categories if c not in (*bfcl.CATEGORIES, "all")]
        if unknown:
            raise TaskLoadError(f"task set {spec!r}: unknown BFCL category {unknown[0]!r}; use one of "
                                f"{', '.join(bfcl.CATEGORIES)} or all, comma-separated")
        return TaskSpec(categories=tuple(dict.fromkeys(categories)))
    if spec.strip() == "tau2" or spec.startswith("tau2:"):
        domains = [d.strip() for d in spec.partition(":")[2].split(",")] if ":" in spec else ["all"]
        unknown = [d for d in domains if d not in (*TAU2_DOMAINS, "all")]
        if unknown:
            raise TaskLoadError(f"task set {spec!r}: unknown τ² domain {unknown[0]!r}; use "
                                f"tau2:DOMAIN[,DOMAIN...] with {', '.join(TAU2_DOMAINS)} or all")
        if "all" in domains:
            domains = list(TAU2_DOMAINS)
        return TaskSpec(tau2_domains=tuple(dict.fromkeys(domains)))
    name, colon, rest = spec.strip().partition(":")
    if name in ENVIRONMENTS and ENVIRONMENTS[name].load_spec is not None:  # another environment's own grammar
        groups = [g.strip() for g in rest.split(",")] if colon else ["all"]
        if not all(groups):
            raise TaskLoadError(f"task set {spec!r} names an empty group; give {name}:GROUP[,GROUP...] or {name}")
        return TaskSpec(environment=name, groups=tuple(dict.fromkeys(groups)))
    path = Path(spec)
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the file system
        exists = False
    if not exists:
        raise TaskLoadError(f"task set {spec[:200]!r} is neither bfcl:CATEGORY[,CATEGORY...] "
                            f"({', '.join(bfcl.CATEGORIES)}, all) nor an existing task file or folder")
    check_readable(path, "task set", folder=True)  # a FIFO, socket or device is refused before it is opened
    return TaskSpec(path=path)


def _command() -> str:
    """The running ``ace`` command's name (from click's context: typer's vendored click, or click), or
    ``this command`` outside one."""
    for name in ("typer._click.globals", "click.globals"):
        try:
            ctx = importlib.import_module(name).get_current_context(silent=True)
        except (ImportError, AttributeError):
            continue
        if ctx is not None:
            return ctx.command_path
    return "this command"


def load_tau2_task_set(spec: str) -> dict[str, Tau2Task]:
    """τ² tasks by ACE id (``tau2:DOMAIN:ID``) from a ``tau2:DOMAIN[,DOMAIN...]`` spec."""
    parsed = parse_task_spec(spec)
    if not parsed.tau2_domains:
        raise TaskLoadError(f"task set {spec!r} names no τ² tasks; give tau2:DOMAIN[,DOMAIN...] "
                            f"({', '.join(TAU2_DOMAINS)}, all)")
    return {t.id: t for d in parsed.tau2_domains for t in load_tau2_tasks(d)}


#: The commands that take τ² tasks (``any_environment=True`` where they load them; ``ace env replay`` and
#: ``ace verify`` load every domain, through :func:`load_every_task`).
TAU2_COMMANDS = ("`ace env replay`, `ace sim rollouts`, `ace verify`, `ace ingest`, `ace eval`, `ace diagnose`, "
                 "`ace synth` and `ace export --format tau2`")

#: The τ² domains whose rollouts ACE simulates, verifies step by step and stores in the skill graph.
TAU2_ROLLOUT_DOMAINS = ("airline", "retail")
TAU2_TELECOM_NOTE = ("telecom's gold includes the user's own actions on their phone, which ACE's simulated agent "
                     "and its rollouts do not model yet")


def load_task_set(spec: str, budget: Budget | None = None, *, any_environment: bool = False) -> dict[str, Task]:
    """Tasks by id from a task spec (:func:`parse_task_spec`): BFCL categories, a task JSONL file, or a folder
    of BFCL files (:func:`bfcl.load_folder`).  Every command that takes tasks reads them through here.

    ``any_environment``: the command takes every environment's tasks whose rollouts ACE simulates and
    verifies step by step, not only the default environment's (:data:`ace_env.environments.DEFAULT`): τ²
    specs (``tau2:airline``, ``tau2:retail``) come back as :class:`~ace_env.tau2.tasks.Tau2Task` by ACE id
    (``tau2:airline:1``); telecom is refused in one line.  Without it such a spec is refused in one line.

    A task file's (or folder's) gold is run once here, every call under ``budget`` (the command's
    ``--call-timeout`` / ``--memory-limit``; None: :meth:`Budget.from_env`), in the watched worker: a gold
    call over it refuses the file in one line.  A task file over the size caps of :mod:`ace_env.taskfile` is
    refused before it is parsed."""
    parsed = parse_task_spec(spec)
    if parsed.environment:
        if not any_environment:
            raise TaskLoadError(f"{ENVIRONMENTS[parsed.environment].title} tasks are not supported by `{_command()}` "
                                f"yet ({spec})")
        return _load_groups(parsed, spec)
    if parsed.tau2_domains:
        if not any_environment:
            raise TaskLoadError(f"τ² tasks are not supported by `{_command()}` yet ({spec}): {TAU2_COMMANDS} take "
                                "them; use bfcl:CATEGORY or a task file")
        other = [d for d in parsed.tau2_domains if d not in TAU2_ROLLOUT_DOMAINS]
        if other:
            raise TaskLoadError(f"`{_command()}` takes τ² {' and '.join(TAU2_ROLLOUT_DOMAINS)} tasks, not {other[0]} "
                                f"({spec}): {TAU2_TELECOM_NOTE}")
        return load_tau2_task_set(spec)  # type: ignore[return-value]
    if parsed.categories:
        tasks: dict[str, Task] = {}
        for category in parsed.categories:
            tasks.update((t.id, t) for t in bfcl.load_tasks(category))
        return tasks
    path = parsed.path
    if path.is_dir():
        if not bfcl.is_bfcl_folder(path):
            raise TaskLoadError(f"Task set {spec!r} is a folder without BFCL question files; give a task JSONL "
                                "file, bfcl:CATEGORY, or a folder `ace export --format bfcl` wrote.")
        loaded = bfcl.load_folder(path)
        if not loaded:
            raise TaskLoadError(f"{path} holds no tasks")
        mine = {}
        for task in loaded:
            if task.source == "bfcl":
                continue  # one of BFCL's own tasks, unchanged (load_folder checked)
            try:
                check_against_bfcl(task)
            except TaskLoadError as e:
                raise TaskLoadError(f"{path}: task {task.id}: {e}") from e
            mine[task.id] = task
        if mine:  # BFCL's own replay within budget; another entry's ground truth is run once, bounded
            _check_oracles_in_budget(mine, {tid: f"{path}: task {tid}" for tid in mine}, budget)
        return {t.id: t for t in loaded}
    for env in ENVIRONMENTS.values():  # an environment's own task file (τ²'s: tasks `ace synth` made from τ² seeds)
        if env.task_file is not None and env.task_file.holds(path):
            if not any_environment:
                raise TaskLoadError(f"{env.title} tasks are not supported by `{_command()}` yet ({spec}): "
                                    f"{TAU2_COMMANDS} take them")
            return env.task_file.load(path, budget)
    tasks = {}
    first_line: dict[str, int] = {}
    for n, line in task_file_lines(path):  # size caps, UTF-8 (ace_env.taskfile)
        try:
            task = Task.from_dict(json.loads(line))
            check_against_bfcl(task)
        except TaskLoadError as e:
            raise TaskLoadError(f"{path}:{n}: {e}") from e
        except (json.JSONDecodeError, RecursionError) as e:
            raise TaskLoadError(f"{path}:{n}: not valid JSON ({type(e).__name__})") from e
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TaskLoadError(f"{path}:{n}: not an ACE task ({type(e).__name__}: {e})") from e
        if task.id in tasks:
            raise TaskLoadError(
                f"{path}:{n}: task id {task.id!r} repeats line {first_line[task.id]}; task ids must be unique"
            )
        tasks[task.id] = task
        first_line[task.id] = n
    if not tasks:
        raise TaskLoadError(f"{path} holds no tasks")
    _check_oracles_in_budget(tasks, {tid: f"{path}:{n}" for tid, n in first_line.items()}, budget)
    return tasks


def load_every_task(spec: str, budget: Budget | None = None) -> dict[str, Task]:
    """Every task a spec names, of any environment, including those whose rollouts ACE does not simulate
    (τ²'s telecom): the tasks ``ace env replay`` replays and ``ace verify`` judges rollouts against."""
    parsed = parse_task_spec(spec)
    if parsed.tau2_domains:
        return load_tau2_task_set(spec)  # type: ignore[return-value]
    if parsed.environment:
        return _load_groups(parsed, spec)
    return load_task_set(spec, budget, any_environment=True)


def _load_groups(parsed: TaskSpec, spec: str) -> dict[str, Any]:
    """The tasks of another registered environment's ``NAME[:GROUP,...]`` (its ``load_spec``), by id."""
    tasks = ENVIRONMENTS[parsed.environment].load_spec(parsed.groups)  # type: ignore[misc]  # parse checked it
    if not tasks:
        raise TaskLoadError(f"task set {spec!r} holds no tasks")
    return tasks


def environment_of_spec(spec: str) -> ToolEnvironment | None:
    """The environment a spec's prefix names (``bfcl:base``: BFCL; ``tau2:airline``: τ²-bench); None for a
    task file or folder (its tasks say, once loaded: :func:`ace_env.environments.environment_of`)."""
    parsed = parse_task_spec(spec)
    if parsed.path is not None:
        return None
    return environment_named(spec.strip().partition(":")[0])


def _check_oracles_in_budget(tasks: dict[str, Task], where: dict[str, str], budget: Budget | None = None) -> None:
    """Refuse a task file whose ground truth runs a tool call over budget (see ace_env.worker); ``where``
    names each task's place in its file (``FILE:LINE``).

    Every command that reads a task file (verify, ingest, synth check, sim,
    export) replays its ground truth somewhere; replaying it here once, in
    the watched worker, means none of them can hang on it.
    """
    with BoundedVerifier(tasks, budget or Budget.from_env(), batch_size=256) as bv:
        results = bv.verify_many([(tid, [], None) for tid in tasks])
    for tid, result in zip(tasks, results):
        if getattr(result, "attribution", None) in (TIMEOUT, RESOURCE_LIMIT) and "oracle" in result.detail:
            raise TaskLoadError(f"{where[tid]}: field 'turns': the ground truth of {tid!r} "
                                f"ran over budget ({result.attribution}: {result.detail})")


def check_against_bfcl(task: Task) -> None:
    """Raise TaskLoadError when a task names classes or functions BFCL does not have, or its state won't load."""
    if task.source == "bfcl":
        # Task ids are scoped by source: only BFCL's own tasks may claim it.
        theirs = next((t for t in bfcl.load_tasks("all") if t.id == task.id), None)
        if theirs is None or theirs.to_dict() != task.to_dict():
            raise TaskLoadError(
                f"field 'source': 'bfcl' is reserved for BFCL's own tasks and {task.id!r} is not one of them "
                "unchanged; give your task another source (e.g. \"user\")"
            )
    unknown = [c for c in task.involved_classes if c not in bfcl.CLASSES]
    if unknown:
        raise TaskLoadError(f"field 'involved_classes' names unknown class(es) {', '.join(map(repr, unknown))}; "
                            f"BFCL has {', '.join(bfcl.CLASSES)}")
    functions = twins.all_functions()  # BFCL's functions and ACE's wrong-way twins (ace_env.twins)
    classes = set(task.involved_classes)
    for name, values in (("tools", task.tools), ("distractors", task.distractors)):
        bad = [t for t in values if t not in functions]
        if bad:
            raise TaskLoadError(f"field {name!r} names unknown function(s) {', '.join(map(repr, bad[:5]))}")
        outside = [t for t in values if functions[t].class_name not in classes]
        if outside:
            raise TaskLoadError(f"field {name!r}: {outside[0]!r} belongs to {functions[outside[0]].class_name}, "
                                "which is not in involved_classes")
    for i, turn in enumerate(task.turns):
        bad = [t for t in turn.tools_added if t not in task.tools]
        if bad:
            raise TaskLoadError(f"field 'turns[{i}].tools_added' names {bad[0]!r}, which is not in 'tools'")
    for cls in task.initial_config:
        if cls not in classes:
            raise TaskLoadError(f"field 'initial_config' configures {cls!r}, which is not in involved_classes")
    try:
        RolloutState(task)
    except Exception as e:  # BFCL's own loader rejected the state: say which field, in one line
        raise TaskLoadError(f"field 'initial_config' cannot be loaded by BFCL ({type(e).__name__}: {str(e)[:120]})") from e
