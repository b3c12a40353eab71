"""A gold-prefix run: every oracle step of a task set scored (:func:`score_tasks`), and the scores as stored rollouts (:func:`records`); each environment's part (its transcript, its judging) asked of its entry (``gold_prefix``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ace_env.environments import environment_of
from ace_env.errors import ConfigError
from ace_env.goldprefix import GoldPrefix, GoldPrefixError, GoldStep
from ace_env.tasks import Task
from ace_env.verifier import WRONG_ARGUMENT, WRONG_TOOL
from ace_env.worker import Budget
from ace_graph.ingest import GOLD_PREFIX
from ace_graph.outcomes import FAIL, SUCCESS, RolloutRecord, StepRow
from ace_graph.stats import NEAR_SUCCESS
from ace_graph.tagger import tag_task
from train.errors import ExportError
from train.goldprefix.forced import teacher_forced, teacher_forced_shared
from train.goldprefix.generated import generated, judge_with
from train.goldprefix.scores import Scoring, StepScore
from train.goldprefix.transcript import Transcript
from train.policies.base import GenerationConfig, Policy, PolicyError


def gold_prefix_of(tasks: Iterable[Any]) -> GoldPrefix:
    """What the environment ``tasks`` belong to gives gold-prefix scoring (its entry's ``gold_prefix``); one
    line when it gives nothing."""
    env = environment_of(tasks)
    if env.gold_prefix is None:
        raise ConfigError(f"gold-prefix scoring does not know {env.title} tasks")
    return env.gold_prefix


def transcript(task: Any) -> Transcript:
    """The gold transcript of a task of any environment (its entry's ``gold_prefix.transcript``).

    Raises :class:`train.errors.ExportError` when its environment cannot build it (a gold that does not run)."""
    try:
        return Transcript.of(gold_prefix_of((task,)).transcript(task))
    except GoldPrefixError as e:
        raise ExportError(str(e)) from e


def judge_steps(steps: list[tuple[Transcript, GoldStep]], replies: list[Any], budget: Budget) -> list[StepScore]:
    """The scores of ``replies`` at their ``steps``, judged by the steps' environment (what a transition-mode GRPO
    run, :mod:`train.transitions`, rewards)."""
    return judge_with(gold_prefix_of([tr.task for tr, _ in steps]), steps, replies, budget)


# --------------------------------------------------------------------------- a run


def score_tasks(policy: Policy, tasks: Iterable[Task], generate: bool = False,
                config: GenerationConfig | None = None, budget: Budget | None = None, batch_size: int = 8,
                on_step: Callable[[int], None] | None = None, share_prefix: bool = False) -> Scoring:
    """Gold-prefix scores of every oracle step of ``tasks``.

    Teacher forcing needs an ``hf:`` policy (one with ``model`` and ``tokenizer``); other policies need
    ``generate=True``.  With an ``hf:`` policy and ``generate`` both are recorded.  ``on_step(n)`` is
    called as steps are scored (``n`` of them).  ``share_prefix``: teacher-force every task together,
    computing the token prefixes tasks share once (:func:`teacher_forced_shared`: the same scores, fewer
    tokens through the model); otherwise one task at a time (:func:`teacher_forced`).
    """
    start = time.perf_counter()
    run = Scoring()
    forcing = hasattr(policy, "model") and hasattr(policy, "tokenizer")
    if not forcing and not generate:
        raise PolicyError(f"policy {policy.spec} gives no likelihoods: score it with --generate")
    tasks = list(tasks)
    gold = gold_prefix_of(tasks)
    run.prefix = gold.prefix
    transcripts: list[Transcript] = []
    for task in tasks:
        try:
            transcripts.append(transcript(task))
        except (ExportError, PolicyError) as e:
            run.skipped.append(str(e))
    forced: dict[tuple[str, int], StepScore] = {}
    if forcing and share_prefix:
        forced, run.forward_tokens, skipped = teacher_forced_shared(policy, transcripts)
        run.skipped += skipped
        if on_step and not generate:
            on_step(sum(len(tr.steps) for tr in transcripts))
    elif forcing:
        for tr in transcripts:
            by_flat, n, skipped = teacher_forced(policy, tr)
            run.forward_tokens += n
            run.skipped += skipped
            forced.update({(tr.task.id, k): v for k, v in by_flat.items()})
            if on_step and not generate:
                on_step(len(tr.steps))
    made: dict[tuple[str, int], StepScore] = {}
    if generate and transcripts:
        made = generated(gold, policy, transcripts, config or GenerationConfig(), budget, batch_size, on_step)
    for tr in transcripts:
        tools = {s.flat: s.tool for s in tr.steps}
        for s in tr.steps:
            key = (tr.task.id, s.flat)
            if key not in forced and key not in made:
                continue
            score = made.get(key) or forced[key]
            if key in made and key in forced:
                f = forced[key]
                score.tokens, score.nll, score.exact, score.tool_right = f.tokens, f.nll, f.exact, f.tool_right
            score.prev_tool = tools[s.prev] if s.prev is not None else None
            if not score.outcome and score.attribution is None:
                score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
            run.scores.append(score)
    run.seconds = time.perf_counter() - start
    return run



# --------------------------------------------------------------------------- into the graph


def records(scores: Iterable[StepScore], tasks: dict[str, Task], scope: str) -> Iterator[tuple[RolloutRecord, tuple[Any, ...]]]:
    """One stored rollout per task (id ``TASK#gold-prefix``): every scored oracle step reached, its outcome
    the step's own, its predecessor the oracle's previous call; reward 1 when every step passed."""
    by_task: dict[str, list[StepScore]] = {}
    for s in scores:
        by_task.setdefault(s.task_id, []).append(s)
    for task_id, steps in by_task.items():
        task = tasks[task_id]
        tags = tag_task(task)
        tr_steps = {s.flat: s for s in transcript(task).steps}
        steps.sort(key=lambda s: s.flat)
        rows = []
        for s in steps:
            tag = tags[s.flat]
            rows.append(StepRow(s.flat, s.turn, s.index, tag.tool, tuple(tag.skills),
                                SUCCESS if s.outcome else FAIL, tr_steps[s.flat].prev, nll=s.nll))
        failed = [s for s in steps if not s.outcome]
        first = failed[0] if failed else None
        prev = tags[tr_steps[first.flat].prev] if first and tr_steps[first.flat].prev is not None else None
        share = (len(steps) - len(failed)) / len(steps)
        rollout_id = f"{task_id}#{GOLD_PREFIX}"
        yield RolloutRecord(
            id=f"{scope}/{rollout_id}", rollout_id=rollout_id, scope=scope, task_id=task_id,
            reward=1.0 if not failed else 0.0, partial_credit=share, step_match=share,
            near_success=bool(failed) and share >= NEAR_SUCCESS,
            attribution=first.attribution if first else None,
            failing_turn=first.turn if first else None, failing_step=first.index if first else None,
            fail_tool=tags[first.flat].tool if first else None, fail_prev_tool=prev.tool if prev else None,
            fail_skills=tuple(tags[first.flat].skills) if first else (),
            fail_prev_skills=tuple(prev.skills) if prev else (),
            steps=rows,
            pairs=[(s.prev, s.flat) for s in tr_steps.values() if s.prev is not None],
            calls=json.dumps([s.answer for s in steps] if any(s.answer is not None for s in steps) else
                             [s.tool for s in steps])[:20_000],
            detail=f"gold-prefix: {len(steps) - len(failed)} of {len(steps)} steps passed",
            task_key=f"{task.source}:{task.id}",
        ), tags
