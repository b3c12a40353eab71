"""Ingestion into the real Neo4j: idempotence, concurrency, atomic batches, correct counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bfcltasks import tasks_fixture
from simgraph import simulated_file

from ace_env.formats import read_any
from ace_env.sim import parse_weakness
from ace_graph import estimate as est
from ace_graph.ingest import ingest_file, prepare
from ace_graph.outcomes import aggregate
from ace_graph.store import GraphStore

WEAKNESS = {
    "defaults": {"error": 0.03},
    "tool": [{"name": "grep", "error": 0.4, "kind": "argument"}],
    "composition": [
        {"from": "get_zipcode_based_on_city", "to": "estimate_distance", "error": 0.7, "kind": "argument"},
        {"from": "cd", "to": "mv", "error": 0.5, "kind": "wrong_tool"},
    ],
}


tasks = tasks_fixture("base")


def _write_rollouts(path: Path, tasks, n: int, seed: int) -> Path:
    simulated_file(path, tasks, n, parse_weakness(WEAKNESS), seed)
    return path


def _tuples(driver, database, query, **params):
    """The query's rows, each as a tuple of its values."""
    rows, _, _ = driver.execute_query(query, params, database_=database)
    return [tuple(r.values()) for r in rows]


def _measured(driver, database, scope):
    return _tuples(driver, database,
                   "MATCH (:Scope {key: $scope})-[m:MEASURED]->(k) "
                   "RETURN m.level AS level, coalesce(k.id, k.name) AS key, m.attempts AS a, m.failures AS f, "
                   "m.as_pred AS p, m.as_succ AS s ORDER BY level, key", scope=scope)


def _composes(driver, database, scope):
    return _tuples(driver, database,
                   "MATCH (a)-[c:COMPOSES {scope: $scope}]->(b) "
                   "RETURN coalesce(a.id, a.name) AS a, coalesce(b.id, b.name) AS b, labels(a)[0] AS l, c.n AS n, "
                   "c.failures AS f, c.cooc AS cooc ORDER BY l, a, b", scope=scope)


def _count(driver, database, query, **params):
    rows, _, _ = driver.execute_query(query, params, database_=database)
    return rows[0][0]


def test_ingest_counts_equal_a_python_recount(clean_db, neo4j_database, tasks, tmp_path):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 300, seed=1)
    store = GraphStore(clean_db, neo4j_database)
    report = ingest_file(store, path, tasks, "exp", "sim", "ckpt-0", batch_size=64, workers=3)
    assert (report.read, report.created) == (300, 300)

    from ace_env.formats import read_any

    records = list(prepare(tasks, read_any(path), "exp/sim/ckpt-0", 0.7, False, [], str(path)))
    agg = aggregate(records)
    expected_nodes = sorted(
        (level, k, s.attempts, s.failures, s.as_pred, s.as_succ)
        for level in ("skill", "tool")
        for k, s in agg.nodes[level].items()
    )
    assert _measured(clean_db, neo4j_database, "exp/sim/ckpt-0") == expected_nodes
    expected_edges = sorted(
        (a, b, "Skill" if level == "skill" else "Tool", e.n, e.failures, e.cooc)
        for level in ("skill", "tool")
        for (a, b), e in agg.edges[level].items()
    )
    got = _composes(clean_db, neo4j_database, "exp/sim/ckpt-0")
    assert sorted(got, key=lambda r: (r[2], r[0], r[1])) == sorted(expected_edges, key=lambda r: (r[2], r[0], r[1]))
    assert _count(clean_db, neo4j_database, "MATCH (r:Rollout) RETURN count(r)") == 300
    assert _count(clean_db, neo4j_database, "MATCH (s:Step) RETURN count(s)") == agg.steps
    scope = clean_db.execute_query("MATCH (s:Scope) RETURN s", database_=neo4j_database).records[0]["s"]
    assert (scope["rollouts"], scope["rewarded"], scope["steps"]) == (300, agg.rewarded, agg.steps)
    # Every failed rollout's stored failing step is the verifier's.
    bad = _count(
        clean_db, neo4j_database,
        "MATCH (r:Rollout {reward: 0.0}) WHERE NOT EXISTS { (r)-[:HAS_STEP]->(:Step {outcome: 'fail'}) } "
        "RETURN count(r)",
    )
    assert bad == 0


def _estimates(driver, database, scope):
    rows, _, _ = driver.execute_query(
        "MATCH (a)-[c:COMPOSES {scope: $scope}]->(b) WHERE c.verdict IS NOT NULL "
        "RETURN coalesce(a.id, a.name) AS a, coalesce(b.id, b.name) AS b, labels(a)[0] AS l, c.verdict AS v, "
        "c.est_effect AS e, c.est_effect_low AS lo, c.est_tool_effect AS te, c.est_missing AS m ORDER BY l, a, b",
        scope=scope, database_=database,
    )
    return [tuple(r.values()) for r in rows]


