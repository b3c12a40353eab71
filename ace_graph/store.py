"""The skill graph in Neo4j: taxonomy, tasks, prior edges, and batched rollout ingestion.

``GraphStore`` receives a driver and a database name; it never opens its own
connection.  Every query it runs is a named file in ``cypher/`` (the text an
analyst can paste into Neo4j Browser), and every value goes in as a parameter.

Ingestion writes one batch per transaction: it creates the rollouts that are
not stored yet (the uniqueness constraint on ``Rollout.id`` makes a
concurrent writer of the same rollout wait and then skip it), then adds only
*their* steps and counts with increments that take the write lock before they
read.  Ingesting a rollout twice therefore changes nothing; concurrent
ingests into one scope lose no counts (a deadlock between them is retried by
the driver); a failed batch rolls back whole and can simply be retried.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ace_env.environments import tool_info
from ace_env.tasks import Task
from ace_env.workspace import check_name
from ace_graph import queries
from ace_graph.compositions import LEVELS, SKILL, TOOL, adjacent_pairs, task_dependencies
from ace_graph.errors import RolloutIdConflict
from ace_graph.outcomes import RolloutRecord, aggregate
from ace_graph.tagger import TAGS, base_skills, tag_task
from ace_graph.taxonomy import load_taxonomy

log = logging.getLogger(__name__)


def scope_key(experiment: str, policy: str, checkpoint: str) -> str:
    """The key of a (experiment, policy, checkpoint) scope."""
    for name, value in (("experiment", experiment), ("policy", policy), ("checkpoint", checkpoint)):
        check_name(value, name)
    return f"{experiment}/{policy}/{checkpoint}"


def task_key(task: Task) -> str:
    """The graph key of a task: its id scoped by its source (``bfcl:multi_turn_base_0``)."""
    return f"{task.source}:{task.id}"


@dataclass
class BatchResult:
    received: int
    created: int
    steps: int


def rollout_row(rec: RolloutRecord, tags: tuple[Any, ...]) -> dict[str, Any]:
    """The ``ingest-rollouts`` parameter row of one record: the rollout and its reached oracle steps,
    each with the previous oracle call's tool and skills (which the composition estimator reads)."""
    return {
        "id": rec.id,
        "task_id": rec.task_id,
        "task_key": rec.task_key,
        "props": rec.props(),
        "steps": [
            {"flat": s.flat, "turn": s.turn, "index": s.index, "tool": s.tool,
             "skills": list(s.skills), "outcome": s.outcome, "nll": s.nll,
             "prev_tool": tags[s.prev].tool if s.prev is not None else None,
             "prev_skills": list(tags[s.prev].skills) if s.prev is not None else []}
            for s in rec.steps
        ],
    }


def _conflict(rec: RolloutRecord, scope: str, where: str, n: int = 1) -> str:
    others = f" (and {n - 1} more)" if n > 1 else ""
    return (f"rollout id {rec.rollout_id[:80]!r}{others} of scope {scope} is {where} with other content; rollout ids "
            "must be unique within a scope (the same rollout again is skipped): give these rollouts other ids "
            "(--id-suffix) or another scope")


