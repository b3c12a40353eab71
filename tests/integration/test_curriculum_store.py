"""The curriculum in the real Neo4j: save/load round trip, evidence from a scope, the CLI."""

from __future__ import annotations

import json

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_graph.store import GraphStore
from train.curriculum.core import ACTIVE, COMPOSITION, SKILL, CurriculumConfig, CurriculumState, Observations, step
from train.curriculum.store import load_state, observations_from_graph, save
from train.errors import CurriculumConflictError

WEAKNESS = {
    "defaults": {"error": 0.02},
    "composition": [{"from": "cd", "to": "mv", "error": 0.6, "kind": "wrong_tool"}],
}


@pytest.fixture
def store(clean_db, neo4j_database):
    return GraphStore(clean_db, neo4j_database)


def _ingested(store, tmp_path, checkpoint="round-1", seed=0):
    """Seed taxonomy and tasks, simulate rollouts and ingest them into curr/sim/<checkpoint>."""
    from ace_env.sim import parse_weakness, simulate
    from ace_graph.ingest import ingest_file

    tasks = bfcl.load_tasks("base")[:60]
    store.ensure_taxonomy()
    store.upsert_tasks(tasks)
    path = tmp_path / f"{checkpoint}.jsonl"
    with open(path, "w") as f:
        for row in simulate(tasks, 120, parse_weakness(WEAKNESS), seed):
            f.write(json.dumps(row) + "\n")
    ingest_file(store, path, {t.id: t for t in tasks}, "curr", "sim", checkpoint)
    return "curr/sim/" + checkpoint


def _rows(driver, database, query, **params):
    records, _, _ = driver.execute_query(query, params, database_=database)
    return [r.data() for r in records]


def test_save_load_round_trip_and_decision_nodes(store, clean_db, neo4j_database):
    cfg = CurriculumConfig(min_rounds=1, momentum=1.0)
    st = CurriculumState.new(compositions=["a>b"], prior=[("p", "a")])
    obs = Observations(skills={"p": (10, 9), "a": (10, 8), "b": (10, 9)}, compositions={"a>b": (10, 5)})
    st1, d1 = step(st, obs, cfg)
    save(store, "exp1", st1, d1, cfg, scope="exp1/pol/c1")
    loaded = load_state(store, "exp1")
    assert loaded.round == 1
    assert {k: (u.state, u.ema, u.rounds_in_state, u.last_reason) for k, u in loaded.units.items()} == \
        {k: (u.state, u.ema, u.rounds_in_state, u.last_reason) for k, u in st1.units.items()}
    st2, d2 = step(loaded, obs, cfg)
    save(store, "exp1", st2, d2, cfg)
    again = load_state(store, "exp1")
    assert again.round == 2 and again.units[(COMPOSITION, "a>b")].state == ACTIVE
    rows = _rows(clean_db, neo4j_database,
                 "MATCH (:Curriculum {experiment: 'exp1'})-[:HAS_UNIT]->(u:CurriculumUnit)-[:DECIDED]->(d) "
                 "RETURN d.round AS round, d.unit AS unit, d.from AS from, d.to AS to, d.reason AS reason "
                 "ORDER BY round, unit")
    assert [(r["round"], r["unit"], r["from"], r["to"]) for r in rows] == sorted(
        (d.round, d.unit, d.from_state, d.to_state) for d in d1 + d2)
    assert all(r["reason"] for r in rows)
    # one node per unit and experiment; another experiment is independent
    save(store, "exp2", st1, d1, cfg)
    n = _rows(clean_db, neo4j_database, "MATCH (u:CurriculumUnit) RETURN u.experiment AS e, count(*) AS n ORDER BY e")
    assert n == [{"e": "exp1", "n": len(st2.units)}, {"e": "exp2", "n": len(st1.units)}]
    assert load_state(store, "nope").round == 0 and not load_state(store, "nope").units


