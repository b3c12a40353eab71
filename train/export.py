"""Export tasks as training and evaluation datasets.

Four formats:

``bfcl``
    BFCL v4 multi-turn files, so BFCL's own harness can evaluate on ACE's
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
    evaluator (:mod:`train.export_tau2`).

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

from ace_env import bfcl, twins
from ace_env.calls import Call, parse_call
from ace_env.environments import ENVIRONMENTS, environment_of
from ace_env.errors import ConfigError
from ace_env.executor import OK
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.workspace import check_out, check_writable_kind
from train.errors import ExportError
from train.export_tau2 import OWN_FORMAT_WRITER as TAU2_WRITER

#: Formats any environment's tasks export to; beside them, each environment's own (its ``export_format``).
COMMON_FORMATS = ("trl", "openai-sft")
FORMATS = tuple(env.export_format for env in ENVIRONMENTS.values() if env.export_format) + COMMON_FORMATS

BFCL_QUESTION_FILE = "BFCL_v4_multi_turn_ace_question.json"
BFCL_ANSWER_FILE = "possible_answer/BFCL_v4_multi_turn_ace_possible_answer.json"
BFCL_LONG_QUESTION_FILE = "BFCL_v4_multi_turn_ace_long_context_question.json"
BFCL_LONG_ANSWER_FILE = "possible_answer/BFCL_v4_multi_turn_ace_long_context_possible_answer.json"
#: Note of a task written without its output views (BFCL shows tools' results as they are).
VIEWS_DROPPED = "written without its output views: BFCL's executor shows tools' results unformatted"
#: Where the wrong-way twins a BFCL export offers are written: their implementation, and their docs by BFCL doc file.
TWIN_MODULE_FILE = "ace_twins.py"
TWIN_DOC_DIR = "multi_turn_func_doc"
#: Note of a task that offers twins (BFCL runs them once ace_twins.install() is called and their docs are added).
TWINS_WRITTEN = f"offers ACE wrong-way twins: docs in {TWIN_DOC_DIR}/, implementation in {TWIN_MODULE_FILE}"
JSONL_FILE = "train.jsonl"
INFO_FILE = "dataset_info.json"

#: System message of TRL prompts and SFT transcripts.
SYSTEM_PROMPT = (
    "You are an assistant that completes the user's requests by calling the tools provided. "
    "Call tools only when they are needed and only with arguments you know from the user or "
    "from earlier tool results. If a request lacks information or no tool can do it, say so "
    "instead of guessing."
)
#: The closing message gold-prefix scoring (:mod:`train.goldprefix`) puts after a turn's calls, as context only.
#: Exports never use it: their closing message is :func:`closing_text`, marked so trainers can mask it.
DONE_MESSAGE = "Done."
#: Side file of an ``openai-sft`` export: ``{"task_id"}`` of each line of ``train.jsonl``, in the same order.
TASK_IDS_FILE = "task_ids.jsonl"
#: Characters of one tool result kept in a closing message (:func:`closing_text`).
CLOSING_RESULT_CHARS = 200
#: Why an ``openai-sft`` export skips a task with a no-call turn before a turn that offers more tools.
REFUSES_A_LATER_TOOL = ("makes no call in a turn that lacks tools a later turn offers: OpenAI's format has one tool "
                "list per conversation, and listing those tools from the start would teach refusing an offered tool")
#: Assistant message of a turn whose right behaviour is to make no call.
ABSTAIN_MESSAGE = (
    "I can't do that with the information and tools I have. Could you give me the missing "
    "details, or a tool that can do it?"
)


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


# --------------------------------------------------------------------------- bfcl


def bfcl_problem(task: Task) -> str | None:
    """Why the task cannot be written in BFCL's format, or None when it can."""
    functions = bfcl.functions()
    unknown_classes = [c for c in task.involved_classes if c not in bfcl.CLASSES]
    if unknown_classes:
        return "involves classes BFCL does not have"
    offerable = twins.all_functions()  # BFCL's functions and ACE's twins (written beside the files)
    foreign = [t for t in task.tools if t not in offerable or offerable[t].class_name not in task.involved_classes]
    if foreign:
        return "offers tools that are not functions of its BFCL classes"
    for turn in task.turns:
        if any(t not in task.tools for t in turn.tools_added):
            return "adds tools it does not offer"
        for raw in turn.ground_truth:
            c = parse_call(raw)
            if not isinstance(raw, str) or not isinstance(c, Call) or c.name not in functions:
                return "ground truth holds a call that is not a BFCL call string"
    return None


def bfcl_id(task: Task) -> str:
    """The task's id in the exported files (long-context ACE tasks name their category, as BFCL needs)."""
    entry_id = bfcl.raw_entry(task)["id"]
    if task.long_context and "long_context" not in entry_id:
        entry_id = entry_id.replace("multi_turn_ace_", "multi_turn_ace_long_context_", 1)
    return entry_id


