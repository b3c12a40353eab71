"""BFCL's own export format (its entry's ``export_writer``, ``ace export --format bfcl``): BFCL v4 multi-turn
question and possible-answer files, and the wrong-way twins the tasks offer (see :mod:`train.export`'s module
doc).  Moved here from ``train/export.py``; what it writes is unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ace_env import bfcl, twins
from ace_env.calls import Call, parse_call
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
