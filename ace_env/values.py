"""Argument values: their scalar leaves, and which of them are too common to mean anything.

One definition each, used by the tagger (argument provenance), the task
checks and the synthesis strategies.
"""

from __future__ import annotations

import math
from typing import Any

#: Numbers too common to say where a value came from (counters, flags, first ids, offsets).
TRIVIAL_NUMBERS = (-2.0, -1.0, 0.0, 1.0, 2.0)


def number(value: Any) -> float | None:
    """The value as a finite float when it is an int or float (never a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def is_trivial(value: Any) -> bool:
    """Whether a value is too common to trace: None, a bool, a string of fewer than two non-blank characters,
    or a whole number from -2 to 2.

    The one definition used by the tagger, the task checks, the strategies and the user simulator.  An
    agent writes such a value without having read it anywhere, so it is never evidence that an argument
    came from the user or from a tool output, and it needs no provenance.  Why this rule: a counter, flag,
    first id or offset (0, 1, 2, -1) and a one-character string ('a', '/') are written from nowhere; a
    two-character string is a state or country code ('CA'), a unit or a file name the user gives, and a
    fractional number (1.5) is a price or a rate read from somewhere, so neither is trivial (the checks had
    their own rules before: strings under 3 characters and any number in [-2, 2] counted as trivial, which
    let such values pass the provenance check unread).

    >>> [is_trivial(v) for v in (None, True, " ", "a", 1, -2, 2.0)]
    [True, True, True, True, True, True, True]
    >>> [is_trivial(v) for v in ("CA", 3, 1.5, "USR002", [])]
    [False, False, False, False, False]
    """
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return len(value.strip()) < 2
    n = number(value)
    return n is not None and n in TRIVIAL_NUMBERS


def leaves(value: Any) -> list[Any]:
    """Every scalar inside nested dicts (their values), lists, tuples and sets, in order."""
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, (set, frozenset)):
            stack.extend(sorted(v, key=repr, reverse=True))
        else:
            out.append(v)
    return out


__all__ = ["TRIVIAL_NUMBERS", "is_trivial", "leaves", "number"]
