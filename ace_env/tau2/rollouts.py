"""τ² rollouts in ACE's rollout files, judged step by step: what ``ace ingest`` and ``ace verify`` need.

A τ² rollout is an ACE JSONL line like BFCL's, ``{"rollout_id", "task_id": "tau2:airline:1", "turns":
[[call, ...]], "meta"}``, whose calls are ``{"name", "arguments"}`` objects (``"requestor": "user"`` for a
call the user makes; a BFCL-style call string is read too).  The conversation is one flat list of calls:
its turns are read in order.

**Oracle steps** are the task's gold *agent* actions (:attr:`~ace_env.tau2.tasks.Tau2Task.agent_actions`;
a task without any has one ``abstain`` step).  :func:`step_verdict` turns the outcome of ACE's τ² verifier
(:func:`ace_env.tau2.verify.verify`, run in the watched worker by :class:`Tau2Verifier`) into the verdict
every ACE consumer reads (:class:`ace_env.verifier.Verdict`).  By default the reward is τ²'s own (the final
state, assertions, actions and communicated values on the task's reward basis; a premature stop scores 0)
and the failing oracle step is where τ²'s verdict turns (a write after which the gold's final state cannot
be reached, else the missing write, else the stop); reads in any order, extra reads and skipped reads cost
nothing.  ACE's stricter rules (a call that errored, a skipped read, the gold's order) are listed in
``stricter_because`` and cost the reward only with ``strict`` (``--strict``), where the failing step is the
first gold action not made in the gold's order (:func:`align`).
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
from ace_env.tau2.verify import Conversation, Tau2Verdict, call_matches, gold, is_write, verify
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


def _outcomes(task: Tau2Task, v: Tau2Verdict) -> tuple[str | None, ...]:
    """Per oracle step, what the graph stores: a step the agent made (τ²'s match) passed, unless it comes
    after the failing one (censored); the failing step failed; a gold read never made is not observed; in
    a rewarded rollout a gold write reached by other means (the final state is the gold's) passed.  A failed
    rollout with no failing oracle step (see :func:`~ace_env.tau2.verify.failing_step`) fails no step."""
    if not task.n_steps:
        return ("success" if v.reward == 1.0 else "fail",)
    out: list[str | None] = []
    fail_at = v.failing[0] if v.failing is not None else None
    for j, a in enumerate(task.agent_actions):
        if fail_at is not None and j >= fail_at:
            out.append("fail" if j == fail_at else None)
        elif v.achieved[j] is not None or (v.reward == 1.0 and is_write(task.domain, a)):
            out.append("success")
        else:
            out.append(None)
    return tuple(out)


def step_verdict(task: Tau2Task, outcome: Tau2Outcome, rollout_id: str | None, strict: bool = False,
                 reference_reward: float | None = None) -> Verdict:
    """ACE's verdict (:class:`ace_env.verifier.Verdict`, one turn) on a τ² rollout the runner ran.

    By default the reward is τ²'s and the failing step is where τ²'s verdict turns
    (:func:`ace_env.tau2.verify.failing_step`); ACE's stricter rules broken are listed in
    ``stricter_because``.  With ``strict`` they cost the reward too, and a rollout τ² passes but ACE's
    rules fail is attributed by the gold's order (:func:`align`)."""
    n = max(task.n_steps, 1)
    v = outcome.verdict
    if v is None:  # over budget, or the worker died: the rollout fails at its first step
        return Verdict(rollout_id, task.id, 0.0, 0.0, 0, 1, failing_turn=0, failing_step=len(outcome.steps),
                       failing_oracle_step=0, attribution=outcome.attribution.split(":")[0] or "error",
                       detail=outcome.attribution, matched_steps=0, oracle_steps=n,
                       reference_reward=reference_reward, step_outcomes=("fail",) + (None,) * (n - 1))
    matched = sum(k is not None for k in v.achieved) if task.n_steps else int(v.reward == 1.0)
    common = {"stricter_because": v.stricter_because, "reference_reward": reference_reward,
              "matched_steps": matched, "oracle_steps": n}
    if strict and (v.reward < 1.0 or v.stricter_because):  # ACE's ordered reading: the old verifier's
        _, first = align(task, outcome.steps, v.step_ok)
        j, k, attribution, detail = first or (n - 1, len(outcome.steps), STATE_DIVERGED, "; ".join(v.detail[:2]))
        if v.reward == 1.0:
            detail = f"stricter than τ² ({', '.join(v.stricter_because)}): {detail}"
        return Verdict(rollout_id, task.id, 0.0, v.reward, 0, 1, failing_turn=0, failing_step=k,
                       failing_oracle_step=j, attribution=attribution, detail=detail[:500], **common)
    if v.reward == 1.0:
        return Verdict(rollout_id, task.id, 1.0, 1.0, 1, 1, step_outcomes=_outcomes(task, v), **common)
    j, k, attribution, detail = v.failing or (n - 1, len(outcome.steps), STATE_DIVERGED, "; ".join(v.detail[:2]))
    return Verdict(rollout_id, task.id, 0.0, 0.0, 0, 1, failing_turn=0, failing_step=k, failing_oracle_step=j,
                   attribution=attribution, detail=detail[:500], step_outcomes=_outcomes(task, v), **common)


def verify_calls(task: Tau2Task, calls: list[Tau2Call], rollout_id: str | None = None, strict: bool = False) -> Verdict:
    """Run ``calls`` in this process (no budget: for trusted calls, e.g. the simulated agent's checks) and
    judge them as :func:`step_verdict` does."""
    steps, env = run_calls(task.domain, task.tau2_id, calls)
    return step_verdict(task, Tau2Outcome(task.id, steps, verify(task, steps, env)), rollout_id, strict)


class Tau2Verifier(Tau2Runner):
    """The bounded verifier of τ² rollout files: every rollout runs in the watched worker
    (:class:`~ace_env.tau2.bounded.Tau2Runner`), every tool call under ``budget``; what
    :func:`ace_env.environments.verifier_for` hands ``ace ingest`` for τ² tasks."""

    def __init__(self, tasks: dict[str, Tau2Task], budget: Budget | None = None, strict: bool = False, **_: Any):
        super().__init__(tasks, budget)
        self.strict = strict

    def verify_one(self, task_id: str, turns: Any, rollout_id: str | None,
                   meta: dict[str, Any] | None = None) -> Verdict | LineError:
        """One rollout's verdict; ``meta`` is its file's word on the conversation (τ²'s result files: the
        agent's texts, the termination reason, the recorded reward)."""
        task = self.tasks.get(task_id)
        if task is None:
            return LineError(f"unknown task_id {task_id!r}")
        try:
            calls = calls_of(turns)
        except RolloutFormatError as e:
            return LineError(str(e))
        meta = meta or {}
        texts = meta.get("texts")
        conversation = Conversation(tuple(str(t) for t in texts) if isinstance(texts, list) else None,
                                    meta.get("termination_reason") if isinstance(meta.get("termination_reason"), str)
                                    else None)
        reference = meta.get("reference_reward")
        reference = float(reference) if isinstance(reference, (int, float)) and not isinstance(reference, bool) else None
        return step_verdict(task, self.run(task_id, calls, conversation), rollout_id, self.strict, reference)

    def verify_stream(self, rollouts: Iterable[Any]) -> Iterator[tuple[Any, Verdict | LineError]]:
        """(rollout, verdict or LineError) for every rollout (``task_id``, ``turns``, ``rollout_id``), in order."""
        for r in rollouts:
            yield r, self.verify_one(r.task_id, r.turns, r.rollout_id, getattr(r, "meta", None))


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
