"""ACE's per-step verdict on τ² rollouts: τ²'s reward and where it turns by default; ACE's order rules with strict."""

from __future__ import annotations

import pytest

from ace_env.errors import RolloutFormatError
from ace_env.formats import parse_rollout
from ace_env.tau2.env import Tau2Call
from ace_env.tau2.rollouts import Tau2Verifier, calls_of, gold_calls, verify_calls
from ace_env.tau2.tasks import load_tasks

TASKS = {t.id: t for t in load_tasks("airline")}
BOOKING = TASKS["tau2:airline:8"]  # get_user_details, get_reservation_details, search_direct_flight, book_reservation
ABSTAIN = TASKS["tau2:airline:0"]  # no gold action


def _at(v):
    return v.reward, v.failing_oracle_step, v.failing_step, v.attribution


def test_by_default_the_reward_is_tau2s_and_the_failure_is_where_its_verdict_turns():
    g = gold_calls(BOOKING)
    assert [a.name for a in BOOKING.agent_actions] == [c.name for c in g]
    assert _at(verify_calls(BOOKING, g)) == (1.0, None, None, None)
    assert _at(verify_calls(BOOKING, g[:3])) == (0.0, 3, 3, "stopped_early")  # the write never made
    skipped = verify_calls(BOOKING, g[:1] + g[2:])  # a read skipped: τ² passes it, the rule is only listed
    assert _at(skipped) == (1.0, None, None, None) and skipped.stricter_because == ("skipped_read",)
    assert skipped.step_outcomes == ("success", None, "success", "success")  # the skipped read is not observed
    reordered = verify_calls(BOOKING, [g[0], g[2], g[1], g[3]])
    assert _at(reordered) == (1.0, None, None, None) and reordered.stricter_because == ("gold_order",)
    wrong = Tau2Call(g[1].name, {**g[1].arguments, "reservation_id": "ZZZZZZ"})
    retried = verify_calls(BOOKING, [g[0], wrong, *g[1:]])  # errored, then retried
    assert _at(retried) == (1.0, None, None, None) and retried.stricter_because == ("errored_call",)
    extra_reads = verify_calls(BOOKING, [g[1], g[0], g[0], *g[1:]])  # harmless extra reads, any order
    assert _at(extra_reads) == (1.0, None, None, None)
    user = g[0].arguments["user_id"]
    extra = Tau2Call("send_certificate", {"user_id": user, "amount": 100})  # succeeds, and changes the database
    v = verify_calls(BOOKING, [*g, extra])  # the extra write is where the gold's state became unreachable
    assert _at(v) == (0.0, None, 4, "acted_without_need") and v.partial_credit == 0.0  # no gold step failed
    assert v.step_outcomes == ("success",) * 4  # every gold step was made: none is charged
    first = verify_calls(BOOKING, [*g[:3], extra, g[3]])
    assert _at(first) == (0.0, 3, 3, "wrong_tool")  # a write in the gold write's place
    assert _at(verify_calls(ABSTAIN, [])) == (1.0, None, None, None)
    assert _at(verify_calls(ABSTAIN, [Tau2Call("get_user_details", {"user_id": user})])) == (1.0, None, None, None)
    assert _at(verify_calls(ABSTAIN, [extra])) == (0.0, 0, 0, "acted_without_need")


def test_strict_adds_aces_rules_and_attributes_by_the_gold_order():
    g = gold_calls(BOOKING)
    assert _at(verify_calls(BOOKING, g, strict=True)) == (1.0, None, None, None)
    assert _at(verify_calls(BOOKING, g[:1] + g[2:], strict=True)) == (0.0, 1, 1, "wrong_tool")  # skipped
    wrong = Tau2Call(g[1].name, {**g[1].arguments, "reservation_id": "ZZZZZZ"})
    assert _at(verify_calls(BOOKING, [g[0], wrong, *g[1:]], strict=True)) == (0.0, 1, 1, "wrong_argument")
    assert _at(verify_calls(BOOKING, g[:3], strict=True)) == (0.0, 3, 3, "stopped_early")  # as τ²


def test_rollout_lines_in_the_watched_worker():
    g = [{"name": c.name, "arguments": c.arguments} for c in gold_calls(BOOKING)]
    lines = [
        {"rollout_id": "ok", "task_id": BOOKING.id, "turns": [g[:2], g[2:]]},  # turns are read in order
        {"rollout_id": "text", "task_id": BOOKING.id, "turns": [["get_user_details(user_id='x')"]]},
        {"rollout_id": "unknown", "task_id": "tau2:airline:999", "turns": [[]]},
        {"rollout_id": "bad", "task_id": BOOKING.id, "turns": [[{"arguments": {}}]]},
    ]
    with Tau2Verifier(TASKS) as v:
        out = {r.rollout_id: res for r, res in v.verify_stream(parse_rollout(x, i) for i, x in enumerate(lines, 1))}
    assert out["ok"].reward == 1.0
    # a read with a wrong argument is no failure by itself: the write it never led to is
    assert (out["text"].failing_oracle_step, out["text"].attribution) == (3, "stopped_early")
    assert "unknown task_id" in out["unknown"].message
    assert "name, arguments" in out["bad"].message
    with pytest.raises(RolloutFormatError, match="requestor"):
        calls_of([[{"name": "x", "arguments": {}, "requestor": "robot"}]])
