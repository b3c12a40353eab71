"""``ace ingest``: verify, tag and store a rollout file, streaming, in batches.

Lines are read one at a time and written in batches of ``batch_size``
rollouts (at most ``2 * workers`` batches wait in memory), so memory stays
flat however large the file.  Each batch is one transaction (see
:mod:`ace_graph.store`), so an interrupted ingest can be rerun: rollouts
already stored are skipped.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ace_env.formats import read_any
from ace_env.tasks import Task
from ace_env.verifier import oracle_for, verify_rollout
from ace_graph.db import ensure_schema
from ace_graph.errors import ConfigError, RolloutFormatError
from ace_graph.outcomes import RolloutRecord, record
from ace_graph.store import GraphStore, scope_key
from ace_graph.tagger import tag_task


@dataclass
class IngestReport:
    scope: str
    read: int = 0
    created: int = 0
    skipped_existing: int = 0
    invalid: list[str] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "read": self.read,
            "created": self.created,
            "already_stored": self.skipped_existing,
            "invalid": len(self.invalid),
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "rollouts_per_s": round(self.read / self.seconds, 1) if self.seconds else None,
            "steps_per_s": round(self.steps / self.seconds, 1) if self.seconds else None,
        }


def _rollouts(path: Path, skip_invalid: bool, errors: list[str], id_suffix: str = "") -> Iterator[Any]:

    yield from read_any(path, skip_invalid=skip_invalid, errors=errors, id_suffix=id_suffix)


def prepare(
    tasks: dict[str, Task],
    rollouts: Iterator[Any],
    scope: str,
    near_success: float,
    skip_invalid: bool,
    errors: list[str],
    source: str,
) -> Iterator[tuple[RolloutRecord, tuple[Any, ...]]]:
    """Verify and tag each rollout; yield its record with the task's oracle tags.

    Each task's oracle and tags are looked up once per call (by its content
    fingerprint, computed once here): the tasks must not change meanwhile.
    An error names the file and line once: ``FILE: line N: what is wrong``.
    """
    derived: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    for r in rollouts:
        task = tasks.get(r.task_id)
        try:
            if task is None:
                raise RolloutFormatError(f"unknown task_id {r.task_id!r}")
            if r.task_id not in derived:
                fp = task.fingerprint()
                derived[r.task_id] = (oracle_for(task, fp), tag_task(task, fp))
            oracle, tags = derived[r.task_id]
            verdict = verify_rollout(task, r, oracle=oracle)
        except RolloutFormatError as e:
            message = f"{source}: line {r.line}: {e}"
            if not skip_invalid:
                raise RolloutFormatError(message) from e
            errors.append(message)
            continue
        yield record(task, tags, verdict, scope, r.rollout_id, r.turns, near_success), tags


def ingest_file(
    store: GraphStore,
    path: str | Path,
    tasks: dict[str, Task],
    experiment: str,
    policy: str,
    checkpoint: str,
    round_: int | None = None,
    batch_size: int = 1000,
    near_success: float = 0.7,
    skip_invalid: bool = False,
    seed_tasks: bool = True,
    on_progress: Callable[[int], None] | None = None,
    workers: int = 2,
    id_suffix: str = "",
) -> IngestReport:
    """Ingest one rollout file into the scope (experiment, policy, checkpoint).

    ``workers`` transactions write batches concurrently while this thread
    verifies and tags the next ones.
    """
    if workers < 1:

        raise ConfigError(f"workers must be at least 1, not {workers}")
    path = Path(path)
    key = scope_key(experiment, policy, checkpoint)
    scope = {"key": key, "experiment": experiment, "policy": policy, "checkpoint": checkpoint,
             "round": round_ if round_ is not None else _round_from(checkpoint)}
    report = IngestReport(key)
    start = time.perf_counter()
    if seed_tasks:
        # Idempotence and concurrent writers rely on the uniqueness constraints.

        ensure_schema(store.driver, store.database)
        store.ensure_taxonomy()
        store.upsert_tasks(tasks.values())
    # Verification and tagging (Python) overlap with writing (Neo4j): this
    # thread prepares batches while `workers` threads write them, each batch
    # in its own transaction.  A failed batch stops the ingest and is raised.
    lock = threading.Lock()
    pending: queue.Queue[list[tuple[RolloutRecord, tuple[Any, ...]]] | None] = queue.Queue(maxsize=2 * workers)
    failures: list[BaseException] = []

    def writer() -> None:
        while True:
            batch = pending.get()
            if batch is None:
                return
            if failures:
                continue
            try:
                result = store.ingest_batch(scope, batch)
            except BaseException as e:  # re-raised in the calling thread below
                failures.append(e)
                continue
            with lock:
                report.read += result.received
                report.created += result.created
                report.skipped_existing += result.received - result.created
                report.steps += result.steps
            if on_progress:
                on_progress(result.received)

    threads = [threading.Thread(target=writer, name=f"ace-ingest-{i}", daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    batch: list[tuple[RolloutRecord, tuple[Any, ...]]] = []
    try:
        for item in prepare(tasks, _rollouts(path, skip_invalid, report.invalid, id_suffix), key, near_success,
                            skip_invalid, report.invalid, str(path)):
            batch.append(item)
            if len(batch) >= batch_size:
                pending.put(batch)
                batch = []
                if failures:
                    break
        if batch and not failures:
            pending.put(batch)
    finally:
        for _ in threads:
            pending.put(None)
        for t in threads:
            t.join()
    if failures:
        raise failures[0]
    report.seconds = time.perf_counter() - start
    return report


def _round_from(checkpoint: str) -> int:
    """A round number from a checkpoint name: the last run of digits, else 0 (``step-200`` → 200)."""
    digits = ""
    for ch in reversed(checkpoint):
        if ch.isdigit():
            digits = ch + digits
        elif digits:
            break
    return int(digits) if digits else 0
