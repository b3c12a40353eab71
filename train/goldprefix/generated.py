"""Generated scoring: the policy writes each step, and the step's environment judges the answer (its entry's
``gold_prefix.judge``: BFCL verifies the turn in the bounded worker, τ² runs the gold in the bounded τ² worker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ace_env.goldprefix import GoldPrefix, GoldStep, StepVerdict
from ace_env.worker import Budget
from train.goldprefix.scores import StepScore
from train.goldprefix.transcript import Transcript
from train.policies.base import GenerationConfig, Policy, PolicyError


def step_score(tr: Transcript, s: GoldStep, verdict: StepVerdict) -> StepScore:
    """An environment's verdict on an answer at a step, as the step's score."""
    return StepScore(tr.task.id, s.flat, s.turn, s.index, s.tool, None, exact=verdict.exact,
                     tool_right=verdict.tool_right, passed=verdict.passed, attribution=verdict.attribution,
                     answer=verdict.answer)


def generated(gold: GoldPrefix, policy: Policy, transcripts: list[Transcript], config: GenerationConfig,
              budget: Budget | None, batch_size: int = 8,
              on_step: Callable[[int], None] | None = None) -> dict[tuple[str, int], StepScore]:
    """Every step answered by the policy and judged by its environment (``gold.judge``), in batches.

    Steps are sent task by task, so an ``hf:`` policy's prefix cache reuses each task's prefix.  BFCL's judge
    puts the answer's first call in place of the oracle's call at the step (the rest of the turn stays the
    oracle's) and verifies the turn: the step passes when the turn does, and an answer without a call passes
    only where the turn needs none.
    """
    todo = [(tr, s) for tr in transcripts for s in tr.steps]
    out: dict[tuple[str, int], StepScore] = {}
    with gold.judge({tr.task.id: tr.task for tr in transcripts}, budget or Budget()) as judge:
        for at in range(0, len(todo), batch_size):
            batch = todo[at:at + batch_size]
            replies = policy.generate([tr.conversation(s) for tr, s in batch], config)
            if len(replies) != len(batch):
                raise PolicyError(f"policy {policy.spec} answered {len(replies)} of {len(batch)} conversations")
            for (tr, s), verdict in zip(batch, judge(batch, replies)):
                out[(tr.task.id, s.flat)] = step_score(tr, s, verdict)
            if on_step:
                on_step(len(batch))
    return out


def judge_with(gold: GoldPrefix, steps: list[tuple[Transcript, GoldStep]], replies: list[Any],
               budget: Budget) -> list[StepScore]:
    """The scores of ``replies`` at their ``steps``, judged by their environment in a checker of its own."""
    with gold.judge({tr.task.id: tr.task for tr, _ in steps}, budget) as judge:
        return [step_score(tr, s, v) for (tr, s), v in zip(steps, judge(steps, replies), strict=True)]
