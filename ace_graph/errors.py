"""One exception base for ACE; a subclass per failure point.

Every message says what went wrong, why, and how to fix it.
"""


class AceError(Exception):
    """Base of every error ACE raises on purpose."""


class ConfigError(AceError):
    """A setting, flag or input file is invalid."""


class ServerError(AceError):
    """The managed Neo4j server could not be installed, started or stopped."""


class ConnectionError_(AceError):
    """ACE could not reach or authenticate against Neo4j."""


class TaskLoadError(AceError):
    """A task set could not be loaded."""


class RolloutFormatError(AceError):
    """A rollout line is not in a format ACE accepts."""
