"""Issue 35, defects 2 and 8: loading a task file is bounded.

Every call a task file's gold makes at load runs in the watched worker under the call budget, so a runaway
gold call refuses the file in one line (τ²: ``calculate(expression="9**9**9**9")``; BFCL:
``power(base=10, exponent=1000000000)``); and a task file, or one of its lines, over the documented size is
refused in one line before it is parsed.  On the code before the fix the τ² cases hung for ever (the gold
check ran in-process) and the size cases took minutes and gigabytes, so the CLI cases run in a subprocess
with a deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostiletasks import bfcl_folder_runaway_gold, over_the_file_cap, tau2_many_flights, tau2_runaway_gold

from ace.cli import main
from ace_env import bfcl
from ace_env.errors import TaskLoadError
from ace_env.taskfile import TASK_FILE_MAX_BYTES, TASK_LINE_MAX_BYTES
from ace_env.tasksets import load_task_set
from ace_env.tau2.synthtasks import build_task, tau2_json, to_row
from ace_env.tau2.verify import gold_calls

ROOT = Path(__file__).resolve().parents[2]
CALL_BUDGET_S = 2
#: What a refused runaway may take: the call budget, plus loading τ² and forking the worker (seconds on a
#: busy 2-core machine); the code before the fix never ended.
DEADLINE_S = 120


def _ace(args: list[str], tmp_path: Path) -> tuple[int, str, float]:
    """Run ``ace ARGS`` in a fresh process under the small call budget: (exit status, stderr, seconds)."""
    env = {**os.environ, "ACE_CALL_TIMEOUT": str(CALL_BUDGET_S), "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-m", "ace.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ace {' '.join(args)}` ran past {DEADLINE_S} s")
    return p.returncode, p.stderr, time.monotonic() - start


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def runaway(tmp_path_factory) -> Path:
    return tau2_runaway_gold(tmp_path_factory.mktemp("runaway") / "runaway.jsonl")


@pytest.mark.parametrize("command", ["export", "verify"])
def test_a_tau2_task_file_whose_gold_runs_away_is_refused_within_the_budget(command, runaway, tmp_path):
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "r", "task_id": "tau2:airline:1", "turns": [[]]}) + "\n")
    args = {"export": ["export", "--tasks", str(runaway), "--format", "tau2", "--out", str(tmp_path / "out")],
            "verify": ["verify", str(rollouts), "--tasks", str(runaway)]}[command]
    rc, err, _ = _ace(args, tmp_path)
    line = _one_error(err)
    assert rc == 1 and f"{runaway}:1: the gold of " in line and "timeout" in line, line
    assert f"over the {CALL_BUDGET_S} s budget" in line, line
    assert not (tmp_path / "out").exists()


def test_the_bounded_gold_check_refuses_in_process_without_hanging(runaway, monkeypatch):
    monkeypatch.setenv("ACE_CALL_TIMEOUT", "1")
    start = time.monotonic()
    with pytest.raises(TaskLoadError, match=r"runaway\.jsonl:1: .*does not verify \(timeout: a gold call ran over the 1 s"):
        load_task_set(str(runaway), any_environment=True)
    assert time.monotonic() - start < DEADLINE_S


def test_a_tau2_task_file_verifies_its_rollouts(tmp_path, capsys):
    # `ace verify --tasks FILE` takes τ² task files `ace synth` wrote (docs/cli.md); it refused them
    seed = load_task_set("tau2:airline", any_environment=True)["tau2:airline:9"]  # its gold cancels a reservation
    task = build_task("airline", tau2_json(seed), {"seed": seed.id})
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps(to_row(task), default=str) + "\n")
    calls = [{"name": c.name, "arguments": c.arguments} for c in gold_calls(task)]
    assert calls
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "gold", "task_id": task.id, "turns": [calls]}) + "\n"
                        + json.dumps({"rollout_id": "none", "task_id": task.id, "turns": [[]]}) + "\n")
    assert main(["verify", str(rollouts), "--tasks", str(tasks), "--json"]) == 0
    verdicts = {v["rollout_id"]: v["reward"] for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert verdicts == {"gold": 1.0, "none": 0.0}


def test_a_bfcl_folder_whose_ground_truth_runs_away_is_refused_at_load(tmp_path, monkeypatch):
    # the folder loaded, and `ace export --format openai-sft` then ran its oracle in-process for ever
    folder = bfcl_folder_runaway_gold(tmp_path / "bfcl")
    monkeypatch.setenv("ACE_CALL_TIMEOUT", "1")
    with pytest.raises(TaskLoadError, match=r"bfcl: task multi_turn_ace_mine_0: .*ran over budget \(timeout"):
        load_task_set(str(folder))


def test_a_task_line_over_the_cap_is_refused_before_it_is_parsed(tmp_path):
    # 100,000 flights (18 MB) on one line took 48-113 s; 2,000 big ones (9 MB) are refused at once
    path = tau2_many_flights(tmp_path / "flights.jsonl")
    start = time.monotonic()
    for any_environment in (True, False):
        with pytest.raises(TaskLoadError, match=r"flights\.jsonl:1: the line is larger than a task may be \(over 1\.0 MiB"):
            load_task_set(str(path), any_environment=any_environment)
    assert time.monotonic() - start < 10


def test_the_export_of_a_task_line_over_the_cap_is_one_line(tmp_path):
    path = tau2_many_flights(tmp_path / "flights.jsonl")
    rc, err, took = _ace(["export", "--tasks", str(path), "--format", "tau2", "--out", str(tmp_path / "o")], tmp_path)
    assert rc == 1 and "the line is larger than a task may be" in _one_error(err)
    assert not (tmp_path / "o").exists()


def test_a_task_file_over_the_cap_is_refused_by_every_reader(tmp_path):
    big = over_the_file_cap(tmp_path / "big.jsonl")
    for any_environment in (True, False):
        with pytest.raises(TaskLoadError, match=r"big\.jsonl is larger than a task file may be \(32\.0 MiB; at most 32\.0 MiB\)"):
            load_task_set(str(big), any_environment=any_environment)
    folder = bfcl_folder_runaway_gold(tmp_path / "bfcl")  # a BFCL folder: its files together
    (question,) = folder.glob("BFCL_v4_multi_turn_*.json")
    with open(question, "ab") as f:
        f.truncate(TASK_FILE_MAX_BYTES)
    with pytest.raises(TaskLoadError, match=r"bfcl is larger than a task file may be"):
        load_task_set(str(folder))


def test_the_caps_are_well_above_the_real_task_files():
    ace_file = [json.dumps(t.to_dict()) + "\n" for t in bfcl.load_tasks("all")]  # every BFCL task as a task file
    assert sum(map(len, ace_file)) * 10 < TASK_FILE_MAX_BYTES and max(map(len, ace_file)) * 50 < TASK_LINE_MAX_BYTES
    tau2 = [json.dumps(to_row(build_task(t.domain, tau2_json(t), {"seed": t.id})), default=str) + "\n"
            for t in load_task_set("tau2:airline,retail", any_environment=True).values()]
    assert sum(map(len, tau2)) * 10 < TASK_FILE_MAX_BYTES and max(map(len, tau2)) * 40 < TASK_LINE_MAX_BYTES
    data = bfcl._package_dir() / "data"  # BFCL's own files, read by the same reader
    own = [p for c in bfcl.CATEGORIES for p in (data / f"BFCL_v4_multi_turn_{c}.json",
                                                 data / "possible_answer" / f"BFCL_v4_multi_turn_{c}.json")]
    assert sum(p.stat().st_size for p in own) * 10 < TASK_FILE_MAX_BYTES
    assert max(len(line) for p in own for line in p.read_bytes().splitlines()) * 20 < TASK_LINE_MAX_BYTES


def test_the_caps_are_documented():
    for doc in ("robustness.md", "cli.md"):
        text = (ROOT / "docs" / doc).read_text()
        assert "32 MiB" in text and "1 MiB" in text, doc
