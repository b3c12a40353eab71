"""Issue 35's remainder against the real Neo4j: a runaway ad-hoc query, an ingest refused at line 1, an
unknown experiment.  Each test failed on the code before the fix."""

from __future__ import annotations

import json
import time

from ace.cli import main
from ace.cli.cyphercmd import CLIENT_GRACE_S
from ace_env import bfcl

#: A computation inside one expression that Neo4j 5 does not interrupt at its transaction timeout:
#: reduce() growing a string over a range (quadratic; about 2.5 min on a loaded 2-core machine, more than
#: 20 s on a fast one), bounded so that the server is free again soon after the test.
RUNAWAY = "RETURN size(reduce(s = '', x IN range(1, 200000) | s + 'aaaaaaaaaa')) AS n"


def _counts(driver, database) -> dict[str, int]:
    records, _, _ = driver.execute_query("MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) AS n", database_=database)
    return {r["l"]: r["n"] for r in records}


def test_cypher_gives_up_at_its_timeout_when_neo4j_does_not_stop_the_query(neo4j_driver, capsys):
    # Before: the client waited as long as the server computed (the 10,000,000-element hostile case: hours);
    # Neo4j marks the transaction timed out but checks that only between steps of a query.
    timeout = 1.0
    started = time.monotonic()
    rc = main(["cypher", RUNAWAY, "--timeout", str(timeout)])
    waited = time.monotonic() - started
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.count("error:") == 1 and "ran past --timeout" in err and "Traceback" not in err, err
    assert waited < timeout + CLIENT_GRACE_S + 5, waited
    # The server still answers other queries while it finishes the abandoned one.
    started = time.monotonic()
    assert main(["cypher", "RETURN 1 AS one", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"one": 1}]
    assert time.monotonic() - started < 30


def test_cypher_timeout_that_neo4j_enforces_is_still_its_own_message(neo4j_driver, capsys):
    # A query that Neo4j interrupts (between rows) ends with the server's timeout, before the client's.
    rc = main(["cypher", "UNWIND range(1, 1000000000) AS x WITH x WHERE x < 0 RETURN count(x) AS n",
               "--timeout", "1"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error:") == 1, err
    assert "Neo4j stopped it" in err, err


def test_ingest_refused_at_line_1_writes_nothing(clean_db, neo4j_database, tmp_path, capsys):
    # Before: the tasks (and taxonomy) were stored before line 1 was read, and the error said the scope
    # was "marked incomplete" although nothing of it was written.
    task = next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "a", "task_id": "no-such-task", "turns": []}) + "\n"
                        + json.dumps({"rollout_id": "b", "task_id": task.id, "turns": [[]] * task.n_turns}) + "\n")
    rc = main(["ingest", str(rollouts), "--scope", "first/p/c", "--tasks", "bfcl:base"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.count("error:") == 1 and "line 1" in err and "incomplete" not in err, err
    assert _counts(clean_db, neo4j_database) == {}


def test_ingest_refused_in_a_later_batch_still_says_what_was_committed(clean_db, neo4j_database, tmp_path, capsys):
    # The first batch is read before writing; a refusal after a committed batch is still reported as incomplete.
    task = next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "a", "task_id": task.id, "turns": [[]] * task.n_turns}) + "\n"
                        + json.dumps({"rollout_id": "b", "task_id": "no-such-task", "turns": []}) + "\n")
    rc = main(["ingest", str(rollouts), "--scope", "later/p/c", "--tasks", "bfcl:base", "--batch-size", "1",
               "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error:") == 1 and "line 2" in err, err
    assert "1 rollout(s) were committed" in err and "marked incomplete" in err, err
    assert _counts(clean_db, neo4j_database).get("Rollout") == 1


def test_an_unknown_experiment_is_one_error_line(clean_db, capsys):
    # Before: both printed a line without the `error:` prefix.
    for argv in (["scopes", "-e", "nothing-here"], ["curriculum", "status", "-e", "nothing-here"]):
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 1, (argv, err)
        assert err.startswith("error: ") and err.count("error:") == 1 and "'nothing-here'" in err, (argv, err)
    assert main(["scopes"]) == 0  # an empty graph is not an error
