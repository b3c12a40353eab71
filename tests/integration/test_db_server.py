"""The managed Neo4j server end to end, and `ace init` against the shared server.

The round-trip tests run a second, private server (own ACE_HOME under
tmp_path, own free ports, small memory) so the server CI started for the rest
of the suite is not disturbed.  Its jars are linked from the main workspace
when that is installed; otherwise they are resolved with Maven (~/.m2 cache).
"""

from __future__ import annotations

import os
import stat

import pytest
from privateneo4j import private_neo4j
from typer.testing import CliRunner

import ace.cli.db  # noqa: F401  (registers `db` and `init` on the app)
from ace.cli import app
from ace_env.environments import DEFAULT
from ace_graph.errors import ConnectionError_, ServerError
from ace_graph.server import ManagedNeo4j, pinned_version

EXPECTED_CONSTRAINTS = {
    ("Skill", "id"), ("Tool", "name"), ("Task", "key"), ("Rollout", "id"), ("Scope", "key"), ("Plan", "id"),
    ("Composition", "key"), ("CurriculumUnit", "id"),
}


def cli(*args: str):
    result = CliRunner().invoke(app, list(args), catch_exceptions=True)
    return result


@pytest.fixture
def private_server(tmp_path, monkeypatch):
    """A ManagedNeo4j in its own workspace and ports; stopped after the test whatever happens."""
    with private_neo4j(tmp_path, monkeypatch) as server:
        assert server.workspace == tmp_path / "ace" / "neo4j"
        yield server


def count_nodes(label: str) -> int:
    from ace_graph.db import get_driver

    with get_driver() as driver:
        records, _, _ = driver.execute_query(f"MATCH (n:`{label}`) RETURN count(n) AS c")
    return records[0]["c"]


def test_managed_server_round_trip(private_server):
    server = private_server
    assert server.install() in ("installed", "already installed")
    assert server.install() == "already installed"
    assert server.status().running is False

    result = cli("db", "start", "--timeout", "180")
    assert result.exit_code == 0, f"{result.output}\n{result.exception}"
    assert server.bolt_uri in result.output
    # first start says where the password is (the console may wrap a long path mid-word)
    assert str(server.password_file) in result.output.replace("\n", "")

    st = server.status()
    assert st.running and st.pid
    assert st.version == pinned_version()
    os.kill(st.pid, 0)  # raises if no such process

    again = cli("db", "start")
    assert again.exit_code == 0
    assert "already running" in again.output
    assert server.status().pid == st.pid

    assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
    password = server.read_password()

    from ace_graph.db import get_driver

    with get_driver() as driver:
        driver.execute_query("UNWIND range(1, 3) AS i CREATE (:AceRoundTrip {i: i})")
    assert count_nodes("AceRoundTrip") == 3

    stopped = cli("db", "stop")
    assert stopped.exit_code == 0 and "stopped" in stopped.output
    assert server.status().running is False
    assert not server.pid_file.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(st.pid, 0)
    with pytest.raises(ConnectionError_, match="ace db start"):
        get_driver()

    restarted = server.start(timeout=180)
    assert restarted.running and restarted.first_start is False
    assert server.read_password() == password
    assert count_nodes("AceRoundTrip") == 3  # data survived the restart
    # Transaction logs stay small (64 MiB files, two kept): Neo4j's default preallocates 256 MiB a database.
    tx = server.data_dir / "transactions"
    sizes = {d.name: sum(f.stat().st_size for f in d.iterdir()) for d in tx.iterdir() if d.is_dir()}
    assert {"neo4j", "system"} <= set(sizes) and max(sizes.values()) <= 140 * 2**20, sizes

    final = server.stop(timeout=60)
    assert final.message.startswith("stopped")
    assert server.status().running is False


def test_startup_failure_reports_log_lines(private_server, monkeypatch):
    if not private_server.is_installed():
        private_server.install()
    monkeypatch.setenv("ACE_NEO4J_HEAP", "1k")  # the JVM refuses to start with this heap
    server = ManagedNeo4j()
    with pytest.raises(ServerError) as e:
        server.start(timeout=60)
    msg = str(e.value)
    assert "exited during startup" in msg
    assert "heap" in msg.lower()
    assert "ace db start" in msg
    assert not server.pid_file.exists()


