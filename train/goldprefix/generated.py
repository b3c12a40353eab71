"""Generated scoring of BFCL steps: the policy writes the step, the bounded verifier checks the turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ace_env.bounded import BoundedVerifier, LineError
from ace_env.modelout import parse_message
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.verifier import WRONG_ARGUMENT, WRONG_TOOL
from ace_env.worker import Budget
from train.goldprefix.scores import StepScore
from train.goldprefix.transcript import GoldPrefixHooks, GoldStep, Transcript, bfcl_transcript
from train.policies.base import GenerationConfig, Policy, PolicyError

# --------------------------------------------------------------------------- generation


def _replaced(task: Task, step: GoldStep, calls: list[Any]) -> list[list[Any]]:
    """The ground truth up to the step's turn, with the step's call replaced by ``calls``."""
    turns = [list(turn.ground_truth) for turn in task.turns[: step.turn + 1]]
    if step.tool is None:
        turns[step.turn] = list(calls)
    else:
        turns[step.turn][step.index:step.index + 1] = list(calls)
    return turns


def generated(policy: Policy, transcripts: list[Transcript], config: GenerationConfig, budget: Budget | None,
              batch_size: int = 8, on_step: Callable[[int], None] | None = None) -> dict[tuple[str, int], StepScore]:
    """Every step answered by the policy and its first call verified by execution, in batches.

    Steps are sent task by task, so an ``hf:`` policy's prefix cache reuses each task's prefix.  The
    first call of an answer replaces the oracle's call at the step (the rest of the turn stays the
    oracle's) and the turn is verified in the bounded worker: the step passes when the turn does, and
    an answer without a call passes only where the turn needs none.
    """
    todo = [(tr, s) for tr in transcripts for s in tr.steps]
    tasks = {tr.task.id: tr.task for tr in transcripts}
    out: dict[tuple[str, int], StepScore] = {}
    with BoundedVerifier(tasks, budget or Budget(), keep_steps=True) as verifier:
        for at in range(0, len(todo), batch_size):
            batch = todo[at:at + batch_size]
            replies = policy.generate([tr.conversation(s) for tr, s in batch], config)
            if len(replies) != len(batch):
                raise PolicyError(f"policy {policy.spec} answered {len(replies)} of {len(batch)} conversations")
            for (tr, s), score in zip(batch, judge_replies(verifier, batch, replies)):
                out[(tr.task.id, s.flat)] = score
            if on_step:
                on_step(len(batch))
    return out


def judge_replies(verifier: BoundedVerifier, steps: list[tuple[Transcript, GoldStep]],
                  replies: list[Any]) -> list[StepScore]:
    """The verdict on each reply at its step: its first call replaces the oracle's call there, the rest of the
    turn stays the oracle's, and the turn is verified in ``verifier`` (a started BoundedVerifier over the
    steps' tasks, ``keep_steps=True``)."""
    firsts = []
    for reply in replies:
        calls = [] if reply.finish_reason == "error" else parse_message(reply.message).calls
        firsts.append(calls[:1])
    results = verifier.verify_many([
        (tr.task.id, _replaced(tr.task, s, first), f"{tr.task.id}@{s.turn}.{s.index}")
        for (tr, s), first in zip(steps, firsts)
    ])
    return [_judge(tr, s, reply, first, verdict)
            for (tr, s), reply, first, verdict in zip(steps, replies, firsts, results)]


def _judge(tr: Transcript, s: GoldStep, reply: Any, first: list[Any], verdict: Any) -> StepScore:
    text = reply.message.get("content") or ""
    score = StepScore(tr.task.id, s.flat, s.turn, s.index, s.tool, None, answer=str(text)[:500])
    if reply.finish_reason == "error":
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "inference_error"
        return score
    if isinstance(verdict, LineError):
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "malformed_call"
        return score
    turn_ok = len(verdict.turn_ok) > s.turn and verdict.turn_ok[s.turn]
    if s.tool is None:  # the turn needs no call
        score.passed = score.exact = score.tool_right = not first and turn_ok
        score.attribution = None if score.passed else verdict.attribution or "acted_without_need"
        return score
    made = verdict.steps[s.turn][s.index] if first and len(verdict.steps) > s.turn and \
        len(verdict.steps[s.turn]) > s.index else None
    gold = oracle_for(tr.task).turns[s.turn].steps[s.index]
    score.tool_right = made is not None and made.name == gold.name
    score.exact = made is not None and made.executed and made.name == gold.name and \
        repr(made.arguments) == repr(gold.arguments)
    score.passed = bool(first) and turn_ok
    if not score.passed:
        if not first:
            score.attribution = "stopped_early"
        elif verdict.attribution in (None, WRONG_ARGUMENT, WRONG_TOOL):
            score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
        else:
            score.attribution = verdict.attribution
    return score


def judge_steps(steps: list[tuple[Transcript, GoldStep]], replies: list[Any], budget: Budget) -> list[StepScore]:
    """The verdicts on ``replies`` at their BFCL ``steps`` (:func:`judge_replies`), in a bounded verifier of its own."""
    with BoundedVerifier({tr.task.id: tr.task for tr, _ in steps}, budget, keep_steps=True) as verifier:
        return judge_replies(verifier, steps, replies)


#: BFCL's gold prefix: the task's own user turns.
BFCL_HOOKS = GoldPrefixHooks(Task, "task-turns", bfcl_transcript, generated, judge_steps)
