"""The frontier and the weak compositions of a scope, as one Python API.

Every caller (``ace query``, ``ace synth``, the demo, the curriculum) pulls
them through :func:`frontier` and :func:`weak_compositions` with a
:class:`FrontierConfig`, so the thresholds are written once: here, and equal
to the defaults in the ``:params`` lines of ``cypher/frontier.cypher`` and
``cypher/weak-compositions.cypher`` (a test holds them together).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.queries import INT64_MAX
from ace_graph.scopes import LEVELS, check_level, require_scope
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT


@dataclass(frozen=True)
class FrontierConfig:
    """Thresholds of the weak-composition and frontier queries; every field says what it does."""

    level: str = field(default="skill", metadata={"help": "Granularity: 'skill' or 'tool'."})
    min_support: int = field(default=MIN_SUPPORT, metadata={"help": (
        "Minimum times b was reached right after a for the edge a→b to count."), "min": 1, "max": 1_000_000})
    min_lift: float = field(default=MIN_LIFT, metadata={"help": (
        "How far above 0 the fragility's 95% lower bound must be (guards against testing many edges at once)."),
        "min": -1.0, "max": 1.0})
    min_prereq: float = field(default=0.6, metadata={"help": (
        "Frontier only: success of a, and of b away from a, must each reach this."), "min": 0.0, "max": 1.0})
    limit: int = field(default=20, metadata={"help": "Most rows returned.", "min": 1, "max": 100_000})

    def __post_init__(self) -> None:
        check_level(self.level)

        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"FrontierConfig.{name}={getattr(self, name)!r}: {why}")

        for name in ("min_support", "limit"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= INT64_MAX:
                raise bad(name, "must be an integer from 1 to 2^63-1")
        for name, lo, hi in (("min_lift", -1.0, 1.0), ("min_prereq", 0.0, 1.0)):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v) or not lo <= v <= hi:
                raise bad(name, f"must be a number in [{lo:g}, {hi:g}]")

    def params(self, query: str) -> dict[str, Any]:
        """The fields the named query takes, as its parameters."""
        wanted = queries.load(query).params
        return {k: v for k, v in asdict(self).items() if k in wanted}


def _run(store: Any, name: str, scope: str, config: FrontierConfig, check: bool) -> list[dict[str, Any]]:
    if check:
        require_scope(store, scope)
    return store.run(name, scope=scope, **config.params(name))


def frontier(store: Any, scope: str, config: FrontierConfig | None = None, check: bool = True) -> list[dict[str, Any]]:
    """Weak compositions whose endpoints are strong on their own (``cypher/frontier.cypher``).

    With ``check`` (the default) an unknown scope is an error listing the scopes that exist.
    """
    return _run(store, "frontier", scope, config or FrontierConfig(), check)


def weak_compositions(
    store: Any, scope: str, config: FrontierConfig | None = None, check: bool = True
) -> list[dict[str, Any]]:
    """Compositions a→b where b fails significantly more often right after a (``weak-compositions``)."""
    return _run(store, "weak-compositions", scope, config or FrontierConfig(), check)


def why_empty(store: Any, scope: str, level: str, min_support: int) -> str:
    """Why a composition query of ``scope`` returned no rows, in one line."""
    row = store.run("composition-support", scope=scope, level=level, min_support=min_support)[0]
    total, below = row["compositions"], row["below_min_support"]
    if not total:
        return f"0 rows: scope {scope} measured no {level} compositions"
    if below == total:
        return (f"0 rows: all {total} {level} compositions below min_support={min_support} "
                f"(largest support {row['max_support']})")
    return (f"0 rows: {below} of {total} {level} compositions below min_support={min_support}; "
            "none of the rest passed the other thresholds")


__all__ = ["LEVELS", "FrontierConfig", "frontier", "weak_compositions", "why_empty"]
