"""The dashboard's figures of the skill graph, read-only.

Every figure runs a named query from ``cypher/`` through the one runner,
:func:`ace_graph.queries.run`: only files whose header says ``Mode: read``
run here, in a session opened with read access mode, inside a read
transaction, so Neo4j itself refuses a write even if one slipped into a file.

Nothing here imports Streamlit or pandas: reports return plain rows (dicts),
and the app turns them into tables and charts.  A stored rollout's transcript
beside its task's oracle is :mod:`ace_graph.transcripts`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.names import check, split_rollout
from ace_graph.scopes import check_level, require_scope
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphReader

#: Most scopes one comparison takes (a table of every scope's figures side by side stays readable).
MAX_COMPARED = 8


def check_scopes(store: Any, scopes: Any, at_least: int = 1) -> list[str]:
    """``scopes`` as a list of distinct, stored scope keys (at least ``at_least``, at most
    :data:`MAX_COMPARED`); a one-line error that says which one is wrong otherwise."""
    if isinstance(scopes, str):
        scopes = [s.strip() for s in scopes.split(",") if s.strip()]
    if not isinstance(scopes, (list, tuple)) or not all(isinstance(s, str) for s in scopes):
        raise ConfigError(f"scopes must be a list of scope keys experiment/policy/checkpoint, got {scopes!r:.80}; "
                          'pass -P scopes=E/P/C,E/P/C or -P \'scopes=["E/P/C", "E/P/C"]\'')
    keys = list(scopes)
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ConfigError(f"scopes name {', '.join(repeated)} more than once; name each scope once")
    if not at_least <= len(keys) <= MAX_COMPARED:
        raise ConfigError(f"compare between {at_least} and {MAX_COMPARED} scopes, not {len(keys)}")
    for key in keys:
        require_scope(store, key)
    return keys


def _difference(first: dict[str, Any], second: dict[str, Any]) -> tuple[Any, Any, Any]:
    """second's success minus first's with Newcombe's hybrid Wilson 95% interval (from each row's
    ``success``, ``ci_low``, ``ci_high``); (None, None, None) when one of them has no observation."""
    p1, p2 = first.get("success"), second.get("success")
    if p1 is None or p2 is None:
        return None, None, None
    d = p2 - p1
    low = d - math.sqrt((p2 - second["ci_low"]) ** 2 + (first["ci_high"] - p1) ** 2)
    high = d + math.sqrt((second["ci_high"] - p2) ** 2 + (p1 - first["ci_low"]) ** 2)
    return d, low, high


def side_by_side(rows: list[dict[str, Any]], scopes: Sequence[str], kind: str = "composition") -> list[dict[str, Any]]:
    """compare-policies' rows of one ``kind`` ("composition" or "capability") as one row per composition
    (skill, tool), in the query's order: ``from``, ``to``, and ``scopes`` (scope key -> its n, failures,
    success, ci_low, ci_high).  With two scopes also ``change``: the second's success minus the first's,
    with its 95% Newcombe interval (``change_low``, ``change_high``; None where one never reached it)."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in rows:
        if r["kind"] != kind:
            continue
        row = out.setdefault((r["from"], r["to"]), {"from": r["from"], "to": r["to"], "scopes": {}})
        row["scopes"][r["scope"]] = {k: r[k] for k in ("n", "failures", "success", "ci_low", "ci_high")}
    if len(scopes) == 2:
        for row in out.values():
            first, second = (row["scopes"].get(s, {}) for s in scopes)
            row["change"], row["change_low"], row["change_high"] = _difference(first, second)
    return list(out.values())


