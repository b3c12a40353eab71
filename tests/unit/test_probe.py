"""Probe tasks: b without a, a then b; each oracle-checked; the simulated agent sees the difference."""

from __future__ import annotations

import random

import pytest

from ace_env import bfcl
from ace_env.sim import parse_weakness, simulate_one
from ace_graph.estimate import AMBIGUOUS, COMPOSITION, OK, EdgeEstimate
from synth.checks.parts import NO_TARGET, flat_calls, target_step
from synth.diagnose import allocate, make_probes, probe_needs, seeds_with_pair
from synth.strategies.probe import WITH, WITHOUT, probe, probe_with, probe_without
from synth.taskcheck import check_task

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


def _edge(edge, n, failures, n_without, failures_without, base=0.05, low=0.2):
    return EdgeEstimate(edge[0], edge[1], n, failures, n_without, failures_without, 1.0, low, 2.0, 1.0, 0.0, 2.0,
                        1.0, AMBIGUOUS, "", base)


def test_probe_needs_follow_the_exact_bound_and_min_support():
    # b fails 30% right after a; at the 5% base rate the exact upper bound drops under 30% at 17 steps,
    # but no composition is called on fewer than min_away (20) steps of b away from a
    assert probe_needs(_edge(PAIR, 100, 30, 0, 0), min_away=1) == (17, 0)
    assert probe_needs(_edge(PAIR, 100, 30, 0, 0)) == (20, 0)
    assert probe_needs(_edge(PAIR, 100, 30, 10, 0)) == (10, 0)
    assert probe_needs(_edge(PAIR, 100, 30, 10, 0), min_away=1) == (7, 0)
    assert probe_needs(_edge(PAIR, 8, 3, 0, 0))[1] == 12  # a then b short of min_support
    assert probe_needs(_edge(PAIR, 40, 12, 60, 2)) == (15, 5)  # counts suffice: min_support more, 3/4 without


def test_allocation_serves_the_edges_cheapest_to_decide_first(seeds):
    from synth.diagnose import EdgeProbes

    cheap, costly = EdgeProbes(PAIR, ""), EdgeProbes(("x", "y"), "")
    cheap.tasks = make_probes(PAIR, seeds, 2, 0)
    costly.tasks = {k: list(v) for k, v in cheap.tasks.items()}
    est = {PAIR: _edge(PAIR, 100, 30, 10, 0), ("x", "y"): _edge(("x", "y"), 5, 2, 0, 0)}
    jobs = allocate([costly, cheap], est, 20)  # cheap needs 7, costly 8 + 15: only cheap fits
    assert len(jobs) == 20 and costly.rollouts == {WITHOUT: 0, WITH: 0}
    assert cheap.rollouts[WITHOUT] > cheap.rollouts[WITH] > 0  # its 7, then the rest 3:1
    first = dict(cheap.rollouts)
    jobs = allocate([costly, cheap], est, 80)  # a second round: both fit, the rest is spread
    assert len(jobs) == 80 and costly.rollouts[WITHOUT] >= 8 and costly.rollouts[WITH] >= 15
    assert cheap.rollouts[WITHOUT] > first[WITHOUT]


def test_probe_rounds_stop_when_the_first_round_decides_and_go_on_when_it_does_not(seeds):
    from ace_graph.estimate import COMPOSITION, Cell, estimate
    from synth.diagnose import run_probes

    a, b = PAIR
    background = [Cell(t, (p,), f"bg{k}", 25, k % 2) for k in range(30) for t, p in (("x", "y"), ("y", "z"), ("z", "x"))]
    confounded = background + [Cell(b, (a,), "ta", 200, 60), Cell(b, ("x",), "tx", 4, 0)]
    first = estimate(confounded)
    assert {(e.from_, e.to): e.verdict for e in first}[PAIR] == AMBIGUOUS
    probes = make_probes(PAIR, seeds, 3, 0)

    def rounds_with(rate):
        seen = []

        def probe_round(jobs):
            seen.append(len(jobs))
            if rate is None:  # the probes told nothing (e.g. none reached b)
                return first, len(jobs)
            extra = [Cell(b, ("z",), f"probe{len(seen)}", len(jobs), round(rate * len(jobs)))]
            return estimate(confounded + extra), len(jobs)

        plans, used, last = run_probes(first, lambda edge: probes, probe_round, 100, rounds=2)
        return plans, used, seen, {(e.from_, e.to): e.verdict for e in last}

    # b fine without a: the first round (half the budget) decides it, the rest is not spent
    plans, used, seen, verdicts = rounds_with(0.0)
    assert seen == [50] and used == 50 and verdicts[PAIR] == COMPOSITION
    assert [(p.edge, p.before, p.after) for p in plans] == [(PAIR, AMBIGUOUS, COMPOSITION)]
    # a round that leaves the edge ambiguous is followed by a second, on the rest of the budget
    plans, used, seen, verdicts = rounds_with(None)
    assert seen == [50, 50] and used == 100 and verdicts[PAIR] == AMBIGUOUS
    assert plans[0].rollouts[WITHOUT] + plans[0].rollouts[WITH] == 100


def test_a_composition_short_of_min_support_is_probed_to_confirm_it():
    from dataclasses import replace

    from synth.diagnose import needs_probes

    thin = replace(_edge(PAIR, 12, 6, 80, 2), verdict=COMPOSITION)
    assert needs_probes(thin)  # 12 steps right after a: not reported, so probed
    assert probe_needs(thin) == (0, 8)  # `with` probes up to min_support; b away from a is already enough
    assert not needs_probes(replace(thin, n=20))  # reported: nothing to confirm
    assert not needs_probes(replace(thin, verdict=OK))
    assert needs_probes(replace(thin, n=20, verdict=AMBIGUOUS))


def test_probe_rounds_confirm_a_composition_short_of_min_support(seeds):
    from dataclasses import replace

    from synth.diagnose import run_probes

    thin = replace(_edge(PAIR, 12, 6, 80, 2), verdict=COMPOSITION)
    probes = make_probes(PAIR, seeds, 3, 0)
    seen = []

    def probe_round(jobs):
        seen.append(list(jobs))
        return [replace(thin, n=thin.n + len(jobs))], len(jobs)  # the `with` probes add a-then-b steps

    plans, used, last = run_probes([thin], lambda edge: probes, probe_round, 40, rounds=2)
    assert [(p.edge, p.before, p.after) for p in plans] == [(PAIR, COMPOSITION, COMPOSITION)]
    assert "seen only 12 times" in plans[0].missing
    assert len(seen) == 1 and used == len(seen[0]) >= 8  # one round reaches min_support; none more
    # all it needs is `with` probes (b away from a is already enough); the round's rest is spread over both
    assert sum(t in probes[WITH] for t in seen[0]) >= 8
    assert last[0].n >= 20
    # with no `with` probe to confirm it, the composition is left alone
    plans, used, _ = run_probes([thin], lambda edge: {WITHOUT: probes[WITHOUT], WITH: []}, probe_round, 40)
    assert used == 0