def _added_only(turn: Any) -> bool:
    return bool(turn.tools_added) and turn.user == [{"role": "user", "content": bfcl.ADDED_TOOLS_PROMPT}]


def to_bfcl(task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's BFCL question entry and possible-answer entry (check :func:`bfcl_problem` first)."""
    entry_id = bfcl_id(task)
    offered = set(task.tools)
    excluded = [f for c in task.involved_classes for f in bfcl.class_functions(c) if f not in offered]
    question: dict[str, Any] = {
        "id": entry_id,
        "question": [[] if _added_only(t) else [dict(m) for m in t.user] for t in task.turns],
        "initial_config": task.initial_config,
        "path": [],
        "involved_classes": list(task.involved_classes),
    }
    missed = {str(i): list(t.tools_added) for i, t in enumerate(task.turns) if t.tools_added}
    if missed:
        question["missed_function"] = missed
    if excluded:
        question["excluded_function"] = excluded
    answer = {"id": entry_id, "ground_truth": [list(t.ground_truth) for t in task.turns]}
    return question, answer


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
    name = call.name
    sig = twins.signature(name)
    if sig is None:
        raise ExportError(f"call {call.render()}: {name!r} is not a BFCL function")
    try:
        bound = sig.bind(*call.args, **call.kwargs)
    except TypeError as e:
        raise ExportError(f"call {call.render()} does not fit {name}'s signature: {e}") from e
    return json.loads(json.dumps(dict(bound.arguments)))


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
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; use one of: {', '.join(FORMATS)}")
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


def _write_bfcl(tasks: Iterable[Task], tmp: Path, report: ExportReport) -> None:
    (tmp / "possible_answer").mkdir()
    seen: set[str] = set()
    files: dict[bool, tuple[Any, Any]] = {}
    offered_twins: list[str] = []
    try:
        for task in tasks:
            problem = bfcl_problem(task)
            if problem is None and bfcl_id(task) in seen:
                problem = "duplicate id"
            if problem:
                report.skip(task.id, problem)
                continue
            long = task.long_context and task.source != environment_of((task,)).own_source
            if long not in files:
                q_name, a_name = (BFCL_LONG_QUESTION_FILE, BFCL_LONG_ANSWER_FILE) if long else \
                    (BFCL_QUESTION_FILE, BFCL_ANSWER_FILE)
                files[long] = (open(tmp / q_name, "w", encoding="utf-8"), open(tmp / a_name, "w", encoding="utf-8"))
            fq, fa = files[long]
            q, a = to_bfcl(task)
            seen.add(q["id"])
            fq.write(json.dumps(q) + "\n")
            fa.write(json.dumps(a) + "\n")
            report.written += 1
            if task.output_views:
                report.note(task.id, VIEWS_DROPPED)
            mine = [t for t in task.tools if twins.is_twin(t)]
            if mine:
                offered_twins += mine
                report.note(task.id, TWINS_WRITTEN)
    finally:
        for fq, fa in files.values():
            fq.close()
            fa.close()
    if False not in files:  # the main pair always exists, even when empty
        (tmp / BFCL_QUESTION_FILE).touch()
        (tmp / BFCL_ANSWER_FILE).touch()
    if offered_twins:
        _write_twins(offered_twins, tmp)


def own_format_writers() -> dict[str, Any]:
    """The writer of each environment's own format (its ``export_format``), found by the environment's task type."""
    by_type = dict([(Task, _write_bfcl), TAU2_WRITER])
    return {env.export_format: by_type[env.task_type] for env in ENVIRONMENTS.values()
            if env.export_format and env.task_type in by_type}


def _write_twins(names: list[str], tmp: Path) -> None:
    """The twins the written tasks offer, as real functions: docs by BFCL doc file, and a module implementing them."""
    (tmp / TWIN_DOC_DIR).mkdir()
    for file_name, lines in sorted(twins.doc_lines(sorted(set(names))).items()):
        (tmp / TWIN_DOC_DIR / file_name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (tmp / TWIN_MODULE_FILE).write_text(twins.module_source(sorted(set(names))), encoding="utf-8")


def _write_jsonl(tasks: Iterable[Task], fmt: str, tmp: Path, report: ExportReport) -> None:
    convert = to_trl if fmt == "trl" else to_openai_sft
    ids = open(tmp / TASK_IDS_FILE, "w", encoding="utf-8") if fmt == "openai-sft" else None
    try:
        with open(tmp / JSONL_FILE, "w", encoding="utf-8") as f:
            for task in tasks:
                if not task.turns:
                    report.skip(task.id, "has no turns")
                    continue
                if ids is not None and refuses_a_later_tool(task):
                    report.skip(task.id, REFUSES_A_LATER_TOOL)
                    continue
                try:
                    row = convert(task)
                except ExportError as e:
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

