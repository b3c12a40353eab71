"""Managed server settings, generated neo4j.conf and tool checks (no server started)."""

from __future__ import annotations

import os
import re
import socket
import stat
import textwrap

import pytest

from ace_graph import server as srv
from ace_graph.errors import ConfigError, ServerError
from ace_graph.server import ManagedNeo4j, ServerSettings


def conf_dict(text: str) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")]
    return {k: v for k, v in pairs}


def fake_tool(tmp_path, name: str, body: str):
    """An executable shell script standing in for java or mvn."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("ACE_NEO4J_BOLT_PORT", "ACE_NEO4J_HTTP_PORT", "ACE_NEO4J_HEAP", "ACE_NEO4J_PAGECACHE",
                "ACE_JAVA", "ACE_MVN", "NEO4J_URI"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_conf_binds_localhost_with_configured_ports_and_memory(tmp_path):
    s = ServerSettings(bolt_port=17001, http_port=17002, heap="768m", pagecache="300m", java="java")
    m = ManagedNeo4j(tmp_path / "ws", s)
    conf = conf_dict(m.render_conf())
    assert conf["server.default_listen_address"] == "127.0.0.1"
    assert conf["server.bolt.listen_address"] == "127.0.0.1:17001"
    assert conf["server.bolt.advertised_address"] == "127.0.0.1:17001"
    assert conf["server.http.listen_address"] == "127.0.0.1:17002"
    assert conf["server.http.advertised_address"] == "127.0.0.1:17002"
    assert conf["server.https.enabled"] == "false"
    assert conf["server.memory.heap.initial_size"] == "768m"
    assert conf["server.memory.heap.max_size"] == "768m"
    assert conf["server.memory.pagecache.size"] == "300m"
    assert conf["dbms.security.auth_enabled"] == "true"
    for key, value in conf.items():
        if key.endswith("listen_address") or key.endswith("advertised_address"):
            assert value.startswith("127.0.0.1"), key
        if key.startswith("server.directories."):
            assert value.startswith(str(tmp_path / "ws")), key
    assert m.bolt_uri == "bolt://127.0.0.1:17001"
    assert m.http_url == "http://127.0.0.1:17002"


def test_write_conf_creates_file_and_folders(tmp_path):
    m = ManagedNeo4j(tmp_path / "ws", ServerSettings(bolt_port=17001, http_port=17002))
    path = m.write_conf()
    assert path == tmp_path / "ws" / "conf" / "neo4j.conf"
    assert conf_dict(path.read_text())["server.bolt.listen_address"] == "127.0.0.1:17001"
    assert m.data_dir.is_dir() and m.logs_dir.is_dir() and m.run_dir.is_dir()


def test_settings_come_from_environment(clean_env):
    clean_env.setenv("ACE_NEO4J_BOLT_PORT", "27687")
    clean_env.setenv("ACE_NEO4J_HTTP_PORT", "27474")
    clean_env.setenv("ACE_NEO4J_HEAP", "1G")
    clean_env.setenv("ACE_NEO4J_PAGECACHE", "512m")
    clean_env.setenv("ACE_JAVA", "/opt/jdk/bin/java")
    s = ServerSettings.from_env()
    assert (s.bolt_port, s.http_port, s.heap, s.pagecache, s.java) == (27687, 27474, "1g", "512m", "/opt/jdk/bin/java")


def test_defaults(clean_env):
    clean_env.setenv("JAVA_HOME", "/nonexistent-jdk")
    s = ServerSettings.from_env()
    assert (s.bolt_port, s.http_port, s.heap, s.pagecache, s.java) == (7687, 7474, "2g", "2g", "java")


@pytest.mark.parametrize(
    "var,value,match",
    [
        ("ACE_NEO4J_BOLT_PORT", "abc", "ACE_NEO4J_BOLT_PORT"),
        ("ACE_NEO4J_HTTP_PORT", "70000", "ACE_NEO4J_HTTP_PORT"),
        ("ACE_NEO4J_HEAP", "lots", "ACE_NEO4J_HEAP"),
        ("ACE_NEO4J_PAGECACHE", "2 GB", "ACE_NEO4J_PAGECACHE"),
        ("ACE_NEO4J_HTTP_PORT", "7687", "different ports"),
    ],
)
def test_invalid_settings_are_rejected(clean_env, var, value, match):
    clean_env.setenv(var, value)
    with pytest.raises(ConfigError, match=match):
        ServerSettings.from_env()


def test_missing_java_says_how_to_fix(clean_env, tmp_path):
    clean_env.setenv("ACE_JAVA", str(tmp_path / "no" / "java"))
    m = ManagedNeo4j(tmp_path / "ws")
    with pytest.raises(ServerError) as e:
        m.install()
    msg = str(e.value)
    assert "Java was not found" in msg and "ACE_JAVA" in msg and "openjdk-17" in msg
    clean_env.setattr(ManagedNeo4j, "is_installed", lambda self: True)
    with pytest.raises(ServerError, match="Java was not found"):
        m.start()


def test_old_java_is_rejected(tmp_path):
    java = fake_tool(tmp_path, "java", """\
        echo 'openjdk version "11.0.22" 2024-01-16' >&2
        """)
    with pytest.raises(ServerError, match=r"Java 11; Neo4j 5\.26 needs Java 17"):
        srv.java_version(str(java))
    java8 = fake_tool(tmp_path, "java8", """\
        echo 'java version "1.8.0_402"' >&2
        """)
    with pytest.raises(ServerError, match="Java 8;"):
        srv.java_version(str(java8))


def test_maven_failure_reports_its_errors(clean_env, tmp_path):
    mvn = fake_tool(tmp_path, "mvn", """\
        echo '[INFO] Scanning for projects...'
        echo '[ERROR] Failed to execute goal on project ace-neo4j-server: Could not resolve dependencies'
        echo '[ERROR] Could not transfer artifact org.neo4j:neo4j:pom:5.26.30 from/to central'
        exit 1
        """)
    clean_env.setenv("ACE_MVN", str(mvn))
    clean_env.setattr(srv, "java_version", lambda java: 17)
    m = ManagedNeo4j(tmp_path / "ws")
    with pytest.raises(ServerError) as e:
        m.install()
    msg = str(e.value)
    assert "Could not transfer artifact org.neo4j:neo4j:pom:5.26.30" in msg
    assert "Scanning for projects" not in msg
    assert not m.is_installed()


def test_missing_maven_says_how_to_fix(clean_env, tmp_path):
    clean_env.setenv("ACE_MVN", str(tmp_path / "no-mvn"))
    clean_env.setattr(srv, "java_version", lambda java: 17)
    with pytest.raises(ServerError, match="apt-get install -y maven"):
        ManagedNeo4j(tmp_path / "ws").install()


def test_start_before_install_says_run_install(clean_env, tmp_path):
    with pytest.raises(ServerError, match="ace db install"):
        ManagedNeo4j(tmp_path / "ws").start()


def test_pinned_version_is_neo4j_5_26():
    assert re.fullmatch(r"5\.26\.\d+", srv.pinned_version())


def test_port_in_use_is_reported(clean_env, tmp_path):
    clean_env.setattr(ManagedNeo4j, "is_installed", lambda self: True)
    clean_env.setattr(srv, "java_version", lambda java: 17)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        m = ManagedNeo4j(tmp_path / "ws", ServerSettings(bolt_port=port, http_port=port + 1 if port < 65535 else 1))
        with pytest.raises(ServerError) as e:
            m.start()
    msg = str(e.value)
    assert f"127.0.0.1:{port} is already in use" in msg and "ACE_NEO4J_BOLT_PORT" in msg
    assert not m.pid_file.exists()


def test_first_start_creates_private_password_and_sets_it(tmp_path):
    calls = tmp_path / "calls"
    java = fake_tool(tmp_path, "java", f"""\
        if [ "$1" = "-version" ]; then echo 'openjdk version "17.0.9"' >&2; exit 0; fi
        echo "$NEO4J_HOME|$*" >> {calls}
        """)
    m = ManagedNeo4j(tmp_path / "ws", ServerSettings(java=str(java)))
    m.workspace.mkdir()
    assert m.read_password() is None
    assert m._set_initial_password() is True
    password = m.read_password()
    assert password and len(password) >= 24
    assert stat.S_IMODE(os.stat(m.password_file).st_mode) == 0o600
    home, args = calls.read_text().strip().split("|")
    assert home == str(m.workspace)
    # The password never appears on the command line (issue 13): neo4j-admin reads it from a 0600 @file,
    # removed after the command ran.
    assert password not in args
    args_file = m.workspace / ".initial-password.args"
    assert args.endswith(f"org.neo4j.cli.AdminTool dbms set-initial-password @{args_file}")
    assert not args_file.exists()
    # a second start keeps the password and does not call neo4j-admin again
    assert m._set_initial_password() is False
    assert m.read_password() == password
    assert len(calls.read_text().splitlines()) == 1


def test_failed_admin_tool_leaves_no_password_file(tmp_path):
    java = fake_tool(tmp_path, "java", """\
        if [ "$1" = "-version" ]; then echo 'openjdk version "17.0.9"' >&2; exit 0; fi
        echo 'boom: cannot write auth.ini' >&2; exit 3
        """)
    m = ManagedNeo4j(tmp_path / "ws", ServerSettings(java=str(java)))
    m.workspace.mkdir()
    with pytest.raises(ServerError, match="boom: cannot write auth.ini"):
        m._set_initial_password()
    assert not m.password_file.exists()


def test_stale_pid_file_means_not_running(tmp_path):
    m = ManagedNeo4j(tmp_path / "ws", ServerSettings(bolt_port=17001, http_port=17002))
    m.workspace.mkdir()
    m.pid_file.write_text(f"{os.getpid()}\n")  # alive, but not a Neo4j server
    st = m.status()
    assert st.running is False and st.pid is None
    assert m.stop().message == "not running"
    assert not m.pid_file.exists()


def test_get_driver_without_managed_password_says_start_server(clean_env, tmp_path):
    from ace_graph.db import get_driver
    from ace_graph.errors import ConnectionError_

    clean_env.setenv("ACE_HOME", str(tmp_path / "home"))
    with pytest.raises(ConnectionError_, match="ace db start"):
        get_driver()


def test_get_driver_reports_unreachable_and_invalid_addresses(clean_env):
    from ace_graph.db import get_driver
    from ace_graph.errors import ConnectionError_

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        clean_env.setenv("NEO4J_URI", f"bolt://127.0.0.1:{port}")
        clean_env.setenv("NEO4J_PASSWORD", "x" * 12)
        with pytest.raises(ConnectionError_, match=rf"(?s)Cannot reach Neo4j at bolt://127.0.0.1:{port}.*NEO4J_URI"):
            get_driver()
    clean_env.setenv("NEO4J_URI", "foo://nowhere")
    with pytest.raises(ConnectionError_, match="Invalid Neo4j address"):
        get_driver()


def test_stop_kills_only_after_timeout_and_says_so(tmp_path):
    import subprocess

    m = ManagedNeo4j(tmp_path / "ws", ServerSettings(bolt_port=17001, http_port=17002))
    m.workspace.mkdir()
    # a stand-in whose command line looks like our server and that ignores SIGTERM
    proc = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done",
         srv.ENTRY_POINT, f"--home-dir={m.workspace}"],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == b"ready\n"
        m.pid_file.write_text(f"{proc.pid}\n")
        assert m.status().running and m.status().pid == proc.pid
        st = m.stop(timeout=1.0)
        assert "SIGKILL" in st.message and "did not shut down within 1 s" in st.message
        assert proc.wait(timeout=5) == -9
        assert not m.pid_file.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_generated_passwords_never_look_like_an_option():
    from ace_graph.server import new_password

    drawn = [new_password() for _ in range(2000)]
    assert all(p[0].isalpha() and len(p) >= 25 for p in drawn)
    assert len(set(drawn)) == len(drawn)


def _fresh_python(code: str) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_driver_import_skips_pandas_and_pyarrow_and_leaves_them_importable():
    out = _fresh_python("""
        import sys
        from ace_graph.db import import_driver
        import_driver()
        import neo4j._optional_deps as extras
        print("neo4j" in sys.modules, "pandas" in sys.modules, extras.pd is None, extras.pa is None)
        import pandas
        print(pandas.DataFrame({"a": [1]}).shape)
    """)
    assert out.splitlines() == ["True False True True", "(1, 1)"]


def test_driver_import_keeps_pandas_when_it_was_imported_first():
    out = _fresh_python("""
        import pandas
        from ace_graph.db import import_driver
        import_driver()
        import neo4j._optional_deps as extras
        print(extras.pd is pandas)
    """)
    assert out == "True"


@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan", "inf", "1e9"])
def test_retry_seconds_must_be_a_sane_number(clean_env, value):
    from ace_graph.db import get_driver, retry_seconds

    clean_env.setenv("ACE_NEO4J_RETRY_SECONDS", value)
    with pytest.raises(ConfigError, match="ACE_NEO4J_RETRY_SECONDS"):
        retry_seconds()
    clean_env.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    with pytest.raises(ConfigError, match="ACE_NEO4J_RETRY_SECONDS"):
        get_driver(verify=False)


def test_writes_give_up_after_the_configured_retry_time(clean_env):
    import time

    from neo4j.exceptions import ServiceUnavailable

    from ace_graph.db import get_driver

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: every connection is refused
        clean_env.setenv("NEO4J_URI", f"bolt://127.0.0.1:{port}")
        clean_env.setenv("NEO4J_PASSWORD", "x" * 12)
        clean_env.setenv("ACE_NEO4J_RETRY_SECONDS", "1.5")
        driver = get_driver(verify=False)
        start = time.monotonic()
        with pytest.raises(ServiceUnavailable), driver.session() as session:
            session.execute_write(lambda tx: tx.run("RETURN 1").consume())
        waited = time.monotonic() - start
        driver.close()
    assert 1.0 <= waited < 15, waited  # retried for about 1.5 s, not the driver's default 30 s
