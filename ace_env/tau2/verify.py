"""The τ² oracle (gold replay) and ACE's verifier.

:func:`gold` replays a task's gold actions once per process and keeps the final environment (a
copy-on-write view: only the records the gold touched are copies) and which gold calls errored (retail's
gold holds 23 calls that raise, e.g. "Payment method should be the original payment method").

:func:`verify` checks a rollout (its executed steps and final environment) against that:

* **steps**: each call ran without an error, unless the gold made the same call (tool, arguments,
  requestor) and it errored there too;
* **state** (basis ``DB``): the final database equals the gold final database, comparing only the
  records either side touched (:func:`ace_env.tau2.cow.cow_diff`); telecom's 10 KB databases, agent and
  user, are compared whole;
* **assertions** (basis ``ENV_ASSERTION``): the task's environment assertions hold on the final state;
* **actions** (basis ``ACTION``): every gold action was called, with its compared arguments and by its
  requestor.

The reward is the product of the checks in the task's reward basis, the same rule as τ²'s
``EnvironmentEvaluator`` (DB, ENV_ASSERTION) and ``ActionEvaluator`` (ACTION); ``COMMUNICATE`` and
``NL_ASSERTION`` concern what is said, not done, and are not checked here.  Where ACE is stricter than
τ²: ``strict`` also needs every step to pass; the action check compares all gold arguments when
``compare_args`` is unset (τ² compares only the keys the call passed, so a call with no arguments
matches) and checks the requestor (τ² does not).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from ace_env.tau2.cow import cow_diff
from ace_env.tau2.env import Tau2Call, Tau2Step, raw_task, run_calls
from ace_env.tau2.tasks import GoldAction, Tau2Task


@dataclass(frozen=True)
class GoldRun:
    """A task's gold replay: its steps and final environment (kept per process, never written)."""

    steps: tuple[Tau2Step, ...]
    env: Any
    erroring: frozenset[str]  # call_key of every gold call that errored


def call_key(name: str, arguments: Any, requestor: str) -> str:
    return json.dumps([name, arguments, requestor], sort_keys=True, default=str)


def gold_calls(task: Tau2Task) -> list[Tau2Call]:
    return [Tau2Call(a.name, a.arguments, a.requestor) for a in task.gold_actions]


@functools.lru_cache(maxsize=512)
def _gold(domain: str, tau2_id: str) -> GoldRun:
    acts = raw_task(domain, tau2_id).evaluation_criteria.actions or []
    steps, env = run_calls(domain, tau2_id, [Tau2Call(a.name, dict(a.arguments), a.requestor) for a in acts])
    erroring = frozenset(call_key(s.call.name, s.call.arguments, s.call.requestor) for s in steps if s.error)
    return GoldRun(tuple(steps), env, erroring)


def gold(task: Tau2Task) -> GoldRun:
    """The oracle: the task's gold actions replayed from its initial state (cached per process)."""
    return _gold(task.domain, task.tau2_id)


@dataclass
class Tau2Verdict:
    """ACE's verdict on one τ² rollout."""

    task_id: str
    reward: float  # product of the checks in the reward basis (DB, ENV_ASSERTION, ACTION)
    strict: bool  # reward 1 and every step passed
    step_ok: list[bool] = field(default_factory=list)
    state_ok: bool = True
    assertions_ok: bool = True
    actions_ok: bool = True
    detail: list[str] = field(default_factory=list)  # what failed, first few


def call_matches(a: GoldAction, c: Tau2Call) -> bool:
    """Whether call ``c`` is gold action ``a``: same tool and requestor, and the arguments τ² compares equal."""
    if c.name != a.name or c.requestor != a.requestor or not isinstance(c.arguments, dict):
        return False
    keys = a.compare_args if a.compare_args is not None else tuple(a.arguments)
    if a.compare_args is None and set(c.arguments) != set(a.arguments):
        return False
    return all(k in c.arguments and c.arguments[k] == a.arguments.get(k) for k in keys)


def _state_diff(task: Tau2Task, env: Any, gold_env: Any) -> list[str]:
    if task.domain != "telecom":
        return cow_diff(env.tools.db, gold_env.tools.db)
    out = []
    if env.tools.db.model_dump() != gold_env.tools.db.model_dump():
        out.append("agent database")
    if env.user_tools.db.model_dump() != gold_env.user_tools.db.model_dump():
        out.append("user database")
    return out


def verify(task: Tau2Task, steps: list[Tau2Step], env: Any) -> Tau2Verdict:
    """ACE's verdict on a rollout: its executed ``steps`` and the environment they left."""
    g = gold(task)
    detail: list[str] = []
    step_ok = []
    for i, s in enumerate(steps):
        ok = not s.error or call_key(s.call.name, s.call.arguments, s.call.requestor) in g.erroring
        step_ok.append(ok)
        if not ok and len(detail) < 5:
            detail.append(f"step {i} {s.call.name}: {s.content[:120]}")
    basis = set(task.reward_basis)
    crit = raw_task(task.domain, task.tau2_id).evaluation_criteria
    checked = crit.actions is not None or crit.env_assertions is not None  # τ²: neither → nothing to check
    state_ok = assertions_ok = actions_ok = True
    if checked and "DB" in basis:
        diff = _state_diff(task, env, g.env)
        state_ok = not diff
        detail += [f"state differs from gold at {d}" for d in diff]
    if checked and "ENV_ASSERTION" in basis:
        for a in crit.env_assertions or []:
            try:
                held = env.run_env_assertion(a, raise_assertion_error=False)
            except Exception as e:  # noqa: BLE001 - an assertion that cannot run on this state fails
                held, why = False, f"{type(e).__name__}: {e}"
            else:
                why = a.message or a.func_name
            if not held:
                assertions_ok = False
                detail.append(f"assertion failed: {why}"[:160])
    if "ACTION" in basis:
        for a in task.gold_actions:
            if not any(call_matches(a, s.call) for s in steps):
                actions_ok = False
                detail.append(f"gold action {a.requestor}:{a.name} not called")
    reward = float(state_ok and assertions_ok and actions_ok)
    return Tau2Verdict(task.id, reward, reward == 1.0 and all(step_ok), step_ok, state_ok, assertions_ok,
                       actions_ok, detail)


def replay_gold(task: Tau2Task) -> Tau2Verdict:
    """Run the task's gold actions as a rollout (fresh environment) and verify them."""
    steps, env = run_calls(task.domain, task.tau2_id, gold_calls(task))
    return verify(task, steps, env)
