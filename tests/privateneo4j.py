"""A managed Neo4j of a test's own (workspace under tmp_path, free ports, small memory), for the integration
tests that start, stop or kill a server: the one the rest of the suite uses is not disturbed."""

from __future__ import annotations

import contextlib
import shutil
import socket
from pathlib import Path
from typing import Iterator

import pytest

from ace_graph.server import ManagedNeo4j


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def private_neo4j(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ManagedNeo4j]:
    """A ManagedNeo4j (not started) in ``tmp_path/ace``, on free ports, with every NEO4J_* connection setting
    cleared; its jars are linked from the surrounding workspace when that has them (otherwise it resolves
    them itself).  Stopped at the end, its workspace removed (a few hundred MB of store and logs: pytest
    keeps three runs of tmp_path)."""
    main = ManagedNeo4j()  # the workspace of the surrounding environment (CI's ACE_HOME)
    monkeypatch.setenv("ACE_HOME", str(tmp_path / "ace"))
    monkeypatch.setenv("ACE_NEO4J_BOLT_PORT", str(free_port()))
    monkeypatch.setenv("ACE_NEO4J_HTTP_PORT", str(free_port()))
    monkeypatch.setenv("ACE_NEO4J_HEAP", "512m")
    monkeypatch.setenv("ACE_NEO4J_PAGECACHE", "128m")
    for var in ("NEO4J_URI", "NEO4J_USER", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.delenv(var, raising=False)
    server = ManagedNeo4j()
    if main.is_installed():
        server.workspace.mkdir(parents=True, exist_ok=True)
        server.lib_dir.symlink_to(main.lib_dir.resolve(), target_is_directory=True)
    try:
        yield server
    finally:
        server.stop(timeout=60)
        shutil.rmtree(tmp_path / "ace", ignore_errors=True)
