"""Errors of the CLI and the composition root, on top of ``ace_env.errors`` (one root: ``AceError``)."""

from __future__ import annotations

from ace_env.errors import ConfigError


class Stopped(ConfigError):
    """A command stopped by a signal (SIGTERM, SIGHUP) part-way."""
