"""`ace env replay tau2`: τ²'s gold through the bounded runner and ACE's verifier, counted per domain."""

from __future__ import annotations

import dataclasses
import json

import pytest

import ace.cli.envcmd as envcmd
from ace.cli import main
from ace_env.tau2.env import tool_kinds
from ace_env.tau2.replay import replay_tasks
from ace_env.tau2.tasks import GoldAction, load_tasks
from ace_env.worker import Budget

KEYS = {"tasks", "passed", "failed", "errors", "tasks_per_s"}  # per group, as `ace env replay bfcl --json` prints


def test_airline_json_replays_all_50(capsys):
    assert main(["env", "replay", "tau2", "--tasks", "tau2:airline", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert list(out) == ["airline"] and set(out["airline"]) == KEYS
    a = out["airline"]
    assert (a["tasks"], a["passed"], a["failed"], a["errors"]) == (50, 50, 0, 0)
    assert a["tasks_per_s"] > 0
    assert captured.err == ""  # --json: no progress


def test_retail_and_telecom_from_the_spec_alone(capsys):
    """No positional: the environment is the one --tasks names; the table has a row per domain."""
    assert main(["env", "replay", "--tasks", "tau2:retail,telecom"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:6]]
            for line in out.splitlines() if line.startswith("│")}
    assert rows == {"retail": ["114", "114", "0", "0"], "telecom": ["114", "114", "0", "0"]}


@pytest.mark.parametrize("argv", [
    ["bfcl", "--tasks", "tau2:airline"],
    ["tau2", "--tasks", "bfcl:base"],
    ["tau2", "--category", "base"],
    ["hotel"],
])
def test_environment_and_spec_must_agree(argv, capsys):
    assert main(["env", "replay", *argv]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), captured.err
    assert captured.out == ""


def _broken_airline_task():
    """An airline task whose gold lost its last write: its replay cannot reach the gold state."""
    kinds = tool_kinds("airline")
    task = next(t for t in load_tasks("airline")
                if any(kinds.get((a.requestor, a.name)) == "write" for a in t.gold_actions))
    last = max(i for i, a in enumerate(task.gold_actions) if kinds.get((a.requestor, a.name)) == "write")
    return dataclasses.replace(task, gold_actions=task.gold_actions[:last] + task.gold_actions[last + 1:])


def test_a_wrong_gold_fails_and_exits_1(monkeypatch, capsys):
    broken = _broken_airline_task()
    good = load_tasks("airline")[-1]
    monkeypatch.setattr(envcmd, "load_every_task", lambda spec, budget=None: {good.id: good, broken.id: broken})
    assert main(["env", "replay", "tau2", "--tasks", "tau2:airline", "--json"]) == 1
    a = json.loads(capsys.readouterr().out)["airline"]
    assert (a["tasks"], a["passed"], a["failed"], a["errors"]) == (2, 1, 1, 0)


def test_a_call_over_budget_is_an_error_not_a_hang():
    task = load_tasks("airline")[1]
    slow = dataclasses.replace(task, gold_actions=(GoldAction("calculate", {"expression": "9**9**9**9"}),))
    seen = []
    result = replay_tasks([slow, _broken_airline_task(), load_tasks("retail")[0]], Budget(call_seconds=1.0),
                          on_task=seen.append)
    assert seen == [1, 1, 1]
    a, r = result["airline"], result["retail"]
    assert (a["tasks"], a["passed"], a["failed"], a["errors"]) == (2, 0, 2, 1)
    assert (r["tasks"], r["passed"], r["failed"], r["errors"]) == (1, 1, 0, 0)
    assert a["failures"][0] == f"{slow.id}: timeout"
    assert "state differs from gold" in a["failures"][1]
