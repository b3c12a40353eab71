"""ace loop on a τ² scope: one tiny round (a tiny model) through the same stages as on BFCL: gold-prefix eval
written back, frontier, synthesis by the one pipeline on τ²'s schedule, curriculum mix, GRPO on the mix's
gold-prefix steps (a τ² rollout is a dialogue with a simulated user), then the trained checkpoint evaluated."""

from __future__ import annotations

import json
from pathlib import Path

from ace import loop as loop_module
from ace.cli import main

EXPERIMENT = "test-loop-tau2"
FLAGS = ["--tasks", "tau2:airline", "--seeds", "4", "--eval-limit", "2", "--synth", "2", "--train-tasks", "2",
         "--prompts-per-step", "1", "--generations", "2", "--max-tokens", "8", "--step-cap", "1",
         "--synth-rollouts", "1", "--grpo-steps", "1"]
#: A tiny model's frontier is empty (it fails every step alike); the loop is given two compositions its first
#: four airline seeds hold, so its synthesis stage runs.
EDGES = [{"from": "get_user_details", "to": "get_reservation_details"},
         {"from": "get_reservation_details", "to": "get_user_details"}]


def test_one_tiny_round_of_the_loop_on_tau2(clean_db, neo4j_database, tiny_model, run_dir, monkeypatch, capsys):
    monkeypatch.setattr(loop_module, "frontier", lambda store, scope, cfg, check=False: [dict(e) for e in EDGES])
    assert main(["loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", *FLAGS, "--json"]) == 0
    summaries = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # the trainer logs to stdout first
    assert [s["round"] for s in summaries] == [0, 1] and all(summaries[0]["stages"].values())
    assert summaries[0]["scope"] != summaries[1]["scope"]  # each checkpoint its own scope
    ev = json.loads((run_dir / "round-0" / "eval.json").read_text())
    assert ev["mode"] == "gold-prefix" and ev["steps"] > 2  # τ²'s gold agent actions scored step by step

    synth = json.loads((run_dir / "round-0" / "synth.json").read_text())
    assert synth["tasks"] >= 1 and synth["policy"] is None  # τ² synthesis: no model rolls its dialogues out
    rows = [json.loads(line) for line in Path(synth["file"]).read_text().splitlines()]
    assert all(r["origin"]["target"] in {f"{e['from']}>{e['to']}" for e in EDGES} for r in rows)

    curriculum = json.loads((run_dir / "round-0" / "curriculum.json").read_text())
    assert curriculum["tasks"] == 2 and all(i.startswith("tau2:airline:") for i in curriculum["ids"])
    train = json.loads((run_dir / "round-0" / "train.json").read_text())
    assert Path(train["model"], "config.json").is_file() and train["grpo_steps"] == 1
    ev1 = json.loads((run_dir / "round-1" / "eval.json").read_text())
    assert ev1["policy"] == f"hf:{run_dir / 'round-0' / 'model'}" and ev1["mode"] == "gold-prefix"

    # the stored synthesized τ² tasks: Task nodes linked to their plans, as BFCL's are
    rows = clean_db.execute_query("MATCH (:Plan)-[:PRODUCED]->(t:Task) RETURN count(t) AS n",
                                  database_=neo4j_database).records
    assert rows[0]["n"] == synth["tasks"]


def test_free_running_evaluation_of_dialogues_is_refused(clean_db, tiny_model, run_dir, capsys):
    assert main(["loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", *FLAGS, "--no-gold-prefix"]) == 1
    assert "through the gold prefix only" in capsys.readouterr().err
