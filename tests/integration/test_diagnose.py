"""A planted confounded pair is `ambiguous` before probes and resolved after (`ace diagnose`), on Neo4j."""

from __future__ import annotations

import json

import pytest
from simgraph import base_tasks, simulated_file, wipe

from ace_env.formats import Rollout
from ace_env.sim import parse_weakness
from ace_graph.estimate import Cell, cells_from_records, merge_cells
from ace_graph.ingest import ingest_file, prepare
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphStore

SCOPE = "diag/sim/c0"
PAIR = ("get_zipcode_based_on_city", "estimate_distance")  # estimate_distance nearly always follows it
WEAKNESS = {
    "defaults": {"error": 0.02},
    "tool": [{"name": "grep", "error": 0.4}],
    "composition": [{"from": PAIR[0], "to": PAIR[1], "error": 0.6}],
}
N = 500


@pytest.fixture(scope="module")
def scope(neo4j_driver, neo4j_database, tmp_path_factory):
    wipe(neo4j_driver, neo4j_database)
    tasks = base_tasks()
    spec = parse_weakness(WEAKNESS)
    path = tmp_path_factory.mktemp("diag") / "rollouts.jsonl"
    rows = simulated_file(path, tasks, N, spec, 3)
    store = GraphStore(neo4j_driver, neo4j_database)
    ingest_file(store, path, tasks, "diag", "sim", "c0", batch_size=250)
    weakness = tmp_path_factory.mktemp("w") / "weak.toml"
    weakness.write_text(
        '[defaults]\nerror = 0.02\n[[tool]]\nname = "grep"\nerror = 0.4\n'
        f'[[composition]]\nfrom = "{PAIR[0]}"\nto = "{PAIR[1]}"\nerror = 0.6\n')
    records = list(prepare(tasks, (Rollout(r["rollout_id"], r["task_id"], r["turns"], k + 1, r["meta"])
                                   for k, r in enumerate(rows)), SCOPE, 0.7, False, [], "test"))
    return store, weakness, records


def _row(store, query, **extra):
    rows = store.run(query, scope=SCOPE, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, limit=100, **extra)
    return {(r["from"], r["to"]): r for r in rows}


def test_store_reads_the_same_cells_the_records_give(scope):
    store, _, records = scope
    for level in ("tool", "skill"):
        raw = store.run("estimate-cells", scopes=[SCOPE], level=level)
        stored = merge_cells(Cell(r["unit"], tuple(r["prevs"]), r["task"], r["n"], r["failures"]) for r in raw)
        assert stored == cells_from_records(records, level)


def test_confounded_pair_is_ambiguous_then_resolved_by_ace_diagnose(scope, capsys):
    from ace.cli import main

    store, weakness, _ = scope
    before = _row(store, "weak-compositions")
    row = before[PAIR]
    assert row["verdict"] == "ambiguous" and row["method"] == "estimate"
    assert row["missing"].startswith(f"`{PAIR[1]}` seen ") and f"times without `{PAIR[0]}`" in row["missing"]
    assert row["view"] == [SCOPE]
    assert not [p for p in before if p[1] == "grep" and before[p]["verdict"] == "composition"]
    frontier = _row(store, "frontier", min_prereq=0.6)
    assert frontier[PAIR]["verdict"] == "ambiguous"

    assert main(["diagnose", "--scope", SCOPE, "--probe-budget", "150", "--policy", f"sim:{weakness}",
                 "--tasks", "bfcl:base", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # two rounds: half the budget, then the rest only if something is still ambiguous
    used = report["probe_rollouts"]
    assert report["probe_scope"] == SCOPE + "~probe" and 0 < used <= 150
    if used < 150:
        assert used == 75 and report["verdicts_after"].get("ambiguous", 0) == 0
    edge = next(e for e in report["edges"] if (e["from"], e["to"]) == PAIR)
    assert edge["before"] == "ambiguous" and edge["after"] == "composition"
    assert edge["probe_rollouts"]["without"] > edge["probe_rollouts"]["with"] > 0

    after = _row(store, "weak-compositions")
    assert after[PAIR]["verdict"] == "composition"
    assert after[PAIR]["view"] == [SCOPE, SCOPE + "~probe"]  # the view says it includes the probes
    assert _row(store, "frontier", min_prereq=0.6)[PAIR]["view"] == [SCOPE, SCOPE + "~probe"]
    assert not [p for p in after if p[1] == "grep" and after[p]["verdict"] == "composition"]
    linked = store.run("scope-view", scope=SCOPE)
    assert [r["probe"] for r in linked] == [SCOPE + "~probe"] and linked[0]["probe_rollouts"] == used


def test_diagnose_refuses_bad_input(scope, capsys):
    from ace.cli import main

    assert main(["diagnose", "--scope", "no/such/scope", "--probe-budget", "10", "--policy", "sim"]) == 1
    assert "scope 'no/such/scope' does not exist; scopes: " in capsys.readouterr().err  # require_scope lists them
    assert main(["diagnose", "--scope", SCOPE, "--policy", "gpt:foo"]) == 1
    assert "unknown policy" in capsys.readouterr().err
