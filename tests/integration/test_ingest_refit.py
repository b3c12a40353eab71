"""An ingest stopped after its last batch but before the estimator's refit is completed by a rerun:
the rerun stores nothing new, yet refits, so the scope reads exactly as after a clean ingest."""

from __future__ import annotations

import pytest
from simgraph import base_tasks, simulated_file

import ace_graph.ingest as ingest
from ace_env.sim import load_weakness
from ace_graph.errors import IngestIncomplete
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphStore

WEAKNESS = "tests/integration/synth_weakness.toml"


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    tasks = base_tasks()
    path = tmp_path_factory.mktemp("refit") / "r.jsonl"
    simulated_file(path, tasks, 1500, load_weakness(WEAKNESS), 3)
    return tasks, path


def _weak(store: GraphStore, scope: str) -> list[tuple]:
    rows = store.run("weak-compositions", scope=scope, level="tool", min_support=MIN_SUPPORT, min_lift=MIN_LIFT, limit=50)
    return sorted((r["from"], r["to"], r["verdict"], r["method"]) for r in rows)


def test_a_rerun_after_a_stop_before_the_refit_refits(clean_db, neo4j_database, rollouts, monkeypatch):
    tasks, path = rollouts
    store = GraphStore(clean_db, neo4j_database)
    ingest.ingest_file(store, path, tasks, "refit", "clean", "c0")
    clean = _weak(store, "refit/clean/c0")
    assert clean and {m for *_, m in clean} == {"estimate"}

    real = ingest.estimate_scope

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the refit")

    monkeypatch.setattr(ingest, "estimate_scope", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest.ingest_file(store, path, tasks, "refit", "stopped", "c0")
    monkeypatch.setattr(ingest, "estimate_scope", real)
    [row] = [r for r in store.run("scopes", experiment="refit") if r["key"] == "refit/stopped/c0"]
    assert row["incomplete"] and row["rollouts"] == 1500  # every rollout stored, no estimate yet

    report = ingest.ingest_file(store, path, tasks, "refit", "stopped", "c0")
    assert report.created == 0 and report.skipped_existing == 1500
    assert _weak(store, "refit/stopped/c0") == [(a, b, v, m) for a, b, v, m in clean]
    [row] = [r for r in store.run("scopes", experiment="refit") if r["key"] == "refit/stopped/c0"]
    assert not row["incomplete"]


def test_a_complete_scope_is_not_refitted_again(clean_db, neo4j_database, rollouts, monkeypatch):
    tasks, path = rollouts
    store = GraphStore(clean_db, neo4j_database)
    ingest.ingest_file(store, path, tasks, "refit", "once", "c0")
    calls = []
    monkeypatch.setattr(ingest, "estimate_scope", lambda *a, **k: calls.append(a))
    report = ingest.ingest_file(store, path, tasks, "refit", "once", "c0")
    assert report.created == 0 and calls == []
    with pytest.raises(IngestIncomplete):  # and a stop while writing still says how to finish
        monkeypatch.setattr(store, "ingest_batch", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("down")))
        ingest.ingest_file(store, path, tasks, "refit", "other", "c0")
