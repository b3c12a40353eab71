"""Dynamic filtering of GRPO groups (DAPO-style dynamic sampling).

GRPO's advantage is a reward minus its group's mean.  A group whose G rewards
are all equal (every sample passed, or every sample failed) has advantage 0
everywhere: it carries no learning signal, yet it still takes a slot in the
batch and dilutes the loss of the groups that do.  TRL keeps such groups (open
request huggingface/trl#3708); ACE drops them and samples further prompts
until the batch holds enough groups with signal, or a sampling cap is hit.

:func:`fill_batch` is the whole policy, independent of the trainer: it asks a
``sample`` callable for groups of further prompts, keeps those with signal,
and reports what it did (:class:`FillStats`, one line of the metrics file).

>>> rewards = {0: [1, 1], 1: [0, 1], 2: [0, 0], 3: [1, 0]}
>>> sample = lambda ps: [Group(p, rewards[p]) for p in ps]
>>> filled = fill_batch(sample, iter(range(4)), groups_needed=2, max_groups=4)
>>> [g.prompt for g in filled.kept], [g.prompt for g in filled.dropped], filled.stats.groups_sampled
([1, 3], [0, 2], 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ace_env.errors import ConfigError


@dataclass
class Group:
    """The G samples of one prompt: their rewards, and whatever the trainer needs of them."""

    prompt: Any
    rewards: Sequence[float]
    samples: Any = None  # e.g. the rollouts, token ids and masks of the G samples

    @property
    def has_signal(self) -> bool:
        """Whether the rewards differ (a zero-variance group has advantage 0 everywhere)."""
        return len(self.rewards) > 1 and max(self.rewards) - min(self.rewards) > 1e-9


@dataclass(frozen=True)
class FillStats:
    """What one batch took to fill: written per step to the metrics file."""

    groups_sampled: int
    groups_kept: int
    groups_needed: int
    reward_mean: float  # over every sampled reward, kept or not: the policy's real pass rate
    reward_std: float
    capped: bool  # the sampling cap was hit before the batch was full
    exhausted: bool = False  # the prompt source ran out
    by_outcome: dict[str, int] = field(default_factory=dict)  # all_pass / all_fail / mixed

    @property
    def kept_fraction(self) -> float:
        return self.groups_kept / self.groups_sampled if self.groups_sampled else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups_sampled": self.groups_sampled,
            "groups_kept": self.groups_kept,
            "groups_needed": self.groups_needed,
            "kept_fraction": self.kept_fraction,
            "reward_mean": self.reward_mean,
            "reward_std": self.reward_std,
            "capped": self.capped,
            "exhausted": self.exhausted,
            **{f"groups_{k}": v for k, v in self.by_outcome.items()},
        }


@dataclass
class Filled:
    """The outcome of :func:`fill_batch`: the groups kept (in sampling order), the ones dropped, and the stats."""

    kept: list[Group]
    dropped: list[Group]
    stats: FillStats


def _outcome(group: Group) -> str:
    if group.has_signal:
        return "mixed"
    return "all_pass" if group.rewards and min(group.rewards) > 0 else "all_fail"


def fill_batch(
    sample: Callable[[list[Any]], list[Group]],
    prompts: Iterator[Any],
    groups_needed: int,
    max_groups: int,
    enabled: bool = True,
) -> Filled:
    """Sample groups until ``groups_needed`` have signal, or ``max_groups`` were sampled.

    ``sample(prompts)`` returns one :class:`Group` per prompt (it runs the G
    rollouts and verifies them).  Each round asks for as many prompts as groups
    are still missing, so no more rollouts are made than needed.  With
    ``enabled=False`` (the ablation) exactly ``groups_needed`` groups are sampled
    and all are kept, as plain GRPO does.  The kept groups are returned in the
    order they were sampled; fewer than ``groups_needed`` when capped or when
    ``prompts`` ran out (the stats say which).
    """
    if groups_needed < 1:
        raise ConfigError(f"groups_needed must be at least 1, got {groups_needed}.")
    if max_groups < groups_needed:
        raise ConfigError(
            f"The sampling cap ({max_groups} groups) is below the batch ({groups_needed} groups); "
            "raise the cap (e.g. --max-groups-sampled) or lower --prompts-per-step."
        )
    kept: list[Group] = []
    sampled: list[Group] = []
    exhausted = False
    while len(kept) < groups_needed and len(sampled) < max_groups:
        want = min(groups_needed - len(kept), max_groups - len(sampled))
        batch = [p for _, p in zip(range(want), prompts)]
        if not batch:
            exhausted = True
            break
        groups = sample(batch)
        if len(groups) != len(batch):
            raise ConfigError(f"sample() returned {len(groups)} groups for {len(batch)} prompts.")
        sampled.extend(groups)
        kept.extend(g for g in groups if g.has_signal or not enabled)
        if not enabled:
            break
        if len(batch) < want:
            exhausted = True
            break
    rewards = [float(r) for g in sampled for r in g.rewards]
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards)) if rewards else 0.0
    outcomes = {"all_pass": 0, "all_fail": 0, "mixed": 0}
    for g in sampled:
        outcomes[_outcome(g)] += 1
    stats = FillStats(
        groups_sampled=len(sampled),
        groups_kept=len(kept[:groups_needed]),
        groups_needed=groups_needed,
        reward_mean=mean,
        reward_std=std,
        capped=len(kept) < groups_needed and len(sampled) >= max_groups,
        exhausted=exhausted and len(kept) < groups_needed,
        by_outcome=outcomes,
    )
    dropped = [g for g in sampled if not any(g is k for k in kept)]
    return Filled(kept[:groups_needed], dropped, stats)
