"""Where the graph lives: Neo4j settings and the shipped Cypher folder.

Settings come from environment variables; command-line flags override them
where a command offers one.  The workspace folder itself is
``ace_env.workspace.ace_home`` (re-exported here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ace_env.workspace import ace_home  # noqa: F401  (re-exported)
from ace_graph import server

CYPHER_DIR = Path(str(resources.files("cypher")))


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

    managed = server.ManagedNeo4j()
    return Neo4jSettings(managed.bolt_uri, "neo4j", managed.read_password(), database, False)