class GraphReports(GraphReader):
    """The dashboard's figures: read-only named queries over a given driver (it never opens its own connection)."""

    def run_checked(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """A named read query after every name its header declares is checked (:func:`ace_graph.names.check`):
        the query console's path, where a mistyped name is an error listing the nearest valid ones."""
        return self.run(name, **check(self, queries.load(name), params))

    # ---- scopes and headline figures

    def scopes(self) -> list[dict[str, Any]]:
        """The scopes that are data, newest first: neither being deleted nor marked incomplete
        (:func:`incomplete_scopes` lists those, which no page reads)."""
        return [r for r in self.run("view-scopes") if not r["incomplete"]]

    def incomplete_scopes(self) -> list[str]:
        """The keys of the scopes marked incomplete (an ingest into them is running or stopped part-way)."""
        return sorted(r["key"] for r in self.run("view-scopes") if r["incomplete"])

    def console(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """A named read query run with the parameters typed in the query console, its scopes checked first as
        ``ace query`` checks them: one that is unknown, being deleted or incomplete is a one-line error; then
        every other name it declares (:meth:`run_checked`)."""
        if "scopes" in params:
            check_scopes(self, params["scopes"], at_least=2 if name == "compare-policies" else 1)
        if "scope" in params:
            require_scope(self, params["scope"])
        return self.run_checked(name, **params)

    def counts(self) -> dict[str, Any]:
        rows = self.run("view-graph-counts")
        return rows[0] if rows else {}

    def capability(self, scope: str, level: str) -> list[dict[str, Any]]:
        return self.run("capability-profile", scope=scope, level=level)

    def families(self, scope: str, level: str) -> list[dict[str, Any]]:
        return self.run("view-family-profile", scope=scope, level=level)

    # ---- compositions

    def weak(self, scope: str, level: str, min_support: int = MIN_SUPPORT, min_lift: float = MIN_LIFT, limit: int = 5):
        return self.run(
            "weak-compositions", scope=scope, level=level, min_support=min_support, min_lift=min_lift, limit=limit
        )

    def fragile(self, scope: str, level: str, min_support: int = MIN_SUPPORT, min_lift: float = MIN_LIFT):
        return self.run("fragile-edges", scope=scope, level=level, min_support=min_support, min_lift=min_lift)

    def frontier(self, scope: str, level: str, min_support: int = MIN_SUPPORT, min_lift: float = MIN_LIFT,
                 min_prereq: float = 0.6, limit: int = 50):
        return self.run("frontier", scope=scope, level=level, min_support=min_support, min_lift=min_lift,
                        min_prereq=min_prereq, limit=limit)

    def graph(self, scope: str, level: str, min_support: int = 1) -> tuple[list[dict], list[dict]]:
        nodes = self.run("view-graph-nodes", scope=scope, level=level)
        edges = self.run("view-graph-edges", scope=scope, level=level, min_support=min_support)
        return nodes, edges

    def near_success(self, scope: str, level: str, src: str, dst: str, limit: int = 20):
        return self.run("near-success", scope=scope, level=level, **{"from": src, "to": dst}, limit=limit)

    def seed_tasks(self, level: str, src: str, dst: str, limit: int = 20):
        return self.run("tasks-with-composition", level=level, **{"from": src, "to": dst}, limit=limit)

    def synthesized_for(self, experiment: str, src: str, dst: str, limit: int = 50):
        return self.run("view-synth-for-edge", experiment=experiment, **{"from": src, "to": dst}, limit=limit)

    def rollout(self, scope: str, rollout: str) -> dict[str, Any] | None:
        """The view-rollout row of ``rollout`` in ``scope``: its own id or its full form ``scope/id``."""
        scope, rollout = split_rollout(rollout, scope)
        rows = self.run("view-rollout", scope=scope, rollout=rollout)
        return rows[0] if rows else None

    def compare(self, scopes: Sequence[str], level: str, min_support: int = MIN_SUPPORT,
                limit: int = 20) -> list[dict[str, Any]]:
        """compare-policies over two or more stored scopes (checked first: each once, each stored)."""
        keys = check_scopes(self, list(scopes), at_least=2)
        return self.run("compare-policies", scopes=keys, level=check_level(level), min_support=min_support,
                        limit=limit)

    # ---- history, synthesis, curriculum

    def capability_history(self, experiment: str, policy: str, level: str):
        return self.run("capability-history", experiment=experiment, policy=policy, level=level)

    def composition_history(self, experiment: str, policy: str, level: str, min_support: int = MIN_SUPPORT):
        return self.run("view-composition-history", experiment=experiment, policy=policy, level=level,
                        min_support=min_support)

    def curriculum(self, experiment: str):
        return self.run("curriculum-status", experiment=experiment)

    def curriculum_decisions(self, experiment: str):
        return self.run("curriculum-decisions", experiment=experiment)

    def plans(self, experiment: str):
        return self.run("view-plans", experiment=experiment)

    def synthesized(self, experiment: str, limit: int = 200):
        return self.run("synthesized-tasks", experiment=experiment, limit=limit)
