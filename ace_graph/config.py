"""Where the graph lives: Neo4j settings and the shipped Cypher folder.

Settings come from environment variables; command-line flags override them
where a command offers one.  The workspace folder itself is
``ace_env.workspace.ace_home`` (re-exported here).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from ace_env.redact import redact_url
from ace_env.workspace import ace_home  # noqa: F401  (re-exported)
from ace_graph import server
from ace_graph.errors import ConfigError

CYPHER_DIR = Path(str(resources.files("cypher")))


@dataclass(frozen=True)
class Neo4jSettings:
    """Where ACE finds Neo4j: an external server (NEO4J_URI) or the managed one."""

    uri: str  # never with user information: credentials are in ``user`` and ``password``
    user: str
    password: str | None = field(repr=False)
    database: str
    external: bool


def neo4j_settings() -> Neo4jSettings:
    """Read NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE.

    Without NEO4J_URI, ACE uses its managed local server and the password it
    generated in the workspace.  A user and password written into NEO4J_URI
    (``neo4j://USER:PASSWORD@HOST:7687``) are used as NEO4J_USER and NEO4J_PASSWORD
    and taken out of the URI (the driver refuses user information in a URI, and a
    URI is shown in messages: a password never is).
    """
    uri = os.environ.get("NEO4J_URI")
    database = os.environ.get("NEO4J_DATABASE", "neo4j")
    user = os.environ.get("NEO4J_USER", os.environ.get("NEO4J_USERNAME"))
    password = os.environ.get("NEO4J_PASSWORD")
    if uri:
        uri, uri_user, uri_password = split_credentials(uri)
        for flag, given, in_uri in (("NEO4J_USER", user, uri_user), ("NEO4J_PASSWORD", password, uri_password)):
            if given is not None and in_uri is not None and given != in_uri:
                raise ConfigError(f"NEO4J_URI carries a {'user' if flag == 'NEO4J_USER' else 'password'} and "
                                  f"{flag} gives another: give it once (in {flag}, or in NEO4J_URI)")
        return Neo4jSettings(uri, user or uri_user or "neo4j", password if password is not None else uri_password,
                             database, True)

    managed = server.ManagedNeo4j()
    return Neo4jSettings(managed.bolt_uri, "neo4j", managed.read_password(), database, False)


def split_credentials(uri: str) -> tuple[str, str | None, str | None]:
    """``(uri without user information, user, password)``; a malformed URI comes back as it is (the driver
    refuses it, in a message that shows it through :func:`ace_env.redact.redact_url`)."""
    try:
        parts = urlsplit(uri)
        user, password, host = parts.username, parts.password, parts.hostname
        port = parts.port
    except ValueError:
        return uri, None, None
    if user is None and password is None:
        return uri, None, None
    netloc = parts.netloc.rpartition("@")[2]
    if host is None and port is None and not netloc:
        return redact_url(uri), None, None
    return (urlunsplit(parts._replace(netloc=netloc)), unquote(user) if user else None,
            unquote(password) if password is not None else None)
