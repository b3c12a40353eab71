"""ace train grpo from the command line: metrics per step, a checkpoint that loads,
evaluations written back as their own scopes, and the distributed path (2 processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ace.cli import main
from train.tiny import build_tiny_model

BASE = ["--tasks", "bfcl:base", "--limit", "3", "--prompts-per-step", "1", "--generations", "2",
        "--max-tokens", "8", "--step-cap", "1"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("grpo") / "tiny")


def test_grpo_evaluates_every_n_steps_into_its_own_scopes(clean_db, neo4j_database, tiny, tmp_path, capsys):
    out = tmp_path / "ckpt"
    code = main(["train", "grpo", "-p", f"hf:{tiny}", *BASE, "--steps", "2", "--eval-every", "1", "--eval-limit", "2",
                 "-e", "grpo-test", "--name", "tiny", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert all(x["groups_sampled"] >= 1 and "loss" in x for x in lines)
    evals = json.loads((out / "evaluations.json").read_text())
    assert [e["scope"] for e in evals] == ["grpo-test/tiny/step-1", "grpo-test/tiny/step-2"]
    with clean_db.session(database=neo4j_database) as s:
        rows = s.run("MATCH (sc:Scope {experiment: 'grpo-test'}) RETURN sc.checkpoint AS c, sc.rollouts AS n "
                     "ORDER BY c").data()
    assert rows == [{"c": "step-1", "n": 2}, {"c": "step-2", "n": 2}]
    assert (out / "config.json").is_file()


def test_grpo_refuses_bad_input_in_one_line(tiny, tmp_path, capsys):
    assert main(["train", "grpo", "-p", "openai:x@http://127.0.0.1:1", *BASE, "--out", str(tmp_path / "a")]) == 1
    assert "local model" in capsys.readouterr().err
    assert main(["train", "grpo", "-p", f"hf:{tiny}", *BASE[:-6], "--generations", "1", "--out", str(tmp_path / "b")]) == 1
    assert "at least 2" in capsys.readouterr().err
    # No GPU on these machines: --vllm says so in one line, before any model is loaded or --out is made.
    assert main(["train", "grpo", "-p", f"hf:{tiny}", *BASE, "--vllm", "colocate", "--out", str(tmp_path / "c")]) == 1
    assert "needs a CUDA GPU" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_accelerate_launch_runs_two_processes(tiny, tmp_path):
    accelerate = shutil.which("accelerate", path=os.path.dirname(sys.executable))
    assert accelerate, "accelerate is part of the train extra"
    out = tmp_path / "dist"
    proc = subprocess.run(
        [accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
         "--dynamo_backend", "no", "-m", "ace.cli", "train", "grpo", "-p", f"hf:{tiny}", *BASE, "--steps", "2",
         "--out", str(out)],
        capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines][-2:] == [1, 2]
    assert json.loads((out / "ace_grpo.json").read_text())["processes"] == 2
