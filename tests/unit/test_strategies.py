"""Adversarial synthesis strategies: every produced task is sound and aimed at its target."""

from __future__ import annotations

import random

import pytest

from ace_env import bfcl
from ace_env.verifier import ground_truth_rollout, verify
from synth import strategies
from synth.taskcheck import adjacent_positions, check_task, flat_calls, target_present, user_text_upto

TARGETS = [
    ("get_zipcode_based_on_city", "estimate_distance"),
    ("place_order", "get_order_details"),
    ("get_stock_info", "place_order"),
    ("book_flight", "retrieve_invoice"),
    ("cd", "mv"),
    ("authenticate_twitter", "post_tweet"),
    ("touch", "echo"),
]
PER_TARGET = 3


@pytest.fixture(scope="module")
def seeds():
    base = bfcl.load_tasks("base")
    out = {}
    for target in TARGETS:
        found = [t for t in base if adjacent_positions(t, target)]
        assert found, f"no base seed contains {target}"
        out[target] = found[:PER_TARGET]
    return out


def _runs(seeds, name, strength=0.7):
    for target, tasks in seeds.items():
        for i, seed in enumerate(tasks):
            yield seed, target, strategies.STRATEGIES[name](seed, target, strength, random.Random(i))


def test_registry_rejects_duplicates():
    assert {"ambiguity", "distractor", "cascade", "depth", "random"} <= set(strategies.STRATEGIES)
    with pytest.raises(ValueError):
        strategies.register("ambiguity")(lambda *a: None)


def test_every_strategy_produces_valid_tasks(seeds):
    seen: set[str] = set()
    for name in strategies.STRATEGIES:
        produced = 0
        for seed, target, task in _runs(seeds, name):
            if task is None:
                continue
            produced += 1
            assert task.id.startswith(f"ace-{name}-") and len(task.id) == len(f"ace-{name}-") + 12
            assert task.source == "ace" and task.category == name
            prov = task.provenance
            assert prov["parents"] == [seed.id] and prov["strategy"] == name
            assert prov["target_edge"] == f"{target[0]}>{target[1]}" and prov["note"]
            check = check_task(task, seen)
            assert check.valid, (name, task.id, check.reasons, check.notes)
            assert verify(task, ground_truth_rollout(task)).reward == 1.0
            if name != "random":
                assert target_present(task)
            # round trip through the serialized form
            assert type(task).from_dict(task.to_dict()).to_dict() == task.to_dict()
        assert produced >= 5, f"{name} produced only {produced} tasks"


def test_seed_without_target_gives_none(seeds):
    seed = seeds[TARGETS[0]][0]
    for name, fn in strategies.STRATEGIES.items():
        assert fn(seed, ("nope", "never"), 0.5, random.Random(0)) is None, name


def test_ambiguity_adds_lookalikes_and_keeps_ground_truth(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "ambiguity"):
        if task is None:
            continue
        made += 1
        assert [t.ground_truth for t in task.turns] == [t.ground_truth for t in seed.turns]
        assert [t.user for t in task.turns] == [t.user for t in seed.turns]
        assert task.initial_config != seed.initial_config
        assert task.provenance["lookalikes"]
    assert made >= 10


def test_ambiguity_strength_scales_lookalikes(seeds):
    seed = seeds[("cd", "mv")][0]
    weak = strategies.synthesize("ambiguity", seed, ("cd", "mv"), 0.0, random.Random(3))
    strong = strategies.synthesize("ambiguity", seed, ("cd", "mv"), 1.0, random.Random(3))
    assert weak and strong
    assert len(strong.provenance["lookalikes"]) > len(weak.provenance["lookalikes"])


