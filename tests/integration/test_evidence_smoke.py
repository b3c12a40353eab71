"""The evidence and gold-prefix benchmarks run end to end in their --quick form (a tiny model built offline),
so they cannot rot between the long runs; the evidence state file resumes without redoing anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACE_TORCH_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True, text=True,
                          env=env, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_evidence_bench_quick_runs_and_resumes(clean_db, tmp_path):
    state = tmp_path / "state.json"
    out = _run("evidence_bench.py", "--quick", "--state", str(state), "--work", str(tmp_path / "work"))
    data = json.loads(state.read_text())
    assert data["phases"]["warm"]["done"] and data["phases"]["diagnosis"]["targets"]
    arms = {r["arm"] for r in data["records"]}
    assert {"warm", "more-real", "grpo"} <= arms
    for r in data["records"]:
        if r["arm"] in ("more-real", "ace", "random"):
            assert r["samples"] in (1, 2) and r["tokens"] > 0 and len(r["step_exact"]) == len(data["held_out_steps"])
    assert "primary exact" in out
    before = state.read_text()
    again = _run("evidence_bench.py", "--quick", "--state", str(state), "--work", str(tmp_path / "work"))
    assert "warm start epoch" not in again and json.loads(state.read_text())["records"] == json.loads(before)["records"]


def test_goldprefix_bench_quick_counts_more_observations_through_the_gold_prefix():
    out = _run("goldprefix_bench.py", "--quick")
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("free-running ", "gold-prefix ")) and line.split()[1].isdigit()}
    assert int(rows["gold-prefix"][1]) > int(rows["free-running"][1])
