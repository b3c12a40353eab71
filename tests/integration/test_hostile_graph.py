"""Issue 25's hostile runs against the real Neo4j (the service-free ones are in tests/unit/test_hostile.py).

Each test failed on the code before the fix.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ace.cli import main
from ace_env import bfcl

SCOPE = "bulk/sim/c0"
BULK = 100_000


def _one_step_tasks(path, n=20):
    """User tasks of one turn with one ground-truth call (cut from BFCL base): the cheapest rollouts to ingest."""
    with open(path, "w") as f:
        made = 0
        for t in bfcl.load_tasks("base"):
            d = t.to_dict()
            first = d["turns"][0]
            if not first["ground_truth"] or made == n:
                continue
            d.update(id=f"one-step-{made}", source="user", turns=[{**first, "ground_truth": first["ground_truth"][:1]}])
            f.write(json.dumps(d) + "\n")
            made += 1
    return path


def _one(driver, database, query, **params):
    records, _, _ = driver.execute_query(query, params, database_=database)
    return records[0][0]


def test_scope_delete_of_100k_rollouts_is_batched_and_a_killed_delete_is_finished_by_a_rerun(
        clean_db, neo4j_database, tmp_path, capsys):
    # Defect 10: the delete was one transaction, so a large scope failed with
    # `dbms.memory.transaction.total.max threshold reached` and could not be deleted at all.
    tasks = _one_step_tasks(tmp_path / "tasks.jsonl")
    rollouts = tmp_path / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", str(tasks), "--n", str(BULK), "--out", str(rollouts), "--json"]) == 0
    assert main(["ingest", str(rollouts), "--scope", SCOPE, "--tasks", str(tasks), "--batch-size", "5000",
                 "--show", "none", "--json"]) == 0
    capsys.readouterr()
    count = "MATCH (r:Rollout {scope: $scope}) RETURN count(r)"
    assert _one(clean_db, neo4j_database, count, scope=SCOPE) == BULK

    # Kill a delete part-way (after its first batches), as kill -9 would.
    proc = subprocess.Popen([sys.executable, "-m", "ace.cli", "scope", "delete", SCOPE, "--yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if _one(clean_db, neo4j_database, count, scope=SCOPE) < BULK:
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = _one(clean_db, neo4j_database, count, scope=SCOPE)
    if left:  # killed part-way: the scope is marked and never read as data
        assert _one(clean_db, neo4j_database, "MATCH (s:Scope {key: $scope}) RETURN s.deleting", scope=SCOPE) is True
        for argv in (["query", "capability-profile", "--scope", SCOPE],
                     ["ingest", str(rollouts), "--scope", SCOPE, "--tasks", str(tasks)]):
            assert main(argv) == 1, argv
            err = capsys.readouterr().err
            assert "being deleted" in err and f"ace scope delete {SCOPE} --yes" in err, err
        assert main(["query", "capability-history", "-P", "experiment=bulk", "-P", "policy=sim", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == []
        assert main(["scopes"]) == 0
        assert "being deleted" in capsys.readouterr().out
    # The rerun finishes it.
    assert main(["scope", "delete", SCOPE, "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["scopes"] == 1 and done["rollouts"] <= left
    for query in ("MATCH (r:Rollout {scope: $scope}) RETURN count(r)",
                  "MATCH (s:Step) RETURN count(s)",
                  "MATCH ()-[c:COMPOSES {scope: $scope}]->() RETURN count(c)",
                  "MATCH (s:Scope {key: $scope}) RETURN count(s)"):
        assert _one(clean_db, neo4j_database, query, scope=SCOPE) == 0, query
    assert _one(clean_db, neo4j_database, "MATCH (t:Task {source: 'user'}) RETURN count(t)") == 20  # tasks stay


@pytest.mark.parametrize("value", ['{"a": 1}', '["a","b"]', "1", "null", "true"])
def test_query_scope_param_not_a_string_is_one_line(value, clean_db, capsys):
    # Defect 7: -P scope={"a": 1} and -P scope=["a","b"] were tracebacks (scopes.py called .split on them).
    assert main(["query", "weak-compositions", "-P", f"scope={value}"]) == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err and "scope" in err, err


def test_user_task_file_cannot_change_a_synthesized_task(clean_db, neo4j_database, tmp_path, capsys):
    # Defect 3: a task file claiming source "ace" with the id of a task synthesized in another experiment
    # overwrote that Task node (fingerprint, USES and CONTAINS edges) with rc 0.
    from ace_env.tasks import Task
    from ace_env.verifier import ground_truth_rollout
    from ace_graph.store import GraphStore

    base = {t.id: t for t in bfcl.load_tasks("base")}
    synthesized = Task.from_dict({**base["multi_turn_base_15"].to_dict(), "id": "ace-depth-0123456789ab",
                                  "source": "ace", "category": "depth", "provenance": {"experiment": "A"}})
    store = GraphStore(clean_db, neo4j_database)
    store.ensure_taxonomy()
    store.upsert_tasks([synthesized])  # as `ace synth -e A` stores it
    stored = "MATCH (t:Task {key: 'ace:ace-depth-0123456789ab'}) RETURN t.fingerprint AS f, t.tools AS tools"
    before = clean_db.execute_query(stored, database_=neo4j_database).records[0].data()

    forged = Task.from_dict({**base["multi_turn_base_0"].to_dict(), "id": synthesized.id, "source": "ace"})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(forged.to_dict()) + "\n")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "r", "task_id": forged.id,
                                    "turns": ground_truth_rollout(forged)}) + "\n")
    capsys.readouterr()
    assert main(["ingest", str(rollouts), "--scope", "B/p/c", "--tasks", str(tasks)]) == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "ace:ace-depth-0123456789ab" in err and str(tasks) in err, err
    assert clean_db.execute_query(stored, database_=neo4j_database).records[0].data() == before
    assert not clean_db.execute_query("MATCH (r:Rollout) RETURN r", database_=neo4j_database).records
    # `ace eval` stores the tasks it evaluates too (free-running and gold-prefix alike): refused the same way
    for extra in ([], ["--gold-prefix", "--generate"]):
        assert main(["eval", "-p", "sim:tests/integration/synth_weakness.toml", "--tasks", str(tasks), "-e", "B", "-c", "c", "--name", "p",
                     "--out", str(tmp_path / "e.jsonl"), "--force", *extra]) == 1
        err = capsys.readouterr().err
        assert "ace:ace-depth-0123456789ab" in err, err
        assert clean_db.execute_query(stored, database_=neo4j_database).records[0].data() == before

    # Restating the stored task unchanged (e.g. ingesting `ace synth`'s own output file) is fine.
    tasks.write_text(json.dumps(synthesized.to_dict()) + "\n")
    rollouts.write_text(json.dumps({"rollout_id": "r", "task_id": synthesized.id,
                                    "turns": ground_truth_rollout(synthesized)}) + "\n")
    assert main(["ingest", str(rollouts), "--scope", "B/p/c", "--tasks", str(tasks), "--show", "none"]) == 0
    assert clean_db.execute_query(stored, database_=neo4j_database).records[0].data() == before
