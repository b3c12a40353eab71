"""Why a synthesis run wrote fewer tasks than asked: the one limit that bound, in one line, and what to change.

A run of :mod:`synth.pipeline` loses attempts in four places, and :func:`stop_reason` names the one that bound:

* **edges and seeds per edge**: the frontier's edges with seeds offer fewer (seed, strategy) draws than the
  tasks asked for (every draw makes at most one task, a second one only where it differs);
* **strategies**: the strategies made no draft on the seeds drawn (the seed cannot carry them) or their drafts
  failed the generic or the strategy's own checks;
* **the diversity rule**: candidates were copies (same content, near copies) or over the per-base-task caps;
* **the attempt budget**: the run spent the attempts it is allowed (a bound on its work) first.

The counts come from the run's :class:`~synth.pipeline.SynthResult` (:func:`losses`); the decision is pure
(:func:`stop_reason` on a :class:`Yield`), so it is tested without a run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

#: Rejection reasons that come from the diversity rules (copies and the per-base caps).
DIVERSITY = frozenset({"duplicate", "near_duplicate", "same_base_task"})
#: Rejection reason of an attempt whose strategy made no task from the seed.
NO_DRAFT = "synthesis_failed"


@dataclass
class Yield:
    """What a run was asked and what it spent, counted by where attempts were lost."""

    asked: int
    made: int
    attempted: int
    budget: int
    """Attempts the run was allowed (0: no fixed budget, e.g. the ``rounds`` schedule's per-plan budgets)."""
    edges: int
    """Frontier edges with at least one usable seed."""
    draws: int
    """(seed, strategy) pairs the plans could draw on, over every edge with seeds."""
    strategies: int
    rejections: Counter = field(default_factory=Counter)
    schedule: str = "in_turn"

    @property
    def diversity(self) -> int:
        return sum(v for k, v in self.rejections.items() if k in DIVERSITY)

    @property
    def no_draft(self) -> int:
        return self.rejections.get(NO_DRAFT, 0)

    @property
    def failed_checks(self) -> int:
        return sum(v for k, v in self.rejections.items() if k not in DIVERSITY and k != NO_DRAFT)


def stop_reason(y: Yield) -> str | None:
    """One line: which limit bound a run short of what it was asked, and what to change; None when it was not short."""
    if y.made >= y.asked:
        return None
    head = f"wrote {y.made} of {y.asked} tasks"
    if y.edges == 0:
        return f"{head}: bound by edges: no frontier edge has a seed task that holds it; aim at other edges (--target) or give seeds that hold them (--tasks)"
    if y.draws < y.asked:
        return (f"{head}: bound by edges and seeds per edge: {y.edges} edge(s) with seeds offer {y.draws} (seed, "
                f"strategy) draws for {y.asked} tasks; aim at more edges (--target, a higher --limit, rollouts that "
                "reach more compositions) or give more seed tasks (--tasks)")
    if y.budget and y.attempted >= y.budget:
        return (f"{head}: bound by the attempt budget ({y.attempted} attempts; "
                f"{_losses(y)}); ask for fewer tasks, or aim at edges whose seeds the strategies can carry")
    lost = {"strategies": y.no_draft + y.failed_checks, "the diversity rule": y.diversity}
    what = max(lost, key=lambda k: (lost[k], k == "strategies"))
    if what == "strategies":
        return (f"{head}: bound by strategies ({_losses(y)}, over {y.edges} edge(s)); "
                "add strategies (--strategy) or aim at edges whose seeds they can carry (--target, --tasks)")
    return (f"{head}: bound by the diversity rule ({_losses(y)}); give more seed tasks that hold these edges "
            "(--tasks) or aim at more edges (--target, a higher --limit); more --rounds or --plans draw on the same "
            "base tasks")


def _losses(y: Yield) -> str:
    return (f"{y.no_draft} of {y.attempted} attempts made no draft, {y.failed_checks} failed a check, "
            f"{y.diversity} were copies or over a per-base cap")


def losses(result: Any, asked: int, by_target: Mapping[tuple[str, str], list[str]], strategies: int,
           schedule: str, budget: int = 0) -> Yield:
    """The counts of a :class:`~synth.pipeline.SynthResult` as a :class:`Yield`."""
    with_seeds = {t: ids for t, ids in by_target.items() if ids}
    return Yield(asked=asked, made=len(result.tasks), attempted=result.attempted, budget=budget,
                 edges=len(with_seeds), draws=sum(len(ids) for ids in with_seeds.values()) * strategies,
                 strategies=strategies, rejections=Counter(result.rejections), schedule=schedule)
