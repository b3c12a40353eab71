"""The dependency-aware curriculum: unlock, fallback, damping, order, replay mix, drift."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from ace_env.tasks import Task, Turn
from ace_graph.errors import ConfigError
from train.curriculum.core import (
    ACTIVE,
    COMPOSITION,
    LOCKED,
    MASTERED,
    SKILL,
    CurriculumConfig,
    CurriculumState,
    Observations,
    step,
    topological_order,
)
from train.curriculum.drift import drift
from train.curriculum.mix import Candidate, candidate, mix


def obs(skills=None, comps=None, prior=None, n=100):
    """Observations from success rates (n attempts each)."""
    return Observations(
        skills={k: (n, round(v * n)) for k, v in (skills or {}).items()},
        compositions={k: (n, round(v * n)) for k, v in (comps or {}).items()},
        prior=prior,
    )


def run(state, signal, cfg, rounds):
    """Step ``rounds`` times; ``signal(r)`` gives the observations of round r (1-based)."""
    all_decisions = []
    for r in range(1, rounds + 1):
        state, ds = step(state, signal(r), cfg)
        all_decisions += ds
    return state, all_decisions


def states(st, kind):
    return {k: u.state for (kd, k), u in st.units.items() if kd == kind}


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"theta": 1.5}, "theta"),
        ({"phi": 0.8}, "phi"),  # phi >= theta
        ({"momentum": 0.0}, "momentum"),
        ({"min_rounds": 0}, "min_rounds"),
        ({"replay_share": 1.0}, "replay_share"),
        ({"depth_strata": (4, 2)}, "depth_strata"),
        ({"max_drift": 0.0}, "max_drift"),
        ({"level": "task"}, "level"),
    ],
)
def test_config_rejects_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=f"CurriculumConfig.{field}"):
        CurriculumConfig(**kwargs)


def test_config_every_field_has_help():
    helps = CurriculumConfig.help()
    assert set(helps) >= {"theta", "phi", "momentum", "min_rounds", "replay_share", "depth_strata", "max_drift"}
    assert all(len(h) > 20 for h in helps.values())
    cfg = CurriculumConfig()
    assert (cfg.theta, cfg.phi) == (0.7, 0.4)
    assert [cfg.stratum(d) for d in (0, 1, 2, 3, 4, 5, 9)] == ["1-2", "1-2", "1-2", "3-4", "3-4", "5+", "5+"]


# --------------------------------------------------------------------------- unlock / master


def test_composition_unlocks_exactly_at_theta():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(compositions=["a>b"])
    st, _ = step(st, obs({"a": 0.9, "b": 0.69}), cfg)
    assert states(st, SKILL) == {"a": ACTIVE, "b": ACTIVE}
    assert states(st, COMPOSITION)["a>b"] == LOCKED  # b = 0.69 < theta
    st, ds = step(st, obs({"a": 0.9, "b": 0.70}), cfg)
    assert states(st, COMPOSITION)["a>b"] == ACTIVE
    d = next(d for d in ds if d.unit == "a>b")
    assert (d.round, d.kind, d.from_state, d.to_state) == (2, COMPOSITION, LOCKED, ACTIVE)
    assert "a=0.900" in d.reason and "b=0.700" in d.reason and "0.7" in d.reason


def test_composition_needs_the_prerequisites_of_its_endpoints():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(compositions=["b>c"], prior=[("a", "b")])
    st, _ = step(st, obs({"a": 0.5, "b": 0.9, "c": 0.9}), cfg)
    st, _ = step(st, obs({"a": 0.5, "b": 0.9, "c": 0.9}), cfg)
    assert states(st, COMPOSITION)["b>c"] == LOCKED  # prerequisite a of endpoint b is weak
    assert states(st, SKILL)["b"] == LOCKED  # and b itself waits for a
    st, _ = step(st, obs({"a": 0.8, "b": 0.9, "c": 0.9}), cfg)
    assert states(st, COMPOSITION)["b>c"] == ACTIVE


def test_active_unit_is_mastered_at_theta_and_regresses_below_phi():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(skills=["a"])
    st, _ = step(st, obs({"a": 0.5}), cfg)
    assert states(st, SKILL)["a"] == ACTIVE
    st, _ = step(st, obs({"a": 0.69}), cfg)
    assert states(st, SKILL)["a"] == ACTIVE
    st, _ = step(st, obs({"a": 0.7}), cfg)
    assert states(st, SKILL)["a"] == MASTERED
    st, _ = step(st, obs({"a": 0.45}), cfg)
    assert states(st, SKILL)["a"] == MASTERED  # between phi and theta: stays
    st, ds = step(st, obs({"a": 0.3}), cfg)
    assert states(st, SKILL)["a"] == ACTIVE and "regressed" in ds[0].reason


# --------------------------------------------------------------------------- fallback


def test_fallback_below_phi_returns_training_to_prerequisites():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(compositions=["a>b"], prior=[("p", "a")])
    good = {"p": 0.9, "a": 0.9, "b": 0.9}
    st, _ = run(st, lambda r: obs(good), cfg, 2)
    assert states(st, SKILL) == {"p": MASTERED, "a": MASTERED, "b": MASTERED}
    st, _ = step(st, obs(good, {"a>b": 0.6}), cfg)
    assert states(st, COMPOSITION)["a>b"] == ACTIVE
    st, ds = step(st, obs(good, {"a>b": 0.41}), cfg)
    assert states(st, COMPOSITION)["a>b"] == ACTIVE  # 0.41 >= phi: no fallback
    assert ds == []
    st, ds = step(st, obs(good, {"a>b": 0.39}), cfg)
    assert states(st, COMPOSITION)["a>b"] == LOCKED
    assert states(st, SKILL) == {"p": ACTIVE, "a": ACTIVE, "b": ACTIVE}
    fb = ds[0]
    assert fb.unit == "a>b" and fb.reason.startswith("fallback") and "0.390" in fb.reason and "0.4" in fb.reason
    assert {d.unit for d in ds[1:]} == {"a", "b", "p"}
    assert all("fallback from a>b" in d.reason for d in ds[1:])


# --------------------------------------------------------------------------- damping


def _oscillating(r):
    return obs({"a": 0.95, "b": 0.95}, {"a>b": 0.75 if r % 2 else 0.35})


def _transitions(decisions, unit):
    return [d for d in decisions if d.unit == unit]


def test_momentum_and_min_rounds_prevent_flapping():
    damped = CurriculumConfig()  # momentum 0.5, min_rounds 2
    _, ds = run(CurriculumState.new(compositions=["a>b"]), _oscillating, damped, 20)
    assert len(_transitions(ds, "a>b")) == 1  # unlocked once, then steady
    raw = CurriculumConfig(momentum=1.0, min_rounds=1)  # the same signal, undamped, flaps
    _, ds = run(CurriculumState.new(compositions=["a>b"]), _oscillating, raw, 20)
    assert len(_transitions(ds, "a>b")) >= 10


def test_min_rounds_spaces_transitions():
    cfg = CurriculumConfig(momentum=1.0, min_rounds=3)
    _, ds = run(CurriculumState.new(compositions=["a>b"]), _oscillating, cfg, 30)
    rounds = [d.round for d in _transitions(ds, "a>b")]
    assert len(rounds) >= 3
    assert all(b - a >= 3 for a, b in zip(rounds, rounds[1:]))


def test_ema_is_the_momentum_weighted_average():
    cfg = CurriculumConfig(momentum=0.25)
    st = CurriculumState.new(skills=["a"])
    st, _ = step(st, obs({"a": 0.8}), cfg)
    assert st.units[(SKILL, "a")].ema == pytest.approx(0.8)
    st, _ = step(st, obs({"a": 0.0}), cfg)
    assert st.units[(SKILL, "a")].ema == pytest.approx(0.6)
    st, _ = step(st, obs({}), cfg)  # unobserved: unchanged
    assert st.units[(SKILL, "a")].ema == pytest.approx(0.6)


# --------------------------------------------------------------------------- order and cycles


def test_skills_unlock_in_topological_order():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    chain = [("a", "b"), ("b", "c"), ("c", "d")]
    st = CurriculumState.new(skills=["d", "c", "b", "a"], prior=chain)
    _, ds = step(st, obs({"a": 0.9, "b": 0.9, "c": 0.9, "d": 0.9}), cfg)
    assert [d.unit for d in ds] == ["a", "b", "c", "d"]  # decisions follow the DAG, not input order
    # a weak link holds back everything downstream, however well it scores itself
    st, _ = run(st, lambda r: obs({"a": 0.9, "b": 0.5, "c": 0.95, "d": 0.95}), cfg, 6)
    assert states(st, SKILL) == {"a": MASTERED, "b": ACTIVE, "c": LOCKED, "d": LOCKED}
    st, ds = step(st, obs({"a": 0.9, "b": 0.8, "c": 0.95, "d": 0.95}), cfg)
    assert [(d.unit, d.to_state) for d in ds] == [("b", MASTERED), ("c", ACTIVE), ("d", ACTIVE)]


def test_topological_order_breaks_cycles_deterministically():
    edges = [("b", "c"), ("c", "b"), ("a", "b"), ("c", "d")]
    order, dropped = topological_order(["d", "c", "b", "a"], edges)
    assert order == ["a", "b", "c", "d"]
    assert dropped == {("c", "b")}
    for perm in (edges[::-1], edges[1:] + edges[:1]):
        assert topological_order(["a", "b", "c", "d"], perm) == (order, dropped)
    for a, b in set(edges) - dropped:
        assert order.index(a) < order.index(b)


def _reference_order(nodes, edges):
    """The hand-written Kahn order with cycle breaking that networkx replaced (the pinned tie-breaks)."""
    edge_set = {(a, b) for a, b in edges if a != b}
    preds = {n: set() for n in set(nodes) | {x for e in edge_set for x in e}}
    succs = {n: set() for n in preds}
    for a, b in edge_set:
        preds[b].add(a)
        succs[a].add(b)
    remaining = {n: len(p) for n, p in preds.items()}
    ready = sorted(n for n, d in remaining.items() if d == 0)
    order, dropped = [], set()
    while remaining:
        if not ready:
            n = min(remaining, key=lambda x: (remaining[x], x))
            dropped |= {(p, n) for p in preds[n] if p in remaining}
            remaining[n] = 0
            ready = [n]
        n = ready.pop(0)
        del remaining[n]
        order.append(n)
        for s in succs[n]:
            if s in remaining and (n, s) not in dropped:
                remaining[s] -= 1
                if remaining[s] == 0:
                    ready.append(s)
        ready.sort()
    return order, dropped


@settings(max_examples=300, deadline=None)
@given(hst.sets(hst.tuples(hst.sampled_from("abcdefg"), hst.sampled_from("abcdefg")), max_size=20), hst.randoms())
def test_topological_order_keeps_the_pinned_tie_breaks(edges, rnd):
    nodes = sorted({n for e in edges for n in e} | {"z"})
    order, dropped = topological_order(nodes, edges)
    assert (order, dropped) == _reference_order(nodes, edges)
    kept = {(a, b) for a, b in edges if a != b} - dropped
    assert all(order.index(a) < order.index(b) for a, b in kept)
    dag = nx.DiGraph([(a, b) for a, b in edges if a != b])
    if nx.is_directed_acyclic_graph(dag):  # nothing to break: exactly networkx's lexicographic order
        dag.add_nodes_from(nodes)
        assert not dropped and order == list(nx.lexicographical_topological_sort(dag))
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    assert topological_order(list(reversed(nodes)), shuffled) == (order, dropped)


def test_networkx_is_a_declared_dependency():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    deps = tomllib.loads(text)["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("networkx") for d in deps)


def test_skill_pairs_are_the_compositions_rule():
    from ace_env import bfcl
    from ace_graph.compositions import adjacent_pairs
    from ace_graph.tagger import tag_task

    for task in bfcl.load_tasks("base")[:20]:
        tags = tag_task(task)
        assert candidate(task).compositions == frozenset(adjacent_pairs(tags)[1])
        assert candidate(task, "tool").compositions == frozenset(adjacent_pairs(tags)[0])


def test_cycle_does_not_deadlock_the_curriculum():
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(compositions=["x>y"], prior=[("x", "y"), ("y", "x")])
    st, _ = run(st, lambda r: obs({"x": 0.9, "y": 0.9}, {"x>y": 0.5}), cfg, 3)
    assert states(st, SKILL) == {"x": MASTERED, "y": MASTERED}
    assert states(st, COMPOSITION) == {"x>y": ACTIVE}


def test_step_is_pure_and_deterministic():
    cfg = CurriculumConfig(min_rounds=1)
    st0 = CurriculumState.new(compositions=["a>b", "b>c"], prior=[("a", "b")])
    before = st0.to_dict()
    s1, d1 = step(st0, obs({"a": 0.9, "b": 0.8, "c": 0.2}), cfg)
    s2, d2 = step(st0, obs({"a": 0.9, "b": 0.8, "c": 0.2}), cfg)
    assert st0.to_dict() == before
    assert s1.to_dict() == s2.to_dict() and d1 == d2
    assert CurriculumState.from_dict(s1.to_dict()).to_dict() == s1.to_dict()


def test_impossible_observation_is_rejected():
    with pytest.raises(ConfigError, match="impossible"):
        step(CurriculumState(), Observations(skills={"a": (3, 5)}))


# --------------------------------------------------------------------------- mix


def _cands():
    out = []
    for i in range(60):
        depth = 1 + i % 7  # depths 1..7
        comps = {"a>b"} if i % 3 == 0 else {"c>d"}
        out.append(Candidate(f"t{i:02d}", frozenset({"a", "b", "c", "d"}), frozenset(comps), depth))
    return out


def _active_state():
    st = CurriculumState.new(compositions=["a>b", "c>d"])
    for (kind, key), u in st.units.items():
        u.state = MASTERED
    st.units[(COMPOSITION, "a>b")].state = ACTIVE
    return st


def test_mix_is_mostly_active_compositions_with_stratified_replay():
    cfg = CurriculumConfig(replay_share=0.3)
    m = mix(_active_state(), _cands(), 20, random.Random(0), cfg)
    assert len(m.tasks) == 20 and len(set(m.task_ids)) == 20
    assert len(m.replay) == 6 and len(m.focus) == 14
    assert all("a>b" in c.compositions for c in m.focus)
    assert all("a>b" not in c.compositions for c in m.replay)
    assert set(m.replay_by_stratum) == {"1-2", "3-4", "5+"}
    assert all(k == 2 for k in m.replay_by_stratum.values())
    assert {cfg.stratum(c.depth) for c in m.replay} == {"1-2", "3-4", "5+"}


def test_replay_keeps_every_stratum_even_when_deep_tasks_dominate():
    cands = [Candidate(f"deep{i:03d}", frozenset(), frozenset({"x>y"}), 9) for i in range(200)]
    cands += [Candidate("short", frozenset(), frozenset({"x>y"}), 1),
              Candidate("mid", frozenset(), frozenset({"x>y"}), 3)]
    cands += [Candidate(f"focus{i}", frozenset(), frozenset({"a>b"}), 6) for i in range(50)]
    m = mix(_active_state(), cands, 30, random.Random(7), CurriculumConfig(replay_share=0.2))
    assert {"short", "mid"} <= set(m.task_ids)
    assert m.replay_by_stratum == {"1-2": 1, "3-4": 1, "5+": 4}


def test_mix_is_deterministic_given_the_rng_and_ignores_input_order():
    cands = _cands()
    a = mix(_active_state(), cands, 15, random.Random(3)).task_ids
    b = mix(_active_state(), list(reversed(cands)), 15, random.Random(3)).task_ids
    c = mix(_active_state(), cands, 15, random.Random(4)).task_ids
    assert a == b
    assert a != c


def test_mix_tops_up_from_replay_when_few_tasks_are_active():
    cands = _cands()[:6]  # t00 and t03 carry a>b
    m = mix(_active_state(), cands, 5, random.Random(0), CurriculumConfig(replay_share=0.2))
    assert {c.task_id for c in m.focus} == {"t00", "t03"}
    assert len(m.tasks) == 5


def test_mix_from_real_tasks_uses_tagged_skill_pairs():
    from ace_env import bfcl

    tasks = bfcl.load_tasks("base")[:20]
    st = CurriculumState.new()
    m = mix(st, tasks, 10, random.Random(0))
    assert len(m.tasks) == 10  # nothing active: all replay, stratified
    assert all(c.depth == next(t for t in tasks if t.id == c.task_id).n_steps for c in m.tasks)
    assert any(c.compositions for c in m.tasks)


# --------------------------------------------------------------------------- drift


def _task(tid, calls):
    return Task(tid, "test", "test", [Turn([{"role": "user", "content": "x"}], calls)], {}, [], [])


def test_drift_measures_total_variation_and_caps():
    seed = [_task("s1", ["ls()", "cd(folder='a')"]), _task("s2", ["ls()", "pwd()"])]
    same = [_task("x", ["cd(folder='b')", "ls()", "ls()", "pwd()"])]
    r = drift(same, seed)
    assert r.tvd == pytest.approx(0.0) and r.within_cap
    skewed = [_task("y", ["cd(folder='b')"] * 3 + ["ls()"])]
    r = drift(skewed, seed, max_drift=0.35)
    # selected: cd .75, ls .25; seed: ls .5, cd .25, pwd .25 -> TVD = (.5 + .25 + .25) / 2
    assert r.tvd == pytest.approx(0.5)
    assert not r.within_cap
    assert r.over[0][0] == "cd" and r.over[0][1] == pytest.approx(0.75)
    assert [t for t, _, _ in r.under] == ["ls", "pwd"]
    assert drift(skewed, seed, max_drift=0.5).within_cap
    with pytest.raises(ConfigError):
        drift(skewed, seed, max_drift=0)


def test_drift_of_a_bfcl_subset_is_small_and_of_one_class_large():
    from ace_env import bfcl

    seed = bfcl.load_tasks("base")
    assert drift(seed[::2], seed).within_cap
    fs_only = [t for t in seed if t.involved_classes == ["GorillaFileSystem"]]
    r = drift(fs_only, seed)
    assert not r.within_cap and r.tvd > 0.35


def test_replay_is_kept_when_every_task_touches_an_active_unit():
    st = CurriculumState.new(compositions=["a>b", "c>d"])
    for u in st.units.values():
        u.state = ACTIVE
    m = mix(st, _cands(), 20, random.Random(0), CurriculumConfig(replay_share=0.3))
    assert len(m.focus) == 14 and len(m.replay) == 6
    assert not set(m.task_ids[:14]) & set(c.task_id for c in m.replay)
    assert {CurriculumConfig().stratum(c.depth) for c in m.replay} == {"1-2", "3-4", "5+"}
