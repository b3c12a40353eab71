"""Every named query runs against the real server; the mining finds what was planted."""

from __future__ import annotations

import json

import pytest
from simgraph import simulated_graph

from ace_env import bfcl
from ace_env.environments import environment_names
from ace_graph import queries
from ace_graph.compositions import adjacent_pairs
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT, fragility, wilson
from ace_graph.tagger import tag_task

SCOPE = "q/sim/round-1"
PLANTED = [("get_zipcode_based_on_city", "estimate_distance"), ("place_order", "get_order_details")]
WEAK_TOOL = "grep"
WEAKNESS = {
    "defaults": {"error": 0.01},
    "tool": [{"name": WEAK_TOOL, "error": 0.5, "kind": "argument"}],
    "composition": [{"from": a, "to": b, "error": 0.7, "kind": "argument"} for a, b in PLANTED],
}


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database, tmp_path_factory):
    """One scope of 2,500 simulated rollouts (plus an earlier round) stored once for this module."""
    store, tasks, spec = simulated_graph(neo4j_driver, neo4j_database, tmp_path_factory, WEAKNESS,
                                         [("q/sim/round-0", 10, 600), (SCOPE, 11, 2500)])
    _synthesize_a_few(store, tasks, spec)
    return store


def _synthesize_a_few(store, tasks, spec):
    """A handful of synthesized tasks with their plans and lineage, for the synthesis queries."""
    from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize

    frontier = store.run("frontier", scope=SCOPE, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, min_prereq=0.6, limit=5)
    by_target = seeds_by_target(frontier, tasks)
    result = synthesize(frontier, tasks, by_target, sim_policy(spec),
                        SynthConfig(n=4, rounds=1, plans=2, rollouts_per_task=2, seed=0))
    assert result.tasks
    store.upsert_tasks(result.tasks)
    store.upsert_plans("q", result.plans)
    store.upsert_lineage("q", result.lineage)


PARAMS = {
    "scope": SCOPE, "level": "tool", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "limit": 50, "min_prereq": 0.6,
    "experiment": "q", "policy": "sim", "from": PLANTED[0][0], "to": PLANTED[0][1],
    "after": "result_extraction", "skill": "param_from_output", "failures_only": False, "scopes": [SCOPE],
    "keys": ["bfcl:multi_turn_base_0"], "environment": "bfcl", "environments": environment_names(),
}


def test_every_read_query_runs_and_returns_its_declared_columns(graph):
    # the header's Mode line decides; the curriculum queries need a stored curriculum (test_curriculum_store, test_app)
    names = [n for n in queries.list_queries()
             if not queries.load(n).writes and n not in ("curriculum-status", "curriculum-decisions")]
    assert {"weak-compositions", "fragile-edges", "frontier", "capability-profile", "near-success",
            "skill-graph", "capability-history"} <= set(names)
    near = graph.run("near-success", scope=SCOPE, level="tool", **{"from": PLANTED[0][0], "to": PLANTED[0][1]}, limit=1)
    params = {**PARAMS, "rollout": near[0]["rollout"]}  # a stored rollout, for view-rollout
    # view-synth-for-edge needs an edge that synthesized tasks aim at: take one the fixture made
    made = graph.driver.execute_query(
        "MATCH (p:Plan)-[:PRODUCED]->(t:Task) WHERE t.target_edge IS NOT NULL "
        "RETURN p.experiment AS experiment, t.target_edge AS edge ORDER BY edge LIMIT 1",
        database_=graph.database).records
    assert made, "the fixture synthesized no task"
    a, b = made[0]["edge"].split(">")
    # skill-composition-tools needs a skill pair that failed at a tool pair: take one from a failed step
    [pair] = graph.driver.execute_query(
        "MATCH (:Rollout {scope: $scope})-[:HAS_STEP]->(s:Step {outcome: 'fail'}) WHERE s.prev_tool IS NOT NULL "
        "AND size(s.prev_skills) > 0 AND size(s.skills) > 0 RETURN s.prev_skills[0] AS a, s.skills[0] AS b LIMIT 1",
        scope=SCOPE, database_=graph.database).records
    per_query = {"skill-composition-tools": {"from": pair["a"], "to": pair["b"]},
                 "view-synth-for-edge": {"experiment": made[0]["experiment"], "from": a, "to": b},
                 "failed-after": {"after": PLANTED[0][0], "skill": PLANTED[0][1]},  # tool names, as level is
                 "rollout-digests": {"ids": [near[0]["rollout"], "no-such-rollout"]}}
    for name in names:
        q = queries.load(name)
        values = {**params, **per_query.get(name, {})}
        rows = graph.run(name, **{p: values[p] for p in q.params})
        assert rows, f"{name} returned no rows"
        assert list(rows[0].keys()) == list(q.columns), name