def test_distractor_calls_fail_with_wrong_tool(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "distractor"):
        if task is None:
            continue
        made += 1
        assert 1 <= len(task.distractors) <= 3
        assert set(task.distractors) <= set(task.tools)
        for name in task.distractors:
            assert bfcl.functions()[name].class_name in task.involved_classes
            assert bfcl.functions()[name].class_name not in seed.involved_classes
        # replace the target `to` step with a call of a distractor
        k = adjacent_positions(task, target)[0]
        t, i, _, _ = flat_calls(task)[k + 1]
        rollout = ground_truth_rollout(task)
        rollout[t][i] = f"{task.distractors[0]}()"
        verdict = verify(task, rollout)
        assert verdict.reward == 0.0 and verdict.attribution == "wrong_tool"
        assert verdict.failing_turn == t
    assert made >= 10


def test_cascade_has_recovery_and_fallback_text(seeds):
    patterns = set()
    for seed, target, task in _runs(seeds, "cascade"):
        if task is None:
            continue
        prov = task.provenance
        patterns.add(prov["pattern"])
        gt = [c for t in task.turns for c in t.ground_truth]
        for call in prov["recovery"]:
            assert call in gt
        text = user_text_upto(task, len(task.turns) - 1).lower()
        for value in prov["user_values"]:
            assert str(value).lower().replace(",", "") in text.replace(",", "") or f"{value:,}" in text
        assert [t.user for t in task.turns] != [t.user for t in seed.turns]
    assert len(patterns) >= 3, patterns


def test_cascade_funds_needs_the_deposit(seeds):
    target = ("get_stock_info", "place_order")
    task = next(t for _, _, t in _runs({target: seeds[target]}, "cascade") if t is not None)
    assert task.provenance["pattern"] in ("insufficient_funds", "trading_logged_out")
    rollout = ground_truth_rollout(task)
    recovery = task.provenance["recovery"][0]
    rollout = [[c for c in calls if c != recovery] for calls in rollout]
    assert verify(task, rollout).reward == 0.0


def test_depth_adds_calls_and_keeps_target_adjacent(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "depth", strength=1.0):
        if task is None:
            continue
        made += 1
        assert task.n_steps > seed.n_steps
        assert 1 <= task.n_steps - seed.n_steps <= 3
        k = adjacent_positions(task, target)
        assert k
        assert len(task.turns) == len(seed.turns)
    assert made >= 10


def test_random_records_what_it_did(seeds):
    for seed, target, task in _runs(seeds, "random"):
        if task is None:
            continue
        assert task.provenance["random_kind"] in ("ambiguity", "distractor", "cascade", "depth")
        assert ">" in task.provenance["applied_to"]


@pytest.mark.parametrize("name", ["ambiguity", "distractor", "cascade", "depth", "random"])
def test_deterministic(seeds, name):
    def ids(seed_value):
        out = []
        for target, tasks in seeds.items():
            for seed in tasks[:2]:
                t = strategies.STRATEGIES[name](seed, target, 0.6, random.Random(seed_value))
                out.append(t.id if t else None)
        return out

    first = ids(11)
    assert first == ids(11)
    assert any(first)


def test_registry_walk_every_oracle_scores_one(seeds):
    """Every registered strategy's tasks, made by seed + index, verify their own ground truth with 1.0."""
    for name in strategies.STRATEGIES:
        made = 0
        for index, (target, tasks) in enumerate(seeds.items()):
            for j, seed in enumerate(tasks):
                task = strategies.generate(name, seed, target, 0.6, seed=100, index=index * 10 + j)
                if task is None:
                    continue
                made += 1
                assert verify(task, ground_truth_rollout(task)).reward == 1.0, (name, task.id)
                assert verify(task, [[] for _ in task.turns]).reward == 0.0, (name, task.id)
                again = strategies.generate(name, seed, target, 0.6, seed=100, index=index * 10 + j)
                assert again is not None and again.to_dict() == task.to_dict()
                assert task.provenance["rng"] == {"seed": 100, "index": index * 10 + j}
        assert made >= 3, f"{name} made only {made} tasks"
