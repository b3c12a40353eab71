"""Issue 13, defects 1, 2 and 7: bounded tool calls, a failing line is data, ids are not coerced."""

from __future__ import annotations

import json
import time

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.bounded import BoundedVerifier, LineError
from ace_env.calls import MalformedCall, parse_call
from ace_env.errors import ConfigError, RolloutFormatError
from ace_env.executor import ERROR, RolloutState
from ace_env.formats import read_any
from ace_env.tasksets import load_task_set
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT, ground_truth_rollout
from ace_env.worker import Budget

TASK = "multi_turn_base_15"  # GorillaFileSystem + MathAPI
RUNAWAYS = [
    "power(base=10, exponent=1000000000)",
    "square_root(number=2, precision=100000000)",
    "logarithm(value=2, base=3, precision=1000000)",
]


@pytest.fixture(scope="module")
def tasks():
    return load_task_set("bfcl:base")


def _deep(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_math_task_offers_the_runaway_tools(tasks):
    offered = tasks[TASK].offered_tools(0)
    assert {"power", "square_root", "logarithm"} <= offered


def test_runaway_calls_end_only_their_rollout(tasks):
    gt = ground_truth_rollout(tasks[TASK])
    items = [(TASK, gt, "before")] + [(TASK, [[c]], f"r{i}") for i, c in enumerate(RUNAWAYS)] + [(TASK, gt, "after")]
    start = time.monotonic()
    with BoundedVerifier(tasks, Budget(call_seconds=1.5, memory_mb=256)) as bv:
        results = bv.verify_many(items)
    elapsed = time.monotonic() - start
    assert results[0].reward == 1.0 and results[-1].reward == 1.0
    for r in results[1:-1]:
        assert r.reward == 0.0
        assert r.attribution in (TIMEOUT, RESOURCE_LIMIT), r.attribution
        assert (r.failing_turn, r.failing_step) == (0, 0)
    assert elapsed < 60  # three budgets of 1.5 s plus restarts, not minutes


def test_memory_budget_gives_resource_limit(tasks):
    with BoundedVerifier(tasks, Budget(call_seconds=120, memory_mb=200)) as bv:
        [r] = bv.verify_many([(TASK, [["square_root(number=2, precision=100000000)"]], "mem")])
    assert (r.reward, r.attribution) == (0.0, RESOURCE_LIMIT)


def test_over_budget_oracle_fails_its_rollouts_once(tasks):
    task = tasks[TASK]
    bad = type(task).from_dict({**task.to_dict(), "id": "runaway_oracle"})
    bad.turns[0].ground_truth = ["power(base=10, exponent=1000000000)"]
    pool = {**tasks, bad.id: bad}
    start = time.monotonic()
    with BoundedVerifier(pool, Budget(call_seconds=1.0)) as bv:
        results = bv.verify_many([(bad.id, [], f"x{i}") for i in range(4)] + [(TASK, ground_truth_rollout(task), "ok")])
        assert bv.restarts == 1  # the oracle ran over budget once; later rollouts of the task were not run
    assert all(r.attribution == TIMEOUT and "oracle" in r.detail for r in results[:4])
    assert results[4].reward == 1.0
    assert time.monotonic() - start < 30


def test_budget_is_validated_and_read_from_env(monkeypatch):
    with pytest.raises(ConfigError):
        Budget(call_seconds=0)
    with pytest.raises(ConfigError):
        Budget(memory_mb=-5)
    monkeypatch.setenv("ACE_CALL_TIMEOUT", "2.5")
    monkeypatch.setenv("ACE_MEMORY_LIMIT_MB", "300")
    assert Budget.from_env() == Budget(2.5, 300)
    assert Budget.from_env(call_seconds=4) == Budget(4, 300)
    monkeypatch.setenv("ACE_CALL_TIMEOUT", "soon")
    with pytest.raises(ConfigError):
        Budget.from_env()


def test_cli_verify_goes_on_past_a_runaway_call(tmp_path, capsys, tasks):
    gt = ground_truth_rollout(tasks[TASK])
    f = _write(tmp_path / "r.jsonl", [
        {"rollout_id": "a", "task_id": TASK, "turns": gt},
        {"rollout_id": "b", "task_id": TASK, "turns": [[RUNAWAYS[0]]]},
        {"rollout_id": "c", "task_id": TASK, "turns": gt},
    ])
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json", "--call-timeout", "1"]) == 0
    verdicts = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(v["rollout_id"], v["reward"], v["attribution"]) for v in verdicts] == [
        ("a", 1.0, None), ("b", 0.0, "timeout"), ("c", 1.0, None)]


# --------------------------------------------------------------------------- defect 2


def test_int_over_4300_digits_is_an_error_output(tasks):
    r = RolloutState(tasks[TASK]).call("power(base=10, exponent=5000)", 0)
    assert r.status == ERROR
    assert r.output.startswith("Error during execution:") and "4300" in r.output


@pytest.mark.parametrize("depth", [491, 977])
def test_deep_object_arguments_are_malformed_not_a_crash(depth):
    parsed = parse_call({"name": "mkdir", "arguments": {"dir_name": _deep(depth)}})
    assert isinstance(parsed, MalformedCall) and "nested deeper" in parsed.reason


