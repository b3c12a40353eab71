"""Issue 35, defect 7: an ingest killed after its last batch, with its estimate half-fitted, leaves a scope
that every reader refuses in one line naming the fix (rerun the ingest), as a scope being deleted is; the
rerun makes it read exactly as a clean ingest of the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from simgraph import base_tasks, simulated_file
from streamlit.testing.v1 import AppTest

import ace_graph.ingest as ingest
from ace.cli import main
from ace_env.sim import load_weakness
from ace_graph.errors import ScopeError
from ace_graph.reports import GraphReports
from ace_graph.store import GraphStore

APP = Path(__file__).resolve().parents[2] / "app"
WEAKNESS = "tests/integration/synth_weakness.toml"
CLEAN, KILLED = "half/sim/clean", "half/sim/killed"


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    path = tmp_path_factory.mktemp("half") / "r.jsonl"
    simulated_file(path, base_tasks(), 400, load_weakness(WEAKNESS), 5)
    return path


def _weak(scope: str, capsys) -> list[tuple]:
    capsys.readouterr()
    assert main(["query", "weak-compositions", "--scope", scope, "-P", "level=tool", "-P", "min_support=1",
                 "-P", "limit=100", "--json"]) == 0
    return sorted((r["from"], r["to"], r["verdict"], r["method"]) for r in json.loads(capsys.readouterr().out))


def _refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 1, argv
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, (argv, err)
    assert f"scope {KILLED!r} is incomplete" in err and "rerun the ingest" in err, (argv, err)
    assert f"ace ingest FILE... --scope {KILLED}" in err, (argv, err)
    return err


def _page(name: str, **params: str) -> AppTest:
    st.cache_data.clear()
    at = AppTest.from_file(str(APP / name), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_every_reader_refuses_a_half_fitted_scope_until_the_ingest_is_rerun(clean_db, neo4j_database, rollouts,
                                                                            tmp_path, monkeypatch, capsys):
    ingest_argv = ["ingest", str(rollouts), "--tasks", "bfcl:base", "--show", "none", "--json"]
    assert main(ingest_argv + ["--scope", CLEAN]) == 0
    clean = _weak(CLEAN, capsys)
    assert clean

    # kill -9 inside the estimate: every rollout written, the tool level refitted, the skill level not
    real = ingest.estimate_scope

    def killed(store, key, level, *args, **kwargs):
        if level == "skill":
            raise KeyboardInterrupt("kill -9 inside the estimate")
        return real(store, key, level, *args, **kwargs)

    monkeypatch.setattr(ingest, "estimate_scope", killed)
    assert main(ingest_argv + ["--scope", KILLED]) == 130  # interrupted
    monkeypatch.setattr(ingest, "estimate_scope", real)
    store = GraphStore(clean_db, neo4j_database)
    [row] = [r for r in store.run("scopes", experiment="half") if r["key"] == KILLED]
    assert row["incomplete"] and row["rollouts"] == 400

    out = tmp_path / "synth.jsonl"
    for argv in (["query", "weak-compositions", "--scope", KILLED],
                 ["query", "frontier", "-P", f"scope={KILLED}", "-P", "level=skill"],
                 ["query", "capability-profile", "--scope", KILLED],
                 ["query", "compare-policies", "-P", f"scopes={CLEAN},{KILLED}"],
                 ["synth", "-e", "half", "--scope", KILLED, "--out", str(out)],
                 ["diagnose", "--scope", KILLED, "--tasks", "bfcl:base", "--probe-budget", "10"],
                 ["curriculum", "step", "-e", "half", "--scope", KILLED]):
        _refused(argv, capsys)
    assert not out.exists()
    assert not store.run("scopes", experiment="half~probe")  # diagnose probed nothing

    # history across checkpoints leaves it out; `ace scopes` names it with the fix
    capsys.readouterr()
    assert main(["query", "capability-history", "-P", "experiment=half", "-P", "policy=sim", "--json"]) == 0
    assert {r["checkpoint"] for r in json.loads(capsys.readouterr().out)} == {"clean"}
    assert main(["scopes", "-e", "half"]) == 0
    assert f"{KILLED} (incomplete: rerun the ingest)" in " ".join(capsys.readouterr().out.split())

    # the dashboard lists only the clean scope, and says how to fix the other
    reports = GraphReports(clean_db, neo4j_database)
    assert [r["key"] for r in reports.scopes()] == [CLEAN] and reports.incomplete_scopes() == [KILLED]
    with pytest.raises(ScopeError, match="rerun the ingest"):
        reports.compare([CLEAN, KILLED], "tool")
    at = _page("pages/3_Weak_compositions.py")
    assert any(f"scope {KILLED!r} is incomplete" in w.value and "rerun the ingest" in w.value
               for w in at.sidebar.warning), [w.value for w in at.warning]
    assert at.query_params["scope"] == CLEAN
    # the query console takes a typed scope: checked as `ace query` checks it
    at = _page("pages/7_Query_console.py", q="weak-compositions", p_scope=KILLED)
    assert any(f"scope {KILLED!r} is incomplete" in e.value and "rerun the ingest" in e.value for e in at.error)
    assert not at.dataframe

    # the rerun refits and completes: it reads as the clean ingest
    capsys.readouterr()
    assert main(ingest_argv + ["--scope", KILLED]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 0
    assert _weak(KILLED, capsys) == clean
    assert main(["query", "frontier", "-P", f"scope={KILLED}", "-P", "level=skill", "--json"]) == 0
    assert [r["key"] for r in reports.scopes()] and reports.incomplete_scopes() == []


def test_a_graph_holding_only_an_incomplete_scope_says_what_to_rerun(clean_db, neo4j_database, rollouts,
                                                                    monkeypatch):
    monkeypatch.setattr(ingest, "estimate_scope", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(["ingest", str(rollouts), "--tasks", "bfcl:base", "--scope", KILLED, "--show", "none"]) == 130
    at = _page("Overview.py")
    assert [e.value for e in at.error] and all(f"scope {KILLED!r} is incomplete" in e.value for e in at.error)
    assert not at.info  # not "the graph holds no rollouts yet"
    assert main(["scope", "delete", KILLED, "--yes"]) == 0  # an incomplete scope can be deleted
    assert not GraphStore(clean_db, neo4j_database).run("scopes", experiment="half")
