"""The BFCL v4 multi-turn environment, imported from the ``bfcl-eval`` package.

ACE never copies BFCL's code or data: it reads the package's data files and
instantiates its API classes.  This module turns BFCL's question /
possible-answer files into :class:`ace_env.tasks.Task` objects and exposes the
function docs (JSON schemas) and the Python classes behind them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace_env.cache import cached_pickle
from ace_env.calls import Call, parse_call
from ace_env.errors import TaskLoadError
from ace_env.taskfile import check_task_file_size, task_file_lines
from ace_env.tasks import ADDED_TOOLS_PROMPT, Task, Turn  # ADDED_TOOLS_PROMPT: BFCL's miss_func sentence
from ace_env.workspace import check_readable

BFCL_VERSION = "2026.3.23"

#: The scored multi-turn categories, in BFCL's order.
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")

#: The eight executable API classes of the multi-turn suite.
CLASSES = (
    "GorillaFileSystem",
    "MathAPI",
    "MessageAPI",
    "TwitterAPI",
    "TicketAPI",
    "TradingBot",
    "TravelAPI",
    "VehicleControlAPI",
)



def installed_version() -> str:
    """The installed bfcl-eval version ("missing" when it is not installed)."""
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _package_dir() -> Path:
    try:
        import bfcl_eval
    except ModuleNotFoundError as e:
        raise TaskLoadError(
            "The bfcl-eval package is not installed. Install it with "
            f"`pip install --no-deps bfcl-eval=={BFCL_VERSION} mpmath` "
            "(or run scripts/setup.sh)."
        ) from e
    return Path(bfcl_eval.__file__).parent


@dataclass(frozen=True)
class FunctionInfo:
    """One BFCL function: its class and its JSON-schema doc."""

    name: str
    class_name: str
    doc: dict[str, Any]


@functools.cache
def _backend() -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    _package_dir()
    from bfcl_eval.constants.executable_backend_config import (
        CLASS_FILE_PATH_MAPPING,
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        STATELESS_CLASSES,
    )

    return CLASS_FILE_PATH_MAPPING, MULTI_TURN_FUNC_DOC_FILE_MAPPING, frozenset(STATELESS_CLASSES)


def is_stateless(class_name: str) -> bool:
    """BFCL classes that take no initial configuration (MathAPI)."""
    return class_name in _backend()[2]


@functools.cache
def api_class(class_name: str) -> type:
    """The Python class behind a BFCL API name, e.g. ``TwitterAPI``."""
    modules, _, _ = _backend()
    if class_name not in modules:
        raise TaskLoadError(f"Unknown BFCL class {class_name!r}; known: {sorted(modules)}")
    return getattr(importlib.import_module(modules[class_name]), class_name)


@functools.cache
def method_signature(class_name: str, method: str) -> inspect.Signature:
    """The signature of a BFCL API method as an agent calls it: without ``self``."""
    sig = inspect.signature(getattr(api_class(class_name), method))
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "self"])


def signature(name: str) -> inspect.Signature | None:
    """The signature (without ``self``) of a multi-turn function by name; None when unknown."""
    info = functions().get(name)
    return None if info is None else method_signature(info.class_name, name)


@functools.cache
def functions() -> dict[str, FunctionInfo]:
    """Every multi-turn function by name (128 of them), with its doc."""
    _, doc_files, _ = _backend()
    doc_dir = _package_dir() / "data" / "multi_turn_func_doc"
    out: dict[str, FunctionInfo] = {}
    for class_name in CLASSES:
        with open(doc_dir / doc_files[class_name], encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    doc = json.loads(line)
                    out[doc["name"]] = FunctionInfo(doc["name"], class_name, doc)
    return out


def class_functions(class_name: str) -> list[str]:
    """Function names of one class, in the doc file's order."""
    return [f.name for f in functions().values() if f.class_name == class_name]


def tool_schema(name: str) -> dict[str, Any]:
    """An OpenAI-style tool schema for a BFCL function (its doc, type names fixed)."""
    doc = functions()[name].doc
    params = json.loads(json.dumps(doc.get("parameters", {"type": "object", "properties": {}})))
    _fix_types(params)
    return {
        "type": "function",
        "function": {"name": name, "description": doc.get("description", ""), "parameters": params},
    }


_TYPE_FIX = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


def _fix_types(schema: Any) -> None:
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            schema["type"] = _TYPE_FIX.get(schema["type"], schema["type"])
        for v in schema.values():
            _fix_types(v)
    elif isinstance(schema, list):
        for v in schema:
            _fix_types(v)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """A BFCL file's entries, one JSON object a line, under the task-file size caps (:mod:`ace_env.taskfile`)."""
    return [json.loads(line) for _, line in task_file_lines(path)]


_PICKLED: dict[str, bytes] = {}


