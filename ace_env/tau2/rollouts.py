"""τ² rollouts in ACE's rollout files, judged step by step: what ``ace ingest`` and ``ace verify`` need.

A τ² rollout is an ACE JSONL line like BFCL's, ``{"rollout_id", "task_id": "tau2:airline:1", "turns":
[[call, ...]], "meta"}``, whose calls are ``{"name", "arguments"}`` objects (``"requestor": "user"`` for a
call the user makes; a BFCL-style call string is read too).  The conversation is one flat list of calls:
its turns are read in order.

**Oracle steps** are the task's gold *agent* actions (:attr:`~ace_env.tau2.tasks.Tau2Task.agent_actions`;
a task without any has one ``abstain`` step).  :func:`step_verdict` turns the outcome of ACE's τ² verifier
(:func:`ace_env.tau2.verify.verify`, run in the watched worker by :class:`Tau2Verifier`) into the verdict
every ACE consumer reads (:class:`ace_env.verifier.Verdict`): gold action ``j`` passes when the rollout makes
it (same tool and requestor, the compared arguments equal) after the call that made action ``j-1``, with no
call erroring on the way (a call counts as erroring when the gold did not make it with the same error);
the first gold action that does not is the failing oracle step.  A rollout that makes every gold action but
leaves a different final state (or breaks an environment assertion) fails at its last step
(``state_diverged``).  The reward is 1 only when no step fails *and* τ²'s own checks pass, so ACE is
stricter than τ² here: a skipped read call fails its step even when the final database is right.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from ace_env.bounded import LineError
from ace_env.calls import Call, parse_call
from ace_env.errors import ConfigError, RolloutFormatError
from ace_env.tau2.bounded import Tau2Outcome, Tau2Runner
from ace_env.tau2.env import ASSISTANT, USER, Tau2Call, Tau2Step, run_calls
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import Tau2Verdict, call_matches, gold, verify
from ace_env.verifier import (
    ACTED_WITHOUT_NEED,
    MALFORMED_CALL,
    STATE_DIVERGED,
    STOPPED_EARLY,
    WRONG_ARGUMENT,
    WRONG_TOOL,
    Verdict,
)
from ace_env.worker import Budget

# --------------------------------------------------------------------------- calls


def call_dict(name: str, arguments: Any, requestor: str = ASSISTANT) -> dict[str, Any]:
    """One call as a rollout file holds it."""
    d = {"name": name, "arguments": arguments}
    if requestor != ASSISTANT:
        d["requestor"] = requestor
    return d


def to_call(raw: Any) -> Tau2Call:
    """A rollout file's call as a :class:`Tau2Call`; a call that cannot be one raises RolloutFormatError."""
    if isinstance(raw, str):
        parsed = parse_call(raw)
        if not isinstance(parsed, Call):  # kept as a call that errors, as BFCL keeps a malformed call
            return Tau2Call(raw[:80], raw)
        if parsed.args:
            return Tau2Call(parsed.name, {"__positional__": list(parsed.args), **parsed.kwargs})
        return Tau2Call(parsed.name, dict(parsed.kwargs))
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise RolloutFormatError("a τ² call is a {name, arguments} object (requestor: user for the user's calls)")
    arguments = raw.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI style: the arguments as JSON text
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # not JSON: the call errors when it runs
    requestor = raw.get("requestor", ASSISTANT)
    if requestor not in (ASSISTANT, USER):
        raise RolloutFormatError(f"a τ² call's requestor is assistant or user, not {requestor!r}")
    return Tau2Call(raw["name"], arguments, requestor)


def calls_of(turns: Any) -> list[Tau2Call]:
    """Every call of a rollout's turns, in order."""
    if not isinstance(turns, list):
        raise RolloutFormatError("'turns' must be a list of lists of calls")
    return [to_call(c) for turn in turns for c in turn]


def gold_calls(task: Tau2Task) -> list[Tau2Call]:
    return [Tau2Call(a.name, dict(a.arguments), a.requestor) for a in task.gold_actions]


# --------------------------------------------------------------------------- per-step verdict


def _erring_attribution(a: GoldAction, c: Tau2Call) -> str:
    if not isinstance(c.arguments, dict):
        return MALFORMED_CALL
    return WRONG_ARGUMENT if c.name == a.name else WRONG_TOOL


def align(task: Tau2Task, steps: list[Tau2Step], step_ok: list[bool]) -> tuple[int, tuple[int, int, str, str] | None]:
    """(gold agent actions reproduced, the first failure as (oracle step, rollout step, attribution, detail)
    or None).  State and assertions are not looked at here (see :func:`step_verdict`)."""
    gold_actions = task.agent_actions
    if not gold_actions:
        made = [k for k, s in enumerate(steps) if s.call.requestor == ASSISTANT]
        if made:
            s = steps[made[0]]
            return 0, (0, made[0], ACTED_WITHOUT_NEED, f"the task needs no call; step {made[0]} called {s.call.name}")
        return 0, None
    pos = matched = 0
    first: tuple[int, int, str, str] | None = None
    for j, a in enumerate(gold_actions):
        found = None
        for k in range(pos, len(steps)):
            s = steps[k]
            if step_ok[k] and call_matches(a, s.call):
                found = k
                break
            if not step_ok[k] and s.call.requestor == ASSISTANT and first is None:
                first = (j, k, _erring_attribution(a, s.call), f"step {k} {s.call.name}: {s.content[:120]}")
        if found is None:
            if first is None:
                if pos >= len(steps):
                    first = (j, len(steps), STOPPED_EARLY, f"stopped before gold action {j} {a.name}")
                else:
                    nxt = steps[pos].call
                    kind = WRONG_ARGUMENT if nxt.name == a.name else WRONG_TOOL
                    first = (j, pos, kind, f"gold action {j} {a.name} not made (step {pos} called {nxt.name})")
            continue
        matched += 1
        pos = found + 1
    if first is None:
        for k in range(pos, len(steps)):
            if not step_ok[k] and steps[k].call.requestor == ASSISTANT:
                j = len(gold_actions) - 1
                first = (j, k, _erring_attribution(gold_actions[j], steps[k].call),
                         f"step {k} {steps[k].call.name}: {steps[k].content[:120]}")
                break
    return matched, first


