"""Issue 35's remainder without services: a Neo4j address that never speaks Bolt, rollout ids with control
characters, an endless standard input, the managed server's guards.  Each test failed before the fix."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from ace.cli import main, options
from ace_env.errors import ConfigError, RolloutFormatError
from ace_env.formats import read_any
from ace_env.tau2.results import read_results
from ace_graph.db import connect_seconds, get_driver, within
from ace_graph.errors import ConnectionError_
from ace_graph.server import ManagedNeo4j, ServerSettings


@pytest.fixture
def blackhole():
    """A local address that accepts TCP connections and never answers (what a wrong port or a proxy does)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"bolt://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for s in held:
        s.close()
    server.close()


def test_a_neo4j_that_never_answers_is_given_up_after_the_connect_timeout(blackhole, monkeypatch, capsys):
    # Before: the driver's own 60 s, in silence, with no setting to shorten it.
    monkeypatch.setenv("NEO4J_URI", blackhole)
    monkeypatch.setenv("NEO4J_PASSWORD", "secret-pw")
    monkeypatch.setenv("ACE_NEO4J_CONNECT_TIMEOUT", "2")
    started = time.monotonic()
    with pytest.raises(ConnectionError_, match="within 2 s .ACE_NEO4J_CONNECT_TIMEOUT."):
        get_driver()
    assert time.monotonic() - started < 10
    started = time.monotonic()
    assert main(["scopes"]) == 1
    err = capsys.readouterr().err
    assert time.monotonic() - started < 10
    assert err.startswith("error: ") and err.count("error:") == 1 and "secret-pw" not in err, err


def test_connect_timeout_default_and_bounds(monkeypatch):
    monkeypatch.delenv("ACE_NEO4J_CONNECT_TIMEOUT", raising=False)
    assert connect_seconds() == 15
    for bad in ("0", "-1", "nan", "inf", "601", "soon"):
        monkeypatch.setenv("ACE_NEO4J_CONNECT_TIMEOUT", bad)
        with pytest.raises(ConfigError, match="ACE_NEO4J_CONNECT_TIMEOUT"):
            connect_seconds()


def test_within_returns_raises_or_gives_up():
    assert within(5, lambda x: x + 1, 1) == 2
    with pytest.raises(KeyError):
        within(5, {}.__getitem__, "k")
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        within(0.2, release.wait, 30)
    assert time.monotonic() - started < 5
    release.set()


@pytest.mark.parametrize("rollout_id", ["a\nerror: forged", "a\x1b[2Jb", "tab\there", "del\x7f", "c1\x85",
                                        "rtl\u202eevil", "zw\u200bj", "line\u2028sep"])
def test_a_rollout_id_with_a_control_character_is_refused_naming_its_line(tmp_path, rollout_id):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"rollout_id": "fine", "task_id": "t", "turns": []}) + "\n"
                    + json.dumps({"rollout_id": rollout_id, "task_id": "t", "turns": []}) + "\n")
    with pytest.raises(RolloutFormatError, match=r"line 2: 'rollout_id' holds the control character U\+"):
        list(read_any(path))


def test_printable_rollout_ids_are_kept(tmp_path):
    ids = ["plain", "with space", "café-ü", "数据-1", "a/b:c"]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"rollout_id": i, "task_id": "t", "turns": []}) + "\n" for i in ids))
    assert [r.rollout_id for r in read_any(path)] == ids


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_standard_input_is_copied_up_to_its_cap(tmp_path, monkeypatch):
    # Before: `yes | ace ingest -` copied until the temporary folder's disk was full.
    monkeypatch.setattr(options, "MAX_STDIN_BYTES", 10)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr("sys.stdin", _Stdin(b"x" * 11))
    with pytest.raises(ConfigError, match="standard input .-. holds more than"):
        options.expand_inputs([Path("-")], stdin=True)
    assert list(tmp_path.iterdir()) == []  # the partial copy is removed at once
    monkeypatch.setattr("sys.stdin", _Stdin(b"y" * 10))
    (path,) = options.expand_inputs([Path("-")], stdin=True)
    assert path.read_bytes() == b"y" * 10


def test_managed_server_config_has_runaway_guards(tmp_path):
    conf = ManagedNeo4j(tmp_path, ServerSettings(heap="512m")).render_conf().splitlines()
    assert "db.transaction.timeout=30m" in conf
    assert "db.memory.transaction.max=262144k" in conf  # half the heap: one transaction cannot starve the rest
    assert "db.memory.transaction.max=1048576k" in ManagedNeo4j(tmp_path, ServerSettings(heap="2g")).render_conf()
    # under 1 MiB Neo4j refuses the setting (and would fail before the JVM says the heap is too small)
    assert "db.memory.transaction.max" not in ManagedNeo4j(tmp_path, ServerSettings(heap="1k")).render_conf()


def test_a_tau2_simulation_id_with_a_control_character_is_refused(tmp_path):
    # τ²'s own result files are the other rollout reader: the same rule for their simulation ids.
    results = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "tau2-results" / "gpt-4.1_airline_1trial.json"
    doc = json.loads(results.read_text())
    doc["simulations"][1]["id"] = "sim\nerror: forged"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(RolloutFormatError, match=r"simulations\[1\]: simulation id .* holds the control character U\+000A") as e:
        read_results(path)
    assert "\n" not in str(e.value)
