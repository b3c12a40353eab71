"""τ² inside ace_env: tasks, copy-on-write execution, the oracle and ACE's verifier (no services)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ace_env.tau2 import env as tau2_env
from ace_env.tau2.bounded import Tau2Runner
from ace_env.tau2.cow import CowDict, cow_diff
from ace_env.tau2.env import USER, Tau2Call, pristine_hash, run_calls, tool_kinds
from ace_env.tau2.tasks import load_tasks, tasks_by_id
from ace_env.tau2.verify import gold, gold_calls, replay_gold, verify
from ace_env.worker import Budget


def _with_writes(domain: str, n: int = 2):
    kinds = tool_kinds(domain)
    return [t for t in load_tasks(domain)
            if any(kinds.get((a.requestor, a.name)) == "write" for a in t.gold_actions)][:n]


def test_tasks_load_in_ace_form():
    counts = {d: len(load_tasks(d)) for d in ("airline", "retail", "telecom")}
    assert counts == {"airline": 50, "retail": 114, "telecom": 114}
    task = load_tasks("airline")[0]
    assert task.id == f"tau2:airline:{task.tau2_id}"
    assert task.reward_basis == ("DB", "COMMUNICATE")
    assert "Reason for call" in task.user_scenario
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in task.tools)
    assert len(task.tools) == 14 and task.user_tools == ()
    telecom = load_tasks("telecom")
    assert len(telecom[0].user_tools) == 30
    assert sum(a.requestor == USER for t in telecom for a in t.gold_actions) == 393
    assert tasks_by_id(["retail"])[load_tasks("retail")[5].id] == load_tasks("retail")[5]


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_gold_replay_passes_the_verifier(domain):
    for task in load_tasks(domain)[:4]:
        v = replay_gold(task)
        assert v.reward == 1.0 and v.strict, (task.id, v.detail)


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_dropped_write_and_changed_argument_fail(domain):
    kinds = tool_kinds(domain)
    for task in _with_writes(domain):
        calls = gold_calls(task)
        last = max(i for i, c in enumerate(calls) if kinds.get((c.requestor, c.name)) == "write")
        steps, env = run_calls(domain, task.tau2_id, calls[:last] + calls[last + 1:])
        assert verify(task, steps, env).reward == 0.0, task.id
    if domain == "telecom":
        return  # telecom's writes are mostly argument-free device toggles
    task = _with_writes(domain)[0]
    calls = gold_calls(task)
    i = next(i for i, c in enumerate(calls) if kinds.get((c.requestor, c.name)) == "write")
    key = next(k for k, v in calls[i].arguments.items() if isinstance(v, str) and "id" not in k) \
        if any(isinstance(v, str) and "id" not in k for k, v in calls[i].arguments.items()) \
        else next(iter(calls[i].arguments))
    changed = calls[:i] + [Tau2Call(calls[i].name, {**calls[i].arguments, key: "nonsense"})] + calls[i + 1:]
    steps, env = run_calls(domain, task.tau2_id, changed)
    v = verify(task, steps, env)
    assert v.reward == 0.0, (task.id, key, v.detail)


def test_dropped_read_passes_the_state_check():
    kinds = tool_kinds("airline")
    task = next(t for t in load_tasks("airline")
                if any(kinds.get((a.requestor, a.name)) == "read" for a in t.gold_actions))
    calls = gold_calls(task)
    i = next(i for i, c in enumerate(calls) if kinds.get((c.requestor, c.name)) == "read")
    steps, env = run_calls("airline", task.tau2_id, calls[:i] + calls[i + 1:])
    assert verify(task, steps, env).reward == 1.0  # as τ²'s DB check: reads change nothing


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_pristine_database_unchanged_after_rollouts(domain):
    before = pristine_hash(domain)
    for task in _with_writes(domain, 3):
        replay_gold(task)
        calls = gold_calls(task)
        run_calls(domain, task.tau2_id, calls[:-1])
    assert pristine_hash(domain) == before


def test_bad_tool_calls_are_error_messages_not_exceptions():
    env = tau2_env.start("airline", load_tasks("airline")[0].tau2_id)
    bad = [
        Tau2Call("get_user_details", {"bogus": 1}),  # unexpected argument
        Tau2Call("get_user_details", {}),  # missing argument
        Tau2Call("get_user_details", {"user_id": ["not", "a", "string"]}),  # wrong type
        Tau2Call("no_such_tool", {}),
        Tau2Call("get_user_details", "user_id=1"),  # arguments not an object
        Tau2Call("get_user_details", {"user_id": "x"}, requestor="system"),
        Tau2Call("check_status_bar", {}, requestor=USER),  # airline has no user tools
        Tau2Call("calculate", {"expression": "__import__('os')"}),
    ]
    for c in bad:
        step = tau2_env.call(env, c)
        assert step.error and step.content.startswith("Error"), (c, step)


def test_hostile_arguments_execute_nothing_outside_the_tool(tmp_path):
    """Model output is data: code in arguments (τ²'s calculate evaluates arithmetic) writes no file, and a
    string where an id goes reaches no path on disk."""
    marker = tmp_path / "pwned"
    env = tau2_env.start("airline", load_tasks("airline")[0].tau2_id)
    payloads = [
        Tau2Call("calculate", {"expression": f"__import__('os').system('touch {marker}')"}),
        Tau2Call("calculate", {"expression": f"open('{marker}', 'w').write('x')"}),
        Tau2Call("calculate", {"expression": "().__class__.__base__.__subclasses__()"}),
        Tau2Call("get_user_details", {"user_id": f"../../{marker}"}),
        Tau2Call("get_reservation_details", {"reservation_id": "'; DROP TABLE reservations; --"}),
    ]
    for c in payloads:
        step = tau2_env.call(env, c)
        assert step.error and step.content.startswith("Error"), (c, step)
    assert not marker.exists()
    assert tau2_env.call(env, Tau2Call("calculate", {"expression": "2 * (3 + 4)"})).content == "14.0"


def test_copy_on_write_isolates_two_rollouts():
    task = _with_writes("airline")[0]
    a = tau2_env.start("airline", task.tau2_id)
    b = tau2_env.start("airline", task.tau2_id)
    for c in gold_calls(task):
        tau2_env.call(a, c)
    assert cow_diff(a.tools.db, b.tools.db), "the gold writes changed nothing"
    assert not cow_diff(b.tools.db, tau2_env.start("airline", task.tau2_id).tools.db)
    assert isinstance(b.tools.db.reservations, CowDict) and not b.tools.db.reservations.owned
    assert cow_diff(a.tools.db, gold(task).env.tools.db) == []


def test_a_call_over_budget_ends_only_its_rollout():
    tasks = tasks_by_id(["airline"])
    task = load_tasks("airline")[1]
    with Tau2Runner(tasks, Budget(call_seconds=1.0)) as runner:
        t = time.monotonic()
        out = runner.run(task.id, [Tau2Call("calculate", {"expression": "9**9**9**9"})])
        assert out.attribution == "timeout" and out.reward == 0.0
        assert time.monotonic() - t < 10
        out = runner.run(task.id, gold_calls(task))
        assert out.attribution == "" and out.reward == 1.0 and out.verdict.strict
        assert runner.run("tau2:airline:nope", []).attribution.startswith("unknown")


def test_tau2_import_reads_no_dotenv_and_no_litellm():
    """τ²'s import-time load_dotenv() is a no-op, and nothing ACE imports pulls in litellm."""
    code = (
        "import sys, dotenv\n"
        "calls = []\n"
        "dotenv.load_dotenv = lambda *a, **k: calls.append(a) or True\n"
        "from ace_env.tau2.package import tau2_modules\n"
        "from ace_env.tau2.verify import replay_gold\n"
        "from ace_env.tau2.tasks import load_tasks\n"
        "tau2_modules()\n"
        "assert replay_gold(load_tasks('telecom')[0]).reward == 1.0\n"
        "assert not calls, calls\n"
        "assert 'litellm' not in sys.modules\n"
        "assert dotenv.load_dotenv.__name__ == '<lambda>'  # restored after the import\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
