"""Synthesis plans: constructed diversity, and reflection that adjusts or retires."""

from __future__ import annotations

import random

from synth.planner import STYLES, Plan, apply_style, make_plans, reflect

FRONTIER = [
    {"from": "get_zipcode_based_on_city", "to": "estimate_distance", "n": 300, "fragility": 0.5, "fragility_low": 0.4},
    {"from": "place_order", "to": "get_order_details", "n": 200, "fragility": 0.6, "fragility_low": 0.5},
    {"from": "cd", "to": "mv", "n": 150, "fragility": 0.4, "fragility_low": 0.3},
    {"from": "no", "to": "seeds", "n": 150, "fragility": 0.4, "fragility_low": 0.3},
]
SEEDS = {("get_zipcode_based_on_city", "estimate_distance"): ["t1"], ("place_order", "get_order_details"): ["t2"],
         ("cd", "mv"): ["t3", "t4"]}
STRATEGIES = ["ambiguity", "distractor", "cascade", "depth"]


def test_plans_never_repeat_and_cover_targets_first():
    plans = make_plans(FRONTIER, SEEDS, {}, 24, STRATEGIES, random.Random(0))
    assert len(plans) == 24
    assert len({p.key for p in plans}) == 24
    assert {p.target for p in plans[:3]} == set(SEEDS)  # every seeded target before any repeats
    assert all(p.target in SEEDS for p in plans)  # edges without seed tasks are skipped
    for target in SEEDS:  # each target gets several strategies and styles
        mine = [p for p in plans if p.target == target]
        assert len({p.strategy for p in mine}) == 4
        assert len({p.style for p in mine}) >= 2
    assert {p.style for p in plans} == set(STYLES)


def test_plans_are_deterministic_and_exclude_taken_keys():
    a = make_plans(FRONTIER, SEEDS, {}, 10, STRATEGIES, random.Random(5))
    b = make_plans(FRONTIER, SEEDS, {}, 10, STRATEGIES, random.Random(5))
    assert [p.to_row() for p in a] == [p.to_row() for p in b]
    more = make_plans(FRONTIER, SEEDS, {}, 10, STRATEGIES, random.Random(5), taken={p.key for p in a})
    assert not {p.key for p in more} & {p.key for p in a}
    assert make_plans(FRONTIER, SEEDS, {}, 1000, STRATEGIES, random.Random(5)).__len__() == 3 * 4 * len(STYLES)


def _plan(**stats) -> Plan:
    p = make_plans(FRONTIER, SEEDS, {}, 1, STRATEGIES, random.Random(1))[0]
    for k, v in stats.items():
        setattr(p.stats, k, v)
    return p


def test_reflection_rules():
    easy = _plan(attempted=10, valid=10, rollouts=40, passed=40)
    s0 = easy.strength
    assert reflect(easy).startswith("strengthen") and easy.strength > s0

    hard = _plan(attempted=10, valid=10, rollouts=40, passed=0)
    s0 = hard.strength
    assert reflect(hard).startswith("soften") and hard.strength < s0

    good = _plan(attempted=10, valid=9, rollouts=36, passed=20, learnable=7)
    assert reflect(good).startswith("keep") and good.status == "active"

    broken = _plan(attempted=10, valid=1)
    assert reflect(broken).startswith("weaken") and broken.status == "active"
    assert reflect(broken).startswith("retire") and broken.status == "retired"


def test_style_frames_keep_the_request():
    text = "Move 'a.txt' to 'b'."
    for style in STYLES:
        assert text in apply_style(text, style)
    assert apply_style(text, "plain") == text


def test_every_strategy_is_planned_before_any_repeats_and_taken_pairs_are_skipped():
    plans = make_plans(FRONTIER, SEEDS, {}, 4, STRATEGIES, random.Random(0))
    assert {p.strategy for p in plans} == set(STRATEGIES)
    # a (target, strategy) pair that cannot be made on the target (all its styles taken) is never planned
    never = {("cd", "mv", "distractor", style) for style in STYLES}
    plans = make_plans(FRONTIER, SEEDS, {}, 40, STRATEGIES, random.Random(0), taken=never)
    assert not [p for p in plans if p.target == ("cd", "mv") and p.strategy == "distractor"]
    assert {p.strategy for p in plans[:4]} == set(STRATEGIES)
