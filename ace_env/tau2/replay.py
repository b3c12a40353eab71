"""Gold replay of τ² tasks through the bounded runner and ACE's verifier, counted per domain.

:func:`replay_tasks` is what ``ace env replay tau2`` runs: every task's gold actions (agent- and
user-side) go through :class:`~ace_env.tau2.bounded.Tau2Runner` (the watched worker: every call under
the wall-clock and memory budget) as one rollout, and :func:`~ace_env.tau2.verify.verify` judges it
against the oracle, which the worker computes afresh for each task (its own gold replay).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from ace_env.tau2.bounded import Tau2Outcome, Tau2Runner
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import gold_calls
from ace_env.worker import Budget


def _failure(outcome: Tau2Outcome) -> str | None:
    """None when the gold replay passed; else one line saying why not."""
    if outcome.attribution:
        return f"{outcome.task_id}: {outcome.attribution}"
    v = outcome.verdict
    if v is not None and v.strict:
        return None
    detail = "; ".join(v.detail[:2]) if v is not None and v.detail else "a step errored"
    return f"{outcome.task_id}: reward {v.reward if v is not None else 0.0:g}: {detail}"[:300]


def replay_tasks(tasks: Iterable[Tau2Task], budget: Budget | None = None,
                 on_task: Callable[[int], None] | None = None) -> dict[str, dict[str, Any]]:
    """Replay every task's gold actions in the bounded runner and verify them; counts per domain.

    A task passes when its replay runs to the end within the budget and the verdict is strict:
    reward 1 and no step errored that did not error in the gold (retail's gold has calls that
    raise).  ``errors`` counts tasks whose replay did not run to a verdict (a call over budget, a
    worker that died); they count as failed too.  Returns, per domain in the order first seen,
    ``{tasks, passed, failed, errors, tasks_per_s, failures}`` (``failures``: one line per failing task).
    """
    tasks = list(tasks)
    out: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    for t in tasks:
        out.setdefault(t.domain, {"tasks": 0, "passed": 0, "failed": 0, "errors": 0, "tasks_per_s": None,
                                  "failures": []})
        seconds.setdefault(t.domain, 0.0)
    with Tau2Runner({t.id: t for t in tasks}, budget or Budget.from_env()) as runner:
        for task in tasks:
            start = time.perf_counter()
            outcome = runner.run(task.id, gold_calls(task))
            seconds[task.domain] += time.perf_counter() - start
            d = out[task.domain]
            d["tasks"] += 1
            why = _failure(outcome)
            if why is None:
                d["passed"] += 1
            else:
                d["failed"] += 1
                d["errors"] += bool(outcome.attribution)
                d["failures"].append(why)
            if on_task:
                on_task(1)
    for domain, d in out.items():
        s = seconds[domain]
        d["tasks_per_s"] = round(d["tasks"] / s, 1) if s > 0 else None
    return out
