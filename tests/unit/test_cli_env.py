"""`ace env replay` and `ace verify` through main(argv)."""

from __future__ import annotations

import json

from ace.cli import main


def test_replay_json_counts_every_task(capsys):
    assert main(["env", "replay", "bfcl", "--category", "miss_func", "--json"]) == 0
    (out,) = json.loads(capsys.readouterr().out).values()  # counts per category, as τ²'s are per domain
    assert set(out) == {"tasks", "passed", "failed", "errors", "tasks_per_s"}
    assert (out["tasks"], out["passed"], out["failed"], out["errors"]) == (200, 200, 0, 0)
    assert out["tasks_per_s"] > 0


def test_replay_refuses_composite(capsys):
    assert main(["env", "replay", "bfcl", "--category", "composite"]) == 1
    assert "stale" in capsys.readouterr().err


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_verify_emits_one_verdict_per_rollout(tmp_path, capsys):
    from ace_env import bfcl
    from ace_env.verifier import ground_truth_rollout

    task = bfcl.load_tasks("base")[0]
    gt = ground_truth_rollout(task)
    wrong = [list(c) for c in gt]
    wrong[0] = []
    f = _write(
        tmp_path / "r.jsonl",
        [
            {"rollout_id": "good", "task_id": task.id, "turns": gt},
            {"rollout_id": "bad", "task_id": task.id, "turns": wrong},
        ],
    )
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json"]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [v["rollout_id"] for v in verdicts] == ["good", "bad"]
    assert [v["reward"] for v in verdicts] == [1.0, 0.0]
    assert verdicts[1]["attribution"] == "stopped_early"
    assert verdicts[1]["failing_turn"] == 0
    for key in ("partial_credit", "failing_step", "matched_steps", "oracle_steps"):
        assert key in verdicts[0]


def test_verify_names_the_bad_line(tmp_path, capsys):
    from ace_env import bfcl

    task = bfcl.load_tasks("base")[0]
    f = _write(
        tmp_path / "r.jsonl",
        [
            {"rollout_id": "a", "task_id": task.id, "turns": [[]]},
            "{not json",
            {"rollout_id": "c", "task_id": "no_such_task", "turns": []},
            {"rollout_id": "d", "task_id": task.id, "turns": "oops"},
        ],
    )
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json"]) == 1
    err = capsys.readouterr().err
    assert "line 2" in err and "not valid JSON" in err

    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json", "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(x)["rollout_id"] for x in captured.out.splitlines()] == ["a"]
    assert "line 2" in captured.err and "line 3" in captured.err and "line 4" in captured.err


def test_help_explains_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "verify" in out and "env" in out
    assert main(["verify", "--help"]) == 0
    assert "--skip-invalid" in capsys.readouterr().out
