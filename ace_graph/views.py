"""Read-only views of the skill graph: what the dashboard (and any reader) shows.

Every view runs a named query from ``cypher/`` in a session opened with read
access mode, inside a read transaction, so Neo4j itself refuses a write even
if one slipped into a file.  Only files whose header says ``Mode: read`` are
run (files written before that header existed are classified by name: the
``ingest-``, ``upsert-``, ``curriculum-upsert`` and ``schema`` files write,
all others read).

Nothing here imports Streamlit or pandas: views return plain rows (dicts) and
small dataclasses, and the app turns them into tables and charts.

The rollout transcript is rebuilt, not stored twice: the graph keeps the
calls a rollout made (JSON) and its verdict; the task's oracle comes from the
task itself (BFCL seed tasks, or synthesized task files), and the verifier is
run again on the stored calls to get the per-step results beside the oracle's.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ace_env import bfcl
from ace_env.errors import AceError
from ace_env.tasks import Task
from ace_env.verifier import oracle_for, verify
from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT

log = logging.getLogger(__name__)

READ = "read"
WRITE = "write"
_HINT_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\s*(\(([^()]*(?:\([^()]*\)[^()]*)*)\))?")

#: Defaults the query console offers for common parameters (the rest start empty).
PARAM_DEFAULTS: dict[str, Any] = {
    "level": "skill",
    "limit": 20,
    "min_support": MIN_SUPPORT,
    "min_lift": MIN_LIFT,
    "min_prereq": 0.6,
}


# --------------------------------------------------------------------------- query modes


def query_mode(name: str, directory: Path | None = None) -> str:
    """``read`` or ``write``: the file's ``Mode:`` header line (:mod:`ace_graph.queries` refuses a file without one)."""
    return queries.load(name, directory).mode


def read_queries(directory: Path | None = None) -> list[str]:
    """Names of the named queries that only read."""
    return [n for n in queries.list_queries(directory) if query_mode(n, directory) == READ]


def description(query: queries.Query) -> str:
    """The header's purpose, without a ``Mode:`` line the loader may have folded into it."""
    return re.sub(r"\s*Mode\s*:\s*\w+\s*", " ", query.description).strip()


def param_hints(query: queries.Query) -> dict[str, str]:
    """For each declared parameter, the hint its header gives in parentheses ("int", "string, ...")."""
    header = []
    for line in query.path.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("//"):
            break
        header.append(line.lstrip()[2:].strip())
    text = " ".join(header)
    start = re.search(r"Parameters\s*:", text, re.IGNORECASE)
    end = re.search(r"Columns\s*:", text, re.IGNORECASE)
    section = text[start.end() : end.start() if end and end.start() > start.end() else len(text)] if start else ""
    hints = {p: "" for p in query.params}
    for m in _HINT_RE.finditer(section):
        if m.group(1) in hints and not hints[m.group(1)]:
            hints[m.group(1)] = (m.group(3) or "").strip()
    return hints


def param_kind(hint: str) -> str:
    """``int``, ``float``, ``list`` or ``string``, from a parameter's header hint."""
    h = hint.lower()
    for kind in ("int", "float", "list"):
        if h.startswith(kind):
            return kind
    return "string"


def coerce_param(value: str, kind: str) -> Any:
    """A console text field's value as the parameter's type; ConfigError when it does not parse."""
    text = value.strip()
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "list":
            parsed = json.loads(text) if text else []
            if not isinstance(parsed, list):
                raise ValueError("not a JSON list")
            return parsed
    except ValueError as e:
        raise ConfigError(f"{value!r} is not a valid {kind} ({e}); write e.g. 20, 0.05 or [\"a\", \"b\"].") from e
    return value


# --------------------------------------------------------------------------- the views


