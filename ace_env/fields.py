"""Config dataclass fields whose help text and bounds are written once, on the field.

A field declares ``metadata={"help": ..., "min": ..., "max": ...}``; the config's
``__post_init__`` calls :func:`check_bounds`, and the CLI derives each flag's
default, help and shown range from the same field (``ace.cli.options.config_options``).

>>> from dataclasses import dataclass, field
>>> @dataclass
... class C:
...     n: int = field(default=1, metadata={"help": "Things.", "min": 1, "max": 9})
...     def __post_init__(self):
...         check_bounds(self)
>>> C(n=10)
Traceback (most recent call last):
...
ace_env.errors.ConfigError: C.n must be at most 9 (Things.), not 10; give a value from 1 to 9
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from ace_env.errors import ConfigError

#: The largest seed any ACE command takes: numpy, torch and vLLM all take a seed below 2**32.
SEED_MAX = 2**32 - 1


def offset_seed(seed: int, k: int) -> int:
    """The ``k``-th seed of a run seeded ``seed``: ``seed + k``, wrapped into 0..:data:`SEED_MAX` so it stays a
    seed every config takes (``GenerationConfig`` refuses a larger one).

    >>> offset_seed(7, 3), offset_seed(SEED_MAX, 1)
    (10, 0)
    """
    return (seed + k) % (SEED_MAX + 1)


def _number(value: Any) -> str:
    """``10000`` -> ``"10,000"``, ``86400.0`` -> ``"86,400"``, ``0.5`` -> ``"0.5"``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def bounds_text(metadata: Any) -> str:
    """``"1 to 9"``, ``"at least 1"``, ``"at most 9"`` or ``""`` from a field's ``min``/``max`` metadata.

    >>> bounds_text({"min": 0.0, "max": 86_400}), bounds_text({"min": 1, "max": 100_000})
    ('0 to 86,400', '1 to 100,000')
    """
    lo, hi = metadata.get("min"), metadata.get("max")
    if lo is not None and hi is not None:
        return f"{_number(lo)} to {_number(hi)}"
    if lo is not None:
        return f"at least {_number(lo)}"
    if hi is not None:
        return f"at most {_number(hi)}"
    return ""


def bound_error(name: str, value: Any, metadata: Any) -> str | None:
    """Why ``value`` breaks the ``min``/``max`` of a field's ``metadata`` (a number that is not finite
    breaks every bound), as one line that names ``name`` and says how to fix it; ``None`` when it fits."""
    lo, hi = metadata.get("min"), metadata.get("max")
    if lo is None and hi is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} must be a number, not {value!r}"
    why = f" ({metadata['help']})" if metadata.get("help") else ""
    fix = f"give a value {'from' if lo is not None and hi is not None else 'of'} {bounds_text(metadata)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be a finite number{why}, not {value}; {fix}"
    if lo is not None and value < lo:
        return f"{name} must be at least {lo}{why}, not {value}; {fix}"
    if hi is not None and value > hi:
        return f"{name} must be at most {hi}{why}, not {value}; {fix}"
    return None


def check_bounds(config: Any) -> None:
    """Raise :class:`ConfigError` (what, why, how to fix) for the first field outside its ``min``/``max`` metadata."""
    for f in fields(config):
        error = bound_error(f"{type(config).__name__}.{f.name}", getattr(config, f.name), f.metadata)
        if error:
            raise ConfigError(error)
