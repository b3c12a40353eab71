"""Errors of the app, on top of ``ace_env.errors`` (one root: ``AceError``)."""

from __future__ import annotations

from ace_env.errors import AceError


class AppError(AceError):
    """Base of every error the dashboard raises on purpose."""


class Unavailable(AppError):
    """The graph cannot be read; the message says what to run."""


class QueryFailed(AppError):
    """Neo4j refused a query (a wrong parameter type, a write in a read session, ...)."""
