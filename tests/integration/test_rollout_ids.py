"""Issue 35, defect 13: a rollout id names one rollout per scope, across files and across ingests.

`ace ingest a.jsonl b.jsonl` with one id in both, other content, stored a's rollout and skipped b's without a
word; a second ingest into the scope did the same.  Now both are refused in one line before anything is
stored, and the same rollout again (a rerun, a file given twice) is still skipped.
"""

from __future__ import annotations

import json

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.rollout import Rollout
from ace_env.verifier import ground_truth_rollout
from ace_graph.errors import IngestIncomplete, RolloutIdConflict
from ace_graph.ingest import ingest_file, prepare
from ace_graph.store import GraphStore

SCOPE = "ids/p/c"


@pytest.fixture(scope="module")
def task():
    return next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _counts(driver, database) -> tuple[int, int]:
    nodes, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS n", database_=database)
    rels, _, _ = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS n", database_=database)
    return nodes[0]["n"], rels[0]["n"]


def _ingest(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["ingest", *map(str, argv), "--tasks", "bfcl:base", "--show", "none", "--json"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    return lines[0]


def test_one_id_with_other_content_in_two_files_is_refused_and_nothing_stored(
        clean_db, neo4j_database, task, tmp_path, capsys):
    gold = ground_truth_rollout(task)
    a = _write(tmp_path / "a.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": gold}])
    b = _write(tmp_path / "b.jsonl", [{"rollout_id": "y", "task_id": task.id, "turns": gold},
                                      {"rollout_id": "x", "task_id": task.id, "turns": [[] for _ in gold]}])
    assert _ingest(capsys, a, "--scope", "ids/p/seed")[0] == 0  # the taxonomy and tasks are seeded
    before = _counts(clean_db, neo4j_database)

    rc, _, err = _ingest(capsys, a, b, "--scope", SCOPE)
    assert rc == 1
    line = _one_error(err)
    assert f"rollout id 'x' names two different rollouts: {b}: line 2 and {a}: line 1" in line, line
    assert "nothing was stored" in line and "--id-suffix" in line
    assert _counts(clean_db, neo4j_database) == before  # not a's rollout, not b's first: nothing

    # the same rollout in both files (a file given twice, a copy) is one rollout, as before
    copy = _write(tmp_path / "copy.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": gold}])
    rc, out, err = _ingest(capsys, a, copy, "--scope", SCOPE)
    assert rc == 0, err
    report = json.loads(out)
    assert (report["created"], report["already_stored"]) == (1, 1)


def test_a_later_ingest_with_an_id_the_scope_holds_with_other_content_is_refused(
        clean_db, neo4j_database, task, tmp_path, capsys):
    gold = ground_truth_rollout(task)
    a = _write(tmp_path / "a.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": gold}])
    b = _write(tmp_path / "b.jsonl", [{"rollout_id": "y", "task_id": task.id, "turns": gold},
                                      {"rollout_id": "x", "task_id": task.id, "turns": gold, "meta": {"run": 2}}])
    assert _ingest(capsys, a, "--scope", SCOPE)[0] == 0
    before = _counts(clean_db, neo4j_database)

    rc, _, err = _ingest(capsys, b, "--scope", SCOPE)
    assert rc == 1
    line = _one_error(err)
    assert f"rollout id 'x' ({b}: line 2) is already stored in scope {SCOPE} with other content" in line, line
    assert _counts(clean_db, neo4j_database) == before  # y was not stored either
    assert main(["query", "capability-profile", "--scope", SCOPE]) == 0  # and the scope is still whole

    rc, out, _ = _ingest(capsys, a, "--scope", SCOPE)  # a rerun stays idempotent
    assert rc == 0 and (json.loads(out)["created"], json.loads(out)["already_stored"]) == (0, 1)
    rc, out, _ = _ingest(capsys, b, "--scope", SCOPE, "--id-suffix", "-run2")  # the fix the error names
    assert rc == 0 and json.loads(out)["created"] == 2


