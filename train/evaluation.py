"""Evaluation written back to the graph: roll a policy out, verify, ingest into its checkpoint's scope.

Each checkpoint of a policy is its own scope ``experiment/name/checkpoint``, so
``capability-history`` shows one row per checkpoint and per skill: the
per-node success rates of the product, written back after every round of
training.  ``ace eval``, the GRPO trainer's periodic evaluation and ``ace loop``
all come through :func:`evaluate`.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ace_env.tasks import Task
from ace_env.worker import Budget
from ace_env.workspace import check_writable_kind
from ace_graph.ingest import GOLD_PREFIX, ingest_file, ingest_records
from ace_graph.store import GraphStore, scope_key
from train.distributed import expected_ids, ray_rollouts
from train.engine import RolloutConfig, RolloutEngine, in_order, write_rollouts
from train.goldprefix import records, score_tasks
from train.policies import GenerationConfig, PolicyError, RequestConfig, load_policy


def rollout_to_file(
    policy_spec: str,
    tasks: list[Task],
    config: RolloutConfig,
    out: Path,
    compact_tools: bool = True,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    ray: str | None = None,
    ray_workers: int | None = None,
) -> dict[str, Any]:
    """Roll a policy out on tasks into ``out`` (written to a temporary file, then renamed: never half-written).

    Rows are written in the canonical order (task by task, samples in order), so the file does
    not depend on batching; ``ray`` (a Ray address) spreads the conversations over a cluster
    (:func:`train.distributed.ray_rollouts`) and gives the same file.
    """
    order = expected_ids(tasks, config.n_per_task)
    if ray is not None:
        policy = None
        rows = ray_rollouts(policy_spec, tasks, config, ray, compact_tools, workers=ray_workers, on_done=on_done)
    else:
        policy = load_policy(policy_spec, compact_tools=compact_tools, tasks=tasks, request=config.request)
        rows = RolloutEngine(policy, config).run(tasks, on_done=on_done)
    start = time.perf_counter()
    try:
        with atomic_file(out) as f:
            totals = write_rollouts(in_order(rows, order), f)
    finally:
        if policy is not None:
            policy.close()
    seconds = time.perf_counter() - start
    totals["seconds"] = round(seconds, 3)
    totals["rollouts_per_s"] = round(totals["rollouts"] / seconds, 3) if seconds else None
    totals["tokens_per_s"] = round(totals["completion_tokens"] / seconds, 2) if seconds else None
    totals["out"] = str(out)
    return totals


def evaluate(
    store: GraphStore,
    policy_spec: str,
    tasks: list[Task],
    experiment: str,
    name: str,
    checkpoint: str,
    config: RolloutConfig,
    out: Path,
    min_support: int = 5,
    compact_tools: bool = True,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Roll out, verify and ingest into ``experiment/name/checkpoint``; the scope's tables as data.

    An endpoint that is down stops the rollout (:class:`train.errors.EndpointError`, no file, nothing stored);
    rollouts that every one ended by a policy error (each request refused) are not stored either: such a
    scope would score the policy's errors as its failures."""
    totals = rollout_to_file(policy_spec, tasks, config, out, compact_tools, on_done)
    if totals["rollouts"] and totals["errors"] == totals["rollouts"]:
        raise PolicyError(f"every one of the {totals['rollouts']} rollouts ended by a policy error (the first: "
                          f"{first_error(out)}); nothing is stored: check that the policy answers (rollouts in {out})")
    # Verified under the engine's own budget (a call it ended as timeout is attributed the same), by the
    # benchmark's own rules as every diagnosis is (GRPO's reward keeps the strict ones: train.rewards.STRICT).
    report = ingest_file(store, out, {t.id: t for t in tasks}, experiment, name, checkpoint, budget=config.budget)
    return {**_tables(store, report.scope, experiment, report.read, min_support),
            "rollout": totals, "ingest": report.to_dict()}


def _tables(store: GraphStore, scope: str, experiment: str, read: int, min_support: int) -> dict[str, Any]:
    """The scope's totals, per-skill and per-tool success and weakest compositions."""
    skills = store.run("capability-profile", scope=scope, level="skill")
    tools = store.run("capability-profile", scope=scope, level="tool")
    weak = store.run("weak-compositions", scope=scope, level="tool", min_support=min_support, min_lift=0.0, limit=10)
    scopes = [s for s in store.run("scopes", experiment=experiment) if s["key"] == scope]
    row = scopes[0] if scopes else {"rollouts": read, "rewarded": 0}
    return {
        "scope": scope,
        "rollouts": row["rollouts"],
        "rewarded": row["rewarded"],
        "pass_rate": round(row["rewarded"] / row["rollouts"], 4) if row["rollouts"] else 0.0,
        "skills": skills,
        "tools": tools,
        "weak_compositions": weak,
    }


def evaluate_gold_prefix(
    store: GraphStore,
    policy_spec: str,
    tasks: list[Task],
    experiment: str,
    name: str,
    checkpoint: str,
    out: Path,
    generate: bool = False,
    generation: GenerationConfig | None = None,
    budget: Budget | None = None,
    batch_size: int = 8,
    min_support: int = 5,
    compact_tools: bool = True,
    on_step: Callable[[int], None] | None = None,
    request: RequestConfig | None = None,
) -> dict[str, Any]:
    """Score every oracle step with the oracle's prefix (:mod:`train.goldprefix`), keep the per-step
    scores in ``out`` (JSONL, written whole or not at all) and ingest them as the gold-prefix scope
    ``experiment/name/checkpoint``; the summary and the scope's tables as data."""
    policy = load_policy(policy_spec, compact_tools=compact_tools, tasks=tasks, request=request)
    try:
        run = score_tasks(policy, tasks, generate, generation, budget, batch_size, on_step)
    finally:
        policy.close()
    if not run.scores:
        raise PolicyError(f"no step could be scored ({(run.skipped or ['no tasks'])[0]})")
    _write_jsonl(out, (s.to_dict() for s in run.scores))
    by_id = {t.id: t for t in tasks}
    scope = scope_key(experiment, name, checkpoint)
    report = ingest_records(store, records(run.scores, by_id, scope), by_id, experiment, name, checkpoint,
                            mode=GOLD_PREFIX)
    return {**_tables(store, report.scope, experiment, report.read, min_support),
            **run.summary(), "mode": GOLD_PREFIX, "generate": generate, "policy": policy_spec, "out": str(out),
            "ingest": report.to_dict(), "skipped_reasons": run.skipped[:10]}


@contextmanager
def atomic_file(out: Path) -> Iterator[IO[str]]:
    """A text file written under a temporary name and renamed over ``out`` when the block ends without
    error (never half-written; removed on error).  ``out`` must be a regular file or not exist yet: it
    is checked again right before the rename (:func:`ace_env.workspace.check_writable_kind`)."""
    check_writable_kind(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        os.chmod(tmp, 0o644)
        check_writable_kind(out)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def first_error(path: Path) -> str:
    """The first policy error recorded in a rollout file (its rows' meta.errors), shortened."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                errors = (json.loads(line).get("meta") or {}).get("errors") or []
                if errors:
                    return str(errors[0]).splitlines()[0][:200]
    except (OSError, ValueError, AttributeError):
        pass
    return "no message recorded"


def _write_jsonl(out: Path, rows: Iterable[dict[str, Any]]) -> None:
    with atomic_file(out) as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
