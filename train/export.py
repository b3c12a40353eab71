"""Export tasks as training and evaluation datasets.

Four formats:

``bfcl``
    BFCL v4 multi-turn files (written by BFCL's entry's ``export_writer``,
    :mod:`ace_env.bfcl.export`), so BFCL's own harness can evaluate on ACE's
    tasks: ``BFCL_v4_multi_turn_ace_question.json`` (one JSON per line:
    ``id, question, initial_config, path, involved_classes`` and, when they
    apply, ``missed_function`` and ``excluded_function``) and
    ``possible_answer/BFCL_v4_multi_turn_ace_possible_answer.json``
    (``id, ground_truth``).  A turn whose only news is new tools gets an empty
    question list, as in BFCL.  Long-context tasks go to their own pair of
    files, ``BFCL_v4_multi_turn_ace_long_context_question.json`` (and its
    possible answer), with ids ``multi_turn_ace_long_context_<id>``: BFCL loads
    the long context when the category name says ``long_context``.
    Distractors are written as offered function docs (a distractor of another
    class brings its class, with the class's other functions excluded); BFCL
    cannot declare them wrong, so there calling one fails only through the
    state it leaves.  ACE's wrong-way twins (:mod:`ace_env.twins`) are real
    functions there too: their docs in BFCL's doc format go to
    ``multi_turn_func_doc/<BFCL's doc file name>`` (lines to append to BFCL's
    file of that name) and their implementation to ``ace_twins.py``, a plain
    Python module whose ``install()`` attaches them to BFCL's classes as
    methods; the turn that offers one names it in ``missed_function``.
    Output views (ambiguity, cascade) cannot be expressed:
    such tasks are written with their canonical ground truth and counted in
    the report's ``notes``.  Tasks that are not built purely from BFCL's
    functions are skipped with a reason.
``trl``
    ``train.jsonl`` for TRL's ``GRPOTrainer``, one row per task, carrying every
    turn:

    * ``prompt``: the system message and the first turn's user messages (what
      GRPO's single-turn mode needs), and ``tools``: the OpenAI tool schemas
      offered in turn 0;
    * ``turns``: every turn in order, each ``{user, tools_added, tools_offered}``:
      its user messages, the schemas of the tools first offered in that turn
      (empty for turn 0, whose tools are ``tools``) and the names of every tool
      offered in it, so a multi-turn consumer can play the whole conversation;
    * ``task``: the whole task as a JSON string, what a reward needs
      (:func:`train.rewards.verifier_reward` and
      :class:`train.trlenv.TrlToolEnv` rebuild it with
      :meth:`Task.from_dict` and verify against its ground truth);
    * ``environment``: the name of the task's turn-0 tool set, which routes the
      row to its environment class when ``GRPOTrainer`` gets
      ``environment_factory=train.trlenv.environment_factories(rows)``;
    * ``task_id`` and ``n_turns``;

    plus ``dataset_info.json`` describing the columns.
``openai-sft``
    ``train.jsonl`` of chat transcripts of the oracle in OpenAI's chat
    fine-tuning format, and nothing else at the top level (``messages``,
    ``tools``): per turn the user's message, one assistant message per oracle
    call (``tool_calls`` with an id, the function name and JSON arguments by
    parameter name), the tool result (the oracle's output, ``tool_call_id``),
    and a closing assistant message written from the turn's tool results and
    marked ``"weight": 0`` (OpenAI's per-message mask: context, never a training
    target; see :func:`closing_text`).  A turn whose right behaviour is to make
    no call ends with :data:`ABSTAIN_MESSAGE`, which *is* the target.
    ``task_ids.jsonl`` beside it names the task of each line (``{"task_id"}``;
    line n of one is line n of the other).  ``tools`` lists every tool the task
    offers in any turn.  A task with a no-call turn that lacks a tool a later
    turn offers (BFCL's ``miss_func``) is skipped (:func:`refuses_a_later_tool`): listing
    that tool from the start would teach the model to refuse a tool it was offered.

``tau2``
    τ²-bench tasks (τ²'s own and ACE's synthesized ones) in τ²'s own task schema, one
    ``<domain>/tasks.json`` per domain, each task written only after its exported gold passed τ²'s
    evaluator (:mod:`ace_env.tau2.export`, τ²'s entry's ``export_writer``).

Writing is atomic: files go to a temporary folder next to ``out`` that is
renamed into place; a non-empty ``out`` is refused unless ``force``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ace_env import twins
from ace_env.calls import Call, parse_call
from ace_env.environments import DEFAULT, ENVIRONMENTS, ToolEnvironment, environment_of
from ace_env.errors import ConfigError
from ace_env.executor import OK
from ace_env.goldprefix import ABSTAIN_MESSAGE, SYSTEM_PROMPT, GoldPrefixError
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.workspace import check_out, check_writable_kind
from train.errors import ExportError

#: Formats tasks export to as JSON lines: the default environment's task-turns rows (:func:`to_trl`,
#: :func:`to_openai_sft`), and another environment's where its entry gives them (its ``export_rows``).
COMMON_FORMATS = ("trl", "openai-sft")


#: The formats of the environments registered when this module was imported (:func:`formats` asks again).
FORMATS = tuple(env.export_format for env in ENVIRONMENTS.values() if env.export_format) + COMMON_FORMATS


def formats() -> tuple[str, ...]:
    """Every ``--format``: each environment's own (its ``export_format``, written by its ``export_writer``), then
    the common ones."""
    return tuple(env.export_format for env in ENVIRONMENTS.values() if env.export_format) + COMMON_FORMATS



JSONL_FILE = "train.jsonl"
INFO_FILE = "dataset_info.json"

# SYSTEM_PROMPT (of TRL prompts and SFT transcripts) and ABSTAIN_MESSAGE are ace_env.goldprefix's, imported above.
#: Side file of an ``openai-sft`` export: ``{"task_id"}`` of each line of ``train.jsonl``, in the same order.
TASK_IDS_FILE = "task_ids.jsonl"
#: Characters of one tool result kept in a closing message (:func:`closing_text`).
CLOSING_RESULT_CHARS = 200
#: Why an ``openai-sft`` export skips a task with a no-call turn before a turn that offers more tools.
REFUSES_A_LATER_TOOL = ("makes no call in a turn that lacks tools a later turn offers: OpenAI's format has one tool "
                "list per conversation, and listing those tools from the start would teach refusing an offered tool")


@dataclass(frozen=True)
class ExportConfig:
    """What ``ace export`` writes (its flags; ``--out``, a required folder, is the command's own: a required flag
    derived from a field is a str, int, float or bool one)."""

    format: str = field(metadata={"help": "bfcl, trl, openai-sft or tau2 (τ²-bench's task schema; τ² tasks only)."})
    force: bool = field(default=False, metadata={"help": "Replace an earlier export in --out.", "negatable": False})


@dataclass
class ExportReport:
    """What an export wrote and what it skipped (reason -> task ids)."""

    format: str
    out: str
    written: int = 0
    skipped: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: Written, but with something the format cannot carry (note -> task ids).
    notes: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, task_id: str, reason: str) -> None:
        self.skipped.setdefault(reason, []).append(task_id)

    def note(self, task_id: str, note: str) -> None:
        self.notes.setdefault(note, []).append(task_id)

    @property
    def n_skipped(self) -> int:
        return sum(len(v) for v in self.skipped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "out": self.out,
            "written": self.written,
            "skipped": self.n_skipped,
            "skipped_by_reason": {r: len(ids) for r, ids in sorted(self.skipped.items())},
            "skipped_examples": {r: ids[:5] for r, ids in sorted(self.skipped.items())},
            "notes": {r: len(ids) for r, ids in sorted(self.notes.items())},
            "files": self.files,
        }


# --------------------------------------------------------------------------- trl / sft


def _schemas(task: Task, names: Iterable[str]) -> list[dict[str, Any]]:
    functions = twins.all_functions()
    missing = [n for n in names if n not in functions]
    if missing:
        raise ExportError(f"task {task.id}: no schema for tool(s) {', '.join(sorted(missing))}")
    return [twins.tool_schema(n) for n in names]


def _offered_in_order(task: Task, turn_index: int) -> list[str]:
    offered = task.offered_tools(turn_index)
    return [t for t in task.tools if t in offered]


def _user_message(turn: Any) -> dict[str, str]:
    # one user message per turn, so a transcript's user messages map 1:1 onto task turns
    texts = [m.get("content", "") for m in turn.user if m.get("role", "user") == "user"]
    return {"role": "user", "content": "\n\n".join(texts)}


def environment_name(task: Task) -> str:
    """The name of the task's turn-0 tool set: rows with the same name share an environment class."""
    names = _offered_in_order(task, 0)
    digest = hashlib.sha256(",".join(sorted(names)).encode()).hexdigest()[:10]
    return f"{'+'.join(sorted(task.involved_classes)) or 'none'}-{digest}"