def test_init_is_idempotent(clean_db, neo4j_database):
    from neo4j.exceptions import ConstraintError

    def constraints():
        records, _, _ = clean_db.execute_query("SHOW CONSTRAINTS YIELD name, labelsOrTypes, properties, type",
                                               database_=neo4j_database)
        return {(r["name"], r["labelsOrTypes"][0], r["properties"][0], r["type"]) for r in records}

    first = cli("init")
    assert first.exit_code == 0, f"{first.output}\n{first.exception}"
    after_first = constraints()
    second = cli("init")
    assert second.exit_code == 0, f"{second.output}\n{second.exception}"
    assert constraints() == after_first

    unique = {(label, prop) for _, label, prop, kind in after_first if kind == "UNIQUENESS"}
    assert EXPECTED_CONSTRAINTS <= unique
    records, _, _ = clean_db.execute_query(
        "SHOW INDEXES YIELD labelsOrTypes, properties, type WHERE type = 'RANGE' RETURN labelsOrTypes, properties",
        database_=neo4j_database,
    )
    indexes = [(r["labelsOrTypes"], r["properties"]) for r in records]
    assert (["Rollout"], ["scope"]) in indexes
    assert (["COMPOSES"], ["scope", "level"]) in indexes

    clean_db.execute_query("CREATE (:Skill {id: 'dup'})", database_=neo4j_database)
    with pytest.raises(ConstraintError):
        clean_db.execute_query("CREATE (:Skill {id: 'dup'})", database_=neo4j_database)


def test_initial_password_is_never_on_a_command_line(private_server, monkeypatch):
    """Issue 13, defect 9: neo4j-admin gets the password from a 0600 @file, not argv."""
    import hashlib
    import subprocess

    seen: list[list[str]] = []
    real_run = subprocess.run

    def recording_run(cmd, *args, **kwargs):
        seen.append(list(cmd))
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording_run)
    server = private_server
    server.workspace.mkdir(parents=True, exist_ok=True)
    server.conf_dir.mkdir(parents=True, exist_ok=True)
    (server.conf_dir / "neo4j.conf").write_text(f"server.directories.data={server.data_dir}\n")
    assert server._set_initial_password() is True
    password = server.read_password()
    assert password and seen
    assert not any(password in arg for cmd in seen for arg in cmd)
    assert not (server.workspace / ".initial-password.args").exists()
    # neo4j-admin stored the hash of exactly this password (SHA-256, salted, 1024 rounds).
    user, cred = (server.data_dir / "dbms" / "auth.ini").read_text().strip().split(":")[:2]
    algo, digest, salt, rounds = cred.split(",")
    h = hashlib.sha256(bytes.fromhex(salt) + password.encode()).digest()
    for _ in range(int(rounds) - 1):
        h = hashlib.sha256(h).digest()
    assert (user, algo, h.hex()) == ("neo4j", "SHA-256", digest)


def test_init_keys_tasks_of_older_graphs_by_the_default_environment(clean_db, neo4j_database):
    """The schema's one migration: a Task stored before tasks had a key gets ``source:id``, and one stored before
    tasks had a source gets the default environment's name (passed in as a parameter, not written in the file)."""
    clean_db.execute_query("CREATE (:Task {id: 'old_0'}), (:Task {id: 'old_1', source: 'mine'})",
                           database_=neo4j_database)
    result = cli("init")
    assert result.exit_code == 0, f"{result.output}\n{result.exception}"
    records, _, _ = clean_db.execute_query("MATCH (t:Task) RETURN t.id AS id, t.key AS key ORDER BY id",
                                           database_=neo4j_database)
    assert [(r["id"], r["key"]) for r in records] == [("old_0", f"{DEFAULT.name}:old_0"), ("old_1", "mine:old_1")]