def _load_category(category: str) -> tuple[Task, ...]:
    """The category's tasks as fresh objects: a caller may edit its copy without touching another's.

    Built once per bfcl-eval and ACE version and kept pickled on disk; every
    call after the first unpickles a new copy (cheaper than ``copy.deepcopy``
    or rebuilding from BFCL's files; see benchmarks/RESULTS.md).
    """
    data = _PICKLED.get(category)
    if data is not None:
        return pickle.loads(data)
    data, tasks = cached_pickle(
        "bfcl-tasks",
        category,
        lambda: _build_category(category),
        sources=[Path(__file__), Path(__file__).parents[1] / "tasks.py"],
        salt=installed_version(),
    )
    _PICKLED[category] = data
    return tasks


def _build_category(category: str) -> tuple[Task, ...]:
    data = _package_dir() / "data"
    questions = _read_jsonl(data / f"BFCL_v4_multi_turn_{category}.json")
    answers = {
        a["id"]: a["ground_truth"]
        for a in _read_jsonl(data / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json")
    }
    tasks = []
    for q in questions:
        if q["id"] not in answers:
            raise TaskLoadError(f"BFCL task {q['id']} has no ground truth in possible_answer/")
        tasks.append(_to_task(q, answers[q["id"]], category))
    return tuple(tasks)


def _to_task(q: dict[str, Any], ground_truth: list[list[str]], category: str) -> Task:
    if len(q["question"]) != len(ground_truth):
        raise TaskLoadError(
            f"BFCL task {q['id']}: {len(q['question'])} user turns but "
            f"{len(ground_truth)} ground-truth turns"
        )
    missed = {int(k): list(v) for k, v in (q.get("missed_function") or {}).items()}
    excluded = set(q.get("excluded_function") or [])
    tools = [
        name
        for cls in q["involved_classes"]
        for name in class_functions(cls)
        if name not in excluded
    ]
    # a function a turn adds that its classes' docs lack (an exported ACE twin) is offered from that turn
    tools += [n for names in missed.values() for n in names if n not in tools and n not in excluded]
    repairs = _repair_withheld(q["id"], missed, ground_truth)
    turns = []
    for i, (messages, calls) in enumerate(zip(q["question"], ground_truth)):
        added = missed.get(i, [])
        user = list(messages)
        if not user and added:
            user = [{"role": "user", "content": ADDED_TOOLS_PROMPT}]
        turns.append(Turn(user=user, ground_truth=list(calls), tools_added=added))
    return Task(
        id=q["id"],
        source="bfcl",
        category=category,
        turns=turns,
        initial_config=q.get("initial_config", {}),
        involved_classes=list(q["involved_classes"]),
        tools=tools,
        long_context="long_context" in category,
        provenance={
            "source": "bfcl-eval",
            "version": BFCL_VERSION,
            "category": f"multi_turn_{category}",
            "excluded_function": sorted(excluded),
            "repairs": repairs,
        },
    )


def _repair_withheld(task_id: str, missed: dict[int, list[str]], ground_truth: list[list[str]]) -> list[str]:
    """Offer a withheld function from the first turn whose ground truth calls it.

    One BFCL task (miss_func_49) withholds ``tail`` until turn 3 while its
    ground truth calls it in turn 1; BFCL's checker does not notice because it
    executes withheld functions.  ACE refuses calls to withheld tools, so it
    offers such a function from its first use instead and records the repair.
    Edits ``missed`` in place; returns one line per repair.
    """

    repairs = []
    for turn_added, names in list(missed.items()):
        for name in list(names):
            first_use = next(
                (
                    t
                    for t, calls in enumerate(ground_truth)
                    if any(isinstance(c, Call) and c.name == name for c in map(parse_call, calls))
                ),
                None,
            )
            if first_use is not None and first_use < turn_added:
                names.remove(name)
                missed.setdefault(first_use, []).append(name)
                repairs.append(
                    f"{name}: withheld until turn {turn_added} but the ground truth calls it "
                    f"in turn {first_use}; offered from turn {first_use}"
                )
    return repairs


def load_tasks(category: str = "all") -> list[Task]:
    """Load BFCL multi-turn tasks: one category, or ``all`` four scored ones.

    The unused ``composite`` set is refused: most of its ground truth is broken.
    """
    category = category.removeprefix("multi_turn_")
    if category == "composite":
        raise TaskLoadError(
            "BFCL's multi_turn_composite set is not scored by BFCL and its ground truth "
            "is stale (most tasks contain broken calls); ACE does not load it. "
            f"Use one of: {', '.join(CATEGORIES)} or all."
        )
    if category == "all":
        return [t for c in CATEGORIES for t in _load_category(c)]
    if category not in CATEGORIES:
        raise TaskLoadError(
            f"Unknown BFCL category {category!r}. Use one of: {', '.join(CATEGORIES)} or all."
        )
    return list(_load_category(category))


#: Source of a task read back from a folder of BFCL files (``ace export --format bfcl``); its id is the file's.
EXPORT_SOURCE = "bfcl-export"


def _question_files(folder: Path) -> list[tuple[str, Path, Path]]:
    """``(category, question file, answer file)`` for every BFCL multi-turn question file in ``folder``.

    Both namings are read: BFCL's own (``BFCL_v4_multi_turn_base.json`` with
    ``possible_answer/BFCL_v4_multi_turn_base.json``) and the export's
    (``BFCL_v4_multi_turn_ace_question.json`` with
    ``possible_answer/BFCL_v4_multi_turn_ace_possible_answer.json``).
    """
    out = []
    for q in sorted(folder.glob("BFCL_v4_multi_turn_*.json")):
        stem = q.name.removeprefix("BFCL_v4_multi_turn_").removesuffix(".json")
        if stem.endswith("_question"):
            category = stem.removesuffix("_question")
            answer = folder / "possible_answer" / f"BFCL_v4_multi_turn_{category}_possible_answer.json"
        else:
            category, answer = stem, folder / "possible_answer" / q.name
        if stem.endswith("_result"):
            continue  # a result file of `bfcl generate`, not questions
        out.append((category, q, answer))
    return out


def is_bfcl_folder(folder: str | Path) -> bool:
    """True when ``folder`` holds BFCL multi-turn question files (an export, or BFCL's own data folder)."""
    folder = Path(folder)
    return folder.is_dir() and bool(_question_files(folder))


def _category_of(entry_id: str, file_category: str) -> str:
    head = entry_id.removeprefix("multi_turn_").rpartition("_")[0]
    return head if head in CATEGORIES else file_category


def load_folder(folder: str | Path) -> list[Task]:
    """Tasks from a folder of BFCL multi-turn files, ids as the files give them (what BFCL's results carry).

    An entry with the id of one of BFCL's own tasks must be that task unchanged
    and loads as it; any other entry loads as a task of source ``bfcl-export``
    (its functions offered as the files say, the question's empty turns given
    BFCL's "more functions" message).  What BFCL's format cannot carry
    (distractors as such, output views) is not there to read back.
    """
    folder = Path(folder)
    files = _question_files(folder)
    if not files:
        raise TaskLoadError(f"{folder} holds no BFCL question files (BFCL_v4_multi_turn_*.json)")
    # the folder as a whole is one task file for the size cap (each file's lines are capped as they are read)
    check_task_file_size(folder, sum(p.stat().st_size for _, q, a in files for p in (q, a) if p.is_file()))
    own = {t.id: t for t in load_tasks("all")}
    tasks: list[Task] = []
    seen: set[str] = set()
    for file_category, qpath, apath in files:
        check_readable(qpath, "BFCL question file")  # a FIFO named like one would block the read
        if not apath.is_file():
            raise TaskLoadError(f"{qpath} has no possible-answer file {apath}")
        try:
            questions, answers = _read_jsonl(qpath), {a["id"]: a["ground_truth"] for a in _read_jsonl(apath)}
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise TaskLoadError(f"{qpath} or its answers are not BFCL JSONL ({type(e).__name__}: {e})") from e
        for n, q in enumerate(questions, 1):
            where = f"{qpath.name}:{n}"
            if not isinstance(q, dict) or not isinstance(q.get("id"), str):
                raise TaskLoadError(f"{where}: a question entry needs a string 'id'")
            entry_id = q["id"]
            if entry_id in seen:
                raise TaskLoadError(f"{where}: id {entry_id!r} appears twice in {folder}")
            seen.add(entry_id)
            if entry_id not in answers:
                raise TaskLoadError(f"{where}: {entry_id} has no ground truth in {apath.name}")
            category = _category_of(entry_id, file_category)
            try:
                task = _to_task(q, answers[entry_id], category)
            except (KeyError, TypeError, AttributeError) as e:
                raise TaskLoadError(f"{where}: not a BFCL multi-turn entry ({type(e).__name__}: {e})") from e
            theirs = own.get(entry_id)
            if theirs is not None:
                if [(t.user, t.ground_truth, t.tools_added) for t in task.turns] != \
                        [(t.user, t.ground_truth, t.tools_added) for t in theirs.turns] or \
                        (task.initial_config, task.involved_classes, task.tools) != \
                        (theirs.initial_config, theirs.involved_classes, theirs.tools):
                    raise TaskLoadError(f"{where}: {entry_id} is the id of a BFCL task but the entry differs from it")
                tasks.append(theirs)
                continue
            d = task.to_dict()
            d["source"] = EXPORT_SOURCE
            d["long_context"] = "long_context" in category
            d["provenance"] = {"source": EXPORT_SOURCE, "file": qpath.name,
                               "excluded_function": sorted(q.get("excluded_function") or [])}
            tasks.append(Task.from_dict(d))
    return tasks


def raw_entry(task: Task) -> dict[str, Any]:
    """The task as BFCL's official checker expects its ``test_entry``."""
    return {
        "id": task.id if task.source in ("bfcl", EXPORT_SOURCE) else f"multi_turn_ace_{task.id}",
        "initial_config": task.initial_config,
        "involved_classes": task.involved_classes,
    }
