"""The one query runner (ace_graph.queries.run / run_in), against a recording fake driver: no server needed."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from neo4j import READ_ACCESS, WRITE_ACCESS

from ace_graph import queries
from ace_graph.config import CYPHER_DIR
from ace_graph.errors import ConfigError, QueryModeError
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphStore
from ace_graph.transcripts import TaskLibrary


class _Record:
    def __init__(self, data):
        self._data = data

    def data(self):
        return dict(self._data)


class _Runs:
    """Anything with ``run(text, params)``: a transaction, or a session's auto-commit run."""

    def __init__(self, log, how):
        self.log, self.how = log, how

    def run(self, text, params=None):
        self.log.append((self.how, text, params))
        return [_Record({"n": 1})]


class _Session:
    def __init__(self, log, access):
        self.log, self.access = log, access

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, text, params=None):
        return _Runs(self.log, f"auto-{self.access}").run(text, params)

    def execute_read(self, fn, *args):
        return fn(_Runs(self.log, f"read-tx-{self.access}"), *args)

    def execute_write(self, fn, *args):
        return fn(_Runs(self.log, f"write-tx-{self.access}"), *args)


class FakeDriver:
    """Records each (how, text, params) the runner sends."""

    def __init__(self):
        self.log: list[tuple[str, str, dict]] = []

    def session(self, database=None, default_access_mode=WRITE_ACCESS):
        return _Session(self.log, default_access_mode)


@pytest.fixture(autouse=True)
def _fresh_cache():
    queries.clear_cache()
    yield
    queries.clear_cache()


def _params(query):
    return {p: query.example.get(p) for p in query.params}


def test_every_query_file_runs_through_the_one_runner():
    names = sorted(p.stem for p in CYPHER_DIR.glob("*.cypher"))
    assert names and names == queries.list_queries()
    for name in names:
        query = queries.load(name)
        driver = FakeDriver()
        params = _params(query)
        rows = queries.run(driver, name, params, write=True)
        assert rows == [{"n": 1}], name
        hows = {how for how, _, _ in driver.log}
        if not query.writes:
            assert hows == {f"read-tx-{READ_ACCESS}"}, name  # read routing, read transaction
        elif query.auto_commit:
            assert hows == {f"auto-{WRITE_ACCESS}"}, name
        else:
            assert hows == {f"write-tx-{WRITE_ACCESS}"}, name
        # the file's text, exactly, with the values beside it as parameters
        assert [text for _, text, _ in driver.log] == list(query.statements), name
        assert all(sent == params for _, _, sent in driver.log), name
        if len(query.statements) == 1:
            assert query.statements[0] == query.text, name


def test_schema_statements_run_one_transaction_each():
    driver = FakeDriver()
    queries.run(driver, "schema", {"default_source": "src"}, write=True)
    assert len(driver.log) == len(queries.statements("schema")) > 1
    assert [t for _, t, _ in driver.log] == queries.statements("schema")
    assert all(p == {"default_source": "src"} for _, _, p in driver.log)


def test_batched_deletes_run_auto_commit_and_not_inside_a_transaction():
    for name in ("scope-delete", "scope-delete-compositions"):
        assert queries.load(name).auto_commit, name
        with pytest.raises(ConfigError, match="IN TRANSACTIONS"):
            queries.run_in(_Runs([], "tx"), name, {"scope": "e/p/c", "batch": 10}, write=True)
    assert not queries.load("weak-compositions").auto_commit


def test_write_query_is_refused_on_a_read_path():
    driver = FakeDriver()
    with pytest.raises(QueryModeError, match="Mode: write"):
        queries.run(driver, "upsert-tasks", {"rows": []})
    with pytest.raises(QueryModeError):
        GraphStore(driver).run("upsert-tasks", rows=[])
    with pytest.raises(QueryModeError):
        queries.run_in(_Runs(driver.log, "tx"), "upsert-tasks", {"rows": []})
    assert driver.log == []  # refused before anything reached the server
    # the write path runs it; a read query on the write path still goes with read routing
    GraphStore(driver).write("upsert-tasks", rows=[])
    GraphStore(driver).write("view-scopes")
    assert [how for how, _, _ in driver.log] == [f"write-tx-{WRITE_ACCESS}", f"read-tx-{READ_ACCESS}"]


