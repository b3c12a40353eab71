"""The verifier: a rollout judged turn by turn against its task's oracle.

The oracle (the ground truth, executed) is :mod:`ace_env.oracle`'s.  The
**verifier** runs a rollout (one list of calls per user turn) in a fresh
environment and compares it with the oracle turn by turn:

* BFCL's rule: after each turn the public state of every instance equals the
  oracle's, and the oracle's outputs of the turn appear (as a multiset) among
  the rollout's outputs so far.
* ACE's stricter rules, closing holes of BFCL's checker (``strict``; labelled in
  ``stricter_because`` either way, :data:`STRICTER`): turns whose ground truth is
  empty are checked too (no call may be made, the state must match); a call to a
  tool that is not offered fails and is never executed; a malformed call fails
  and is never executed.  Without ``strict`` (the diagnosis's default, as the
  benchmark judges) a turn with an empty ground truth is not checked (its calls
  run, so later turns see their effects), a tool of the task's classes that is
  not offered runs as BFCL's checker runs it, and a call that does not parse is
  left out as BFCL's decoder leaves it out.  Rollouts never share state.

The verdict has a 0/1 ``reward``, ``partial_credit`` (share of turns
satisfied), the first failing turn and step, and what went wrong there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from ace_env.calls import Call, parse_call
from ace_env.errors import BudgetExceeded, RolloutFormatError
from ace_env.executor import (
    DISTRACTOR,
    ERROR,
    MALFORMED,
    NOT_OFFERED,
    OK,
    RolloutState,
    StepResult,
    canonical_arguments,
)
from ace_env.oracle import Oracle, OracleTurn, match_key, oracle_for, parsed_match_key
from ace_env.tasks import Task

# Attribution kinds: how the first failing step went wrong.
WRONG_TOOL = "wrong_tool"
WRONG_ARGUMENT = "wrong_argument"
TOOL_NOT_OFFERED = "tool_not_offered"
MALFORMED_CALL = "malformed_call"
STATE_DIVERGED = "state_diverged"
MISSING_OUTPUT = "missing_output"
ACTED_WITHOUT_NEED = "acted_without_need"
STOPPED_EARLY = "stopped_early"
INFERENCE_ERROR = "inference_error"
# A tool call went over its budget (ace_env.worker): the rollout ends there, reward 0.
TIMEOUT = "timeout"
RESOURCE_LIMIT = "resource_limit"
# τ²: the agent never said a value the task's COMMUNICATE basis asks for (its actions may all be right).
NOT_COMMUNICATED = "not_communicated"
ATTRIBUTIONS = (
    WRONG_TOOL,
    WRONG_ARGUMENT,
    TOOL_NOT_OFFERED,
    MALFORMED_CALL,
    STATE_DIVERGED,
    MISSING_OUTPUT,
    ACTED_WITHOUT_NEED,
    STOPPED_EARLY,
    INFERENCE_ERROR,
    TIMEOUT,
    RESOURCE_LIMIT,
    NOT_COMMUNICATED,
)


#: ACE's rules stricter than BFCL's checker, as ``Verdict.stricter_because`` names them.
CALLS_IN_EMPTY_TURN = "calls_in_empty_turn"  # a call in a turn whose ground truth is empty
NOT_OFFERED_TOOL = "not_offered_tool"  # a call to a tool not offered in its turn
UNPARSED_CALL = "malformed_call"  # a call that does not parse
STRICTER = (CALLS_IN_EMPTY_TURN, NOT_OFFERED_TOOL, UNPARSED_CALL)


# --------------------------------------------------------------------------- verdict


@dataclass
class Verdict:
    """The verifier's judgement of one rollout."""

    rollout_id: str | None
    task_id: str
    reward: float
    partial_credit: float
    turns_satisfied: int
    turns_total: int
    failing_turn: int | None = None
    failing_step: int | None = None
    failing_oracle_step: int | None = None  # index in the failing turn's ground truth
    attribution: str | None = None
    detail: str = ""
    matched_steps: int = 0
    oracle_steps: int = 0
    steps: list[list[StepResult]] = field(default_factory=list, repr=False)
    turn_ok: list[bool] = field(default_factory=list, repr=False)
    #: ACE's rules stricter than the benchmark's own evaluator that this rollout breaks (a closed set per
    #: environment); counted as failures only when asked (``--strict``).
    stricter_because: tuple[str, ...] = ()
    #: The benchmark's own recorded reward, when the rollout file carries one (τ²'s result files).
    reference_reward: float | None = None
    #: Per oracle step (flat): "success", "fail" or None (not observed); None: steps before the failing one
    #: passed, later ones are censored (the verifier's ordered reading).
    step_outcomes: tuple[str | None, ...] | None = field(default=None, repr=False)

    @property
    def step_match(self) -> float:
        """Share of the oracle's steps the rollout reproduced (1.0 for an empty oracle)."""
        return self.matched_steps / self.oracle_steps if self.oracle_steps else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rollout_id": self.rollout_id,
            "task_id": self.task_id,
            "reward": self.reward,
            "partial_credit": round(self.partial_credit, 6),
            "turns_satisfied": self.turns_satisfied,
            "turns_total": self.turns_total,
            "failing_turn": self.failing_turn,
            "failing_step": self.failing_step,
            "failing_oracle_step": self.failing_oracle_step,
            "attribution": self.attribution,
            "step_match": round(self.step_match, 6),
            "detail": self.detail,
            "matched_steps": self.matched_steps,
            "oracle_steps": self.oracle_steps,
            "stricter_because": list(self.stricter_because),
            "reference_reward": self.reference_reward,
        }


