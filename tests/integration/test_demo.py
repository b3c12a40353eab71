"""The demo's functions against the real server: each returns data, and the stages fit together."""

from __future__ import annotations

import json
import tomllib

from ace import demo
from ace.cli import main
from ace_env import bfcl
from ace_graph.store import GraphStore

# What the demo's τ² section plants, read from the file itself (not from ace.demo.planted).
TAU2_PLANTED = {(c["from"], c["to"]) for c in tomllib.loads(demo.TAU2_WEAKNESS.read_text())["composition"]}


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


def test_demo_tau2_section_recovers_the_planted_compositions(clean_db, neo4j_database, tmp_path):
    store = GraphStore(clean_db, neo4j_database)
    t = demo.tau2_scope(store, "dt", 1500, 1, directory=tmp_path)
    assert t["scope"] == "dt-tau2/sim/round-0" and t["ingest"]["created"] == 1500 and t["task_count"] == 50
    w = t["weaknesses"]
    assert w["scope"] == t["scope"] and set(map(tuple, w["planted"])) == TAU2_PLANTED
    assert set(map(tuple, w["recovered"])) == TAU2_PLANTED  # every planted composition, found by the graph
    rows = w["weak_compositions"]
    assert {(r["from"], r["to"]) for r in rows[:len(TAU2_PLANTED)]} == TAU2_PLANTED  # at the top
    assert all(r["planted"] for r in rows if r["verdict"] == "composition")  # and nothing else called one
    assert w["weak_tools"] == ["search_direct_flight"] and w["weak_tools_as_compositions"] == 0
    stored = {r["name"]: r["class"] for r in clean_db.execute_query(
        "MATCH (:Scope {key: $scope})-[m:MEASURED {level: 'tool'}]->(x:Tool) RETURN x.name AS name, x.class AS class",
        scope=t["scope"], database_=neo4j_database).records}
    assert {a for pair in TAU2_PLANTED for a in pair} <= set(stored)
    assert stored["update_reservation_flights"] == "tau2:airline"
    again = demo.tau2_scope(store, "dt", 1500, 1, directory=tmp_path)
    assert again["simulated"]["reused"] and again["ingest"]["already_stored"] == 1500  # idempotent


def test_demo_command_prints_from_the_functions(clean_db, capsys):
    args = ["demo", "--n", "1500", "--synth", "4", "--categories", "miss_func", "-e", "dcli", "--tau2-n", "1200"]
    code = main(args + ["--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = captured.out
    d = json.loads(out)
    assert d["replay"][0]["passed"] == 200
    assert d["round_0"]["scope"] == "dcli/sim/round-0" and d["round_1"]["scope"] == "dcli/sim/round-1"
    assert d["synthesis"]["exports"]["trl"]["written"] >= 1
    assert [c.get("round") for c in d["curriculum"]] == [1, 2]
    t = d["tau2"]
    assert t["scope"] == "dcli-tau2/sim/round-0" and t["ingest"]["created"] == 1200
    assert {tuple(p) for p in t["weaknesses"]["recovered"]} == TAU2_PLANTED
    assert t["weaknesses"]["weak_compositions"][0]["planted"]

    # printed: the τ² section after the BFCL part, its table marking the planted compositions (a rerun: all stored)
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.index("5. Round 1") < printed.index("6. τ²-bench") and "1200 already stored" in printed
    section = printed[printed.index("6. τ²-bench"):]
    for a, b in TAU2_PLANTED:
        assert next(line for line in section.splitlines() if f" {a} → {b} " in line).rstrip(" │").endswith("yes")
    assert f"Planted compositions recovered: {len(TAU2_PLANTED)}/{len(TAU2_PLANTED)}" in section
    # 7: real agents, a scope per model and checkpoint beside the pooled scope and its weak compositions
    r = d["real_agents"]
    assert {x["scope"] for x in r["scopes"]} == {"dcli-real/claude-sonnet-4-5/base", "dcli-real/gpt-4.1/base",
                                                 "dcli-real/gpt-4.1/sft"}
    assert all(x["agree"] == x["with_reference"] for x in r["scopes"])
    assert r["pooled"]["scope"] == "dcli-real/all-agents/pooled" and r["pooled"]["agree"] == 250 and r["pooled"]["weak"]
    real = printed[printed.index("7. Real agents"):]
    assert "Real agents pooled: weak tool compositions" in real
    w = r["pooled"]["weak"][0]
    assert any(f" {w['from']} → {w['to']} " in line for line in real.splitlines())
    assert main(["demo", "--tau2-n", "50"]) == 1  # refused before Neo4j is touched


def test_a_demo_too_small_to_synthesize_says_so_before_round_1(clean_db, capsys):
    # 300 rollouts: the tool-level frontier holds only compositions the graph cannot yet tell from their tools, so
    # nothing is synthesized; round 1 (which rolls out on the synthesized tasks) used to fail with "the task set
    # is empty: nothing to simulate"
    assert main(["demo", "--n", "300", "--synth", "2", "--categories", "miss_func", "--tau2-n", "0", "-e", "small"]) == 1
    err = capsys.readouterr().err
    assert "no task was synthesized from small/sim/round-0" in err and "--n" in err
    assert "nothing to simulate" not in err