def trl_turns(task: Task) -> list[dict[str, Any]]:
    """Every turn of the task in order: its user messages, the tools it adds, the tools it offers."""
    out = []
    for i, turn in enumerate(task.turns):
        added = [] if i == 0 else [t for t in _offered_in_order(task, i) if t not in task.offered_tools(i - 1)]
        out.append({
            "user": [dict(m) for m in turn.user],
            "tools_added": _schemas(task, added),
            "tools_offered": _offered_in_order(task, i),
        })
    return out


def to_trl(task: Task) -> dict[str, Any]:
    """One GRPO row: the first turn as ``prompt``, every turn in ``turns``, and the task for the reward."""
    return {
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, *(dict(m) for m in task.turns[0].user)],
        "tools": _schemas(task, _offered_in_order(task, 0)),
        "turns": trl_turns(task),
        "task": json.dumps(task.to_dict()),  # no sort_keys: BFCL configs are ordered
        "environment": environment_name(task),
        "task_id": task.id,
        "n_turns": len(task.turns),
    }


TRL_COLUMNS = {
    "prompt": "list of chat messages: the system message, then the first turn's user messages "
              "(the prompt of GRPOTrainer's single-turn mode)",
    "tools": "list of OpenAI tool schemas ({type: function, function: {name, description, parameters}}) offered in turn 0",
    "turns": "list, one entry per user turn in order: {user: that turn's chat messages, tools_added: OpenAI tool "
             "schemas first offered in that turn (empty for turn 0: see tools), tools_offered: names of every tool "
             "offered in that turn}",
    "task": "the full ACE task as a JSON string (ace_env.tasks.Task.to_dict): initial state, every turn and its "
            "ground truth; train.rewards.verifier_reward and train.trlenv.TrlToolEnv read it",
    "environment": "name of the task's turn-0 tool set; routes the row to its class in "
                   "train.trlenv.environment_factories(rows) (GRPOTrainer's environment_factory)",
    "task_id": "the task's id",
    "n_turns": "number of user turns (the length of turns)",
}