def test_the_batch_itself_refuses_a_conflict_a_concurrent_writer_made(clean_db, neo4j_database, task, tmp_path):
    # Between the read-ahead check and the batch another ingest may store the id: the batch's own
    # check (ingest-rollouts) rolls it back; and one batch never holds one id twice with other content.
    tasks = {task.id: task}
    gold = ground_truth_rollout(task)
    store = GraphStore(clean_db, neo4j_database)
    first = _write(tmp_path / "first.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": gold}])
    ingest_file(store, first, tasks, "ids", "p", "c")
    before = _counts(clean_db, neo4j_database)
    other = _write(tmp_path / "other.jsonl", [{"rollout_id": "y", "task_id": task.id, "turns": gold},
                                              {"rollout_id": "x", "task_id": task.id, "turns": [[] for _ in gold]}])
    with pytest.raises(IngestIncomplete, match=r"rollout id 'x' of scope ids/p/c is already stored there with other "
                                               r"content.*0 rollout\(s\) were committed"):
        ingest_file(store, other, tasks, "ids", "p", "c", check_ids=False)
    assert _counts(clean_db, neo4j_database) == before

    scope = {"key": "ids/p/c2", "experiment": "ids", "policy": "p", "checkpoint": "c2", "round": 0}
    raw = [Rollout("z", task.id, gold, 1), Rollout("z", task.id, [[] for _ in gold], 2)]
    records = list(prepare(tasks, iter(raw), scope["key"], 0.7, False, [], "test"))
    with pytest.raises(RolloutIdConflict, match="'z' of scope ids/p/c2 is twice in one batch"):
        store.ingest_batch(scope, records)
    assert _counts(clean_db, neo4j_database) == before
    # the same rollout twice in one batch is one rollout
    assert store.ingest_batch(scope, [records[0], records[0]]).created == 1


def test_a_rollout_stored_without_a_digest_is_skipped_as_before(clean_db, neo4j_database, task, tmp_path, capsys):
    gold = ground_truth_rollout(task)
    a = _write(tmp_path / "a.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": gold}])
    assert _ingest(capsys, a, "--scope", SCOPE)[0] == 0
    clean_db.execute_query("MATCH (r:Rollout) REMOVE r.digest", database_=neo4j_database)  # an older ACE's
    b = _write(tmp_path / "b.jsonl", [{"rollout_id": "x", "task_id": task.id, "turns": [[] for _ in gold]}])
    rc, out, err = _ingest(capsys, b, "--scope", SCOPE)
    assert rc == 0 and json.loads(out)["already_stored"] == 1, err


def test_with_skip_invalid_a_conflicting_rollout_is_a_bad_line_reported_and_skipped(
        clean_db, neo4j_database, task, tmp_path, capsys):
    gold = ground_truth_rollout(task)
    # a BFCL result file keyed by task id, the same task twice with other content (read alike by `ace verify`)
    bfcl_file = _write(tmp_path / "BFCL_v4_multi_turn_base_result.json", [
        {"id": task.id, "result": [[[c] for c in turn] for turn in gold]},
        {"id": task.id, "result": [[["I did it."]] for _ in gold]}])
    before = _counts(clean_db, neo4j_database)
    rc, _, err = _ingest(capsys, bfcl_file, "--scope", SCOPE)
    assert rc == 1 and f"{bfcl_file}: line 2 and {bfcl_file}: line 1" in _one_error(err)
    assert _counts(clean_db, neo4j_database) == before

    rc, out, err = _ingest(capsys, bfcl_file, "--scope", SCOPE, "--skip-invalid")
    assert rc == 0, err
    assert (json.loads(out)["created"], json.loads(out)["invalid"]) == (1, 1)
    assert f"skipped: {bfcl_file}: line 2: rollout id '{task.id}' names two different rollouts" in \
        " ".join(err.split())

    # and one the scope already holds with other content, in a later ingest
    again = _write(tmp_path / "again.jsonl", [
        {"rollout_id": task.id, "task_id": task.id, "turns": [[] for _ in gold]},
        {"rollout_id": "new", "task_id": task.id, "turns": gold}])
    rc, out, err = _ingest(capsys, again, "--scope", SCOPE, "--skip-invalid")
    assert rc == 0 and (json.loads(out)["created"], json.loads(out)["invalid"]) == (1, 1), err
    assert f"is already stored in scope {SCOPE} with other content" in " ".join(err.split())
