"""`ace diagnose` on a τ² scope: the simulated agent's weakness file is read by τ²'s environment, and an edge
short of support is reported with the reason nothing was probed (no τ² probe tasks yet), never probed with
BFCL's probe builders."""

from __future__ import annotations

import json
from pathlib import Path

from ace.cli import main

WEAKNESS = Path(__file__).resolve().parents[2] / "ace_env" / "tau2_airline_weakness.toml"
SCOPE = "tau2-diag/sim/round-0"


def test_diagnose_a_tau2_scope(clean_db, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", "tau2:airline", "--weakness", str(WEAKNESS), "--n", "80",
                 "--seed", "0", "--out", str(out)]) == 0
    # the simulated agent's slips are ACE's step errors (some on reads τ²'s end state never sees): --strict
    assert main(["ingest", str(out), "--scope", SCOPE, "--tasks", "tau2:airline", "--show", "none", "--strict"]) == 0
    capsys.readouterr()
    argv = ["diagnose", "--scope", SCOPE, "--tasks", "tau2:airline", "--probe-budget", "10", "--json"]
    assert main([*argv, "--policy", f"sim:{WEAKNESS}"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["edges"], "80 rollouts leave an edge short of support"
    assert report["probe_rollouts"] == 0 and report["probe_scope"] is None
    assert "no probe tasks for τ²-bench" in report["note"]
    assert report["verdicts_after"] == report["verdicts_before"]
    assert all(e["before"] == e["after"] for e in report["edges"])

    assert main(argv) == 1  # plain `sim` names BFCL's demo weaknesses: τ² needs its own file
    assert "no default weakness file" in capsys.readouterr().err
