"""The τ² oracle (gold replay) and ACE's verifier.

:func:`gold` replays a task's gold actions once per process and keeps the final environment (a
copy-on-write view: only the records the gold touched are copies) and which gold calls errored (retail's
gold holds 23 calls that raise, e.g. "Payment method should be the original payment method").

:func:`verify` judges a rollout (its executed steps, agent- and user-side, and the final environment) by
τ²'s own rules, on the task's reward basis:

* **state** (basis ``DB``): the final databases (agent and user) equal the gold's (comparing only the
  records either side touched, :func:`ace_env.tau2.cow.cow_diff`; telecom's 10 KB databases whole);
* **assertions** (basis ``ENV_ASSERTION``): the task's environment assertions hold on the final state;
* **actions** (basis ``ACTION``): every gold action was called by someone, τ²'s match (same tool; the
  compared arguments equal, or, without ``compare_args``, every argument the call passed);
* **communicate** (basis ``COMMUNICATE``): every value of ``communicate_info`` appears in an assistant
  message (case folded, commas removed), checked when the rollout carries the agent's text (τ²'s result
  files), else left unchecked and said so (``unchecked``);
* a conversation τ² ended prematurely (``max_steps``, ``too_many_errors``: anything but an agent or user
  stop) scores 0.

``NL_ASSERTION`` needs an LLM judge and is never checked.  The reward is the product, τ²'s rule, so on a
conversation τ² judged ACE's reward equals τ²'s.  ACE's stricter rules (:data:`STRICTER`: a call that
errored where the gold's did not, a gold read skipped, the gold's order not kept, an action matched only by
τ²'s looser comparison) are reported in ``stricter_because`` and cost the reward only with ``strict``.

**Where a failed conversation fails** (:func:`failing_step`) follows what the evaluator checks, not the
order the gold lists: the first agent write the gold does not make after which the gold's final state can
no longer be reached (checked by execution: the rollout up to that write, then the gold writes it has not
made yet), else the
point a premature stop cut it, else the first gold write never made, else the first gold action missing,
else the values not communicated, else the stop.  Reads are never failures by themselves.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from ace_env.tau2.cow import cow_diff
from ace_env.tau2.env import ASSISTANT, Tau2Call, Tau2Step, raw_task, run_calls, tool_kinds
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.verifier import (
    ACTED_WITHOUT_NEED,
    NOT_COMMUNICATED,
    STATE_DIVERGED,
    STOPPED_EARLY,
    WRONG_ARGUMENT,
    WRONG_TOOL,
)


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


#: τ²'s stops that end a conversation normally; any other termination reason scores 0.
NORMAL_STOPS = ("agent_stop", "user_stop")

#: ACE's rules stricter than τ²'s evaluator (a closed set): reported always, failures only with ``strict``.
ERRORED_CALL = "errored_call"  # an agent call errored where the gold's same call did not
SKIPPED_READ = "skipped_read"  # a gold read the agent never made
GOLD_ORDER = "gold_order"  # the gold's agent actions made, but not in the gold's order
ACTION_FORM = "action_form"  # an ACTION-basis action matched only by τ²'s comparison (other argument
#                              keys, or made by the other side)
STRICTER = (ERRORED_CALL, SKIPPED_READ, GOLD_ORDER, ACTION_FORM)


@dataclass(frozen=True)
class Conversation:
    """What a rollout file may say beyond the calls (τ²'s result files do): the agent's text messages
    (None: not known, COMMUNICATE unchecked) and τ²'s termination reason (None: a complete rollout)."""

    texts: tuple[str, ...] | None = None
    termination: str | None = None

    @property
    def premature(self) -> bool:
        return self.termination is not None and self.termination not in NORMAL_STOPS


@dataclass
class Tau2Verdict:
    """ACE's verdict on one τ² rollout."""

    task_id: str
    reward: float  # τ²'s rule: product of the checks in the reward basis; 0 after a premature stop
    strict: bool  # reward 1 and none of ACE's stricter rules broken
    step_ok: list[bool] = field(default_factory=list)
    state_ok: bool = True
    assertions_ok: bool = True
    actions_ok: bool = True
    communicate_ok: bool = True
    detail: list[str] = field(default_factory=list)  # what failed, first few
    unchecked: tuple[str, ...] = ()  # reward-basis checks this rollout could not be given (COMMUNICATE)
    stricter_because: tuple[str, ...] = ()
    achieved: tuple[int | None, ...] = ()  # per gold agent action: the rollout step that made it, or None
    #: a failed rollout's failing point: (oracle step, rollout step, attribution, detail)
    failing: tuple[int | None, int, str, str] | None = None
    premature: bool = False


def call_matches(a: GoldAction, c: Tau2Call) -> bool:
    """ACE's strict match: same tool and requestor, the same argument keys as the gold and the compared
    ones equal (τ² compares only the keys the call passed and ignores the requestor: :func:`tau2_matches`)."""
    if c.name != a.name or c.requestor != a.requestor or not isinstance(c.arguments, dict):
        return False
    keys = a.compare_args if a.compare_args is not None else tuple(a.arguments)
    if a.compare_args is None and set(c.arguments) != set(a.arguments):
        return False
    return all(k in c.arguments and c.arguments[k] == a.arguments.get(k) for k in keys)


def tau2_matches(a: GoldAction, c: Tau2Call) -> bool:
    """τ²'s own match of a gold action and a call (``Action.compare_with_tool_call``): the same tool, and
    the compared arguments equal; without ``compare_args`` the keys the call passed are compared, so a
    call with no arguments matches.  The requestor is not looked at."""
    if c.name != a.name or not isinstance(c.arguments, dict):
        return False
    keys = a.compare_args if a.compare_args is not None else tuple(c.arguments)
    if not keys:
        return True
    return ({k: v for k, v in c.arguments.items() if k in keys}
            == {k: v for k, v in a.arguments.items() if k in keys})


def communicated(info: str, texts: tuple[str, ...]) -> bool:
    """τ²'s COMMUNICATE check of one value: in some assistant text, case folded, commas removed."""
    needle = info.lower()
    return any(needle in t.lower().replace(",", "") for t in texts if t)


def _state_diff(task: Tau2Task, env: Any, gold_env: Any) -> list[str]:
    if task.domain != "telecom":
        return cow_diff(env.tools.db, gold_env.tools.db)
    out = []
    if env.tools.db.model_dump() != gold_env.tools.db.model_dump():
        out.append("agent database")
    if env.user_tools.db.model_dump() != gold_env.user_tools.db.model_dump():
        out.append("user database")
    return out


def is_write(domain: str, c: Tau2Call | GoldAction) -> bool:
    """Whether τ² declares the tool a write (a call that can change a database)."""
    return tool_kinds(domain).get((c.requestor, c.name)) == "write"


def _achieved(task: Tau2Task, steps: list[Tau2Step]) -> tuple[int | None, ...]:
    """Per gold agent action, the agent step that made it (τ²'s match, errored or not), or None: the first
    match after the previous action's (a gold that repeats a call needs it twice), else any earlier one."""
    out: list[int | None] = []
    pos = 0
    agent = [k for k, s in enumerate(steps) if s.call.requestor == ASSISTANT]
    for a in task.agent_actions:
        hits = [k for k in agent if tau2_matches(a, steps[k].call)]
        later = [k for k in hits if k >= pos]
        if later:
            out.append(later[0])
            pos = later[0] + 1
        else:
            out.append(hits[0] if hits else None)
    return tuple(out)


def _reachable(task: Tau2Task, steps: list[Tau2Step], upto: int) -> bool:
    """Whether the gold's final state can still be reached after rollout step ``upto``: the rollout's
    calls up to it, then every gold write (agent and user) none of those calls made, in the gold's order."""
    prefix = [s.call for s in steps[:upto + 1]]
    rest = [Tau2Call(a.name, dict(a.arguments), a.requestor) for a in task.gold_actions
            if is_write(task.domain, a) and not any(tau2_matches(a, c) and c.requestor == a.requestor for c in prefix)]
    _, env = run_calls(task.domain, task.tau2_id, prefix + rest)
    return not _state_diff(task, env, gold(task).env)


def failing_step(task: Tau2Task, steps: list[Tau2Step], achieved: tuple[int | None, ...], state_differs: bool,
                 v: Tau2Verdict, termination: str | None = None) -> tuple[int | None, int, str, str]:
    """(oracle step, rollout step, attribution, detail) of a rollout τ²'s rules fail (see the module doc).

    The oracle step is None when no gold step is where it failed: a harmful write the gold never needed in
    a task whose gold writes nothing, a value not communicated, a stop with every gold write made.  A task
    without gold agent actions fails at its one (abstain) step."""
    actions = task.agent_actions
    end = len(steps)
    missing = [j for j, k in enumerate(achieved) if k is None]
    missing_writes = [j for j in missing if is_write(task.domain, actions[j])]

    def charge(j: int | None) -> int | None:  # the oracle step a failure at gold agent action j is stored under
        return 0 if not actions else j  # a task without gold agent actions: its abstain step

    if state_differs:
        for k, s in enumerate(steps):
            if s.call.requestor != ASSISTANT or s.error or not is_write(task.domain, s.call):
                continue
            if any(tau2_matches(a, s.call) and a.requestor == ASSISTANT for a in task.gold_actions):
                continue  # a gold write, made: never the culprit (the order of writes is not τ²'s concern)
            if _reachable(task, steps, k):
                continue
            pending = [j for j, a in enumerate(actions)  # gold writes not made before this step
                       if is_write(task.domain, a) and (achieved[j] is None or achieved[j] > k)]
            same = [j for j in pending if actions[j].name == s.call.name]
            j = same[0] if same else (pending[0] if pending else None)
            # the write the gold makes, with other arguments; another write in its place; a write it never needed
            kind = WRONG_ARGUMENT if same else (WRONG_TOOL if pending else ACTED_WITHOUT_NEED)
            return charge(j), k, kind, (f"step {k} {s.call.name}: the gold's final state cannot be reached "
                                         f"after this write")
    if v.premature:
        return (charge(missing_writes[0] if missing_writes else None), end, STOPPED_EARLY,
                f"the conversation was cut off (τ² termination_reason: {termination})")
    # a gold write never made (the state or an assertion shows it), else a gold action the ACTION basis misses
    group, why = ((missing_writes, "gold write") if missing_writes and (state_differs or not v.actions_ok or not v.assertions_ok)
                  else (missing, "gold action") if not v.actions_ok else ([], ""))
    if group:
        j = group[0]
        name = actions[j].name
        tried = next((k for k, s in enumerate(steps) if s.call.requestor == ASSISTANT and s.call.name == name), None)
        if tried is not None:
            return charge(j), tried, WRONG_ARGUMENT, f"{why} {j} {name}: made with other arguments"
        return charge(j), end, STOPPED_EARLY, f"{why} {j} {name} never made"
    if not v.communicate_ok:
        return charge(None), end, NOT_COMMUNICATED, "; ".join(d for d in v.detail if d.startswith("not communicated"))[:300]
    return charge(missing_writes[0] if missing_writes else None), end, STATE_DIVERGED, "; ".join(v.detail[:2])[:300]


def _stricter(task: Tau2Task, steps: list[Tau2Step], step_ok: list[bool], achieved: tuple[int | None, ...]) -> tuple[str, ...]:
    out = []
    if any(not ok and s.call.requestor == ASSISTANT for ok, s in zip(step_ok, steps)):
        out.append(ERRORED_CALL)
    actions = task.agent_actions
    if any(k is None and not is_write(task.domain, a) for a, k in zip(actions, achieved)):
        out.append(SKIPPED_READ)
    made = [k for k in achieved if k is not None]
    if made != sorted(made):
        out.append(GOLD_ORDER)
    if "ACTION" in task.reward_basis and any(
            any(tau2_matches(a, s.call) for s in steps) and not any(call_matches(a, s.call) for s in steps)
            for a in task.gold_actions):
        out.append(ACTION_FORM)
    return tuple(out)


def verify(task: Tau2Task, steps: list[Tau2Step], env: Any, conversation: Conversation | None = None) -> Tau2Verdict:
    """ACE's verdict on a rollout: its executed ``steps``, the environment they left, and what the rollout
    file says of the conversation (its agent's text, its termination)."""
    conv = conversation or Conversation()
    g = gold(task)
    detail: list[str] = []
    step_ok = []
    for i, s in enumerate(steps):
        ok = not s.error or call_key(s.call.name, s.call.arguments, s.call.requestor) in g.erroring
        step_ok.append(ok)
    basis = set(task.reward_basis)
    crit = raw_task(task.domain, task.tau2_id).evaluation_criteria
    checked = crit.actions is not None or crit.env_assertions is not None  # τ²: neither → nothing to check
    state_ok = assertions_ok = actions_ok = communicate_ok = True
    diff = _state_diff(task, env, g.env)
    if checked and "DB" in basis:
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
            if not any(tau2_matches(a, s.call) for s in steps):
                actions_ok = False
                detail.append(f"gold action {a.requestor}:{a.name} not called")
    unchecked: tuple[str, ...] = ()
    if "COMMUNICATE" in basis and task.communicate_info:
        if conv.texts is None:
            unchecked = ("COMMUNICATE",)
        else:
            for info in task.communicate_info:
                if not communicated(info, conv.texts):
                    communicate_ok = False
                    detail.append(f"not communicated: {info!r}"[:160])
    if conv.premature:
        detail.insert(0, str(conv.termination))
    reward = float(state_ok and assertions_ok and actions_ok and communicate_ok and not conv.premature)
    achieved = _achieved(task, steps)
    stricter = _stricter(task, steps, step_ok, achieved)
    v = Tau2Verdict(task.id, reward, reward == 1.0 and not stricter, step_ok, state_ok, assertions_ok, actions_ok,
                    communicate_ok, detail, unchecked, stricter, achieved, None, conv.premature)
    if reward < 1.0:
        v.failing = failing_step(task, steps, achieved, bool(diff), v, conv.termination)
    return v


def replay_gold(task: Tau2Task) -> Tau2Verdict:
    """Run the task's gold actions as a rollout (fresh environment) and verify them."""
    steps, env = run_calls(task.domain, task.tau2_id, gold_calls(task))
    return verify(task, steps, env)