def test_weak_compositions_find_planted_pairs_not_the_weak_tool(graph):
    rows = graph.run("weak-compositions", scope=SCOPE, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, limit=50)
    found = {(r["from"], r["to"]) for r in rows}
    called = {(r["from"], r["to"]) for r in rows if r["verdict"] == "composition"}
    assert all(r["method"] == "estimate" for r in rows)  # ingest_file ran the estimator
    assert set(PLANTED) <= found
    assert not [pair for pair in called if pair[1] == WEAK_TOOL], called
    assert called <= set(PLANTED) and called, called  # nothing else is called a weak composition


def test_cypher_fragility_equals_python(graph, neo4j_driver, neo4j_database):
    rows = graph.run("fragile-edges", scope=SCOPE, level="tool", min_support=5, min_lift=MIN_LIFT)
    assert len(rows) > 10
    measured = {
        r["key"]: r
        for r in graph.run("capability-profile", scope=SCOPE, level="tool")
    }
    for row in rows[:15]:
        target = measured[row["to"]]
        f = fragility(row["n"], row["failures"], target["attempts"], target["attempts"] - target["successes"])
        assert row["fragility"] == pytest.approx(f.fragility, abs=1e-9)
        assert row["fragility_low"] == pytest.approx(f.lower, abs=1e-6)
        assert row["fragility_high"] == pytest.approx(f.upper, abs=1e-6)
    for r in measured.values():
        lo, hi = wilson(r["successes"], r["attempts"])
        assert (r["ci_low"], r["ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))


def test_capability_profile_shows_the_weak_tool(graph):
    rows = graph.run("capability-profile", scope=SCOPE, level="tool")
    rate = {r["key"]: r["success_rate"] for r in rows}
    assert rate[WEAK_TOOL] < 0.65
    assert sorted(rate.values())[0] == rows[0]["success_rate"]  # weakest first


def test_frontier_carries_evidence_examples_and_seed_tasks(graph):
    rows = graph.run("frontier", scope=SCOPE, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, min_prereq=0.6, limit=10)
    pair = {(r["from"], r["to"]): r for r in rows}
    row = pair[PLANTED[0]]
    assert row["from_success"] >= 0.6 and row["target_success_elsewhere"] >= 0.6
    assert row["composition_success"] < 0.6
    assert row["near_success_examples"], "no near-success examples attached"
    assert row["seed_tasks"] and all(t.startswith(("multi_turn_base_", "ace-")) for t in row["seed_tasks"])
    ex = row["near_success_examples"][0].rsplit("/", 1)[1]
    near = graph.run("near-success", scope=SCOPE, level="tool", **{"from": PLANTED[0][0], "to": PLANTED[0][1]}, limit=100)
    assert ex in {r["rollout"] for r in near}
    assert all(r["step_match"] >= 0.7 for r in near)


def test_capability_history_has_both_rounds(graph):
    rows = graph.run("capability-history", experiment="q", policy="sim", level="tool")
    rounds = {r["round"] for r in rows}
    assert rounds == {0, 1}


def test_analyst_questions_answerable_in_cypher(graph):
    tasks = graph.run("tasks-with-composition", level="tool", limit=500, **{"from": PLANTED[1][0], "to": PLANTED[1][1]})
    expected = [t.id for t in bfcl.load_tasks("base")
                if f"{PLANTED[1][0]}>{PLANTED[1][1]}" in _pairs(t)]
    assert sorted(r["task_id"] for r in tasks if r["source"] == "bfcl") == sorted(expected)
    failed = graph.run("failed-after", scope=SCOPE, level="skill", after="result_extraction", skill="param_from_output",
                       limit=1000)
    assert failed and all(r["rollout"] for r in failed)
    by_tool = graph.run("failed-after", scope=SCOPE, level="tool", after=PLANTED[1][0], skill=PLANTED[1][1], limit=1000)
    assert by_tool and all((r["previous_tool"], r["failing_tool"]) == PLANTED[1] for r in by_tool)


def _pairs(task):
    return adjacent_pairs(tag_task(task))[0]


def test_query_console_is_read_only(graph):
    from neo4j.exceptions import ClientError


    with pytest.raises(ClientError):
        with graph.driver.session(database=graph.database) as s:
            s.execute_read(lambda tx: tx.run("CREATE (:Oops) RETURN 1").consume())


def test_ace_query_cli(graph, capsys):
    from ace.cli import main

    assert main(["query", "weak-compositions", "-P", f"scope={SCOPE}", "-P", "level=tool", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert set(PLANTED) <= {(r["from"], r["to"]) for r in rows}
    assert {(r["from"], r["to"]) for r in rows if r["verdict"] == "composition"} <= set(PLANTED)
    assert main(["query", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "frontier" in listed and "ingest-rollouts" not in listed
    assert main(["query", "ingest-rollouts", "-P", "batch=x", "-P", "rows=[]"]) == 1
    assert "read-only" in capsys.readouterr().err
    assert main(["query", "frontier"]) == 1
    assert "scope" in capsys.readouterr().err
    assert main(["query", "capability-profile", "-P", f"scope={SCOPE}", "-P", "nope=1"]) == 1
