"""The strategy registry is the one place a strategy is declared, and every registered strategy's tasks verify;
look-alikes sit only in lists a tool really returns (issue 24, issue 26)."""

from __future__ import annotations

import random

import pytest

from ace_env import bfcl
from ace_env.tasks import Task
from ace_env.verifier import ground_truth_rollout, verify
from synth.pipeline import SynthConfig
from synth.planner import make_plans
from synth.strategies import STRATEGIES, register, synthesize
from synth.strategies.registry import register_edit, targeted
from synth.taskcheck import flat_calls, lookalike_problems


@pytest.fixture(scope="module")
def seeds() -> list[Task]:
    return bfcl.load_tasks("base")[:40]


def test_a_duplicate_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register("depth", definition="x", needs="y")(lambda *a: None)
    with pytest.raises(ValueError, match="already has a random edit"):
        register_edit("depth")(lambda *a: None)


def test_every_strategy_declares_what_the_others_read():
    for name, spec in STRATEGIES.items():
        assert spec.name == name and spec.definition and spec.needs and spec.depth >= 2
    assert SynthConfig().strategies == targeted()
    assert set(targeted()) == {"ambiguity", "cascade", "depth", "distractor", "lookalike"}
    plans = make_plans([{"from": "a", "to": "b"}], {("a", "b"): ["s"]}, {}, 5, list(targeted()), random.Random(0))
    assert {p.strategy: p.depth for p in plans} == {n: STRATEGIES[n].depth for n in targeted()}


def test_every_registered_strategy_makes_tasks_whose_oracle_passes(seeds):
    """Walk the registry: each strategy, on a small seed set, makes at least one task, and every task made
    passes its own ground truth (reward 1.0)."""
    for name in STRATEGIES:
        made = 0
        for seed in seeds:
            flat = flat_calls(seed)
            for k in range(len(flat) - 1):
                task = synthesize(name, seed, (flat[k][3], flat[k + 1][3]), 0.5, random.Random(k))
                if task is None:
                    continue
                made += 1
                assert verify(task, ground_truth_rollout(task)).reward == 1.0, (name, task.id)
                if made >= 3:
                    break
            if made >= 3:
                break
        assert made, f"strategy {name} made no task on {len(seeds)} seeds"


def _first(seeds, target, strategy="lookalike"):
    """(a seed holding the target, the first task made on one) or (that seed, None) when none is made."""
    found = None
    for seed in seeds:
        flat = flat_calls(seed)
        for k in range(len(flat) - 1):
            if (flat[k][3], flat[k + 1][3]) == target:
                found = found or seed
                task = synthesize(strategy, seed, target, 0.5, random.Random(k))
                if task is not None:
                    return seed, task
    return found, None


def test_no_lookalike_around_a_single_record_result():
    """get_stock_info returns one quote, place_order one order: no siblings are invented around them."""
    all_seeds = bfcl.load_tasks("base")
    for target in (("get_stock_info", "place_order"), ("place_order", "get_order_details"),
                   ("book_flight", "retrieve_invoice")):
        seed, task = _first(all_seeds, target)
        assert seed is not None and task is None, target


def test_lookalikes_sit_in_the_list_a_returns_and_the_text_never_states_the_value():
    seed, task = _first(bfcl.load_tasks("base"), ("get_watchlist", "remove_stock_from_watchlist"))
    assert task is not None
    assert lookalike_problems(task) == []
    view = task.provenance["lookalike_view"]
    shown = view["ops"][0]["fields"][task.provenance["lookalike_key"]]
    assert task.provenance["target_id"] in shown and all(t in shown for t in task.provenance["lookalikes"])
    text = " ".join(m["content"] for t in task.turns for m in t.user if m.get("role") == "user")
    assert str(task.provenance["target_id"]).lower() not in text.lower()


def test_a_lookalike_set_not_in_a_shown_list_is_rejected():
    seed, task = _first(bfcl.load_tasks("base"), ("get_watchlist", "remove_stock_from_watchlist"))
    d = task.to_dict()
    # the look-alikes claimed but never shown
    d["output_views"] = [v for v in d.get("output_views", []) if v != task.provenance["lookalike_view"]]
    assert lookalike_problems(Task.from_dict(d))
    # siblings shown beside the list, in a record of their own, not in the list a returns
    key = task.provenance["lookalike_key"]
    twins = task.provenance["lookalikes"]
    d["output_views"] = [{"tool": "get_watchlist", "ops": [{"op": "add", "fields": {"similar": twins}}]}]
    assert any("not listed together" in p for p in lookalike_problems(Task.from_dict(d)))
    # a list that a does not return (made up by the view) around the value
    d["output_views"] = [{"tool": "get_watchlist", "ops": [
        {"op": "rename", "map": {key: "orig"}},
        {"op": "add", "fields": {"matches": [task.provenance["target_id"], *twins]}}]}]
    assert any("returns no list" in p for p in lookalike_problems(Task.from_dict(d)))