def tool_arguments(call: Call) -> dict[str, Any]:
    """A call's arguments by parameter name, as an assistant tool call carries them (JSON values)."""
    try:
        return twins.tool_arguments(call)
    except GoldPrefixError as e:
        raise ExportError(str(e)) from e


def closing_text(results: list[tuple[str, str]]) -> str:
    r"""A turn's closing assistant text, written from its ``(tool name, result)`` pairs, one line each.

    Every turn ends with an assistant message that has no call (that is how a turn ends, in rollouts
    and in chat formats), but the oracle says nothing there: any fixed sentence would be a canned
    target a model learns to repeat.  So the text is the turn's own results, each cut at
    :data:`CLOSING_RESULT_CHARS`, and exports mark the message ``"weight": 0`` (masked by OpenAI's
    fine-tuning; see docs/formats.md for the other trainers).

    >>> closing_text([("cd", '{"current_working_directory": "temp"}'), ("mkdir", "None")])
    'cd: {"current_working_directory": "temp"}\nmkdir: None'
    """
    lines = []
    for name, result in results:
        text = " ".join(str(result).split())
        if len(text) > CLOSING_RESULT_CHARS:
            text = text[: CLOSING_RESULT_CHARS - 1] + "…"
        lines.append(f"{name}: {text}")
    return "\n".join(lines)


def to_openai_sft(task: Task) -> dict[str, Any]:
    """The oracle as an OpenAI chat fine-tuning example: ``{"messages", "tools"}``, nothing else.

    Each turn with calls ends with a closing message written from its results (:func:`closing_text`)
    and marked ``"weight": 0``; a turn whose right behaviour is no call ends with :data:`ABSTAIN_MESSAGE`.
    """

    oracle = oracle_for(task)
    bad = [s for t in oracle.turns for s in t.steps if s.status != OK]
    if oracle.errors or bad:
        raise ExportError(f"task {task.id}: the oracle does not execute cleanly ({(oracle.errors or ['?'])[0]})")
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    n = 0
    for t, (turn, oturn) in enumerate(zip(task.turns, oracle.turns)):
        messages.append(_user_message(turn))
        results: list[tuple[str, str]] = []
        for raw, ostep in zip(turn.ground_truth, oturn.steps):
            call = parse_call(raw)
            if not isinstance(call, Call):
                raise ExportError(f"task {task.id}: turn {t}: malformed ground truth {raw!r}")
            call_id = f"call_{t}_{n}"
            n += 1
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name,
                                 "arguments": json.dumps(tool_arguments(call))},
                }],
            })
            messages.append({"role": "tool", "tool_call_id": call_id, "content": ostep.output})
            results.append((call.name, ostep.output))
        if results:
            messages.append({"role": "assistant", "content": closing_text(results), "weight": 0})
        else:
            messages.append({"role": "assistant", "content": ABSTAIN_MESSAGE})
    every = set().union(*(task.offered_tools(i) for i in range(len(task.turns))))
    return {"messages": messages, "tools": _schemas(task, [t for t in task.tools if t in every])}


