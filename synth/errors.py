"""Errors of the synthesis layer, on top of ``ace_env.errors`` (one root: ``AceError``)."""

from __future__ import annotations

from ace_env.errors import AceError


class RewriterError(AceError):
    """The rewriting endpoint could not be reached or answered nonsense."""
