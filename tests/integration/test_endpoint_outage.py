"""An outage of the model endpoint is never stored as the model's failures (issue 35, defect 3), and no
credential reaches the output (defect 12), against the real Neo4j.

The failing endpoints are a closed port and tests/faultserver.py (one canned fault per server: HTTP 500,
a 200 that is not JSON, HTTP 400; it implements none of the OpenAI API).
"""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit, urlunsplit

import pytest
from faultserver import failing_endpoint

from ace.cli import main
from ace_graph.config import neo4j_settings

CLOSED = "http://127.0.0.1:1/v1"


def _counts(driver, database) -> tuple[int, int]:
    nodes, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS n", database_=database)
    rels, _, _ = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS n", database_=database)
    return nodes[0]["n"], rels[0]["n"]


def _scopes(driver, database, experiment: str) -> list[str]:
    rows, _, _ = driver.execute_query("MATCH (sc:Scope {experiment: $e}) RETURN sc.key AS key", e=experiment,
                                      database_=database)
    return [r["key"] for r in rows]


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and err.count("error:") == 1, err
    return lines[0]


@contextlib.contextmanager
def _endpoint(kind: str):
    if kind == "closed port":
        yield CLOSED
        return
    fault = {"HTTP 500": (500, b"upstream overloaded"), "not JSON": (200, b"<html>login</html>")}[kind]
    with failing_endpoint(*fault) as (url, _):
        yield url


@pytest.mark.parametrize("kind, says", [("closed port", "did not answer"), ("HTTP 500", "HTTP 500"),
                                        ("not JSON", "not JSON")])
@pytest.mark.parametrize("mode", [
    ["--tasks", "bfcl:base"],
    ["--tasks", "bfcl:base", "--gold-prefix", "--generate"],
    ["--tasks", "tau2:airline"],
], ids=["bfcl", "gold-prefix", "tau2"])
def test_eval_against_a_failing_endpoint_exits_1_and_stores_nothing(kind, says, mode, clean_db, neo4j_database,
                                                                     tmp_path, capsys):
    # Defect 3: exit 0, and the scope E/openai-m/c0 stored every rollout as failed.
    before = _counts(clean_db, neo4j_database)
    out = tmp_path / "runs" / "e.jsonl"
    with _endpoint(kind) as url:
        rc = main(["eval", "-p", f"openai:m@{url}", *mode, "--limit", "1", "-e", "outage", "-c", "c0",
                   "--out", str(out), "--request-retries", "0"])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and says in line, line
    assert _scopes(clean_db, neo4j_database, "outage") == []
    assert _counts(clean_db, neo4j_database) == before  # nothing at all was written to the graph
    assert not out.parent.exists() or list(out.parent.iterdir()) == []  # no file, no temporary file


def test_eval_whose_every_request_is_refused_stores_nothing(clean_db, neo4j_database, tmp_path, capsys):
    """HTTP 400 on every request is each rollout's error, not an outage; a scope of nothing but policy errors
    would still score them as the model's failures, so it is not stored either."""
    before = _counts(clean_db, neo4j_database)
    out = tmp_path / "e.jsonl"
    with failing_endpoint(400, b"unknown tool format") as (url, got):
        rc = main(["eval", "-p", f"openai:m@{url}", "--tasks", "bfcl:base", "--limit", "2", "-e", "refused",
                   "-c", "c0", "--out", str(out)])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and "every one of the 2 rollouts ended by a policy error" in line and "nothing is stored" in line
    assert len(got) == 2  # one refused request per rollout, none retried
    assert _scopes(clean_db, neo4j_database, "refused") == [] and _counts(clean_db, neo4j_database) == before


# --------------------------------------------------------------------------- credentials (defect 12)


def _with_credentials(user: str, password: str) -> str:
    parts = urlsplit(neo4j_settings().uri)
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.netloc}"))


def test_a_wrong_password_in_the_uri_is_refused_by_the_server_and_never_shown(neo4j_driver, monkeypatch, capsys):
    # Defect 12: `NEO4J_URI=bolt://user:PASS@host ace scopes` repeated PASS in its error.
    password = "Wr0ng-h2-Passw0rd"
    monkeypatch.setenv("NEO4J_URI", _with_credentials("neo4j", password))
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.delenv("NEO4J_USER", raising=False)
    rc = main(["scopes"])
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and "rejected user 'neo4j'" in line, line  # the server itself refused it
    assert password not in captured.out + captured.err
    rc = main(["db", "status"])
    captured = capsys.readouterr()
    assert rc == 0 and "neo4j:***@" in captured.out and password not in captured.out + captured.err
    rc = main(["db", "status", "--json"])
    captured = capsys.readouterr()
    assert rc == 0 and "neo4j:***@" in captured.out and password not in captured.out + captured.err


def test_a_wrong_neo4j_password_variable_is_never_shown(neo4j_driver, monkeypatch, capsys):
    password = "Wr0ng-h2-Variable"
    monkeypatch.setenv("NEO4J_URI", neo4j_settings().uri)
    monkeypatch.setenv("NEO4J_USER", "h2-nobody")  # not neo4j: the server locks a user after failed logins
    monkeypatch.setenv("NEO4J_PASSWORD", password)
    rc = main(["scopes"])
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and "rejected user 'h2-nobody'" in line and password not in captured.out + captured.err


def test_credentials_in_the_uri_are_used(neo4j_driver, monkeypatch, capsys):
    settings = neo4j_settings()
    monkeypatch.setenv("NEO4J_URI", _with_credentials(settings.user, settings.password))
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.delenv("NEO4J_USER", raising=False)
    rc = main(["scopes"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert settings.password not in captured.out + captured.err
    monkeypatch.setenv("NEO4J_PASSWORD", settings.password + "-other")  # two passwords: refused, neither shown
    rc = main(["scopes"])
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert rc == 1 and "give it once" in line and settings.password not in captured.out + captured.err
