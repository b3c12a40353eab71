"""Prior edges in Neo4j: one count rule (tasks per edge), whichever caller upserted last."""

from __future__ import annotations

import pytest

from ace_env import bfcl
from ace_graph.compositions import SKILL, TOOL, prior_edges, task_dependencies
from ace_graph.store import GraphStore
from ace_graph.tagger import tag_task


@pytest.fixture(scope="module")
def tasks():
    return bfcl.load_tasks("all")


def _prior(driver, database, label):
    key = "name" if label == "Tool" else "id"
    rows, _, _ = driver.execute_query(
        f"MATCH (a:{label})-[p:PRIOR]->(b:{label}) "
        f"RETURN a.{key} AS a, b.{key} AS b, p.kind AS kind, p.count AS n, p.example_task AS ex ORDER BY a, b, kind",
        database_=database,
    )
    return {(r["a"], r["b"], r["kind"]): (r["n"], r["ex"]) for r in rows}


def test_counts_do_not_depend_on_which_subset_was_upserted_last(clean_db, neo4j_database, tasks):
    store = GraphStore(clean_db, neo4j_database)
    store.ensure_taxonomy()
    assert store.upsert_tasks(tasks) == 800
    tool_all, skill_all = _prior(clean_db, neo4j_database, "Tool"), _prior(clean_db, neo4j_database, "Skill")

    # the one rule: an edge counts the tasks whose oracle implies it, the same as compositions.prior_edges
    expected = {(e.from_tool, e.to_tool, e.kind): e.count for e in prior_edges(tasks)}
    assert {k: n for k, (n, _) in tool_all.items()} == expected
    assert tool_all[("touch", "echo", "precondition")][0] == 68  # of the 800 tasks
    skill_expected: dict[tuple[str, str, str], int] = {}
    for t in tasks:
        for d in task_dependencies(tag_task(t)):
            if d.level == SKILL:
                skill_expected[(d.from_, d.to, d.kind)] = skill_expected.get((d.from_, d.to, d.kind), 0) + 1
    assert {k: n for k, (n, _) in skill_all.items()} == skill_expected
    assert max(n for n, _ in skill_all.values()) <= 800  # once per task, not once per step dependency

    # a 20-task subset with touch->echo in it (it used to rewrite the count to the subset's 6)
    subset = [t for t in tasks if any(d.level == TOOL and (d.from_, d.to) == ("touch", "echo")
                                      for d in task_dependencies(tag_task(t)))][:6]
    subset += [t for t in tasks if t not in subset][:14]
    assert store.upsert_tasks(subset) == 20
    assert _prior(clean_db, neo4j_database, "Tool") == tool_all
    assert _prior(clean_db, neo4j_database, "Skill") == skill_all

    # an edited task is rewritten even with its old id, and the counts follow what is stored
    edited = next(t for t in subset if any((d.from_, d.to) == ("touch", "echo") for d in task_dependencies(tag_task(t))))
    for turn in edited.turns:
        turn.ground_truth[:] = [c for c in turn.ground_truth if not c.startswith("echo(")]
    store.upsert_tasks([edited])
    after = _prior(clean_db, neo4j_database, "Tool")
    assert after[("touch", "echo", "precondition")][0] == tool_all[("touch", "echo", "precondition")][0] - 1
    rows, _, _ = clean_db.execute_query(
        "MATCH (t:Task {id: $id}) RETURN [(t)-[:USES]->(x) | x.name] AS tools, "
        "[(t)-[:CONTAINS]->(c) WHERE c.level = 'tool' | c.key] AS pairs",
        id=edited.id, database_=neo4j_database,
    )
    assert "echo" not in rows[0]["tools"] and not [k for k in rows[0]["pairs"] if "echo" in k]


def test_reupserting_unchanged_tasks_writes_nothing(clean_db, neo4j_database, tasks):
    store = GraphStore(clean_db, neo4j_database)
    store.ensure_taxonomy()
    store.upsert_tasks(tasks[:50])
    rows, _, _ = clean_db.execute_query("MATCH (t:Task) RETURN t.id AS id, t.fingerprint AS fp", database_=neo4j_database)
    stored = {r["id"]: r["fp"] for r in rows}
    assert len(stored) == 50 and all(stored[t.id].startswith(t.fingerprint()) for t in tasks[:50])
    clean_db.execute_query("MATCH (t:Task) SET t.marker = 1", database_=neo4j_database)
    store.upsert_tasks(tasks[:50])  # nothing changed: no task is tagged or written again
    rows, _, _ = clean_db.execute_query("MATCH (t:Task) WHERE t.marker = 1 RETURN count(t) AS n", database_=neo4j_database)
    assert rows[0]["n"] == 50
