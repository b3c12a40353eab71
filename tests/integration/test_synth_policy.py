"""`ace synth` rolls its tasks out with the experiment's policy: --policy hf:<model>, or the scope's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.sim import load_weakness, simulate
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore

WEAKNESS = (Path(__file__).parent / "synth_weakness.toml").read_text()  # shared by the synthesis tests


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    import torch

    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def _graph(clean_db, neo4j_database, tmp_path):
    """Two scopes: one of the simulated agent (with a frontier), one of a policy known only by its name."""
    weakness = tmp_path / "w.toml"
    weakness.write_text(WEAKNESS)
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    rows = list(simulate(list(tasks.values()), 1500, load_weakness(weakness), 7))
    rollouts, few = tmp_path / "r.jsonl", tmp_path / "few.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    few.write_text("".join(json.dumps(r) + "\n" for r in rows[:20]))
    store = GraphStore(clean_db, neo4j_database)
    ingest_file(store, rollouts, tasks, "syn", "sim", "round-0")
    ingest_file(store, few, tasks, "syn", "mystery", "round-0", estimate=False)
    return weakness


def _synth(tmp_path, name, *extra):
    out = tmp_path / f"{name}.jsonl"
    args = ["synth", "--experiment", "syn", "--n", "4", "--seed", "1", "--plans", "2", "--rounds", "1",
            "--rollouts-per-task", "2", "--tasks", "bfcl:base", "--out", str(out), *extra]
    return main(args), out


def test_synth_uses_the_given_policy_or_the_scopes_own(clean_db, neo4j_database, tiny_model, tmp_path, capsys):
    weakness = _graph(clean_db, neo4j_database, tmp_path)

    # --policy hf:<model>: a real model rolls the tasks out (through the engine), and is reported and recorded.
    spec = f"hf:{tiny_model}"
    code, out = _synth(tmp_path, "hf", "--scope", "syn/sim/round-0", "--policy", spec, "--max-tokens", "8",
                       "--step-cap", "1", "--json")
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["policy"] == spec and summary["policy_source"] == "--policy"
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(tasks) == 4 and {t["provenance"]["policy"] for t in tasks} == {spec}
    # A random tiny model writes no correct calls: it never passes (the simulated agent passes most tasks).
    assert all(t["provenance"]["pass_rate"] == 0.0 for t in tasks)
    plans = clean_db.execute_query("MATCH (p:Plan {experiment: 'syn'}) RETURN p.history AS h",
                                   database_=neo4j_database).records
    # every rollout a plan records is the given policy's (a plan whose tasks all failed their checks has none)
    rolled = [x for r in plans for x in (r["h"] or []) if x.startswith("rollouts by")]
    assert rolled and all(x == f"rollouts by {spec}" for x in rolled), [r["h"] for r in plans]

    # No --policy on a `sim` scope: the simulated agent, as before, and it says so.
    code, out = _synth(tmp_path, "sim", "--scope", "syn/sim/round-0", "--weakness", str(weakness))
    assert code == 0
    assert f"Rollouts by sim:{weakness} (the scope's policy)" in capsys.readouterr().out
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert {t["provenance"]["policy"] for t in tasks} == {f"sim:{weakness}"}
    assert any(t["provenance"]["pass_rate"] > 0 for t in tasks)  # the simulated agent passes some

    # A scope whose policy cannot be run from its name asks for --policy, before any synthesis.
    code, out = _synth(tmp_path, "mystery", "--scope", "syn/mystery/round-0")
    err = capsys.readouterr().err
    assert code == 1 and "'mystery' cannot be run from its name" in err and "--policy" in err
    assert not out.exists()
    # --weakness belongs to the simulated agent only.
    code, _ = _synth(tmp_path, "bad", "--scope", "syn/sim/round-0", "--policy", "hf:smollm2-135m",
                     "--weakness", str(weakness))
    assert code == 1 and "--weakness is for the simulated agent" in capsys.readouterr().err
    # --ray spreads the simulated agent's rollouts only: a model policy is refused, nothing is written.
    code, out = _synth(tmp_path, "ray", "--scope", "syn/sim/round-0", "--policy", spec, "--ray", "local")
    assert code == 1 and "--ray spreads the simulated agent's rollouts" in capsys.readouterr().err
    assert not out.exists()