def _lcs_pairs(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two short sequences."""
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            dp[i][j] = dp[i + 1][j + 1] + 1 if a[i] == b[j] else max(dp[i + 1][j], dp[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _state_matches(env: RolloutState, oracle_state: dict[str, dict[str, Any]]) -> tuple[bool, str]:
    for cls, attrs in oracle_state.items():
        inst = env.instances[cls]
        for name, expected in attrs.items():
            if getattr(inst, name, _MISSING) != expected:
                return False, f"{cls}.{name} differs from the oracle's"
    return True, ""


_MISSING = object()


def _multiset_missing(expected: list[str], seen: Counter[str]) -> list[str]:
    need = Counter(expected)
    return [out for out, n in need.items() if seen[out] < n]


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def argument_difference(name: str, expected: dict[str, Any], got: dict[str, Any]) -> str:
    """How a call's arguments differ from the oracle's, with both values.

    ``mkdir: argument dir_name: expected 'temp', got 'tmp'``.  Values are
    compared as the verifier matches calls (by their printed form, so ``1``
    and ``1.0`` or ``1`` and ``True`` differ).
    """
    parts = []
    for p in list(expected) + [p for p in got if p not in expected]:
        want, have = expected.get(p, _MISSING), got.get(p, _MISSING)
        if want is not _MISSING and have is not _MISSING and repr(want) == repr(have):
            continue
        shown_want = "no value" if want is _MISSING else _shown(want)
        shown_have = "no value" if have is _MISSING else _shown(have)
        parts.append(f"{p}: expected {shown_want}, got {shown_have}")
    if not parts:  # same arguments, so the call matched elsewhere: say so rather than guess
        return f"{name}: the arguments equal the oracle's, but the call is out of order"
    return f"{name}: argument{'s' if len(parts) > 1 else ''} {'; '.join(parts)}"


def _attribute(
    steps: list[StepResult], oracle_turn: OracleTurn, state_ok: bool, state_detail: str, missing: list[str]
) -> tuple[str, int, int, str]:
    """Why a turn failed: (kind, rollout step, oracle step, detail).

    The oracle step is the index, within the turn's ground truth, of the step
    the agent got wrong (0 for a turn whose ground truth is empty).
    """
    n_oracle = len(oracle_turn.steps)
    last = max(n_oracle - 1, 0)
    rollout_keys = [match_key(s.name, s.arguments) for s in steps]
    pairs = _lcs_pairs(oracle_turn.keys, rollout_keys)

    def oracle_step_before(i: int) -> int:
        return min(sum(1 for _, rj in pairs if rj < i), last)

    for i, s in enumerate(steps):
        if s.status == MALFORMED:
            return MALFORMED_CALL, i, oracle_step_before(i), s.detail
        if s.status == NOT_OFFERED:
            return TOOL_NOT_OFFERED, i, oracle_step_before(i), s.detail
        if s.status == DISTRACTOR:
            return WRONG_TOOL, i, oracle_step_before(i), s.detail
    if not oracle_turn.steps and steps:
        return ACTED_WITHOUT_NEED, 0, 0, f"called {steps[0].name!r} in a turn that required no call"
    if oracle_turn.steps and not steps:
        return STOPPED_EARLY, 0, 0, "made no call in a turn that required calls"
    matched_o = {i for i, _ in pairs}
    matched_r = {j for _, j in pairs}
    for j, o in enumerate(oracle_turn.steps):
        if j in matched_o:
            continue
        pos = max((rj + 1 for oi, rj in pairs if oi < j), default=0)
        if pos >= len(steps):
            return STOPPED_EARLY, len(steps), j, f"oracle step {j} ({o.name}) was never made"
        unmatched = [k for k in range(pos, len(steps)) if k not in matched_r]
        same_name = [k for k in unmatched if steps[k].name == o.name]
        if same_name:
            k = same_name[0]
            return WRONG_ARGUMENT, k, j, argument_difference(o.name, o.arguments, steps[k].arguments)
        k = unmatched[0] if unmatched else pos
        return WRONG_TOOL, k, j, f"called {steps[k].name!r} where the oracle calls {o.name!r}"
    extra = [k for k in range(len(steps)) if k not in matched_r]
    if not state_ok:
        k = extra[0] if extra else max(len(steps) - 1, 0)
        return STATE_DIVERGED, k, oracle_step_before(k) if extra else last, state_detail
    return MISSING_OUTPUT, max(len(steps) - 1, 0), last, f"{len(missing)} oracle output(s) not produced"


def verify(
    task: Task,
    turns: Sequence[Sequence[Any]],
    rollout_id: str | None = None,
    oracle: Oracle | None = None,
    fast_forward: bool = True,
    strict: bool = True,
) -> Verdict:
    """Verify one rollout: ``turns[i]`` is the list of calls made in user turn ``i``.

    ``strict`` (the default here, for synthesis, training rewards and evaluation): ACE's rules stricter
    than BFCL's checker fail the rollout; without it they do not (the diagnosis's default, ``ace verify``
    and ``ace ingest`` without ``--strict``).  The rules the rollout breaks are listed in
    ``stricter_because`` either way.

    A rollout with fewer turns than the task stopped early (missing turns are
    empty); one with more turns is malformed input.

    With ``fast_forward`` (the default), turns that repeat the oracle's calls
    exactly are not executed again: the rollout's environment is restored
    from the oracle's checkpoint at its first deviation.  Verdicts are the
    same either way (a test proves it); only the time differs.
    """
    if len(turns) > len(task.turns):
        raise RolloutFormatError(
            f"rollout {rollout_id!r} has {len(turns)} turns but task {task.id} has {len(task.turns)}"
        )
    if oracle is None:
        try:
            oracle = oracle_for(task)
        except BudgetExceeded as e:
            return over_budget(task, rollout_id, e.kind, f"the oracle of task {task.id}: {e}", 0, 0)
    env: RolloutState | None = None
    seen: Counter[str] = Counter()
    verdict = Verdict(rollout_id, task.id, 0.0, 0.0, 0, len(task.turns), oracle_steps=oracle.n_steps)
    clean = True
    stricter: set[str] = set()
    for t, oracle_turn in enumerate(oracle.turns):
        calls = turns[t] if t < len(turns) else []
        if isinstance(calls, (str, dict)):
            raise RolloutFormatError(f"rollout {rollout_id!r}: turn {t} must be a list of calls")
        if env is None and fast_forward:
            replayed = _follows_oracle(calls, oracle_turn, task, t)
            if replayed is not None:
                # Execution is deterministic: a turn that makes exactly the oracle's
                # calls from the oracle's state ends in the oracle's state.
                seen.update(o.output for o in oracle_turn.steps)
                verdict.steps.append(replayed)
                verdict.turn_ok.append(True)
                verdict.turns_satisfied += 1
                verdict.matched_steps += len(replayed)
                continue
        if env is None:
            env = RolloutState(task, oracle.turns[t - 1].checkpoint if t else oracle.initial or None)
        steps = []
        try:
            for c in calls:
                steps.append(env.call(c, t, run_not_offered=not strict))
        except BudgetExceeded as e:
            return over_budget(task, rollout_id, e.kind, str(e), t, len(steps), verdict)
        broken = _stricter_rules(steps, bool(oracle_turn.steps))
        stricter.update(broken)
        # Without strict, the calls BFCL's checker does not fail on are left out of the judgement: one that
        # does not parse (its decoder drops it) and one to a tool no class of the task has (it errors there).
        kept = steps if strict else [x for x in steps if x.status not in (MALFORMED, NOT_OFFERED)]
        for s in steps:
            if s.executed:
                seen[s.output or ""] += 1
        if not all(s.executed for s in kept):
            clean = False
        state_ok, state_detail = _state_matches(env, oracle_turn.state)
        missing = _multiset_missing([o.output for o in oracle_turn.steps], seen)
        # A turn that needs calls needs at least one from the rollout that parses (as in BFCL), and a turn
        # that needs none must get none (ACE's stricter rule; BFCL's checker does not check such a turn).
        if strict:
            ok = state_ok and not missing and all(s.executed for s in steps) and bool(oracle_turn.steps) == bool(steps)
        elif oracle_turn.steps:
            ok = state_ok and not missing and all(s.executed for s in kept) and any(s.status != MALFORMED for s in steps)
        else:
            ok = True
        rollout_keys = [match_key(s.name, s.arguments) for s in steps if s.executed]
        verdict.matched_steps += len(_lcs_pairs(oracle_turn.keys, rollout_keys))
        verdict.steps.append(steps)
        verdict.turn_ok.append(ok)
        if ok:
            verdict.turns_satisfied += 1
        elif verdict.failing_turn is None:
            at = [k for k, x in enumerate(steps) if strict or x.status not in (MALFORMED, NOT_OFFERED)]
            kind, step, oracle_step, detail = _attribute([steps[k] for k in at], oracle_turn, state_ok,
                                                         state_detail, missing)
            step = at[step] if step < len(at) else len(steps)
            verdict.failing_turn, verdict.failing_step = t, step
            verdict.failing_oracle_step = oracle_step
            verdict.attribution, verdict.detail = kind, detail
    verdict.partial_credit = verdict.turns_satisfied / max(len(task.turns), 1)
    verdict.reward = 1.0 if verdict.failing_turn is None and clean else 0.0
    verdict.stricter_because = tuple(r for r in STRICTER if r in stricter)
    return verdict


def _stricter_rules(steps: Sequence[StepResult], needs_calls: bool) -> set[str]:
    """Which of ACE's stricter rules (:data:`STRICTER`) the calls of one turn break."""
    out = set()
    if not needs_calls and steps:
        out.add(CALLS_IN_EMPTY_TURN)
    for s in steps:
        if s.status == MALFORMED:
            out.add(UNPARSED_CALL)
        elif s.status == NOT_OFFERED or not s.offered:
            out.add(NOT_OFFERED_TOOL)
    return out


