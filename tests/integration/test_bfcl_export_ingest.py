"""A BFCL result file for tasks exported with `ace export --format bfcl` ingests against the export folder."""

from __future__ import annotations

import json

from ace.cli import main
from ace_env import bfcl
from ace_env.bfcl.export import BFCL_ANSWER_FILE, BFCL_LONG_ANSWER_FILE, BFCL_LONG_QUESTION_FILE, BFCL_QUESTION_FILE
from ace_env.tasks import Task


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_bfcl_result_file_of_exported_tasks_ingests_with_the_exported_ids(clean_db, neo4j_database, tmp_path,
                                                                          capsys):
    base = bfcl.load_tasks("base")
    long_seed = bfcl.load_tasks("long_context")[0]
    tasks = base[:3] + [Task.from_dict({**base[0].to_dict(), "id": "ace-1", "source": "ace"}),
                        Task.from_dict({**long_seed.to_dict(), "id": "ace-long-1", "source": "ace"})]
    out = tmp_path / "bfcl"
    assert main(["export", "--tasks", _task_file(tmp_path, tasks), "--format", "bfcl", "--out", str(out)]) == 0
    capsys.readouterr()
    answers = {a["id"]: a["ground_truth"] for f in (BFCL_ANSWER_FILE, BFCL_LONG_ANSWER_FILE) for a in _jsonl(out / f)}
    ids = [q["id"] for f in (BFCL_QUESTION_FILE, BFCL_LONG_QUESTION_FILE) for q in _jsonl(out / f)]
    assert len(ids) == 5 and "multi_turn_ace_ace-1" in ids and "multi_turn_ace_long_context_ace-long-1" in ids
    wrong = "multi_turn_ace_ace-1"
    result = tmp_path / "BFCL_v4_multi_turn_ace_result.json"
    with open(result, "w") as f:
        for i in ids:
            gt = [[] for _ in answers[i]] if i == wrong else answers[i]
            steps = [(["[" + ", ".join(calls) + "]"] if calls else []) + ["Done."] for calls in gt]
            f.write(json.dumps({"id": i, "result": steps}) + "\n")

    assert main(["ingest", str(result), "-e", "exp", "-p", "bfcl-model", "-c", "c0", "--tasks", str(out),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (report["read"], report["created"], report["invalid"]) == (5, 5, 0)
    rows, _, _ = clean_db.execute_query(
        "MATCH (r:Rollout {scope: $scope}) OPTIONAL MATCH (r)-[:OF_TASK]->(t:Task) "
        "RETURN r.task_id AS task, r.reward AS reward, t IS NOT NULL AS linked ORDER BY task",
        scope="exp/bfcl-model/c0", database_=neo4j_database)
    got = {r["task"]: (r["reward"], r["linked"]) for r in rows}
    assert got == {i: (0.0 if i == wrong else 1.0, True) for i in ids}
    # a second ingest of the same file stores nothing new
    assert main(["ingest", str(result), "-e", "exp", "-p", "bfcl-model", "-c", "c0", "--tasks", str(out),
                 "--json"]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (again["created"], again["already_stored"]) == (0, 5)


def _task_file(tmp_path, tasks) -> str:
    path = tmp_path / "tasks.jsonl"  # BFCL's own tasks may be in a task file when unchanged
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    return str(path)
