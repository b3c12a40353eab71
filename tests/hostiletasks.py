"""Hostile task files, written from installed tasks with one thing changed, shared by both test tiers
(tests/unit/test_task_file_bounds.py, and the hostile command corpus in tests/integration/test_corpus.py).

Each writer takes the path to write and returns it.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

from ace_env.taskfile import TASK_FILE_MAX_BYTES, TASK_LINE_MAX_BYTES
from ace_env.tasksets import load_task_set
from ace_env.tau2.env import pristine
from ace_env.tau2.synthtasks import build_task, tau2_json, to_row
from train.export import export

#: A gold call that never returns to the interpreter: one C-level power (τ²'s airline `calculate` takes it).
RUNAWAY_EXPRESSION = "9**9**9**9"
#: A BFCL ground-truth call that does the same (MathAPI's `power`).
RUNAWAY_BFCL_CALL = "power(base=10, exponent=1000000000)"


def _airline_seed() -> tuple[str, dict]:
    task = load_task_set("tau2:airline", any_environment=True)["tau2:airline:1"]
    return task.id, copy.deepcopy(tau2_json(task))


def _write_tau2(path: Path, task_json: dict, seed: str) -> Path:
    task = build_task("airline", task_json, {"seed": seed})
    path.write_text(json.dumps(to_row(task), default=str) + "\n", encoding="utf-8")
    return path


def tau2_runaway_gold(path: Path) -> Path:
    """A τ² task file (one airline task) whose gold ends with ``calculate(expression="9**9**9**9")``."""
    seed, d = _airline_seed()
    d["evaluation_criteria"]["actions"] = list(d["evaluation_criteria"]["actions"] or []) + [
        {"action_id": "runaway", "requestor": "assistant", "name": "calculate",
         "arguments": {"expression": RUNAWAY_EXPRESSION}, "info": None, "compare_args": None}]
    return _write_tau2(path, d, seed)


def tau2_many_flights(path: Path, flights: int = 2_000) -> Path:
    """A τ² task file (one airline task) whose initial state adds ``flights`` flights (about 4.7 KB each; the
    default makes a line of 9 MB, over :data:`~ace_env.taskfile.TASK_LINE_MAX_BYTES`)."""
    seed, d = _airline_seed()
    template = next(iter(pristine("airline")[0].flights.values())).model_dump()
    added = {f"ZZ{k:06d}": {**template, "flight_number": f"ZZ{k:06d}"} for k in range(flights)}
    d["initial_state"] = {"initialization_data": {"agent_data": {"flights": added}, "user_data": None},
                          "initialization_actions": None, "message_history": None}
    path = _write_tau2(path, d, seed)
    assert path.stat().st_size > TASK_LINE_MAX_BYTES or flights < 2_000
    return path


def bfcl_folder_runaway_gold(folder: Path) -> Path:
    """A BFCL folder (as `ace export --format bfcl` writes) of one task whose first ground-truth call is
    ``power(base=10, exponent=1000000000)``."""
    task = load_task_set("bfcl:base")["multi_turn_base_15"]
    d = task.to_dict()
    d["id"], d["source"] = "mine_0", "user"
    d["turns"][0]["ground_truth"] = ["ls()"]  # exported as is, then made runaway in the file
    src = folder.parent / f"{folder.name}-src.jsonl"
    src.write_text(json.dumps(d) + "\n", encoding="utf-8")
    export(load_task_set(str(src)).values(), "bfcl", folder)
    src.unlink()
    (answers,) = (folder / "possible_answer").glob("*.json")
    text = answers.read_text(encoding="utf-8")
    assert text.count('"ls()"') == 1
    answers.write_text(text.replace('"ls()"', json.dumps(RUNAWAY_BFCL_CALL)), encoding="utf-8")
    return folder


def over_the_file_cap(path: Path) -> Path:
    """A file one byte over :data:`~ace_env.taskfile.TASK_FILE_MAX_BYTES` (sparse: no disk is used)."""
    with open(path, "wb") as f:
        f.truncate(TASK_FILE_MAX_BYTES + 1)
    assert os.stat(path).st_size == TASK_FILE_MAX_BYTES + 1
    return path