def verify_rollout(task: Task, rollout: Any, oracle: Oracle | None = None, strict: bool = True) -> Verdict:
    """Verify a rollout read from a file (:class:`ace_env.formats.Rollout`).

    As :func:`verify`, and a rollout whose generation failed (BFCL records
    ``"Error during inference: ..."``, kept in ``meta["inference_error"]``)
    gets reward 0 and the attribution ``inference_error`` with the message,
    rather than looking like an agent that stopped early.
    """
    return with_inference_error(verify(task, rollout.turns, rollout_id=rollout.rollout_id, oracle=oracle,
                                       strict=strict), rollout)


def with_inference_error(verdict: Verdict, rollout: Any) -> Verdict:
    """The verdict of a rollout whose generation failed (``meta["inference_error"]``): reward 0,
    attribution ``inference_error``; any other verdict unchanged."""
    meta = rollout.meta if isinstance(getattr(rollout, "meta", None), dict) else {}
    error = meta.get("inference_error")
    if error:
        verdict.reward = 0.0
        verdict.failing_turn = verdict.failing_turn if verdict.failing_turn is not None else 0
        verdict.failing_step = 0
        verdict.failing_oracle_step = 0
        verdict.attribution = INFERENCE_ERROR
        verdict.detail = f"generation failed: {str(error)[:300]}"
    return verdict


