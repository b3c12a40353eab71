"""Errors of the CLI and the composition root that are not ``AceError``s (those live in the packages below)."""

from __future__ import annotations


class Stopped(BaseException):
    """A command stopped by a signal (SIGTERM, SIGHUP) part-way.

    Like ``KeyboardInterrupt`` it is not an ``Exception``: code that recovers from any error (a cache
    entry that does not unpickle is rebuilt) must not swallow the signal and carry on.
    """