@pytest.mark.parametrize("depth", [491, 977])
def test_deep_lines_are_line_errors(tmp_path, capsys, tasks, depth):
    gt = ground_truth_rollout(tasks[TASK])
    # Written by hand: json.dumps itself refuses to nest this deep.
    deep_line = ('{"rollout_id": "deep", "task_id": "%s", "turns": [[{"name": "mkdir", "arguments": {"dir_name": %s}}]]}'
                 % (TASK, "[" * depth + "1" + "]" * depth))
    rows = [
        {"rollout_id": "a", "task_id": TASK, "turns": gt},
        deep_line,
        {"rollout_id": "big", "task_id": TASK, "turns": [["power(base=10, exponent=5000)"]]},
        {"rollout_id": "z", "task_id": TASK, "turns": gt},
    ]
    f = _write(tmp_path / "r.jsonl", rows)
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json", "--skip-invalid"]) == 0
    out = capsys.readouterr()
    assert [json.loads(x)["rollout_id"] for x in out.out.splitlines()] == ["a", "big", "z"]
    assert "line 2" in out.err and "nested" in out.err
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json"]) == 1
    out = capsys.readouterr()
    assert [json.loads(x)["rollout_id"] for x in out.out.splitlines()] == ["a"]  # stops at line 2
    assert "Traceback" not in out.err and len(out.err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- defect 7


def test_null_rollout_id_is_named_by_line_not_none(tmp_path):
    f = _write(tmp_path / "r.jsonl", [{"rollout_id": None, "task_id": TASK, "turns": []}])
    [r] = list(read_any(f))
    assert r.rollout_id == "r.jsonl:line-1"


def test_integer_ids_are_refused_not_coerced(tmp_path):
    f = _write(tmp_path / "r.jsonl", [
        {"rollout_id": "1", "task_id": TASK, "turns": []},
        {"rollout_id": 1, "task_id": TASK, "turns": []},
        {"id": 2, "task_id": TASK, "messages": []},
    ])
    with pytest.raises(RolloutFormatError, match="line 2: 'rollout_id' must be a non-empty string, not 1"):
        list(read_any(f))
    errors: list[str] = []
    assert [r.rollout_id for r in read_any(f, skip_invalid=True, errors=errors)] == ["1"]
    assert len(errors) == 2 and "line 3: 'id'" in errors[1]


def test_unknown_task_is_a_line_error(tasks):
    with BoundedVerifier(tasks) as bv:
        [r] = bv.verify_many([("no_such_task", [], "x")])
    assert isinstance(r, LineError) and "no_such_task" in r.message


def test_bfcl_has_the_math_class():
    assert bfcl.api_class("MathAPI").__name__ == "MathAPI"


def test_a_worker_stuck_outside_any_tool_call_is_ended_too(tasks, monkeypatch):
    """The call watchdog covers tool calls; ACE's own code between them (parsing, pickling) is bounded by
    the stall limit: the worker's clock not moving for stall_seconds ends that rollout, not the run."""
    import ace_env.bounded as bounded

    real = bounded.verify_one

    def stuck_on_one(tasks_, task_id, turns, rollout_id, *args):
        while rollout_id == "stuck":  # spins in ACE's code: no tool call is ever stamped
            time.sleep(0.05)
        return real(tasks_, task_id, turns, rollout_id, *args)

    monkeypatch.setattr(bounded, "verify_one", stuck_on_one)  # before the fork: the worker runs it
    gt = ground_truth_rollout(tasks[TASK])
    bv = BoundedVerifier(tasks, Budget(call_seconds=0.5))
    bv.stall_floor, bv.stall_factor = 3.0, 1.0
    start = time.monotonic()
    with bv:
        results = bv.verify_many([(TASK, gt, "before"), (TASK, gt, "stuck"), (TASK, gt, "after")])
    assert time.monotonic() - start < 30
    assert results[0].reward == 1.0 and results[2].reward == 1.0
    assert results[1].reward == 0.0 and results[1].attribution == TIMEOUT
    assert "no progress for 3 s outside any tool call" in results[1].detail


def test_a_worker_busy_between_short_calls_is_not_taken_for_stuck(tasks, monkeypatch):
    """Many quick calls with ACE's own work between them, longer than the stall limit in all: the
    calls counted in the clock show progress even when each one ends between two of the watchdog's looks."""
    import ace_env.bounded as bounded

    real = bounded.verify_one

    def busy(tasks_, task_id, turns, rollout_id, *args):
        if rollout_id == "busy":
            env = RolloutState(tasks_[task_id])
            end = time.monotonic() + 6.0
            while time.monotonic() < end:
                env.call("pwd()", 0)  # microseconds, stamped and counted
                time.sleep(0.3)  # "ACE's own work" between calls
        return real(tasks_, task_id, turns, rollout_id, *args)

    monkeypatch.setattr(bounded, "verify_one", busy)
    gt = ground_truth_rollout(tasks[TASK])
    bv = BoundedVerifier(tasks, Budget(call_seconds=0.5))
    bv.stall_floor, bv.stall_factor = 3.0, 1.0  # ten of the 0.3 s gaps between calls
    with bv:
        (result,) = bv.verify_many([(TASK, gt, "busy")])
    assert result.reward == 1.0, result.detail
    assert bv.restarts == 0