def over_budget(
    task: Task,
    rollout_id: str | None,
    kind: str,
    detail: str,
    turn: int,
    step: int,
    so_far: Verdict | None = None,
) -> Verdict:
    """The verdict of a rollout a tool call of which went over budget: it ends there, reward 0."""
    v = so_far or Verdict(rollout_id, task.id, 0.0, 0.0, 0, len(task.turns), oracle_steps=task.n_steps)
    v.reward = 0.0
    v.partial_credit = v.turns_satisfied / max(len(task.turns), 1)
    v.failing_turn, v.failing_step, v.failing_oracle_step = turn, step, 0
    v.attribution, v.detail = kind, detail
    return v


def _follows_oracle(calls: Sequence[Any], oracle_turn: OracleTurn, task: Task, t: int) -> list[StepResult] | None:
    """The oracle's step results if ``calls`` are exactly the oracle's calls of turn ``t``."""
    if len(calls) != len(oracle_turn.steps) or any(o.status != OK for o in oracle_turn.steps):
        return None
    offered = task.offered_tools(t) if calls else frozenset()
    out = []
    for raw, o, key in zip(calls, oracle_turn.steps, oracle_turn.keys):
        if isinstance(raw, str) and len(raw) <= 4096:
            parsed, arguments, raw_key = parsed_match_key(raw)
        else:
            parsed = parse_call(raw)
            arguments = canonical_arguments(parsed.name, parsed) if isinstance(parsed, Call) else None
            raw_key = match_key(parsed.name, arguments) if arguments is not None else None
        if not isinstance(parsed, Call) or parsed.name != o.name or parsed.name not in offered:
            return None
        if arguments is None or raw_key != key:
            return None
        out.append(StepResult(raw if isinstance(raw, str) else parsed.render(), OK, o.name, arguments, o.output))
    return out


def ground_truth_rollout(task: Task) -> list[list[str]]:
    """The task's ground truth as a rollout."""
    return [list(t.ground_truth) for t in task.turns]


__all__ = [
    "ATTRIBUTIONS",
    "NOT_COMMUNICATED",
    "ERROR",
    "Verdict",
    "ground_truth_rollout",
    "over_budget",
    "verify",
    "verify_rollout",
    "with_inference_error",
]
