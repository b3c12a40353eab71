"""A stored rollout's transcript beside its task's oracle, for the dashboard.

The transcript is rebuilt, not stored twice: the graph keeps the calls a
rollout made (JSON) and its verdict (a ``view-rollout`` row, read by
:class:`ace_graph.reports.GraphReports`); the task's oracle comes from the task
itself (BFCL's tasks, or synthesized task files), and the verifier is run
again on the stored calls to get the per-step results beside the oracle's.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ace_env.environments import DEFAULT
from ace_env.errors import AceError
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.tasksets import load_task_set
from ace_env.verifier import verify

log = logging.getLogger(__name__)


class TaskLibrary:
    """Tasks by id: BFCL's, plus those of synthesized task files, each read by :func:`ace_env.tasksets.load_task_set`.

    A file that does not load (one ``ace synth`` is still writing, one an
    older ACE wrote, or a path that is no longer a regular file) is skipped with a warning naming it and why: the
    dashboard shows the transcripts it can, and says of the others that
    their task is unknown.  A task id in two files keeps the first.
    """

    def __init__(self, files: Iterable[Path] = ()):
        self.files = [Path(f) for f in files]
        self._tasks: dict[str, Task] | None = None

    def _load(self) -> dict[str, Task]:
        if self._tasks is None:
            tasks = load_task_set(DEFAULT.name)  # every task of the default environment
            for path in self.files:
                try:
                    loaded = load_task_set(str(path))
                except AceError as e:  # not a task file, or no longer a regular file (a FIFO would block)
                    log.warning("skipping task file %s: %s", path, e)
                    continue
                for task_id, task in loaded.items():
                    tasks.setdefault(task_id, task)
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