class GraphReader:
    """Runs named read queries through a given driver (it never opens its own connection)."""

    def __init__(self, driver: Any, database: str = "neo4j"):
        self.driver = driver
        self.database = database

    def run(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run a named read query (``Mode: read``) with read routing (:func:`ace_graph.queries.run`); its rows.
        A write query is refused."""
        return queries.run(self.driver, name, params, database=self.database)


class GraphStore(GraphReader):
    """Reads and writes ACE's skill graph through a given driver."""

    # ------------------------------------------------------------------ seeding

    def ensure_taxonomy(self, tasks: Iterable[Any] = ()) -> dict[str, int]:
        """Create or update skills, tools and their EXERCISES edges.

        A tool's class and description come from its environment (:func:`ace_env.environments.tool_info`):
        BFCL's always; a τ² tool's (class ``tau2:DOMAIN``) when ``tasks`` hold τ² tasks, else the stored
        ones are kept."""

        skills = [{"id": s.id, "family": s.family, "description": s.description} for s in load_taxonomy().values()]
        info = tool_info(list(tasks))
        tools = [{"name": name, "class": info.get(name, (None, None))[0],
                  "description": info.get(name, (None, None))[1], "skills": list(sk)}
                 for name, sk in sorted(base_skills().items())]
        return self.write("upsert-taxonomy", skills=skills, tools=tools)

    def upsert_tasks(self, tasks: Iterable[Task], batch_size: int = 500) -> int:
        """Create or update Task nodes (with their compositions) and recount the prior edges.

        A task whose stored fingerprint (its content plus the tagger's version)
        is unchanged is not tagged or written again.  The prior-edge counts are
        recomputed from every stored task (:mod:`ace_graph.compositions`), so
        they do not depend on which tasks this call was given.  Returns the
        number of distinct tasks now stored from ``tasks``.
        """
        by_id = {task_key(t): t for t in tasks}  # keyed by source:id, as the Task nodes are
        if not by_id:
            return 0
        content = {tid: t.fingerprint() for tid, t in by_id.items()}
        wanted = {tid: f"{fp}:{TAGS.version}" for tid, fp in content.items()}
        (found,) = self.run("task-fingerprints", keys=list(by_id))
        stored = dict(zip(found["keys"], found["fingerprints"]))
        changed = [tid for tid in by_id if stored.get(tid) != wanted[tid]]
        rows: list[dict[str, Any]] = []
        for tid in changed:
            task = by_id[tid]
            tags = tag_task(task, content[tid])
            tool_pairs, skill_pairs = adjacent_pairs(tags)
            deps = sorted(task_dependencies(tags))
            rows.append(
                {
                    "key": task_key(task),
                    "id": task.id,
                    "source": task.source,
                    "category": task.category,
                    "n_turns": task.n_turns,
                    "n_steps": task.n_steps,
                    "tools": sorted({t.tool for t in tags if t.tool}),
                    "tool_pairs": tool_pairs,
                    "skill_pairs": skill_pairs,
                    "tool_deps": [d.key for d in deps if d.level == TOOL],
                    "skill_deps": [d.key for d in deps if d.level == SKILL],
                    "fingerprint": wanted[tid],
                    "provenance": json.dumps(task.provenance, sort_keys=True, default=str),
                }
            )
            if len(rows) >= batch_size:
                self.write("upsert-tasks", rows=rows)
                rows = []
        if rows:
            self.write("upsert-tasks", rows=rows)
        if changed:
            for level in LEVELS:
                self.write("upsert-prior-edges", level=level)
        log.info("tasks: %d given, %d written, %d already up to date", len(by_id), len(changed),
                 len(by_id) - len(changed))
        return len(by_id)

    def upsert_plans(self, experiment: str, plans: Iterable[Any]) -> int:
        """Store synthesis plans (``synth.planner.Plan``) of an experiment."""
        rows = [p.to_row() for p in plans]
        return self.write("upsert-plans", experiment=experiment, rows=rows)["plans"] if rows else 0

    def upsert_lineage(self, experiment: str, rows: list[dict[str, Any]]) -> int:
        """Link synthesized tasks to their plans and seed tasks (after ``upsert_tasks``)."""
        return self.write("upsert-lineage", experiment=experiment, rows=rows)["tasks"] if rows else 0

    def complete_scope(self, key: str) -> dict[str, Any]:
        """Clear a scope's incomplete mark (its ingest ended without error); nothing if it has no rollouts."""
        return self.write("ingest-scope-complete", key=key)

    def write(self, name: str, **params: Any) -> dict[str, Any]:
        """Run a named query that may write (``Mode: write``) in one write transaction; its first row (or {})."""
        rows = queries.run(self.driver, name, params, database=self.database, write=True)
        return rows[0] if rows else {}

    # ------------------------------------------------------------------ ingestion

    def ingest_batch(
        self,
        scope: dict[str, Any],
        records: Sequence[tuple[RolloutRecord, tuple[Any, ...]]],
    ) -> BatchResult:
        """Write one batch of rollout records (with their oracle tags) in one transaction.

        A record whose id is already stored (or earlier in the batch) with the same content digest is
        skipped; with another digest it is a :class:`RolloutIdConflict` and the batch is rolled back.
        """
        unique: dict[str, tuple[RolloutRecord, tuple[Any, ...]]] = {}
        for rec, tags in records:
            first = unique.setdefault(rec.id, (rec, tags))[0]
            if None not in (first.digest, rec.digest) and first.digest != rec.digest:
                raise RolloutIdConflict(_conflict(rec, scope["key"], "twice in one batch"))
        rollout_rows = [rollout_row(rec, tags) for rec, tags in unique.values()]

        def work(tx: Any) -> BatchResult:
            batch = uuid.uuid4().hex
            queries.run_in(tx, "ingest-scope", {"scope": scope}, write=True)
            rows = queries.run_in(tx, "ingest-rollouts", {"batch": batch, "rows": rollout_rows}, write=True)
            conflicts = [r["id"] for r in rows if r["conflict"]]
            if conflicts:  # raised inside the transaction function: the driver rolls the batch back
                raise RolloutIdConflict(_conflict(unique[conflicts[0]][0], scope["key"], "already stored there",
                                                  len(conflicts)))
            created = {r["id"] for r in rows}
            fresh = [unique[rid] for rid in unique if rid in created]
            if not fresh:
                return BatchResult(len(records), 0, 0)
            agg = aggregate(fresh)
            for level in ("skill", "tool"):
                queries.run_in(tx, f"ingest-{level}-stats", {
                    "scope": scope["key"], "nodes": agg.node_rows(level), "edges": agg.edge_rows(level),
                }, write=True)
            queries.run_in(tx, "ingest-scope-totals", {"scope": scope["key"], "totals": agg.totals()}, write=True)
            return BatchResult(len(records), len(fresh), agg.steps)

        with self.driver.session(database=self.database) as session:  # write access, the default
            return session.execute_write(work)
