"""check_task: each reason code is produced by a hand-made broken task."""

from __future__ import annotations

import copy
import random

import pytest

from ace_env import bfcl
from ace_env.tasks import Task, Turn
from synth import strategies
from synth.taskcheck import (
    DUPLICATE,
    EMPTY_ACCEPTED,
    GT_ERROR,
    GT_REJECTED,
    NO_TARGET,
    TARGET_ALTER_ACCEPTED,
    TARGET_ALTER_SKIPPED,
    TARGET_DROP_ACCEPTED,
    VALUE_MISSING,
    adjacent_positions,
    check_task,
    error_output,
    target_present,
    task_fingerprint,
)

TARGET = ("get_stock_info", "place_order")


@pytest.fixture(scope="module")
def seed():
    return next(t for t in bfcl.load_tasks("base") if adjacent_positions(t, TARGET))


def _as_ace(task: Task, target=TARGET, **prov) -> Task:
    t = Task.from_dict(copy.deepcopy(task.to_dict()))
    t.id = f"test-{task_fingerprint(t)[:8]}-{random.random()}"
    t.source = "ace-test"
    t.provenance = {"target_edge": f"{target[0]}>{target[1]}", **prov}
    return t


def test_seed_is_valid_and_duplicates_are_caught(seed):
    seen: set[str] = set()
    first = check_task(_as_ace(seed), seen)
    assert first.valid, first.reasons
    assert first.fingerprint in seen
    again = check_task(_as_ace(seed), seen)
    assert not again.valid and again.reasons == [DUPLICATE]


def test_target_present(seed):
    assert target_present(_as_ace(seed))
    assert not target_present(_as_ace(seed, target=("mv", "cd")))


def test_no_target(seed):
    check = check_task(_as_ace(seed, target=("mv", "cd")))
    assert NO_TARGET in check.reasons


def test_gt_error(seed):
    t = _as_ace(seed)
    t.turns[0].ground_truth.append("get_stock_info(symbol='NOPE')")  # {"error": ...} output
    check = check_task(t)
    assert GT_ERROR in check.reasons


def test_gt_rejected_when_a_ground_truth_call_is_not_offered(seed):
    t = _as_ace(seed)
    # the ground truth calls a tool that is not offered: it is not executed, so the oracle
    # records a not_offered step (gt_error) and the verifier rejects the rollout
    t.tools = [n for n in t.tools if n != "place_order"]
    check = check_task(t)
    assert GT_ERROR in check.reasons and GT_REJECTED in check.reasons


def test_empty_accepted():
    task = Task("empty-1", "ace-test", "x", [Turn([{"role": "user", "content": "hi"}], [])], {},
                ["MathAPI"], ["add"], provenance={"target_edge": "add>add"})
    check = check_task(task)
    assert EMPTY_ACCEPTED in check.reasons and NO_TARGET in check.reasons


def _math_task(calls, target, tid):
    return Task(tid, "ace-test", "x", [Turn([{"role": "user", "content": "add 3 and 4, then 5 and 6"}], calls)],
                {}, ["MathAPI"], ["add", "multiply", "round_number"],
                provenance={"target_edge": f"{target[0]}>{target[1]}"})


def test_target_drop_accepted():
    # the second call repeats the first: dropping it still leaves its output in the rollout?
    # No: outputs are a multiset. Use a read-only target whose output equals an earlier one
    # in a turn whose state does not change: a duplicated identical call pair.
    task = _math_task(["add(a=3, b=4)", "add(a=3, b=4)"], ("add", "add"), "drop-1")
    # multiset rule: two identical outputs are needed; dropping one is rejected
    assert TARGET_DROP_ACCEPTED not in check_task(task).reasons
    # a task whose target step's output is the empty state-free echo of another turn
    task = Task("drop-2", "ace-test", "x", [
        Turn([{"role": "user", "content": "add 3 and 4"}], ["add(a=3, b=4)"]),
        Turn([{"role": "user", "content": "add 3 and 4 again"}], ["multiply(a=1, b=7)", "add(a=3, b=4)"]),
    ], {}, ["MathAPI"], ["add", "multiply"], provenance={"target_edge": "multiply>add"})
    # dropping the target add: its output {"result": 7} was already seen in turn 0, and
    # multiply(1, 7) also gives 7, so the multiset still holds 7 twice: accepted
    assert TARGET_DROP_ACCEPTED in check_task(task).reasons


def test_target_alter_accepted_and_skipped(seed):
    # ls(a=True) in a folder without hidden files: altering `a` changes nothing
    fs_seed = next(t for t in bfcl.load_tasks("base") if "GorillaFileSystem" in t.involved_classes)
    t = _as_ace(fs_seed, target=("pwd", "ls"))
    t.turns = [Turn([{"role": "user", "content": "where am I and what is here?"}], ["pwd()", "ls(a=True)"])]
    check = check_task(t)
    assert TARGET_ALTER_ACCEPTED in check.reasons
    t2 = _as_ace(fs_seed, target=("ls", "pwd"))
    t2.turns = [Turn([{"role": "user", "content": "what is here and where am I?"}], ["ls(a=True)", "pwd()"])]
    check2 = check_task(t2)
    assert TARGET_ALTER_SKIPPED in check2.notes and TARGET_ALTER_ACCEPTED not in check2.reasons


def test_value_missing_from_text(seed):
    target = ("get_stock_info", "place_order")
    made = None
    for i in range(20):
        made = strategies.synthesize("cascade", seed, target, 0.5, random.Random(i))
        if made is not None and made.provenance["pattern"] == "insufficient_funds":
            break
    assert made is not None and made.provenance["pattern"] == "insufficient_funds"
    assert check_task(made).valid
    broken = Task.from_dict(copy.deepcopy(made.to_dict()))
    broken.id = made.id + "-broken"
    amount = made.provenance["user_values"][0]
    for turn in broken.turns:
        for m in turn.user:
            m["content"] = m["content"].replace(f"{amount:,}", "some money")
    check = check_task(broken)
    assert check.reasons == [VALUE_MISSING], (check.reasons, check.notes)


def test_error_output():
    assert error_output('{"error": "nope"}')
    assert error_output('{"booking_status": false, "error": "Insufficient funds"}')
    assert error_output("Error during execution: boom")
    assert not error_output('{"result": 7}')
    assert not error_output("None")