def test_refit_from_kept_cells_equals_refit_from_stored_steps(clean_db, neo4j_database, tasks, tmp_path, monkeypatch):
    """`ace ingest` refits on the observations it has just written instead of reading them back:
    same cells as the stored steps give, same estimates; a scope holding more than this ingest's
    rollouts is read from the graph."""
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 250, seed=5)
    store = GraphStore(clean_db, neo4j_database)
    reads: list[str] = []
    real_run = store.run

    def counting_run(name, **params):
        reads.append(name)
        return real_run(name, **params)

    monkeypatch.setattr(store, "run", counting_run)
    report = ingest_file(store, path, tasks, "exp", "sim", "kept", batch_size=64)
    assert report.created == 250 and "estimate-cells" not in reads
    kept = _estimates(clean_db, neo4j_database, "exp/sim/kept")
    assert kept, "the refit stored no estimates"
    records = list(prepare(tasks, read_any(path), "exp/sim/kept", 0.7, False, [], str(path)))
    for level in ("tool", "skill"):
        stored = est.merge_cells(
            est.Cell(r["unit"], tuple(r["prevs"]), r["task"], int(r["n"]), int(r["failures"]))
            for r in real_run("estimate-cells", scopes=["exp/sim/kept"], level=level))
        assert est.cells_from_records(records, level) == stored
        est.estimate_scope(store, "exp/sim/kept", level)  # the refit that reads the stored steps
    assert _estimates(clean_db, neo4j_database, "exp/sim/kept") == kept
    # A second file into the same scope: the kept cells are not the whole scope, so the steps are read.
    reads.clear()
    more = _write_rollouts(tmp_path / "more.jsonl", tasks, 40, seed=6)
    ingest_file(store, more, tasks, "exp", "sim", "kept", batch_size=64, id_suffix="-more", seed_tasks=False)
    assert reads.count("estimate-cells") == 2


def test_ingest_is_idempotent(clean_db, neo4j_database, tasks, tmp_path):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 120, seed=2)
    store = GraphStore(clean_db, neo4j_database)
    ingest_file(store, path, tasks, "exp", "sim", "c1", batch_size=50)
    before = (_measured(clean_db, neo4j_database, "exp/sim/c1"), _composes(clean_db, neo4j_database, "exp/sim/c1"))
    again = ingest_file(store, path, tasks, "exp", "sim", "c1", batch_size=37)
    assert (again.read, again.created, again.skipped_existing) == (120, 0, 120)
    after = (_measured(clean_db, neo4j_database, "exp/sim/c1"), _composes(clean_db, neo4j_database, "exp/sim/c1"))
    assert before == after
    assert _count(clean_db, neo4j_database, "MATCH (r:Rollout) RETURN count(r)") == 120


