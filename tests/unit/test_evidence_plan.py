"""The replication of issue 32's plan (benchmarks/evidence_replication.py, run as ``evidence_bench.py --plan``): the
plan's numbers are read from the plan file, a seed is a split, a budget's last sample is cut at the budget, nested
budgets give the checkpoints of separate runs, the bootstrap draws each seed's own tasks, and the decision rule's
verdict.  No services: the end-to-end run (Neo4j, the pinned synthesizer) is in
tests/integration/test_bench_quick.py."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest
import torch  # the train extra is part of setup: without it these tests fail, never skip
from benchmod import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "benchmarks" / "evidence_plan.json"


@pytest.fixture(scope="module")
def rep():
    return load_benchmark("evidence_replication.py", "evidence_replication_under_test")


@pytest.fixture(scope="module")
def plan(rep):
    return rep.load_plan(PLAN)


def test_every_number_comes_from_the_plan_file(plan):
    raw = json.loads(PLAN.read_text())
    assert list(plan.seeds) == raw["seed"]["values"] and len(plan.seeds) == raw["seed"]["count"]
    assert list(plan.budgets) == raw["budgets"]["values"]
    assert plan.commit == raw["synthesizer"]["commit"]
    assert (plan.indices, plan.sizes) == (200, (40, 60, 100))
    assert (plan.min_n, plan.targets, plan.draw) == (3, 8, 8)
    assert (plan.max_length, plan.lr, plan.n_boot, plan.threshold, plan.free_tasks) == (2048, 5e-5, 2000, 0.70, 20)


def test_a_plan_that_no_longer_states_a_number_stops_the_run(rep, tmp_path):
    raw = json.loads(PLAN.read_text())
    raw["decision_rule"]["established"] = "when it looks good"
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(SystemExit, match="^error: the plan's decision_rule.established does not state"):
        rep.load_plan(bad)


def test_a_seed_is_a_split_of_the_200_base_indices(rep, plan):
    splits = [rep.seed_splits(plan, s, quick=False) for s in plan.seeds]
    for sp in splits:
        assert [len(sp[k]) for k in ("held_out", "pool", "train")] == [40, 60, 100]
        assert sorted(sp["held_out"] + sp["pool"] + sp["train"]) == list(range(200))
    assert len({tuple(sp["held_out"]) for sp in splits}) == len(splits)  # every seed holds out other tasks
    assert rep.seed_splits(plan, 3, quick=False) == splits[3]  # and the same ones every time


def test_the_budgets_last_sample_is_cut_at_the_budget(rep):
    ex = {"input_ids": list(range(10)), "assistant_masks": [0, 1, 1, 1, 0, 0, 1, 1, 0, 1]}
    out = rep.cut(ex, 4)
    assert out["assistant_masks"] == [0, 1, 1, 1, 0, 0, 1, 0, 0, 0] and out["input_ids"] == ex["input_ids"]
    assert rep.cut(ex, 6)["assistant_masks"] == ex["assistant_masks"]


def test_the_bootstrap_draws_each_seeds_own_tasks(rep):
    ev = rep.ev
    own = {0: ["a", "b"], 1: ["c", "d", "e"]}
    for draw in ev.bootstrap_draws([0, 1], own, 200):
        for seed, tasks in draw:
            assert len(tasks) == len(own[seed]) and set(tasks) <= set(own[seed])
    # one list for every seed draws exactly as before: the published intervals do not move
    same = {0: ["a", "b", "c"], 1: ["a", "b", "c"]}
    assert list(ev.bootstrap_draws([0, 1], ["a", "b", "c"], 50)) == list(ev.bootstrap_draws([0, 1], same, 50))


def _state(warm: str, ace: list[str], random_final: str) -> dict:
    """Two seeds, two held-out tasks each with one target step and one other step; records at two budgets."""
    state: dict = {"settings": {"budgets": [3000, 24000]}, "seeds": {}, "records": []}
    for s in (0, 1):
        steps = [{"task": f"t{s}{j}", "flat": i, "prev": p, "tool": t, "call": None}
                 for j in range(2) for i, (p, t) in enumerate([("a", "b"), ("b", "c")])]
        state["seeds"][str(s)] = {"held_out_steps": steps, "diagnosis": {"targets": [["a", "b"]]}}
        state["records"].append({"arm": "warm", "seed": s, "budget": 0, "step_exact": warm, "step_nll": [1.0] * 4})
        for b, e in zip((3000, 24000), ace):
            state["records"].append({"arm": "ace", "seed": s, "budget": b, "step_exact": e, "step_nll": [1.0] * 4,
                                     "synthesizer_commit": "C"})
        state["records"].append({"arm": "random", "seed": s, "budget": 24000, "step_exact": random_final,
                                 "step_nll": [1.0] * 4, "synthesizer_commit": "C"})
    return state


def test_the_verdict_follows_the_plans_decision_rule(rep, plan):
    plan = dataclasses.replace(plan, commit="C", n_boot=200)
    budgets = [3000, 24000]
    fast = rep.speed_up(_state("0000", ["1010", "1010"], "1010"), plan, budgets)
    assert fast["point"] == 0.125 and rep.verdict(fast, plan)[0] == "established"  # there at 1/8 of the tokens
    never = rep.speed_up(_state("0000", ["0000", "0000"], "1010"), plan, budgets)
    assert never["point"] == float("inf") and rep.verdict(never, plan)[0] == "refuted"
    flat = rep.speed_up(_state("1010", ["1010", "1010"], "1010"), plan, budgets)
    assert flat["point"] is None and rep.verdict(flat, plan) == (
        "not decidable", "random's final primary value does not exceed the warm start's (no speed-up to measure)")
    other = _state("0000", ["1010", "1010"], "1010")
    for r in other["records"]:
        if r["arm"] == "random":
            r["synthesizer_commit"] = "another"  # built at another commit: not part of the analysis
    assert rep.verdict(rep.speed_up(other, plan, budgets), plan)[0] == "not decidable"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("plan") / "tiny", seed=3)


def _run_arm(rep, plan, tiny, tmp: Path, budgets: list[int]) -> dict:
    ev = rep.ev
    args = argparse.Namespace(work=tmp, state=tmp / "state.json", arm_max_length=4096, free_tasks=0, budgets=budgets)
    state = ev.load_state(args.state)
    state["seeds"] = {"0": {"data": {"more-real": {"sha256": "x", "synthesizer_commit": None}}}}
    held = ev.tasks_of([0])
    rep.run_arm(args, plan, state, None, 0, "more-real", tiny, ev.tasks_of([3, 4, 5, 6, 7]), held,
                ev.held_out_steps(held), set(), {})
    return {r["budget"]: r for r in state["records"]}


def test_nested_budgets_give_the_checkpoints_of_separate_runs(rep, plan, tiny, tmp_path):
    plan = dataclasses.replace(plan, lr=1e-2)  # large steps: a cut sample trained twice, or not whole, would show
    nested = _run_arm(rep, plan, tiny, tmp_path / "nested", [300, 900])
    first = _run_arm(rep, plan, tiny, tmp_path / "first", [300])
    second = _run_arm(rep, plan, tiny, tmp_path / "second", [900])
    keys = ("samples", "loss_tokens", "tokens", "masked_tokens", "step_exact", "step_nll")
    assert {k: nested[300][k] for k in keys} == {k: first[300][k] for k in keys}
    assert {k: nested[900][k] for k in keys} == {k: second[900][k] for k in keys}
    assert nested[300]["loss_tokens"] == 300 and nested[900]["loss_tokens"] == 900
    assert nested[900]["samples"] > nested[300]["samples"] and nested[300]["step_nll"] != nested[900]["step_nll"]
