"""`ace synth` end to end on the real Neo4j: frontier in, verified tasks and their lineage out."""

from __future__ import annotations

import json
from pathlib import Path

from ace.cli import main
from ace_env import bfcl
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore

WEAKNESS = (Path(__file__).parent / "synth_weakness.toml").read_text()  # shared by the synthesis tests


def test_synth_from_graph_frontier_stores_plans_and_lineage(clean_db, neo4j_database, tmp_path, capsys):
    from ace_env.sim import load_weakness, simulate

    weakness = tmp_path / "w.toml"
    weakness.write_text(WEAKNESS)
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    rollouts = tmp_path / "r.jsonl"
    with open(rollouts, "w") as f:
        for row in simulate(list(tasks.values()), 1500, load_weakness(weakness), 7):
            f.write(json.dumps(row) + "\n")
    store = GraphStore(clean_db, neo4j_database)
    ingest_file(store, rollouts, tasks, "syn", "sim", "round-0")

    out = tmp_path / "synth.jsonl"
    args = ["synth", "--experiment", "syn", "--n", "16", "--seed", "1", "--plans", "4", "--rounds", "2",
            "--out", str(out), "--weakness", str(weakness), "--tasks", "bfcl:base", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["tasks"] == 16 and summary["scope"] == "syn/sim/round-0"
    assert set(summary["by_target"]) <= {"book_flight>retrieve_invoice", "get_stock_info>place_order"}
    lines = out.read_text().splitlines()
    assert len(lines) == 16

    assert main(["synth", "check", str(out), "--json"]) == 0
    check = json.loads(capsys.readouterr().out)
    assert check == {"tasks": 16, "valid": 16, "invalid": 0, "reasons": {}}

    rows = store.run("synthesized-tasks", experiment="syn", limit=100)
    assert {r["task_id"] for r in rows} == {json.loads(line)["id"] for line in lines}
    assert all(r["parents"] and r["strategy"] and r["target_edge"] for r in rows)
    plans = clean_db.execute_query(
        "MATCH (p:Plan {experiment: 'syn'})-[:TARGETS_FROM]->(a:Tool), (p)-[:TARGETS_TO]->(b:Tool) "
        "RETURN p.plan AS plan, a.name AS a, b.name AS b, p.status AS status", database_=neo4j_database,
    ).records
    assert len(plans) >= 4
    assert all((r["a"], r["b"]) in {("book_flight", "retrieve_invoice"), ("get_stock_info", "place_order")} for r in plans)

    # Same seed, same tasks.
    again = tmp_path / "again.jsonl"
    again_args = list(args)
    again_args[again_args.index("--out") + 1] = str(again)
    assert main(again_args) == 0
    capsys.readouterr()
    assert again.read_text() == out.read_text()

    # Synthesized tasks work wherever a task set is accepted.
    sim_out = tmp_path / "sim.jsonl"
    assert main(["sim", "rollouts", "--tasks", str(out), "--n", "20", "--seed", "3", "--out", str(sim_out)]) == 0
    assert main(["verify", "--tasks", str(out), "--rollouts", str(sim_out), "--json"]) == 0
    verdicts = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert len(verdicts) == 20