def test_runner_refuses_a_file_without_mode(tmp_path):
    (tmp_path / "no-mode.cypher").write_text("// Purpose: x\n// Parameters: none\n// Columns: n\nRETURN 1 AS n\n")
    driver = FakeDriver()
    for write in (False, True):
        with pytest.raises(ConfigError, match="Mode:"):
            queries.run(driver, "no-mode", write=write, directory=tmp_path)
    assert driver.log == []


def test_runner_checks_the_parameters_against_the_header(tmp_path):
    (tmp_path / "q.cypher").write_text(
        "// Purpose: x\n// Parameters: $limit (int), $name (string)\n// Columns: n\n// Mode: read\n"
        "RETURN $limit AS n, $name AS name\n")
    driver = FakeDriver()
    with pytest.raises(ConfigError, match=r"needs \$name"):
        queries.run(driver, "q", {"limit": 1}, directory=tmp_path)
    with pytest.raises(ConfigError, match="unknown: extra"):
        queries.run(driver, "q", {"limit": 1, "name": "x", "extra": 2}, directory=tmp_path)
    queries.run(driver, "q", {"limit": 1, "name": "'; MATCH (n) DETACH DELETE n //"}, directory=tmp_path)
    (_, text, params), = driver.log
    assert "DETACH" not in text and params["name"].startswith("';")  # a value never enters the text


def test_header_hints_give_console_kinds():
    q = queries.load("frontier")
    assert queries.param_kind(q.hints["limit"]) == "int"
    assert queries.param_kind(q.hints["min_lift"]) == "float"
    assert queries.param_kind(q.hints["scope"]) == "string"
    assert set(q.hints) == set(q.params)


def test_threshold_defaults_in_query_files_are_the_stats_constants():
    """The `:params` lines analysts paste must carry the thresholds of ace_graph.stats, not other numbers."""
    seen = 0
    for name in queries.list_queries():
        example = queries.load(name).example
        if "min_support" in example:
            assert example["min_support"] == MIN_SUPPORT, name
            seen += 1
        if "min_lift" in example:
            assert example["min_lift"] == MIN_LIFT, name
    assert seen >= 5
    assert queries.PARAM_DEFAULTS["min_support"] == MIN_SUPPORT and queries.PARAM_DEFAULTS["min_lift"] == MIN_LIFT


def test_task_library_skips_a_task_file_that_does_not_load(tmp_path, caplog):
    bad = tmp_path / "synth-broken.jsonl"
    bad.write_text('{"id": "half-writ')
    library = TaskLibrary([bad])
    with caplog.at_level(logging.WARNING, logger="ace_graph.transcripts"):
        assert library.get("multi_turn_base_0") is not None  # BFCL's tasks load whatever the files hold
    assert "synth-broken.jsonl" in caplog.text
    assert library.get("half-writ") is None


def test_task_library_skips_a_path_that_is_no_longer_a_regular_file(tmp_path, caplog):
    """A synth file swapped for a FIFO (or a socket, a device) after the dashboard listed it is skipped with a
    warning; it raised ConfigError, which failed every page that shows a transcript or a task's text (h9)."""
    fifo = tmp_path / "synth-fifo.jsonl"
    os.mkfifo(fifo)
    library = TaskLibrary([fifo, Path("/dev/null")])
    with caplog.at_level(logging.WARNING, logger="ace_graph.transcripts"):
        assert library.get("multi_turn_base_0") is not None
    assert "synth-fifo.jsonl" in caplog.text and "/dev/null" in caplog.text
