"""Issue 13 against a real Neo4j: task namespaces, honest partial states, kill -9 of the ingesting client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bfcltasks import tasks_fixture
from privateneo4j import private_neo4j
from simgraph import simulated_file

from ace.cli import main
from ace_env.errors import TaskLoadError
from ace_env.oracle import clear_oracle_cache
from ace_env.sim import parse_weakness
from ace_env.tasks import Task
from ace_env.tasksets import load_task_set
from ace_graph import tagger
from ace_graph.errors import IngestIncomplete
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore

tasks = tasks_fixture("base")


def _rows(driver, database, query, **params):
    records, _, _ = driver.execute_query(query, params, database_=database)
    return [r.data() for r in records]


def _write_rollouts(path: Path, tasks, n: int, seed: int) -> Path:
    simulated_file(path, tasks, n, parse_weakness({"defaults": {"error": 0.1}}), seed)
    return path


def _bfcl_task_node(driver, database):
    return _rows(driver, database,
                 "MATCH (t:Task {key: 'bfcl:multi_turn_base_0'}) OPTIONAL MATCH (t)-[:USES]->(x:Tool) "
                 "RETURN t.source AS source, t.n_steps AS n_steps, t.category AS category, "
                 "collect(x.name) AS tools")


# --------------------------------------------------------------------------- defect 3: namespaces


def test_user_task_cannot_overwrite_bfcl_task(clean_db, neo4j_database, tasks, tmp_path, capsys):
    store = GraphStore(clean_db, neo4j_database)
    store.ensure_taxonomy()
    store.upsert_tasks([tasks["multi_turn_base_0"]])
    before = _bfcl_task_node(clean_db, neo4j_database)
    mine = tasks["multi_turn_base_15"].to_dict()
    mine.update(id="multi_turn_base_0", source="user", category="mine")
    task_file = tmp_path / "my_tasks.jsonl"
    task_file.write_text(json.dumps(mine) + "\n")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": []}) + "\n{broken\n")
    # The ingest seeds the user's task (its first batch, line 1, is good), then fails on line 2: BFCL's node is
    # untouched all the same.  (A refusal inside the first batch seeds nothing: test_issue35_graph_limits.py.)
    assert main(["ingest", str(rollouts), "-e", "ns", "-p", "p", "-c", "c", "--tasks", str(task_file),
                 "--batch-size", "1"]) == 1
    assert "line 2" in capsys.readouterr().err
    assert _bfcl_task_node(clean_db, neo4j_database) == before
    [user] = _rows(clean_db, neo4j_database, "MATCH (t:Task {key: 'user:multi_turn_base_0'}) RETURN t.category AS c")
    assert user == {"c": "mine"}


def test_a_file_cannot_claim_bfcl_as_its_source(tasks, tmp_path):
    forged = tasks["multi_turn_base_0"].to_dict()
    forged["turns"][0]["ground_truth"] = []
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(forged) + "\n")
    with pytest.raises(TaskLoadError, match="'bfcl' is reserved"):
        load_task_set(str(path))
    path.write_text(json.dumps(tasks["multi_turn_base_0"].to_dict()) + "\n")  # BFCL's own, unchanged: fine
    assert list(load_task_set(str(path))) == ["multi_turn_base_0"]


def test_reseeding_replaces_uses_and_contains(clean_db, neo4j_database, tasks):
    store = GraphStore(clean_db, neo4j_database)
    store.ensure_taxonomy()
    d = tasks["multi_turn_base_15"].to_dict()
    d.update(source="user", id="t1")
    first = Task.from_dict(d)
    store.upsert_tasks([first])
    tagger.clear_cache()  # tags and oracles are cached per (source, id); this test changes a task under one key
    clear_oracle_cache()
    shorter = Task.from_dict({**d, "turns": [d["turns"][0]] + [{**t, "ground_truth": []} for t in d["turns"][1:]]})
    store.upsert_tasks([shorter])
    uses = _rows(clean_db, neo4j_database,
                 "MATCH (:Task {key: 'user:t1'})-[:USES]->(x:Tool) RETURN x.name AS n ORDER BY n")
    expected = sorted({c.split("(")[0] for c in d["turns"][0]["ground_truth"]})
    assert [u["n"] for u in uses] == expected
    contains = _rows(clean_db, neo4j_database,
                     "MATCH (:Task {key: 'user:t1'})-[:CONTAINS]->(c:Composition {level: 'tool'}) RETURN c.key AS k")
    pairs = {f"tool:{a}>{b}" for a, b in zip(expected, expected[1:])} if len(expected) > 1 else set()
    assert {c["k"] for c in contains} <= {f"tool:{p}" for p in _tool_pairs(shorter)} | pairs
    assert len(contains) == len(_tool_pairs(shorter))


def _tool_pairs(task):
    from ace_graph.compositions import adjacent_pairs
    from ace_graph.tagger import tag_task

    return adjacent_pairs(tag_task(task))[0]


# --------------------------------------------------------------------------- defect 6: partial states


def _scope(driver, database, experiment):
    return _rows(driver, database, "MATCH (sc:Scope {experiment: $e}) RETURN sc.key AS key, "
                 "sc.rollouts AS rollouts, sc.incomplete AS incomplete", e=experiment)


def test_stopped_ingest_marks_scope_incomplete_and_rerun_clears_it(clean_db, neo4j_database, tasks, tmp_path, capsys):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 100, seed=3)
    good = path.read_text().splitlines()
    path.write_text("\n".join(good[:70] + ["{broken"] + good[70:]) + "\n")
    argv = ["ingest", str(path), "-e", "part", "-p", "p", "-c", "c1", "--tasks", "bfcl:base", "--batch-size", "30",
            "--workers", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "line 71" in err and "60 rollout(s) were committed" in err and "rerun" in err
    assert "Traceback" not in err
    assert _scope(clean_db, neo4j_database, "part") == [{"key": "part/p/c1", "rollouts": 60, "incomplete": True}]
    rows = GraphStore(clean_db, neo4j_database).run("scopes", experiment="part")
    assert rows[0]["incomplete"] is True
    path.write_text("\n".join(good) + "\n")
    assert main(argv) == 0
    assert _scope(clean_db, neo4j_database, "part") == [{"key": "part/p/c1", "rollouts": 100, "incomplete": False}]


def test_ingest_file_raises_incomplete_with_counts(clean_db, neo4j_database, tasks, tmp_path):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 40, seed=4)
    lines = path.read_text().splitlines()
    lines.insert(35, json.dumps({"rollout_id": 7, "task_id": "multi_turn_base_0", "turns": []}))
    path.write_text("\n".join(lines) + "\n")
    store = GraphStore(clean_db, neo4j_database)
    with pytest.raises(IngestIncomplete, match="line 36.*30 rollout"):
        ingest_file(store, path, tasks, "inc", "p", "c", batch_size=15, workers=1)


# --------------------------------------------------------------------------- fault: kill -9 of the client


def _aggregates(driver, database, scope):
    measured = _rows(driver, database,
                     "MATCH (:Scope {key: $s})-[m:MEASURED]->(k) RETURN m.level AS l, coalesce(k.id, k.name) AS k, "
                     "m.attempts AS a, m.failures AS f ORDER BY l, k", s=scope)
    composes = _rows(driver, database,
                     "MATCH (a)-[c:COMPOSES {scope: $s}]->(b) RETURN coalesce(a.id, a.name) AS a, "
                     "coalesce(b.id, b.name) AS b, c.n AS n, c.failures AS f ORDER BY a, b", s=scope)
    totals = _rows(driver, database, "MATCH (sc:Scope {key: $s}) RETURN sc.rollouts AS r, sc.rewarded AS w, "
                   "sc.steps AS st, sc.incomplete AS inc", s=scope)
    steps = _rows(driver, database, "MATCH (r:Rollout {scope: $s})-[:HAS_STEP]->(x) RETURN count(x) AS n", s=scope)
    return measured, composes, [{k: v for k, v in t.items() if k != "inc"} for t in totals], steps


@pytest.mark.slow
def test_kill_9_of_the_ingesting_process_then_rerun_equals_clean(clean_db, neo4j_database, tasks, tmp_path):
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 1500, seed=6)
    base = [str(Path(sys.executable).parent / "ace")]

    def cmd(checkpoint):
        return base + ["ingest", str(path), "-e", "k9", "-p", "p", "-c", checkpoint, "--tasks", "bfcl:base",
                       "--batch-size", "100", "--json"]

    proc = subprocess.Popen(cmd("killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # kill it once some batches are in, well before the end
        rows = _rows(clean_db, neo4j_database, "MATCH (sc:Scope {key: 'k9/p/killed'}) RETURN sc.rollouts AS r")
        if rows and (rows[0]["r"] or 0) >= 300:
            break
        time.sleep(0.2)
    children = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    assert children, "the ingest runs its verifying worker as a child process"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Its forked worker dies with it: an orphan would keep the killed client's connection, and its
    # open transaction's locks, alive (the rerun below would then wait on them).
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{c}").exists() for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{c}").exists() for c in children), "the verifying worker outlived its parent"
    [mid] = _rows(clean_db, neo4j_database, "MATCH (sc:Scope {key: 'k9/p/killed'}) RETURN sc.rollouts AS r, "
                  "sc.incomplete AS inc")
    assert 300 <= mid["r"] < 1500 and mid["inc"] is True
    assert subprocess.run(cmd("killed"), capture_output=True, env=os.environ.copy()).returncode == 0
    assert subprocess.run(cmd("clean"), capture_output=True, env=os.environ.copy()).returncode == 0
    killed = _aggregates(clean_db, neo4j_database, "k9/p/killed")
    clean = _aggregates(clean_db, neo4j_database, "k9/p/clean")
    assert killed == clean
    assert killed[2][0]["r"] == 1500
    assert _scope(clean_db, neo4j_database, "k9")[0]["incomplete"] is False


# --------------------------------------------------------------------------- scale: routing URIs


def test_neo4j_routing_uri_works_against_the_managed_server(clean_db, neo4j_database, tasks, tmp_path, monkeypatch,
                                                            capsys):
    from ace_graph.config import neo4j_settings
    from ace_graph.db import get_driver

    managed = neo4j_settings()
    assert managed.uri.startswith("bolt://")
    monkeypatch.setenv("NEO4J_URI", managed.uri.replace("bolt://", "neo4j://"))
    monkeypatch.setenv("NEO4J_USER", managed.user)
    monkeypatch.setenv("NEO4J_PASSWORD", managed.password)
    driver = get_driver()
    try:
        assert type(driver).__name__ == "Neo4jDriver"  # the routing driver: reads routed as reads
    finally:
        driver.close()
    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 50, seed=8)
    assert main(["init"]) == 0
    assert main(["ingest", str(path), "-e", "route", "-p", "p", "-c", "c", "--tasks", "bfcl:base", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["created"] == 50
    assert main(["query", "scopes", "-P", "experiment=route", "--json"]) == 0
    [scope] = json.loads(capsys.readouterr().out)
    assert (scope["rollouts"], scope["incomplete"]) == (50, False)


# --------------------------------------------------------------------------- fault: kill -9 of the server


@pytest.fixture
def private_server(tmp_path, monkeypatch):
    """A managed Neo4j of its own (workspace, ports), so killing it disturbs no other test."""
    with private_neo4j(tmp_path, monkeypatch) as server:
        server.start(timeout=300)
        yield server


@pytest.mark.slow
def test_kill_9_of_the_server_mid_ingest_then_rerun_equals_clean(private_server, tasks, tmp_path):
    from ace_graph.db import get_driver

    path = _write_rollouts(tmp_path / "r.jsonl", tasks, 800, seed=9)
    ace = str(Path(sys.executable).parent / "ace")

    def cmd(checkpoint):
        return [ace, "ingest", str(path), "-e", "srv", "-p", "p", "-c", checkpoint, "--tasks", "bfcl:base",
                "--batch-size", "100"]

    driver = get_driver()
    # The killed client gives up after 5 s of retries instead of the driver's 30 (ACE_NEO4J_RETRY_SECONDS).
    proc = subprocess.Popen(cmd("killed"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "ACE_NEO4J_RETRY_SECONDS": "5"})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        rows = _rows(driver, "neo4j", "MATCH (sc:Scope {key: 'srv/p/killed'}) RETURN sc.rollouts AS r")
        if rows and (rows[0]["r"] or 0) >= 200:
            break
        time.sleep(0.2)
    driver.close()
    os.kill(private_server._read_pid(), signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "Traceback" not in err and err.count("error:") == 1, err
    private_server.stop(timeout=60)  # clears the stale pid file of the killed server
    private_server.start(timeout=300)
    assert subprocess.run(cmd("killed"), capture_output=True, env=os.environ.copy()).returncode == 0
    assert subprocess.run(cmd("clean"), capture_output=True, env=os.environ.copy()).returncode == 0
    driver = get_driver()
    try:
        killed, clean = _aggregates(driver, "neo4j", "srv/p/killed"), _aggregates(driver, "neo4j", "srv/p/clean")
        assert killed == clean and killed[2][0]["r"] == 800
        assert _scope(driver, "neo4j", "srv") == [
            {"key": "srv/p/clean", "rollouts": 800, "incomplete": False},
            {"key": "srv/p/killed", "rollouts": 800, "incomplete": False},
        ] or sorted(_scope(driver, "neo4j", "srv"), key=lambda r: r["key"]) == [
            {"key": "srv/p/clean", "rollouts": 800, "incomplete": False},
            {"key": "srv/p/killed", "rollouts": 800, "incomplete": False},
        ]
    finally:
        driver.close()
