"""The graph layer's errors, on top of ``ace_env.errors``.

``AceError`` and the input errors live in ``ace_env`` (the bottom layer);
they are re-exported here so graph code has one place to import from.
"""

from ace_env.errors import AceError, ConfigError, RolloutFormatError, TaskLoadError

__all__ = ["AceError", "ConfigError", "ConnectionError_", "GraphError", "RolloutFormatError", "IngestIncomplete", "QueryModeError",
           "RolloutIdConflict", "ScopeError", "ServerError", "TaskLoadError"]


class GraphError(AceError):
    """Base of every error the graph layer raises on purpose (a caller may catch it, or ``AceError`` for all of
    ACE); the input errors it shares with ``ace_env`` keep their ``ace_env`` class too."""


class ServerError(GraphError):
    """The managed Neo4j server could not be installed, started or stopped."""


class ConnectionError_(GraphError):
    """ACE could not reach or authenticate against Neo4j."""


class IngestIncomplete(GraphError):
    """An ingest stopped part-way; its scope is marked incomplete until a rerun completes it."""


class QueryModeError(GraphError, ConfigError):
    """A query whose header says ``Mode: write`` was asked to run on a read path."""


class ScopeError(GraphError, ConfigError):
    """A scope that does not exist or does not belong where it was used."""


class RolloutIdConflict(GraphError, RolloutFormatError):
    """One rollout id names two different rollouts of a scope (in the files given, or in a file and the graph)."""
