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

from typing import Any

from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from ace_graph.store import GraphReader


class GraphReports(GraphReader):
    """The dashboard's figures: read-only named queries over a given driver (it never opens its own connection)."""

    # ---- scopes and headline figures

    def scopes(self) -> list[dict[str, Any]]:
        return self.run("view-scopes")

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
        rows = self.run("view-rollout", scope=scope, rollout=rollout)
        return rows[0] if rows else None

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
