"""Dynamic filtering: zero-variance groups are dropped and the batch refilled."""

from __future__ import annotations

import itertools

import pytest

from ace_env.errors import ConfigError
from train.filtering import Group, fill_batch

# A planted mix: every third prompt all-pass, every third all-fail, the rest mixed.
PLANTED = {p: ([1.0] * 4 if p % 3 == 0 else [0.0] * 4 if p % 3 == 1 else [0.0, 1.0, 1.0, 0.0]) for p in range(60)}


class Sampler:
    def __init__(self):
        self.calls: list[list[int]] = []

    def __call__(self, prompts):
        self.calls.append(list(prompts))
        return [Group(p, PLANTED[p]) for p in prompts]


def test_zero_variance_groups_are_dropped_and_the_batch_refilled():
    sampler = Sampler()
    filled = fill_batch(sampler, iter(range(60)), groups_needed=4, max_groups=40)
    kept, stats = filled.kept, filled.stats
    assert [g.prompt for g in kept] == [2, 5, 8, 11]
    assert all(g.has_signal for g in kept)
    # first round asks for 4 prompts (0..3: one mixed), then only for what is missing
    assert sampler.calls[0] == [0, 1, 2, 3]
    assert [len(c) for c in sampler.calls] == [4, 3, 2, 1, 1, 1]
    assert stats.groups_sampled == 12 and stats.groups_kept == 4
    assert stats.kept_fraction == pytest.approx(4 / 12)
    assert stats.by_outcome == {"all_pass": 4, "all_fail": 4, "mixed": 4}
    assert stats.reward_mean == pytest.approx(0.5)
    assert not stats.capped and not stats.exhausted
    assert [g.prompt for g in filled.dropped] == [0, 1, 3, 4, 6, 7, 9, 10]


def test_the_cap_stops_sampling_and_says_so():
    filled = fill_batch(Sampler(), iter(range(60)), groups_needed=8, max_groups=9)
    kept, stats = filled.kept, filled.stats
    assert stats.groups_sampled == 9
    assert len(kept) == 3 and stats.capped


def test_a_source_that_runs_out_is_reported():
    filled = fill_batch(Sampler(), iter([0, 1, 2]), groups_needed=2, max_groups=10)
    kept, stats = filled.kept, filled.stats
    assert len(kept) == 1 and stats.exhausted and not stats.capped


def test_off_switch_keeps_every_group():
    sampler = Sampler()
    filled = fill_batch(sampler, iter(range(60)), groups_needed=4, max_groups=40, enabled=False)
    kept, stats = filled.kept, filled.stats
    assert [g.prompt for g in kept] == [0, 1, 2, 3]
    assert len(sampler.calls) == 1 and stats.groups_sampled == 4 and stats.groups_kept == 4


def test_all_signal_needs_no_extra_sampling():
    sampler = Sampler()
    mixed = (p for p in itertools.count() if p % 3 == 2)
    filled = fill_batch(sampler, mixed, groups_needed=5, max_groups=5)
    stats = filled.stats
    assert len(sampler.calls) == 1 and stats.kept_fraction == 1.0


def test_bad_sizes_are_refused():
    with pytest.raises(ConfigError, match="below the batch"):
        fill_batch(Sampler(), iter(range(5)), groups_needed=4, max_groups=2)
    with pytest.raises(ConfigError):
        fill_batch(Sampler(), iter(range(5)), groups_needed=0, max_groups=2)
