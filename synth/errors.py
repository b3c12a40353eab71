"""Errors of the synthesis layer, on top of ``ace_env.errors`` (one root: ``AceError``)."""

from __future__ import annotations

from ace_env.errors import AceError


class SynthError(AceError):
    """Base of every error the synthesis layer raises on purpose (a caller may catch it, or ``AceError``)."""


class RewriterError(SynthError):
    """The rewriting endpoint could not be reached or answered nonsense."""