def refuses_a_later_tool(task: Task) -> bool:
    """Whether a turn whose right behaviour is no call lacks a tool that a later turn offers (BFCL's
    ``miss_func``): one tool list per conversation would then show the model refusing an offered tool.
    Tools added later to turns that do call (ACE's distractors) are harmless listed from the start."""
    every = set().union(*(task.offered_tools(i) for i in range(len(task.turns))))
    return any(not turn.ground_truth and set(task.offered_tools(i)) != every for i, turn in enumerate(task.turns))


# --------------------------------------------------------------------------- writing


#: Written into every export folder; --force replaces only folders that carry it.
MARKER = ".ace-export"


def _check_out(out: Path, force: bool) -> None:
    """The one ``--out`` rule (:func:`ace_env.workspace.check_out`) for a folder; ``--force`` replaces only an
    earlier export (a folder holding :data:`MARKER`)."""
    try:
        check_out(out, force, directory=True, marker=MARKER)
    except ConfigError as e:
        raise ExportError(str(e)) from e


def _install(tmp: Path, out: Path) -> None:
    """Move the finished temporary folder into place (replacing ``out``)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.rename(out, old / out.name)
        try:
            os.rename(tmp, out)
        except OSError:
            os.rename(old / out.name, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)


def export(tasks: Iterable[Task], fmt: str, out: str | Path, force: bool = False) -> ExportReport:
    """Write ``tasks`` in format ``fmt`` to the folder ``out``; see the module doc."""
    if fmt not in formats():
        raise ExportError(f"unknown export format {fmt!r}; use one of: {', '.join(formats())}")
    out = Path(out).resolve()
    _check_out(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = ExportReport(fmt, str(out))
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it owner-only
    try:
        own = own_format_writers().get(fmt)
        if own is not None:  # an environment's own task files (τ²'s: each task round-tripped through its evaluator)
            own(tasks, tmp, report)
        else:
            _write_jsonl(tasks, fmt, tmp, report)
        report.files = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())
        (tmp / MARKER).write_text(f"written by `ace export --format {fmt}`\n")
        check_writable_kind(out)  # again, just before the rename
        _install(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def own_format_writers() -> dict[str, Any]:
    """The writer of each environment's own format (its ``export_format``): its entry's ``export_writer``."""
    return {env.export_format: env.export_writer for env in ENVIRONMENTS.values()
            if env.export_format and env.export_writer is not None}


def _row_writer(env: ToolEnvironment, fmt: str) -> Any:
    """What writes a task of ``env`` as a row of ``fmt``: its entry's ``export_rows``, else (the default
    environment's tasks) :func:`to_trl` or :func:`to_openai_sft`; None: not this format."""
    own = env.export_rows.get(fmt)
    if own is not None or env is not DEFAULT:
        return own
    return to_trl if fmt == "trl" else to_openai_sft


def _write_jsonl(tasks: Iterable[Task], fmt: str, tmp: Path, report: ExportReport) -> None:
    ids = open(tmp / TASK_IDS_FILE, "w", encoding="utf-8") if fmt == "openai-sft" else None
    try:
        with open(tmp / JSONL_FILE, "w", encoding="utf-8") as f:
            for task in tasks:
                env = environment_of((task,))
                convert = _row_writer(env, fmt)
                if convert is None:
                    report.skip(task.id, f"{env.title} tasks are not written as {fmt}")
                    continue
                if env is DEFAULT and not task.turns:
                    report.skip(task.id, "has no turns")
                    continue
                if env is DEFAULT and ids is not None and refuses_a_later_tool(task):
                    report.skip(task.id, REFUSES_A_LATER_TOOL)
                    continue
                try:
                    row = convert(task)
                except (ExportError, GoldPrefixError) as e:
                    report.skip(task.id, str(e).split(": ", 1)[-1] if str(e).startswith("task ") else str(e))
                    continue
                f.write(json.dumps(row) + "\n")
                if ids is not None:
                    ids.write(json.dumps({"task_id": task.id}) + "\n")
                report.written += 1
    finally:
        if ids is not None:
            ids.close()
    if fmt == "trl":
        info = {
            "format": "trl",
            "file": JSONL_FILE,
            "rows": report.written,
            "columns": TRL_COLUMNS,
            "system_prompt": SYSTEM_PROMPT,
            "load": "datasets.load_dataset('json', data_files='train.jsonl'); "
                    "task = ace_env.tasks.Task.from_dict(json.loads(row['task']))",
        }
        with open(tmp / INFO_FILE, "w", encoding="utf-8") as f:
            json.dump(info, f, indent=2)
            f.write("\n")