class GraphViews:
    """Read-only named queries over a given driver (it never opens its own connection)."""

    def __init__(self, driver: Any, database: str = "neo4j"):
        self.driver = driver
        self.database = database

    def run(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run a read-mode named query in a read-access session; ConfigError for a query that writes."""
        from neo4j import READ_ACCESS

        if query_mode(name) != READ:
            raise ConfigError(f"Query {name!r} writes to the graph; the read-only views run only `Mode: read` files.")
        query = queries.load(name)
        missing = [p for p in query.params if p not in params]
        if missing:
            raise ConfigError(f"Query {name!r} needs ${', $'.join(missing)}.")

        def work(tx: Any) -> list[dict[str, Any]]:
            return [r.data() for r in tx.run(query.text, params)]

        with self.driver.session(database=self.database, default_access_mode=READ_ACCESS) as session:
            return session.execute_read(work)

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


# --------------------------------------------------------------------------- tasks and transcripts


class TaskLibrary:
    """Tasks by id: BFCL's scored tasks, plus synthesized task files (JSONL of ``Task.to_dict``)."""

    def __init__(self, files: Iterable[Path] = ()):
        self.files = [Path(f) for f in files]
        self._tasks: dict[str, Task] | None = None

    def _load(self) -> dict[str, Task]:
        if self._tasks is None:
            tasks = {t.id: t for t in bfcl.load_tasks("all")}
            for path in self.files:
                try:
                    with open(path, encoding="utf-8") as f:
                        for line in f:
                            if line.strip():
                                t = Task.from_dict(json.loads(line))
                                tasks.setdefault(t.id, t)
                except (OSError, ValueError, KeyError, TypeError) as e:
                    log.warning("skipping task file %s: %s", path, e)
            self._tasks = tasks
        return self._tasks

    def get(self, task_id: str) -> Task | None:
        return self._load().get(task_id)


@dataclass
class TranscriptStep:
    """One call on one side (the rollout's or the oracle's) of one turn."""

    turn: int
    index: int
    call: str
    status: str
    output: str
    failing: bool = False


@dataclass
class Transcript:
    """A rollout's calls beside its task's oracle, with the first failing step marked."""

    rollout: dict[str, Any]
    user: list[str]  # the user's text per turn
    rollout_steps: list[TranscriptStep] = field(default_factory=list)
    oracle_steps: list[TranscriptStep] = field(default_factory=list)
    failing_turn: int | None = None
    attribution: str | None = None
    detail: str = ""
    expected: dict[str, Any] | None = None  # the oracle's failing call: {name, arguments}
    actual: dict[str, Any] | None = None  # the rollout's call there (None when it made none)
    differing: list[str] = field(default_factory=list)  # argument names that differ
    note: str = ""  # why part of the transcript is missing, if it is


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def transcript(row: dict[str, Any], task: Task | None) -> Transcript:
    """The transcript of a stored rollout (a ``view-rollout`` row) beside its task's oracle."""
    t = Transcript(rollout=row, user=[], failing_turn=row.get("failing_turn"),
                   attribution=row.get("attribution"), detail=row.get("detail") or "")
    try:
        turns = json.loads(row.get("calls") or "[]")
    except ValueError:
        t.note = "The stored calls were truncated (over 20,000 characters), so the steps cannot be shown."
        return t
    if task is None:
        t.note = (f"Task {row.get('task_id')!r} is neither a BFCL task nor in a synthesized task file, "
                  "so its oracle cannot be shown; the rollout's own calls follow.")
        for ti, calls in enumerate(turns):
            for i, c in enumerate(calls):
                t.rollout_steps.append(TranscriptStep(ti, i, _short(c), "", ""))
        return t
    t.user = [" ".join(m.get("content", "") for m in turn.user if m.get("role") == "user") for turn in task.turns]
    try:
        verdict = verify(task, turns, rollout_id=row.get("rollout"))
    except AceError as e:
        t.note = f"The stored calls no longer verify against task {task.id}: {e}"
        return t
    oracle = oracle_for(task)
    for ti, steps in enumerate(verdict.steps):
        for i, s in enumerate(steps):
            failing = ti == verdict.failing_turn and i == verdict.failing_step
            call = s.raw if isinstance(s.raw, str) else _short(s.raw)
            t.rollout_steps.append(TranscriptStep(ti, i, _short(call), s.status, _short(s.output or s.detail or ""),
                                                  failing))
    for ti, oturn in enumerate(oracle.turns):
        for i, o in enumerate(oturn.steps):
            failing = ti == verdict.failing_turn and i == verdict.failing_oracle_step
            t.oracle_steps.append(TranscriptStep(ti, i, _short(o.call), o.status, _short(o.output), failing))
        if not oturn.steps:
            t.oracle_steps.append(TranscriptStep(ti, 0, "(no call: the right answer is to ask or decline)",
                                                 "", "", ti == verdict.failing_turn))
    if verdict.failing_turn is not None:
        t.failing_turn, t.attribution, t.detail = verdict.failing_turn, verdict.attribution, verdict.detail
        oturn = oracle.turns[verdict.failing_turn]
        if oturn.steps:
            o = oturn.steps[min(verdict.failing_oracle_step or 0, len(oturn.steps) - 1)]
            t.expected = {"name": o.name, "arguments": o.arguments}
        rsteps = verdict.steps[verdict.failing_turn]
        if verdict.failing_step is not None and verdict.failing_step < len(rsteps):
            s = rsteps[verdict.failing_step]
            t.actual = {"name": s.name, "arguments": s.arguments}
        if t.expected and t.actual:
            ea, aa = t.expected["arguments"], t.actual["arguments"]
            t.differing = sorted(k for k in set(ea) | set(aa) if ea.get(k, _MISSING) != aa.get(k, _MISSING))
    return t


_MISSING = object()
