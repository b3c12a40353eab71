"""BFCL's exports: its own format (its entry's ``export_writer``, ``ace export --format bfcl``): BFCL v4
multi-turn question and possible-answer files, and the wrong-way twins the tasks offer; and its tasks as rows of
the common JSON-lines formats (its entry's ``export_rows``): ``trl`` (:func:`to_trl`, the task's own turns) and
``openai-sft`` (:func:`to_openai_sft`, the oracle played over them).  See :mod:`train.export`'s module doc for
what each file holds.  Moved here from ``train/export.py``; what it writes is unchanged.

A task a row cannot be written for raises :class:`~ace_env.goldprefix.GoldPrefixError` (the training layer's
``train.export`` turns it into its ``ExportError``, with the same message)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable

from ace_env import bfcl, twins
from ace_env.calls import Call, parse_call
from ace_env.executor import OK
from ace_env.goldprefix import ABSTAIN_MESSAGE, SYSTEM_PROMPT, GoldPrefixError
from ace_env.oracle import oracle_for
from ace_env.tasks import Task

#: The source BFCL's own tasks carry (its entry's ``own_source``): their long-context ones stay in the main files.
OWN_SOURCE = "bfcl"
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


def write_bfcl(tasks: Iterable[Task], tmp: Path, report: Any) -> None:
    """Write ``tasks`` as BFCL's multi-turn files under ``tmp`` (:mod:`train.export`'s module doc says what each
    holds); ``report`` (:class:`train.export.ExportReport`) counts what was written, skipped and noted."""
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
            long = task.long_context and task.source != OWN_SOURCE
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


def _write_twins(names: list[str], tmp: Path) -> None:
    """The twins the written tasks offer, as real functions: docs by BFCL doc file, and a module implementing them."""
    (tmp / TWIN_DOC_DIR).mkdir()
    for file_name, lines in sorted(twins.doc_lines(sorted(set(names))).items()):
        (tmp / TWIN_DOC_DIR / file_name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (tmp / TWIN_MODULE_FILE).write_text(twins.module_source(sorted(set(names))), encoding="utf-8")


# --------------------------------------------------------------------------- trl / openai-sft rows

#: Characters of one tool result kept in a closing message (:func:`closing_text`).
CLOSING_RESULT_CHARS = 200
#: Why an ``openai-sft`` export skips a task with a no-call turn before a turn that offers more tools.
REFUSES_A_LATER_TOOL = ("makes no call in a turn that lacks tools a later turn offers: OpenAI's format has one tool "
                "list per conversation, and listing those tools from the start would teach refusing an offered tool")
#: Why an export skips a task without turns (no row of either format can be written for it).
NO_TURNS = "has no turns"


def _schemas(task: Task, names: Iterable[str]) -> list[dict[str, Any]]:
    functions = twins.all_functions()
    missing = [n for n in names if n not in functions]
    if missing:
        raise GoldPrefixError(f"task {task.id}: no schema for tool(s) {', '.join(sorted(missing))}")
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
        raise GoldPrefixError(f"task {task.id}: the oracle does not execute cleanly ({(oracle.errors or ['?'])[0]})")
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    n = 0
    for t, (turn, oturn) in enumerate(zip(task.turns, oracle.turns)):
        messages.append(_user_message(turn))
        results: list[tuple[str, str]] = []
        for raw, ostep in zip(turn.ground_truth, oturn.steps):
            call = parse_call(raw)
            if not isinstance(call, Call):
                raise GoldPrefixError(f"task {task.id}: turn {t}: malformed ground truth {raw!r}")
            call_id = f"call_{t}_{n}"
            n += 1
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name,
                                 "arguments": json.dumps(twins.tool_arguments(call))},
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


def trl_refusal(task: Task) -> str | None:
    """Why a ``trl`` export leaves the task out, or None."""
    return None if task.turns else NO_TURNS


def openai_sft_refusal(task: Task) -> str | None:
    """Why an ``openai-sft`` export leaves the task out (no turns; :func:`refuses_a_later_tool`), or None."""
    if not task.turns:
        return NO_TURNS
    return REFUSES_A_LATER_TOOL if refuses_a_later_tool(task) else None


#: What ``dataset_info.json`` of a ``trl`` export says of BFCL's rows.
TRL_INFO = {
    "columns": TRL_COLUMNS,
    "system_prompt": SYSTEM_PROMPT,
    "load": "datasets.load_dataset('json', data_files='train.jsonl'); "
            "task = ace_env.tasks.Task.from_dict(json.loads(row['task']))",
}
