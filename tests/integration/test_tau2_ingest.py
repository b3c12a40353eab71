"""τ² airline end to end, as for BFCL: `ace sim rollouts` with one planted composition, `ace ingest`, and
`ace query weak-compositions` finds it at the top."""

from __future__ import annotations

import json

from simgraph import tau2_planted_rollouts

from ace.cli import main
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphStore

FROM, TO = "get_reservation_details", "update_reservation_flights"
SCOPE = "tau2-e2e/sim/round-0"


def test_a_planted_tau2_composition_is_found_at_the_top(clean_db, neo4j_database, tmp_path, capsys):
    _, out = tau2_planted_rollouts(tmp_path, FROM, TO, 1500)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["task_id"].startswith("tau2:airline:") for r in rows)
    planted = sum(s["cause"] == "composition" for r in rows for s in r["meta"]["slips"])
    assert planted >= 20
    capsys.readouterr()
    # the simulated agent's slips are ACE's step errors (some on reads τ²'s end state never sees): --strict
    assert main(["ingest", str(out), "--scope", SCOPE, "--tasks", "tau2:airline", "--show", "none", "--json",
                 "--strict"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["created"] == 1500 and report["invalid"] == 0

    store = GraphStore(clean_db, neo4j_database)
    top = store.run("weak-compositions", scope=SCOPE, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT,
                    limit=10)
    assert top and (top[0]["from"], top[0]["to"]) == (FROM, TO), top
    assert top[0]["verdict"] == "composition" and top[0]["method"] == "estimate"
    assert {r["verdict"] for r in top[1:]} <= {"tool", "inconclusive", None}  # nothing else is a weak composition

    tools = {r["name"]: r["class"] for r in clean_db.execute_query(
        "MATCH (x:Tool) WHERE x.name IN $names RETURN x.name AS name, x.class AS class",
        names=[FROM, TO, "calculate", "grep"], database_=neo4j_database).records}
    assert tools == {FROM: "tau2:airline", TO: "tau2:airline", "calculate": "tau2", "grep": "GorillaFileSystem"}

    # the stored steps: every planted slip failed at its step, with the previous gold call as predecessor
    failed = clean_db.execute_query(
        "MATCH (r:Rollout {scope: $scope})-[:HAS_STEP]->(s:Step {outcome: 'fail'}) "
        "RETURN r.rollout_id AS rollout, s.tool AS tool, s.prev_tool AS prev, s.index AS index",
        scope=SCOPE, database_=neo4j_database).records
    by_rollout = {r["rollout"]: r for r in failed}
    for row in rows:
        for slip in row["meta"]["slips"][:1]:
            got = by_rollout[row["rollout_id"]]
            # a call made in a task that needs none fails the task's abstain step (no tool)
            tool = None if slip["kind"] == "acted_without_need" else slip["tool"]
            assert (got["tool"], got["prev"], got["index"]) == (tool, slip["previous"], slip["index"])
    assert len(by_rollout) == sum(bool(r["meta"]["slips"]) for r in rows)
