"""The demo's functions against the real server: each returns data, and the stages fit together."""

from __future__ import annotations

import json

from ace import demo
from ace.cli import main
from ace_env import bfcl
from ace_graph.store import GraphStore


def test_demo_functions_end_to_end(clean_db, neo4j_database, tmp_path):
    store = GraphStore(clean_db, neo4j_database)
    replay = demo.replay(["miss_func"])
    assert replay == [{**replay[0], "category": "miss_func", "tasks": 200, "passed": 200, "failed": 0, "errors": 0}]

    seeds = bfcl.load_tasks("all")
    r0 = demo.simulate_and_ingest(store, seeds, "dt", "round-0", 3000, 1, directory=tmp_path)
    assert r0["scope"] == "dt/sim/round-0" and r0["ingest"]["created"] == 3000
    again = demo.simulate_and_ingest(store, seeds, "dt", "round-0", 3000, 1, directory=tmp_path)
    assert again["simulated"]["reused"] and again["ingest"]["already_stored"] == 3000  # idempotent

    w = demo.weaknesses(store, r0["scope"])
    assert w["recovered"] and set(map(tuple, w["recovered"])) <= set(map(tuple, w["planted"]))
    assert all(r["planted"] == ((r["from"], r["to"]) in set(map(tuple, w["planted"]))) for r in w["weak_compositions"])
    assert w["frontier"] and all(r["from_success"] >= 0.6 for r in w["frontier"])

    s = demo.synthesize_round(store, {t.id: t for t in seeds}, "dt", r0["scope"], 1, 6, directory=tmp_path)
    assert len(s["tasks"]) == 6 and sum(g["tasks"] for g in s["groups"]) == 6
    assert len((tmp_path / "synth-round-1-seed1-n6.jsonl").read_text().splitlines()) == 6
    assert s["exports"]["bfcl"]["written"] >= 1

    first = demo.curriculum(store, "dt", r0["scope"])
    assert first is not None and first.round == 1 and first.scope == r0["scope"]
    assert demo.curriculum(store, "dt", r0["scope"]) is None  # never counted twice

    r1 = demo.round_one(store, seeds, s["tasks"], "dt", 400, 1, directory=tmp_path)
    assert r1["scope"] == "dt/sim/round-1" and r1["ingest"]["created"] == 400 and r1["mix"] == 12
    moved = demo.frontier_moved(store, r0["scope"], r1["scope"])
    assert moved and {m["from"] + ">" + m["to"] for m in moved} >= {f"{r['from']}>{r['to']}" for r in
                                                                    demo.frontier(store, r0["scope"],
                                                                                  demo.FrontierConfig(level="tool"))}
    assert json.dumps(moved)  # plain data


def test_demo_command_prints_from_the_functions(clean_db, capsys):
    code = main(["demo", "--n", "1500", "--synth", "4", "--categories", "miss_func", "-e", "dcli", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = captured.out
    d = json.loads(out)
    assert d["replay"][0]["passed"] == 200
    assert d["round_0"]["scope"] == "dcli/sim/round-0" and d["round_1"]["scope"] == "dcli/sim/round-1"
    assert d["synthesis"]["exports"]["trl"]["written"] >= 1
    assert [c.get("round") for c in d["curriculum"]] == [1, 2]
