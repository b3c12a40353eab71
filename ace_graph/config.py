"""Workspace and settings.

Everything ACE writes lives under one workspace folder, ``ACE_HOME``
(default ``~/.ace``): the managed Neo4j server (artifacts, data, logs, the
generated password), runs and caches.  Settings come from environment
variables; command-line flags override them where a command offers one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CYPHER_DIR = REPO_ROOT / "cypher"


def ace_home() -> Path:
    """The workspace folder (created on first use, owner-only)."""
    home = Path(os.environ.get("ACE_HOME", Path.home() / ".ace")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    try:
        home.chmod(0o700)
    except OSError:  # a shared or read-only mount: leave its mode alone
        pass
    return home


@dataclass(frozen=True)
class Neo4jSettings:
    """Where ACE finds Neo4j: an external server (NEO4J_URI) or the managed one."""

    uri: str
    user: str
    password: str | None
    database: str
    external: bool


def neo4j_settings() -> Neo4jSettings:
    """Read NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE.

    Without NEO4J_URI, ACE uses its managed local server and the password it
    generated in the workspace.
    """
    uri = os.environ.get("NEO4J_URI")
    database = os.environ.get("NEO4J_DATABASE", "neo4j")
    user = os.environ.get("NEO4J_USER", os.environ.get("NEO4J_USERNAME", "neo4j"))
    if uri:
        return Neo4jSettings(uri, user, os.environ.get("NEO4J_PASSWORD"), database, True)
    from ace_graph import server

    managed = server.ManagedNeo4j()
    return Neo4jSettings(managed.bolt_uri, "neo4j", managed.read_password(), database, False)