def step_verdict(task: Tau2Task, outcome: Tau2Outcome, rollout_id: str | None) -> Verdict:
    """ACE's verdict (:class:`ace_env.verifier.Verdict`, one turn) on a τ² rollout the runner ran."""
    n = max(task.n_steps, 1)
    v = outcome.verdict
    if v is None:  # over budget, or the worker died: the rollout fails at its first step
        return Verdict(rollout_id, task.id, 0.0, 0.0, 0, 1, failing_turn=0, failing_step=len(outcome.steps),
                       failing_oracle_step=0, attribution=outcome.attribution.split(":")[0] or "error",
                       detail=outcome.attribution, matched_steps=0, oracle_steps=n)
    matched, first = align(task, outcome.steps, v.step_ok)
    if first is None and v.reward < 1.0:
        first = (n - 1, len(outcome.steps), STATE_DIVERGED, "; ".join(v.detail[:2]))
    if first is None:
        return Verdict(rollout_id, task.id, 1.0, v.reward, 1, 1, matched_steps=matched if task.n_steps else 1,
                       oracle_steps=n)
    j, k, attribution, detail = first
    return Verdict(rollout_id, task.id, 0.0, v.reward, 0, 1, failing_turn=0, failing_step=k, failing_oracle_step=j,
                   attribution=attribution, detail=detail[:500], matched_steps=matched, oracle_steps=n)


def verify_calls(task: Tau2Task, calls: list[Tau2Call], rollout_id: str | None = None) -> Verdict:
    """Run ``calls`` in this process (no budget: for trusted calls, e.g. the simulated agent's checks) and
    judge them as :func:`step_verdict` does."""
    steps, env = run_calls(task.domain, task.tau2_id, calls)
    return step_verdict(task, Tau2Outcome(task.id, steps, verify(task, steps, env)), rollout_id)


class Tau2Verifier(Tau2Runner):
    """The bounded verifier of τ² rollout files: every rollout runs in the watched worker
    (:class:`~ace_env.tau2.bounded.Tau2Runner`), every tool call under ``budget``; what
    :func:`ace_env.environments.verifier_for` hands ``ace ingest`` for τ² tasks."""

    def __init__(self, tasks: dict[str, Tau2Task], budget: Budget | None = None, **_: Any):
        super().__init__(tasks, budget)

    def verify_one(self, task_id: str, turns: Any, rollout_id: str | None) -> Verdict | LineError:
        task = self.tasks.get(task_id)
        if task is None:
            return LineError(f"unknown task_id {task_id!r}")
        try:
            calls = calls_of(turns)
        except RolloutFormatError as e:
            return LineError(str(e))
        return step_verdict(task, self.run(task_id, calls), rollout_id)

    def verify_stream(self, rollouts: Iterable[Any]) -> Iterator[tuple[Any, Verdict | LineError]]:
        """(rollout, verdict or LineError) for every rollout (``task_id``, ``turns``, ``rollout_id``), in order."""
        for r in rollouts:
            yield r, self.verify_one(r.task_id, r.turns, r.rollout_id)


def refuse_ray(address: str | None) -> None:
    if address is not None:
        raise ConfigError("--ray: τ² rollouts are verified locally, in the watched worker; leave --ray out")


# --------------------------------------------------------------------------- the oracle, for the tagger


def gold_agent_steps(task: Tau2Task) -> list[Tau2Step]:
    """The gold replay's step of every gold agent action, in order (the oracle steps' outputs)."""
    return [s for s in gold(task).steps if s.call.requestor == ASSISTANT]


def agent_steps_without(task: Tau2Task, removed: int) -> list[Tau2Step | None]:
    """The gold replayed without agent action ``removed``: each agent action's step (None for the removed one)."""
    calls, owner, n = [], [], 0
    for a in task.gold_actions:
        if a.requestor == ASSISTANT:
            if n != removed:
                calls.append(Tau2Call(a.name, dict(a.arguments), a.requestor))
                owner.append(n)
            n += 1
        else:
            calls.append(Tau2Call(a.name, dict(a.arguments), a.requestor))
            owner.append(None)
    steps, _ = run_calls(task.domain, task.tau2_id, calls)
    out: list[Tau2Step | None] = [None] * n
    for s, j in zip(steps, owner):
        if j is not None:
            out[j] = s
    return out


__all__ = [
    "Tau2Verdict",
    "Tau2Verifier",
    "agent_steps_without",
    "align",
    "call_dict",
    "calls_of",
    "gold_agent_steps",
    "gold_calls",
    "refuse_ray",
    "step_verdict",
    "to_call",
    "verify_calls",
]
