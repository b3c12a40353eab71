"""τ² dialogues under ACE's call budget (ace_env.tau2.calls, ace_env.tau2.orchestrate): every tool call, the
agent's and the user's, runs in the watched worker; a call over the time or memory budget ends its dialogue
(timeout, resource_limit), never the process, and the next dialogue runs normally and passes the verifier."""

from __future__ import annotations

import faulthandler
import json
import time

import pytest
from test_tau2_user import _has_write, _scripted, _task  # tests/unit is on sys.path (pytest's prepend)

from ace_env.boundedcalls import Overrun
from ace_env.errors import ConfigError
from ace_env.tau2 import env as tau2_env
from ace_env.tau2 import orchestrate
from ace_env.tau2.calls import Tau2Calls
from ace_env.tau2.env import Tau2Call, Tau2Step
from ace_env.tau2.orchestrate import run_dialogue
from ace_env.tau2.tasks import load_tasks
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget

try:
    from _pytest.faulthandler import fault_handler_stderr_fd_key
except ImportError:  # pytest's internals moved: the traceback goes to the captured stderr
    fault_handler_stderr_fd_key = None

RUNAWAY = "9**9**9**9"  # one C-level power that never returns
HOG = "1+" * 1_000_000 + "1"  # parsing it takes ~400 MB (CPython's parser and AST), in about 1.5 s


def _calling(expression):
    """An agent whose first message is one calculate call; a user who asks and waits."""
    msg = {"content": "", "tool_calls": [{"id": "x1", "type": "function", "function": {
        "name": "calculate", "arguments": json.dumps({"expression": expression})}}]}
    return (lambda m: msg), (lambda m: "Can you compute something for me?")


@pytest.fixture(autouse=True)
def _no_hang(pytestconfig):
    """A runaway call made in this process (a wrong implementation) holds the GIL in C for ever: faulthandler's
    watchdog thread, which needs no GIL, then ends the test run with the stuck traceback instead of a hang
    (written to the stderr pytest's faulthandler plugin keeps, not to the captured one)."""
    fd = pytestconfig.stash.get(fault_handler_stderr_fd_key, None) if fault_handler_stderr_fd_key else None
    faulthandler.dump_traceback_later(60, exit=True, **({"file": fd} if fd is not None else {}))
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def airline():
    return _task("airline", _has_write)


def _gold_passes(task, **kw):
    agent, user = _scripted(task)
    d = run_dialogue(task, agent, user, max_turns=80, **kw)
    assert d.termination == "user_stop", (d.termination, d.detail)
    v = d.verdict(task)
    assert v.reward == 1.0 and v.strict, v.detail
    return d


def test_a_runaway_call_ends_its_dialogue_by_timeout_and_the_next_dialogue_passes(airline):
    with Tau2Calls({airline.id: airline}, Budget(call_seconds=1.5)) as calls:
        agent, user = _calling(RUNAWAY)
        t = time.monotonic()
        d = run_dialogue(airline, agent, user, calls=calls)
        assert time.monotonic() - t < 8
        assert d.termination == TIMEOUT and d.overrun and "calculate" in d.detail and "1.5 s" in d.detail
        assert d.turns == 2 and len(d.steps) == 1 and d.steps[0].error
        last = d.messages[-1]
        assert last["role"] == "tool" and last["error"] and last["tool_call_id"] == "x1" and "stopped" in last["content"]
        v = d.verdict(airline)
        assert v.reward == 0.0 and not v.strict and TIMEOUT in v.detail[0]
        assert calls.restarts == 1
        _gold_passes(airline, calls=calls)  # the same runner: a fresh worker
    # the default path (a worker of the dialogue's own) does the same, and this process goes on
    agent, user = _calling(RUNAWAY)
    t = time.monotonic()
    d = run_dialogue(airline, agent, user, budget=Budget(call_seconds=1.0))
    assert d.termination == TIMEOUT and time.monotonic() - t < 8
    d = _gold_passes(airline, budget=Budget(call_seconds=1.0))
    assert d.env is None and d.checked is not None  # verified in the worker


def test_a_memory_hog_ends_its_dialogue_by_resource_limit(airline):
    assert len(tau2_env.call(tau2_env.start("airline", airline.tau2_id),
                             Tau2Call("calculate", {"expression": "1+" * 1000 + "1"})).content) > 0
    with Tau2Calls([airline], Budget(call_seconds=30, memory_mb=128)) as calls:
        agent, user = _calling(HOG)
        t = time.monotonic()
        d = run_dialogue(airline, agent, user, calls=calls)
        assert d.termination == RESOURCE_LIMIT and "memory" in d.detail, (d.termination, d.detail)
        assert time.monotonic() - t < 20
        assert d.verdict(airline).reward == 0.0
        _gold_passes(airline, calls=calls)


def test_the_gold_dialogue_gets_reward_1_through_the_worker_only(airline, monkeypatch):
    telecom = _task("telecom", lambda t: any(a.requestor == "user" for a in t.gold_actions))
    with Tau2Calls([airline, telecom], Budget(call_seconds=10)) as calls:
        calls.start()  # forked now: from here on, a call run in this process fails the test

        def in_process(*a, **k):
            raise AssertionError("a tool call ran in the dialogue's own process")

        monkeypatch.setattr(tau2_env, "call", in_process)
        monkeypatch.setattr(orchestrate, "call", in_process)
        monkeypatch.setattr(tau2_env, "start", in_process)
        monkeypatch.setattr(orchestrate, "start", in_process)
        _gold_passes(airline, calls=calls)
        d = _gold_passes(telecom, calls=calls)  # the user's own calls (on their phone) go through it too
        assert [s.call.requestor for s in d.steps] == [a.requestor for a in telecom.gold_actions]
        assert "user" in {s.call.requestor for s in d.steps}
        assert calls.restarts == 0


def test_a_runner_serves_interleaved_dialogues_and_rebuilds_them_after_a_kill(airline):
    other = load_tasks("airline")[0]
    with Tau2Calls([airline], Budget(call_seconds=1.0)) as calls:
        a, b = calls.open(airline), calls.open(other)  # other: not forked with it, so a fresh worker
        gold = [Tau2Call(g.name, g.arguments, g.requestor) for g in airline.gold_actions]
        half = len(gold) // 2
        for i, c in enumerate(gold[:half]):
            assert isinstance(calls.call(a, c, f"a{i}"), Tau2Step)
        over = calls.call(b, Tau2Call("calculate", {"expression": RUNAWAY}), "b0")
        assert isinstance(over, Overrun) and over.kind == TIMEOUT
        for i, c in enumerate(gold[half:], half):  # a's environment is rebuilt by replay in the fresh worker
            assert isinstance(calls.call(a, c, f"a{i}"), Tau2Step)
        v = calls.verdict(a)
        assert v.reward == 1.0, v.detail
        with pytest.raises(ValueError, match="ended"):  # b has ended: no fresh environment under its id
            calls.call(b, Tau2Call("calculate", {"expression": "1+1"}), "b1")
        calls.finish(a)
        with pytest.raises(ValueError):
            calls.verdict(a)


def test_the_opt_out_runs_in_process_and_an_env_needs_it(airline):
    d = _gold_passes(airline, budget=None)
    assert d.env is not None and d.checked is None
    with pytest.raises(ConfigError):
        run_dialogue(airline, lambda m: "Hi", lambda m: "Hi", env=d.env)
    with pytest.raises(ValueError):
        d.verdict(load_tasks("airline")[0])
