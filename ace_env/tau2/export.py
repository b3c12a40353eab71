"""``ace export --format tau2`` (τ²'s entry's ``export_writer``; moved here from ``train/export_tau2.py``): τ² tasks
(τ²'s own and ACE's synthesized ones) in τ²'s own task schema.

One folder per domain, ``<out>/<domain>/tasks.json``: a JSON list of τ² ``Task`` objects
(``Task.model_dump(mode="json")``), the form of τ²'s own ``data/tau2/domains/<domain>/tasks.json``, which
τ²'s ``Task`` model loads.  A base task is written as τ²'s data holds it; a synthesized one as
:class:`~ace_env.tau2.synthtasks.SynthTau2Task` carries it (its ``description.purpose`` names the strategy,
target and seed).

Round trip: before a task is written, its JSON is serialised, parsed back, loaded through τ²'s ``Task`` model,
its gold actions replayed on a fresh environment in its initial state and the trajectory scored by τ²'s own
``EnvironmentEvaluator`` (and ``ActionEvaluator`` on ACTION tasks) (:func:`ace_env.tau2.synthtasks.replay_json`);
and that replay is also judged by ACE's verifier against the task's oracle (the final state ACE's gold leaves),
so an export that changed what the gold does fails even though it agrees with itself.  A task that fails
either is skipped with a reason, never written.
:func:`roundtrip` does the same from an export folder (what a τ² user would load), with ACE's tasks when
given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ace_env.tau2.synthtasks import replay_json, tau2_json
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import verify

TASKS_FILE = "tasks.json"
NOT_TAU2 = "not a τ² task (--format tau2 writes τ²-bench tasks)"
ROUND_TRIP_FAILED = "its exported gold does not pass τ²'s evaluator"
NOT_THE_ORACLE = "its exported gold does not do what ACE's oracle does"
ROUND_TRIP_NOTE = "round trip: exported gold replayed, τ²'s evaluator reward 1, ACE's verifier strict"


def judge(task: Tau2Task | None, domain: str, row: dict[str, Any], fresh: bool = False) -> str | None:
    """Why an exported row fails its round trip (None: it passes): its gold, replayed from the row alone, must
    pass τ²'s evaluator, and (when ACE's ``task`` is known) ACE's verifier, strict, against ACE's oracle."""
    reward, steps, env = replay_json(domain, row, fresh=fresh)
    if reward != 1.0:
        return ROUND_TRIP_FAILED
    if task is not None and not verify(task, steps, env).strict:
        return NOT_THE_ORACLE
    return None


def write_tau2(tasks: Iterable[Any], tmp: Path, report: Any, fresh: bool = False) -> None:
    """Write ``tasks`` under ``tmp/<domain>/tasks.json``, each after its round trip passed (:func:`judge`)."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    seen: set[tuple[str, str]] = set()
    for task in tasks:
        if not isinstance(task, Tau2Task):
            report.skip(task.id, NOT_TAU2)
            continue
        if (task.domain, task.tau2_id) in seen:
            report.skip(task.id, "duplicate id")
            continue
        exported = json.loads(json.dumps(tau2_json(task)))  # what a reader of the file gets
        why = judge(task, task.domain, exported, fresh)
        if why is not None:
            report.skip(task.id, why)
            continue
        seen.add((task.domain, task.tau2_id))
        by_domain.setdefault(task.domain, []).append(exported)
        report.written += 1
        report.note(task.id, ROUND_TRIP_NOTE)
    for domain, rows in by_domain.items():
        (tmp / domain).mkdir()
        with open(tmp / domain / TASKS_FILE, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2, ensure_ascii=False)
            f.write("\n")


def roundtrip(folder: str | Path, tasks: dict[tuple[str, str], Tau2Task] | None = None,
              fresh: bool = False) -> dict[str, dict[str, Any]]:
    """Per domain of an export folder: ``{tasks, passed, failed}`` (``failed``: the τ² ids whose row fails
    :func:`judge`).  ``tasks``: ACE's tasks by (domain, τ² id), to judge each row against ACE's oracle too;
    without them a row is judged alone, which only shows that τ²'s model loads it and its gold agrees with
    itself (τ²'s evaluator replays the same actions on both sides)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob(f"*/{TASKS_FILE}")):
        domain = path.parent.name
        rows = json.loads(path.read_text(encoding="utf-8"))
        failed = [r["id"] for r in rows
                  if judge((tasks or {}).get((domain, r["id"])), domain, r, fresh) is not None]
        out[domain] = {"tasks": len(rows), "passed": len(rows) - len(failed), "failed": failed}
    return out
