"""ace loop on a tiny model: one round end to end, written back to the graph, and a
loop killed mid-training resumes without redoing its finished stages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ace.cli import main

EXPERIMENT = "test-loop"
FLAGS = ["--seeds", "4", "--eval-limit", "2", "--synth", "2", "--train-tasks", "2", "--prompts-per-step", "1",
         "--generations", "2", "--max-tokens", "8", "--step-cap", "1", "--synth-rollouts", "1"]


def _scope_counts(driver, database):
    with driver.session(database=database) as s:
        return [dict(r) for r in s.run(
            "MATCH (sc:Scope {experiment: $e}) OPTIONAL MATCH (r:Rollout {scope: sc.key}) "
            "RETURN sc.key AS key, sc.rollouts AS rollouts, count(r) AS stored ORDER BY key", e=EXPERIMENT)]


def test_a_killed_loop_resumes_at_its_first_unfinished_stage(clean_db, neo4j_database, tiny_model, run_dir):
    cmd = [sys.executable, "-m", "ace.cli", "loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", "--grpo-steps", "40", *FLAGS]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"},
                            start_new_session=True)
    marker = run_dir / "round-0" / "curriculum.json"
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the loop never reached training"
        time.sleep(0.5)
    time.sleep(3)  # well inside 40 GRPO steps
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "round-0" / "train.json").exists()
    finished = {s: (run_dir / "round-0" / f"{s}.json").stat().st_mtime_ns for s in ("eval", "frontier", "synth", "curriculum")}
    before = _scope_counts(clean_db, neo4j_database)
    assert before and before[0]["rollouts"] == 2 * 1 and before[0]["stored"] == 2

    # resume with fewer GRPO steps (allowed: the round has not trained) so it completes quickly
    assert main(["loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", "--grpo-steps", "1", *FLAGS]) == 0
    for stage, mtime in finished.items():
        assert (run_dir / "round-0" / f"{stage}.json").stat().st_mtime_ns == mtime, f"{stage} ran again"
    after = _scope_counts(clean_db, neo4j_database)
    assert [r for r in after if r["key"] == before[0]["key"]] == before  # round 0's counts unchanged
    assert len(after) == 2  # and the trained checkpoint was evaluated into its own scope
    train = json.loads((run_dir / "round-0" / "train.json").read_text())
    assert Path(train["model"], "config.json").is_file() and train["grpo_steps"] == 1


def test_loop_status_shows_rounds_and_per_skill_history(clean_db, tiny_model, run_dir, capsys):
    assert main(["loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", "--grpo-steps", "1", "--rounds", "2", *FLAGS]) == 0
    capsys.readouterr()
    assert main(["loop", "status", "-e", EXPERIMENT, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [r["round"] for r in status["rounds"]] == [0, 1, 2]
    assert all(all(r["stages"].values()) for r in status["rounds"][:2])
    assert [s for s, done in status["rounds"][2]["stages"].items() if done] == ["eval", "frontier"]  # the final checkpoint
    scopes = {r["scope"] for r in status["rounds"]}
    assert len(scopes) == 3  # each checkpoint its own scope
    rounds_in_graph = {row["round"] for row in status["skill_history"]}
    assert rounds_in_graph == {0, 1, 2}
    # round 1 evaluated the model round 0 trained, through the gold prefix (the default)
    ev1 = json.loads((run_dir / "round-1" / "eval.json").read_text())
    assert ev1["policy"] == f"hf:{run_dir / 'round-0' / 'model'}" and ev1["mode"] == "gold-prefix"
    steps = (run_dir / "round-1" / "eval-steps.jsonl").read_text().splitlines()
    assert len(steps) == ev1["steps"] > 2 and all(r["exact_match"] is not None for r in status["rounds"])


def test_resuming_with_other_settings_is_refused(clean_db, tiny_model, run_dir, capsys):
    (run_dir).mkdir(parents=True)
    (run_dir / "loop.json").write_text(json.dumps({"policy": "hf:other", "config": {}}))
    assert main(["loop", "-e", EXPERIMENT, "-p", f"hf:{tiny_model}", *FLAGS]) == 1
    assert "other settings" in capsys.readouterr().err
