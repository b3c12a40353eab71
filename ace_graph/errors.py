"""The graph layer's errors, on top of ``ace_env.errors``.

``AceError`` and the input errors live in ``ace_env`` (the bottom layer);
they are re-exported here so graph code has one place to import from.
"""

from ace_env.errors import AceError, ConfigError, RolloutFormatError, TaskLoadError

__all__ = ["AceError", "ConfigError", "ConnectionError_", "RolloutFormatError", "IngestIncomplete", "QueryModeError",
           "RolloutIdConflict", "ScopeError", "ServerError", "TaskLoadError"]


class ServerError(AceError):
    """The managed Neo4j server could not be installed, started or stopped."""


class ConnectionError_(AceError):
    """ACE could not reach or authenticate against Neo4j."""


class IngestIncomplete(AceError):
    """An ingest stopped part-way; its scope is marked incomplete until a rerun completes it."""


class QueryModeError(ConfigError):
    """A query whose header says ``Mode: write`` was asked to run on a read path."""


class ScopeError(ConfigError):
    """A scope that does not exist or does not belong where it was used."""


class RolloutIdConflict(RolloutFormatError):
    """One rollout id names two different rollouts of a scope (in the files given, or in a file and the graph)."""