def test_stale_save_is_refused(store):
    cfg = CurriculumConfig(min_rounds=1)
    st1, d1 = step(CurriculumState.new(skills=["a"]), Observations(skills={"a": (4, 3)}), cfg)
    save(store, "exp", st1, d1, cfg)
    # a second writer that also started from round 0 loses
    with pytest.raises(CurriculumConflictError, match="round 0"):
        save(store, "exp", st1, d1, cfg, previous_round=0)
    assert load_state(store, "exp").round == 1


def test_observations_come_from_the_scope(store, tmp_path, clean_db, neo4j_database):
    scope = _ingested(store, tmp_path)
    o = observations_from_graph(store, scope)
    profile = {r["key"]: r for r in store.run("capability-profile", scope=scope, level="skill")}
    assert o.skills == {k: (r["attempts"], r["successes"]) for k, r in profile.items()}
    composes = _rows(clean_db, neo4j_database,
                     "MATCH (a:Skill)-[c:COMPOSES {scope: $scope}]->(b:Skill) WHERE c.n > 0 "
                     "RETURN a.id + '>' + b.id AS k, c.n AS n, c.failures AS f", scope=scope)
    assert o.compositions == {r["k"]: (r["n"], r["n"] - r["f"]) for r in composes}
    assert o.prior and all(a != b for a, b in o.prior)
    tool = observations_from_graph(store, scope, level="tool")
    assert "cd>mv" in tool.compositions and "cd" in tool.skills
    n, s = tool.compositions["cd>mv"]
    assert s < n  # the injected weakness shows
    from train.errors import CurriculumStoreError

    with pytest.raises(CurriculumStoreError, match="no skill measurements"):
        observations_from_graph(store, "curr/sim/never")


def test_cli_step_and_status(store, tmp_path, capsys, clean_db, neo4j_database):
    s1 = _ingested(store, tmp_path, "round-1", seed=1)
    assert main(["curriculum", "step", "-e", "curr", "--scope", s1, "--min-rounds", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["round"] == 1 and out["decisions"]
    assert all(d["round"] == 1 and d["reason"] for d in out["decisions"])
    assert any(d["kind"] == SKILL and d["to"] == ACTIVE for d in out["decisions"])
    stored = _rows(clean_db, neo4j_database,
                   "MATCH (d:CurriculumDecision {experiment: 'curr'}) RETURN d.unit AS unit, d.to AS to, "
                   "d.scope AS scope")
    assert sorted((r["unit"], r["to"]) for r in stored) == sorted((d["unit"], d["to"]) for d in out["decisions"])
    assert {r["scope"] for r in stored} == {s1}

    # feeding the same scope twice is refused (it would double-count the evidence)
    assert main(["curriculum", "step", "-e", "curr", "--scope", s1]) == 1
    assert "--allow-repeat" in capsys.readouterr().err

    s2 = _ingested(store, tmp_path, "round-2", seed=2)
    assert main(["curriculum", "step", "-e", "curr", "--scope", s2, "--min-rounds", "1", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["round"] == 2
    # an older scope is refused too, not only the latest one
    assert main(["curriculum", "step", "-e", "curr", "--scope", s1]) == 1
    assert "already read" in capsys.readouterr().err

    assert main(["curriculum", "status", "-e", "curr", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["round"] == 2 and status["last_scope"] == s2
    state = load_state(store, "curr")
    assert len(status["units"]) == len(state.units)
    by_key = {(u["kind"], u["key"]): u for u in status["units"]}
    for (kind, key), u in state.units.items():
        row = by_key[(kind, key)]
        assert (row["state"], row["rounds_in_state"]) == (u.state, u.rounds_in_state)
        assert row["ema"] == pytest.approx(u.ema) if u.ema is not None else row["ema"] is None
    last = {d["unit"]: d for d in out["decisions"] + second["decisions"]}
    for key, d in last.items():
        row = next(r for r in status["units"] if r["key"] == key)
        assert row["last_reason"] == d["reason"] and row["last_round"] == d["round"]

    assert main(["curriculum", "status", "-e", "curr"]) == 0
    assert "curriculum curr: round 2" in capsys.readouterr().out
    assert main(["curriculum", "status", "-e", "missing"]) == 1
