"""Errors of the app, on top of ``ace_env.errors`` (one root: ``AceError``)."""

from __future__ import annotations

from ace_env.errors import AceError


class Unavailable(AceError):
    """The graph cannot be read; the message says what to run."""


class QueryFailed(AceError):
    """Neo4j refused a query (a wrong parameter type, a write in a read session, ...)."""