def test_two_processes_at_once_lose_no_counts(clean_db, neo4j_database, tasks, tmp_path):
    """Two `ace ingest` processes on overlapping files into one scope == one ingest of the union."""
    full = _write_rollouts(tmp_path / "all.jsonl", tasks, 400, seed=3)
    lines = full.read_text().splitlines(keepends=True)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(lines[:250]))
    b.write_text("".join(lines[150:]))  # 100 rollouts in both files
    ace = Path(sys.executable).parent / "ace"
    env = dict(os.environ)
    cmd = lambda f: [str(ace), "ingest", str(f), "-e", "race", "-p", "sim", "-c", "c0", "--tasks", "bfcl:base",
                     "--batch-size", "20", "--json"]
    procs = [subprocess.Popen(cmd(f), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in (a, b)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    created = sum(json.loads(out.strip().splitlines()[-1])["created"] for out, _ in outs)
    assert created == 400

    store = GraphStore(clean_db, neo4j_database)
    ingest_file(store, full, tasks, "race", "sim", "serial", batch_size=400)
    assert _measured(clean_db, neo4j_database, "race/sim/c0") == _measured(clean_db, neo4j_database, "race/sim/serial")
    strip = lambda rows: rows
    assert strip(_composes(clean_db, neo4j_database, "race/sim/c0")) == strip(_composes(clean_db, neo4j_database, "race/sim/serial"))
    n = _count(clean_db, neo4j_database, "MATCH (r:Rollout {scope: 'race/sim/c0'}) RETURN count(r)")
    assert n == 400


def test_failed_batch_leaves_nothing_and_can_be_retried(clean_db, neo4j_database, tasks, tmp_path, monkeypatch):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 90, seed=4)
    store = GraphStore(clean_db, neo4j_database)
    import ace_graph.store as store_mod

    real = store_mod.aggregate
    calls = {"n": 0}

    def flaky(records):
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch dies after its rollouts were written in the transaction
            raise RuntimeError("simulated crash mid-batch")
        return real(records)

    monkeypatch.setattr(store_mod, "aggregate", flaky)
    from ace_graph.errors import IngestIncomplete

    with pytest.raises(IngestIncomplete, match="simulated crash mid-batch.*30 rollout.*exp/sim/crash.*incomplete"):
        ingest_file(store, path, tasks, "exp", "sim", "crash", batch_size=30, workers=1)
    # Batch 1 committed whole; batch 2 left nothing behind (no rollouts, no steps, no counts).
    assert _count(clean_db, neo4j_database, "MATCH (r:Rollout) RETURN count(r)") == 30
    stored_steps = _count(clean_db, neo4j_database, "MATCH (s:Step) RETURN count(s)")
    scope_steps = _count(clean_db, neo4j_database, "MATCH (s:Scope) RETURN s.steps")
    assert stored_steps == scope_steps

    monkeypatch.setattr(store_mod, "aggregate", real)
    retry = ingest_file(store, path, tasks, "exp", "sim", "crash", batch_size=30)
    assert (retry.created, retry.skipped_existing) == (60, 30)
    ingest_file(store, path, tasks, "exp", "sim", "clean", batch_size=90)
    assert _measured(clean_db, neo4j_database, "exp/sim/crash") == _measured(clean_db, neo4j_database, "exp/sim/clean")


def test_cli_ingest_reports_bad_lines(clean_db, neo4j_database, tasks, tmp_path, capsys):
    from ace.cli import main

    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 10, seed=5)
    lines = path.read_text().splitlines()
    lines.insert(4, "{broken")
    lines.insert(7, json.dumps({"rollout_id": "x", "task_id": "nope", "turns": []}))
    path.write_text("\n".join(lines) + "\n")
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c", "--tasks", "bfcl:base", "--json"]) == 1
    assert "line 5" in capsys.readouterr().err
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c", "--tasks", "bfcl:base", "--json",
                 "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out.strip().splitlines()[-1])
    assert (report["read"], report["invalid"]) == (10, 2)
    assert "line 5" in captured.err and "line 8" in captured.err


def test_ingest_error_names_file_and_line_once(clean_db, neo4j_database, tasks, tmp_path, capsys):
    from ace.cli import main

    path = _write_rollouts(tmp_path / "f.jsonl", tasks, 4, seed=5)
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps({"rollout_id": "x", "task_id": "nope", "turns": []}))
    path.write_text("\n".join(lines) + "\n")
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c", "--tasks", "bfcl:base"]) == 1
    err = " ".join(capsys.readouterr().err.split())  # unwrap the console's line breaks
    assert f"{path}: line 3: unknown task_id 'nope'" in err
    assert err.count("line 3") == 1 and err.count(str(path)) == 1
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c", "--tasks", "bfcl:base", "--skip-invalid"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}: line 3: unknown task_id 'nope'" in err and err.count("line 3") == 1


def test_second_ingest_rebuilds_no_oracle_and_no_tags(clean_db, neo4j_database, tasks, tmp_path, capsys):
    from ace.cli import main
    from ace_env.oracle import ORACLES
    from ace_graph.tagger import TAGS

    def on_disk():  # every entry of both disk caches, with its modification time
        return {(p, p.stat().st_mtime_ns) for c in (ORACLES, TAGS) if c.folder().exists()
                for p in c.folder().rglob("*.pickle")}

    path = _write_rollouts(tmp_path / "r20.jsonl", tasks, 20, seed=11)
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c1", "--tasks", "bfcl:base"]) == 0
    first = on_disk()
    assert {p.parent.parent.parent.name for p, _ in first} == {"oracle", "tags"}
    ORACLES.clear()  # as a new process: nothing in memory, only what the first ingest left on disk
    TAGS.clear()
    built, tag_hits = (ORACLES.builds, TAGS.builds), TAGS.disk_hits
    assert main(["ingest", str(path), "-e", "e", "-p", "p", "-c", "c2", "--tasks", "bfcl:base", "--json"]) == 0
    assert (ORACLES.builds, TAGS.builds) == built  # nothing built here (tags and their oracles)
    assert TAGS.disk_hits > tag_hits
    # nor in the verifying worker (its counters are its own): every build is stored, and nothing was
    assert on_disk() == first
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (report["read"], report["created"]) == (20, 20)
