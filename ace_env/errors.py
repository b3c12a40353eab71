"""One exception base for all of ACE; a subclass per failure point.

Every message says what went wrong, why, and how to fix it.  Higher layers add
their own subclasses in their own ``errors`` module (``ace_graph.errors`` adds
the server and connection errors), so a caller can catch ``AceError`` alone.
"""


class AceError(Exception):
    """Base of every error ACE raises on purpose."""


class ConfigError(AceError):
    """A setting, flag or input file is invalid."""


class TaskLoadError(AceError):
    """A task set could not be loaded."""


class RolloutFormatError(AceError):
    """A rollout line is not in a format ACE accepts."""


class BudgetExceeded(AceError):
    """A tool call went over its wall-clock or memory budget; ends the rollout (not the run).

    ``kind`` is the verdict's attribution: ``timeout`` or ``resource_limit``.
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ViewError(AceError):
    """A task declares an output view ACE cannot apply."""


class JsonRefused(Exception):
    """A JSON value that is valid for Python's decoder but not for ACE; :func:`ace_env.formats.strict_json` turns it
    into a :class:`RolloutFormatError` (internal: never leaves that function)."""
