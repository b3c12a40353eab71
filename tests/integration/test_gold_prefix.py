"""``ace eval --gold-prefix``: every oracle step scored with the oracle's prefix, stored as a scope the
graph's queries read unchanged; a planted weakness of the simulated agent is recovered from it."""

from __future__ import annotations

import json

import torch  # the train extra is part of setup: without it these tests fail, never skip

from ace.cli import main
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphStore

WEAKNESS = "tests/integration/synth_weakness.toml"  # book_flight>retrieve_invoice, get_stock_info>place_order


def test_gold_prefix_eval_of_a_tiny_model_lands_as_a_marked_scope(clean_db, neo4j_database, tmp_path, capsys):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    model = build_tiny_model(tmp_path / "tiny", seed=4)
    out = tmp_path / "gp.jsonl"
    assert main(["eval", "-p", f"hf:{model}", "--tasks", "bfcl:base", "-e", "gp", "-c", "step-0", "--name", "tiny",
                 "--limit", "3", "--gold-prefix", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["scope"] == "gp/tiny/step-0" and result["mode"] == "gold-prefix" and result["prefix"] == "task-turns"
    assert result["steps"] == len(rows) > 3 and result["tasks"] == 3
    assert result["mean_nll"] > 0 and result["exact_match"] is not None and result["tool_accuracy"] is not None
    assert result["step_pass_rate"] is None  # nothing was generated
    assert result["pass_rate"] == result["rewarded"] / 3  # tasks whose every step passed
    assert result["mean_nll"] == round(sum(r["nll"] for r in rows) / len(rows), 6)
    store = GraphStore(clean_db, neo4j_database)
    scope = [s for s in store.run("scopes", experiment="gp")]
    assert [(s["key"], s["mode"], s["rollouts"]) for s in scope] == [("gp/tiny/step-0", "gold-prefix", 3)]
    # every step is stored, reached, with its nll and the oracle's previous call as predecessor
    with clean_db.session(database=neo4j_database) as s:
        stored = s.run("MATCH (r:Rollout {scope: $k})-[:HAS_STEP]->(st) "
                       "RETURN count(st) AS n, count(st.nll) AS with_nll, "
                       "sum(CASE WHEN st.prev_tool IS NULL THEN 1 ELSE 0 END) AS first", k="gp/tiny/step-0").single()
    assert stored["n"] == len(rows) and stored["with_nll"] == len(rows)
    assert stored["first"] == sum(1 for r in rows if r["prev_tool"] is None)
    # a free-running evaluation cannot be mixed into a gold-prefix scope
    assert main(["eval", "-p", f"hf:{model}", "--tasks", "bfcl:base", "-e", "gp", "-c", "step-0", "--name", "tiny",
                 "--limit", "1", "--max-tokens", "4", "--step-cap", "1", "--out", str(tmp_path / "free.jsonl")]) == 1
    assert "gold-prefix" in capsys.readouterr().err


def test_generate_needs_gold_prefix_and_sim_needs_generate(clean_db, tmp_path, capsys):
    assert main(["eval", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:base", "-e", "gp", "-c", "c1",
                 "--generate", "--limit", "1", "--out", str(tmp_path / "a.jsonl")]) == 1
    assert "--gold-prefix" in capsys.readouterr().err
    assert main(["eval", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:base", "-e", "gp", "-c", "c1",
                 "--gold-prefix", "--limit", "1", "--out", str(tmp_path / "b.jsonl")]) == 1
    assert "--generate" in capsys.readouterr().err


def test_a_planted_weakness_file_is_recovered_from_a_gold_prefix_scope(clean_db, neo4j_database, tmp_path, capsys):
    assert main(["eval", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:all", "-e", "gp", "-c", "c1", "--name", "sim",
                 "--gold-prefix", "--generate", "--out", str(tmp_path / "sim.jsonl"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tasks"] == 800 and result["step_pass_rate"] < 1.0
    assert result["exact_match"] <= result["step_pass_rate"]  # an exact call passes; some passing calls differ
    assert 0.0 <= result["pass_rate"] < result["step_pass_rate"]
    store = GraphStore(clean_db, neo4j_database)
    weak = store.run("weak-compositions", scope="gp/sim/c1", level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, limit=20)
    verdicts = {(r["from"], r["to"]): r["verdict"] for r in weak}
    planted = {("book_flight", "retrieve_invoice"), ("get_stock_info", "place_order")}
    assert planted <= set(verdicts)
    assert {pair for pair, v in verdicts.items() if v == "composition"} <= planted
    assert verdicts[("book_flight", "retrieve_invoice")] == "composition"
    # place_order nearly always follows get_stock_info in BFCL (16 steps away from it in 800 tasks): the
    # estimator rightly cannot tell that composition from place_order's own weakness, and says so
    assert verdicts[("get_stock_info", "place_order")] in ("composition", "ambiguous")


def test_a_planted_tau2_weakness_is_recovered_from_a_gold_prefix_scope(clean_db, neo4j_database, tmp_path, capsys):
    """τ²: each step's prefix is the task's ideal dialogue; the simulated agent slips where planted."""
    out = tmp_path / "tau2.jsonl"
    assert main(["eval", "-p", "sim:ace_env/tau2_airline_weakness.toml", "--tasks", "tau2:airline", "-e", "gpt",
                 "-c", "c1", "--name", "sim", "--gold-prefix", "--generate", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["tasks"] == 50 and result["mode"] == "gold-prefix" and result["steps"] == len(rows)
    assert result["prefix"] == "ideal-dialogue"  # not the task's own user turns: τ² tasks have none
    assert 0.5 < result["step_pass_rate"] < 1.0 and result["mean_nll"] is None
    # the planted composition fails far more often than the same tool elsewhere; steps off every planted
    # tool and composition fail only at the 2% default rate
    at = [r for r in rows if (r["prev_tool"], r["tool"]) == ("get_user_details", "get_reservation_details")]
    elsewhere = [r for r in rows if r["tool"] == "get_reservation_details" and r["prev_tool"] != "get_user_details"]
    assert len(at) >= 5 and sum(not r["passed"] for r in at) / len(at) > 0.3
    assert sum(not r["passed"] for r in elsewhere) / max(len(elsewhere), 1) < 0.2
    store = GraphStore(clean_db, neo4j_database)
    # airline's 50 tasks hold the planted pair 11 times: below the default support of 20, so ask for 5
    weak = store.run("weak-compositions", scope="gpt/sim/c1", level="tool", min_support=5, min_lift=MIN_LIFT, limit=20)
    verdicts = {(r["from"], r["to"]): r["verdict"] for r in weak}
    assert verdicts.get(("get_user_details", "get_reservation_details")) in ("composition", "ambiguous"), verdicts
    # the curriculum reads the τ² scope as any other: after its settling round, units unlock on τ² evidence
    for extra in ([], ["--allow-repeat"]):
        assert main(["curriculum", "step", "-e", "gpt", "-s", "gpt/sim/c1", "--json", *extra]) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    unlocked = {d["unit"] for d in second["decisions"] if d["to"] == "active"}
    assert "transaction" in unlocked and any(">" in k for k in unlocked), unlocked  # τ² skills, compositions
    # a bad option for the gold-prefix path is refused in one line
    assert main(["eval", "-p", "sim:ace_env/tau2_airline_weakness.toml", "--tasks", "tau2:airline", "-e", "gpt",
                 "-c", "c2", "--gold-prefix", "--generate", "--max-turns", "9"]) == 1
    assert "free-running" in capsys.readouterr().err
