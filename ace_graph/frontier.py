"""The frontier and the weak compositions of a scope, as one Python API.

Every caller (``ace query``, ``ace synth``, the demo, the curriculum) pulls
them through :func:`frontier` and :func:`weak_compositions` with a
:class:`FrontierConfig`, so the thresholds are written once: here, and equal
to the defaults in the ``:params`` lines of ``cypher/frontier.cypher`` and
``cypher/weak-compositions.cypher`` (a test holds them together).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.queries import INT64_MAX
from ace_graph.scopes import LEVELS, check_level, require_scope
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT


@dataclass(frozen=True)
class FrontierConfig:
    """Thresholds of the weak-composition and frontier queries; every field says what it does."""

    level: str = field(default="tool", metadata={"help": "Granularity: 'skill' or 'tool' (default: tool, whose names read most easily)."})
    min_support: int = field(default=MIN_SUPPORT, metadata={"help": (
        "Minimum times b was reached right after a for the edge a→b to count."), "min": 1, "max": 1_000_000})
    min_lift: float = field(default=MIN_LIFT, metadata={"help": (
        "How far above 0 the fragility's 95% lower bound must be (guards against testing many edges at once)."),
        "min": -1.0, "max": 1.0})
    min_prereq: float = field(default=0.6, metadata={"help": (
        "Frontier only: success of a, and of b away from a, must each reach this."), "min": 0.0, "max": 1.0})
    limit: int = field(default=20, metadata={"help": (
        "Most frontier rows used, strongest evidence first (ace synth aims at these; with a skill-pair "
        "--target, most tool pairs it is aimed through)."), "min": 1, "max": 100_000})

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


def parse_target(text: str) -> tuple[str, str]:
    """``"a>b"`` (tool or skill names; spaces around ``>`` allowed) as ``(a, b)``; a one-line error otherwise."""
    parts = [p.strip() for p in str(text).split(">")]
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"--target {text!r} is not a composition: write FROM>TO, e.g. "
                          "--target 'get_flight_cost>book_flight' (tools) or a pair of skill ids")
    return parts[0], parts[1]


def targeted(store: Any, scope: str, targets: list[str], config: FrontierConfig) -> list[dict[str, Any]]:
    """The tool-level edges synthesis aims at for ``targets`` (``"a>b"`` each), in the frontier's row form.

    A tool composition must be on the scope's tool-level frontier (``config``'s thresholds, every row,
    not just ``config.limit``) with the verdict ``composition``; a skill composition on its skill-level
    frontier, and is then aimed at through the tool pairs that realize it in the scope's rollouts
    (``cypher/skill-composition-tools.cypher``, at most ``config.limit`` of them).  Anything else is
    refused in one line naming the nearest compositions that are on the frontier.
    """
    every = dict(limit=INT64_MAX)
    tool_rows = {f"{r['from']}>{r['to']}": r for r in frontier(store, scope, replace(config, level="tool", **every),
                                                                 check=False)}
    skill_rows = {f"{r['from']}>{r['to']}": r for r in frontier(store, scope, replace(config, level="skill", **every),
                                                                  check=False)}
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    for text in targets:
        a, b = parse_target(text)
        name = f"{a}>{b}"
        row, level = (tool_rows.get(name), "tool") if name in tool_rows else (skill_rows.get(name), "skill")
        if row is None:
            _refuse_weak_prerequisite(store, scope, name, config)
            valid = [k for k, r in {**tool_rows, **skill_rows}.items() if r.get("verdict") != "ambiguous"]
            near = difflib.get_close_matches(name, valid, n=4, cutoff=0.3) or valid[:4]
            raise ConfigError(f"--target {name} is not on the frontier of scope {scope!r} (at these thresholds); "
                              + (f"nearest: {', '.join(near)}" if near else "the frontier is empty"))
        if row.get("verdict", "composition") != "composition":
            raise ConfigError(f"--target {name} is on the frontier of {scope!r} as {row['verdict']!r}: the data "
                              "cannot tell a weak composition from a weak tool; probe it first with `ace diagnose`")
        if level == "tool":
            edges.setdefault((a, b), row)
            continue
        tools = store.run("skill-composition-tools", scope=scope, **{"from": a, "to": b}, limit=config.limit)
        if not tools:
            raise ConfigError(f"--target {name}: no pair of tool calls in the rollouts of {scope!r} realizes this "
                              "skill composition with a failure; aim at a tool composition instead")
        for t in tools:
            edges.setdefault((t["from"], t["to"]), {**t, "skill_target": name})
    return list(edges.values())


def _refuse_weak_prerequisite(store: Any, scope: str, name: str, config: FrontierConfig) -> None:
    """Refuse ``name``, a weak composition kept off the frontier only by ``min_prereq``, saying so.

    The frontier keeps the weak compositions whose two ends are strong on their own; a user who found
    ``a>b`` in ``weak-compositions`` and aims at it learns which end is weak and what would let it in.
    Nothing happens when ``name`` is not such a composition (the caller's "not on the frontier" follows).
    """
    every = dict(limit=INT64_MAX, min_prereq=0.0)
    for level in LEVELS:
        for row in frontier(store, scope, replace(config, level=level, **every), check=False):
            if f"{row['from']}>{row['to']}" != name:
                continue
            weak = [f"{row['from']} succeeds {row['from_success']:.3f}"] if row["from_success"] < config.min_prereq else []
            if row["target_success_elsewhere"] < config.min_prereq:
                weak.append(f"{row['to']} succeeds {row['target_success_elsewhere']:.3f} away from {row['from']}")
            lower = math.floor(min(row["from_success"], row["target_success_elsewhere"]) * 100) / 100
            raise ConfigError(f"--target {name} is a weak {level} composition of {scope!r} but not on its frontier, "
                              f"which keeps those whose ends are strong on their own: {' and '.join(weak)}, below "
                              f"--min-prereq {config.min_prereq:g}; pass --min-prereq {lower:g} to aim at it")


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


__all__ = ["LEVELS", "FrontierConfig", "frontier", "parse_target", "targeted", "weak_compositions", "why_empty"]
