"""Probe tasks: b without a, a then b; each oracle-checked; the simulated agent sees the difference."""

from __future__ import annotations

import random

import pytest

from ace_env import bfcl
from ace_env.sim import parse_weakness, simulate_one
from synth.diagnose import allocate, make_probes, seeds_with_pair
from synth.strategies.probe import WITH, WITHOUT, probe, probe_with, probe_without
from synth.taskcheck import NO_TARGET, check_task, flat_calls, target_step

PAIR = ("get_zipcode_based_on_city", "estimate_distance")


@pytest.fixture(scope="module")
def seeds():
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    return seeds_with_pair(tasks, PAIR)


def test_without_probe_reaches_b_not_right_after_a_and_passes_the_check(seeds):
    made = [probe_without(s, PAIR, 0.5, random.Random(0)) for s in seeds[:6]]
    made = [t for t in made if t is not None]
    assert made
    for task in made:
        step = target_step(task)
        flat = flat_calls(task)
        assert flat[step][3] == PAIR[1] and (step == 0 or flat[step - 1][3] != PAIR[0])
        assert task.provenance["strategy"] == "probe" and task.provenance["probe"] == WITHOUT
        assert task.provenance["target_edge"] == f"{PAIR[0]}>{PAIR[1]}"
        assert check_task(task).valid


def test_with_probe_keeps_the_pair_and_ends_at_its_turn(seeds):
    task = probe_with(seeds[0], PAIR, 0.5, random.Random(0))
    assert task is not None and check_task(task).valid
    flat = flat_calls(task)
    step = target_step(task)
    assert flat[step - 1][3] == PAIR[0] and flat[step][3] == PAIR[1]
    assert len(task.turns) == flat[step][0] + 1  # later turns cut


def test_probe_strategy_shape_and_wrong_step_is_no_target(seeds):
    task = probe(seeds[1], PAIR, 1.0, random.Random(3))
    assert task is not None and task.provenance["probe"] in (WITHOUT, WITH)
    assert probe(seeds[1], ("cd", "mv"), 0.5, random.Random(0)) is None  # the seed has no cd>mv
    task.provenance["target_step"] = 0 if flat_calls(task)[0][3] != PAIR[1] else 99
    assert NO_TARGET in check_task(task).reasons


def test_simulated_agent_slips_on_the_composition_only_in_with_probes(seeds):
    spec = parse_weakness({"defaults": {"error": 0.0}, "composition": [{"from": PAIR[0], "to": PAIR[1], "error": 1.0}]})
    probes = make_probes(PAIR, seeds, 3, 0)
    assert probes[WITHOUT] and probes[WITH]
    for kind, expect in ((WITHOUT, False), (WITH, True)):
        for task in probes[kind]:
            _, slips = simulate_one(task, spec, random.Random(1))
            assert any(s["cause"] == "composition" for s in slips) is expect, (kind, task.id)


def test_allocation_spends_the_budget_mostly_on_without_probes(seeds):
    from synth.diagnose import EdgeProbes

    ep = EdgeProbes(PAIR, "")
    ep.tasks = make_probes(PAIR, seeds, 2, 0)
    jobs = allocate([ep], {PAIR: 100}, 40)
    assert len(jobs) == 40 and ep.rollouts == {WITHOUT: 30, WITH: 10}
