"""``ace export --format tau2``: τ² tasks (τ²'s own and ACE's synthesized ones) in τ²'s own task schema.

One folder per domain, ``<out>/<domain>/tasks.json``: a JSON list of τ² ``Task`` objects
(``Task.model_dump(mode="json")``), the form of τ²'s own ``data/tau2/domains/<domain>/tasks.json``, which
τ²'s ``Task`` model loads.  A base task is written as τ²'s data holds it; a synthesized one as
:class:`~ace_env.tau2.synthtasks.SynthTau2Task` carries it (its ``description.purpose`` names the strategy,
target and seed).

Round trip: before a task is written, its JSON is serialised, parsed back, loaded through τ²'s ``Task`` model,
its gold actions replayed on a fresh environment in its initial state and the trajectory scored by τ²'s own
``EnvironmentEvaluator`` (and ``ActionEvaluator`` on ACTION tasks) (:func:`ace_env.tau2.synthtasks.replay_json`);
a task whose exported gold does not reach reward 1 is skipped with a reason, never written.
:func:`roundtrip` does the same from an export folder alone (what a τ² user would load).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ace_env.tasksets import Tau2Task
from ace_env.tau2.synthtasks import replay_json, tau2_json

TASKS_FILE = "tasks.json"
NOT_TAU2 = "not a τ² task (--format tau2 writes τ²-bench tasks)"
ROUND_TRIP_FAILED = "its exported gold does not pass τ²'s evaluator"
ROUND_TRIP_NOTE = "round trip: exported gold replayed, τ²'s evaluator reward 1"


def write_tau2(tasks: Iterable[Any], tmp: Path, report: Any, fresh: bool = False) -> None:
    """Write ``tasks`` under ``tmp/<domain>/tasks.json``, each after its round trip passed."""
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
        reward, _ = replay_json(task.domain, exported, fresh=fresh)
        if reward != 1.0:
            report.skip(task.id, ROUND_TRIP_FAILED)
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


def roundtrip(folder: str | Path, fresh: bool = False) -> dict[str, dict[str, Any]]:
    """Per domain of an export folder: ``{tasks, passed, failed}`` (``failed``: the τ² ids whose gold, replayed
    from the file through τ²'s ``Task`` model, does not pass τ²'s evaluator)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder).glob(f"*/{TASKS_FILE}")):
        domain = path.parent.name
        rows = json.loads(path.read_text(encoding="utf-8"))
        failed = [r["id"] for r in rows if replay_json(domain, r, fresh=fresh)[0] != 1.0]
        out[domain] = {"tasks": len(rows), "passed": len(rows) - len(failed), "failed": failed}
    return out
