"""``ace ingest``: verify, tag and store a rollout file, streaming, in batches.

Lines are read one at a time and written in batches of ``batch_size``
rollouts (at most ``2 * workers`` batches wait in memory), so memory stays
flat however large the file.  Each batch is one transaction (see
:mod:`ace_graph.store`), so an interrupted ingest can be rerun: rollouts
already stored are skipped.
"""

from __future__ import annotations

import itertools
import logging
import queue
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ace_env.bounded import LineError, verify_one
from ace_env.environments import verifier_for
from ace_env.formats import read_any
from ace_env.tasks import Task
from ace_env.verifier import with_inference_error
from ace_env.worker import Budget
from ace_graph.db import ensure_schema
from ace_graph.errors import ConfigError, IngestIncomplete, RolloutFormatError, RolloutIdConflict
from ace_graph.estimate import Cell, cells_from_records, estimate_scope
from ace_graph.outcomes import RolloutRecord, record
from ace_graph.stats import NEAR_SUCCESS
from ace_graph.store import GraphStore, scope_key
from ace_graph.tagger import tag_task

log = logging.getLogger(__name__)

#: How a scope's records were made: rollouts (verified free-running), or every oracle step scored
#: with the oracle's prefix in context (``train.goldprefix``).
FREE_RUNNING = "free-running"
GOLD_PREFIX = "gold-prefix"
MODES = (FREE_RUNNING, GOLD_PREFIX)


@dataclass
class IngestReport:
    scope: str
    read: int = 0
    created: int = 0
    skipped_existing: int = 0
    invalid: list[str] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    #: Wall seconds per phase: seeding the taxonomy and tasks, verifying+tagging+writing
    #: (overlapped), refitting the estimator, marking the scope complete.
    phases: dict[str, float] = field(default_factory=dict)

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
            "phase_seconds": {k: round(v, 3) for k, v in self.phases.items()},
        }


def _rollouts(path: Path, skip_invalid: bool, errors: list[str], id_suffix: str = "",
              skip_lines: dict[int, str] | None = None) -> Iterator[Any]:
    """The file's rollouts, less the lines ``skip_lines`` names (their messages go to ``errors``)."""
    for r in read_any(path, skip_invalid=skip_invalid, errors=errors, id_suffix=id_suffix):
        if skip_lines and r.line in skip_lines:
            errors.append(skip_lines[r.line])
            continue
        yield r


def line_refused(verdict: Any, rollout: Any, source: str, skip_invalid: bool, errors: list[str]) -> bool:
    """Whether the verifier refused ``rollout``'s line (``verdict`` a :class:`~ace_env.bounded.LineError`): the
    refusal, ``SOURCE: line N: why``, is raised as :class:`RolloutFormatError`, or with ``skip_invalid`` added
    to ``errors``."""
    if not isinstance(verdict, LineError):
        return False
    message = f"{source}: line {rollout.line}: {verdict.message}"
    if not skip_invalid:
        raise RolloutFormatError(message)
    errors.append(message)
    return True


def prepare(
    tasks: dict[str, Task],
    rollouts: Iterator[Any],
    scope: str,
    near_success: float,
    skip_invalid: bool,
    errors: list[str],
    source: str,
    verifier: Any = None,
) -> Iterator[tuple[RolloutRecord, tuple[Any, ...]]]:
    """Verify and tag each rollout; yield its record with the task's oracle tags.

    ``verifier`` (an ``ace_env.bounded.BoundedVerifier`` or a Ray one) runs
    every tool call under its budget; without one, rollouts are verified in
    this process with no budget (for trusted input: benchmarks, tests).
    """
    results = (
        verifier.verify_stream(rollouts) if verifier is not None
        else ((r, verify_one(tasks, r.task_id, r.turns, r.rollout_id)) for r in rollouts)
    )
    tags_of: dict[str, tuple[Any, ...]] = {}  # tags once per task in this call (the tasks must not change meanwhile)
    for r, verdict in results:
        if line_refused(verdict, r, source, skip_invalid, errors):
            continue
        task = tasks[r.task_id]
        if r.task_id not in tags_of:
            tags_of[r.task_id] = tag_task(task)
        tags = tags_of[r.task_id]
        verdict = with_inference_error(verdict, r)
        rec = record(task, tags, verdict, scope, r.rollout_id, r.turns, near_success)
        rec.digest = r.digest()
        yield rec, tags


#: Rollout ids whose stored digests :func:`check_rollout_ids` looks up per query.
ID_LOOKUP_BATCH = 5000


def check_rollout_ids(store: GraphStore, paths: Sequence[str | Path], key: str, id_suffix: str = "",
                      skip_invalid: bool = False) -> dict[int, dict[int, str]]:
    """Refuse, before anything is stored, a rollout id that would name two different rollouts of scope ``key``.

    Reads ``paths`` ahead (ids and digests only, in order: :meth:`ace_env.rollout.Rollout.digest`): an id that
    comes again with other content (in another file, or a BFCL result file's entry twice) or that the scope
    already stores with other content (an earlier ingest) is a :class:`RolloutIdConflict`, one line naming
    both places.  The same id with the same content (a rerun, a file given twice) is fine: the ingest skips
    it.  With ``skip_invalid`` such a rollout is a bad line instead: the result says, per index in ``paths``,
    which lines to skip and why (``{file: {line: message}}``, empty without conflicts).  Other bad lines are
    left to the ingest, which reports them as it always does; a file that is not a regular file (a pipe) is
    not read ahead (each batch's own check, in ``ingest-rollouts``, still refuses a stored conflict).
    """
    seen: dict[str, tuple[str, int, int]] = {}  # id -> (digest, file index, line) of its first rollout
    again: dict[str, list[tuple[int, int]]] = {}  # id -> the places it came again with the same content
    stored: set[str] = set()  # ids the scope holds with other content than their first rollout here
    pending: list[str] = []
    skip: dict[int, dict[int, str]] = {}

    def where(i: int, line: int) -> str:
        return f"{paths[i]}: line {line}" if line else str(paths[i])

    def conflict(i: int, line: int, message: str) -> None:
        if not skip_invalid:
            raise RolloutIdConflict(f"{message}, so nothing was stored: give the rollouts distinct ids (ingest a "
                                    "file with --id-suffix) or ingest them into another scope")
        skip.setdefault(i, {})[line] = f"{where(i, line)}: {message}"

    def lookup() -> None:
        for row in store.run("rollout-digests", scope=key, ids=pending):
            digest, i, line = seen[row["rollout"]]
            if row["digest"] != digest:
                if not skip_invalid:
                    conflict(i, line, f"rollout id {row['rollout'][:80]!r} ({where(i, line)}) is already stored in "
                                      f"scope {key} with other content; rollout ids must be unique within a scope "
                                      "(the same rollout again is skipped)")
                stored.add(row["rollout"])
        pending.clear()

    for i, path in enumerate(paths):
        path = Path(path)
        if not path.is_file() or not stat.S_ISREG(path.stat().st_mode):
            continue
        for r in read_any(path, skip_invalid=True, id_suffix=id_suffix):
            digest = r.digest()
            first = seen.get(r.rollout_id)
            if first is None:
                seen[r.rollout_id] = (digest, i, r.line)
                pending.append(r.rollout_id)
                if len(pending) >= ID_LOOKUP_BATCH:
                    lookup()
            elif first[0] == digest:
                again.setdefault(r.rollout_id, []).append((i, r.line))
            else:
                conflict(i, r.line, f"rollout id {r.rollout_id[:80]!r} names two different rollouts: "
                                    f"{where(i, r.line)} and {where(first[1], first[2])}; rollout ids must be "
                                    "unique within a scope (the same rollout again is skipped)")
    if pending:
        lookup()
    for rid in stored:  # only with skip_invalid: every rollout here with that id is skipped
        for i, line in [seen[rid][1:], *again.get(rid, [])]:
            conflict(i, line, f"rollout id {rid[:80]!r} is already stored in scope {key} with other content; "
                              "rollout ids must be unique within a scope (the same rollout again is skipped)")
    return skip


def ingest_file(
    store: GraphStore,
    path: str | Path,
    tasks: dict[str, Task],
    experiment: str,
    policy: str,
    checkpoint: str,
    round_: int | None = None,
    batch_size: int = 1000,
    near_success: float = NEAR_SUCCESS,
    skip_invalid: bool = False,
    seed_tasks: bool = True,
    on_progress: Callable[[int], None] | None = None,
    workers: int = 2,
    id_suffix: str = "",
    on_read: Callable[[int], None] | None = None,
    budget: Budget | None = None,
    ray: str | None = None,
    estimate: bool = True,
    strict: bool = False,
    check_ids: bool = True,
    skip_lines: dict[int, str] | None = None,
) -> IngestReport:
    """Ingest one rollout file into the scope (experiment, policy, checkpoint).

    ``workers`` transactions write batches concurrently while this thread
    verifies and tags the next ones.  ``on_progress(n)`` is called when a
    batch of ``n`` is written, ``on_read(1)`` for every rollout verified.
    Every tool call runs under ``budget``
    (see :mod:`ace_env.worker`); with ``ray`` (a cluster address or
    ``auto``) verification is spread over that Ray cluster.  With ``estimate`` (the default) the
    composition estimator is refitted on the scope afterwards (both levels) and
    its verdicts stored on the scope's edges (:func:`ace_graph.estimate.estimate_scope`).  ``strict``: ACE's
    rules stricter than the benchmark's evaluator also fail rollouts (BFCL and τ²; see ``ace verify --strict``).
    With ``check_ids`` (the default) the file's rollout ids are checked first (:func:`check_rollout_ids`): one
    that names two different rollouts of the scope is refused before anything is stored (with
    ``skip_invalid``, skipped and reported); a caller that checked every file of an ingest at once passes
    False, and the lines that check said to skip as ``skip_lines`` ({line: message}).
    """
    path = Path(path)
    errors: list[str] = []
    key = scope_key(experiment, policy, checkpoint)
    if check_ids:
        skip_lines = check_rollout_ids(store, [path], key, id_suffix, skip_invalid).get(0)
    # The verifying worker is forked before the writer threads start.
    verifier = verifier_for(tasks, budget, ray, strict=strict).start()
    try:
        items = prepare(tasks, _rollouts(path, skip_invalid, errors, id_suffix, skip_lines or {}), key,
                        near_success, skip_invalid, errors, str(path), verifier)
        report = ingest_records(store, items, tasks, experiment, policy, checkpoint, round_, batch_size,
                                seed_tasks, on_progress, workers, on_read, estimate)
    finally:
        verifier.close()
    report.invalid = errors
    return report


def ingest_records(
    store: GraphStore,
    items: Iterable[tuple[RolloutRecord, tuple[Any, ...]]],
    tasks: dict[str, Task],
    experiment: str,
    policy: str,
    checkpoint: str,
    round_: int | None = None,
    batch_size: int = 1000,
    seed_tasks: bool = True,
    on_progress: Callable[[int], None] | None = None,
    workers: int = 2,
    on_read: Callable[[int], None] | None = None,
    estimate: bool = True,
    mode: str = FREE_RUNNING,
) -> IngestReport:
    """Store records (each with its task's oracle tags) into the scope (experiment, policy, checkpoint).

    The write path of every ingest: :func:`ingest_file` hands it verified rollouts, gold-prefix scoring
    (``train.goldprefix``) its per-step scores with ``mode="gold-prefix"``.  A scope keeps the mode it was
    created with; adding records of the other mode is refused.  The estimator is refitted when records
    were created or when the scope was left incomplete by an earlier ingest (killed after its last
    batch), so a rerun always completes the scope.
    """
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, not {workers}")
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    key = scope_key(experiment, policy, checkpoint)
    scope = {"key": key, "experiment": experiment, "policy": policy, "checkpoint": checkpoint,
             "round": round_ if round_ is not None else _round_from(checkpoint), "mode": mode}
    report = IngestReport(key)
    start = time.perf_counter()
    mark = start

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        report.phases[name] = now - mark
        log.debug("ingest %s: %s took %.3f s", key, name, now - mark)
        mark = now

    # The first batch is read (and verified) before anything is written: a line refused in it (line 1 of a
    # file with the wrong tasks) leaves the graph as it was, with no tasks seeded and no scope to complete.
    items = iter(items)
    first = list(itertools.islice(items, batch_size))
    items = itertools.chain(first, items)
    if seed_tasks:
        # Idempotence and concurrent writers rely on the uniqueness constraints.
        ensure_schema(store.driver, store.database)
        store.ensure_taxonomy(tasks.values())
        store.upsert_tasks(tasks.values())
    existing = [r for r in store.run("scopes", experiment=experiment) if r["key"] == key]
    if existing and existing[0]["mode"] != mode:
        raise ConfigError(f"scope {key} holds {existing[0]['mode']} results; {mode} results go into a scope of "
                          "their own (give another checkpoint or name)")
    was_incomplete = bool(existing) and existing[0]["incomplete"]
    phase("seed")
    # Preparing records (Python) overlaps with writing (Neo4j): this thread
    # prepares batches while `workers` threads write them, each batch
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

    # Every committed batch marks the scope incomplete; only an ingest that ends
    # without error clears the mark, so one that stops leaves it (a rerun clears it).
    stopped: BaseException | None = None
    threads = [threading.Thread(target=writer, name=f"ace-ingest-{i}", daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    # The estimator's observations of every record sent to be written: when every one of them was
    # stored and the scope holds nothing else, the refit uses them instead of reading the steps back.
    cells: dict[str, list[Cell]] = {"tool": [], "skill": []}

    def send(batch: list[tuple[RolloutRecord, tuple[Any, ...]]]) -> None:
        if estimate:
            for level, acc in cells.items():
                acc.extend(cells_from_records(batch, level))
        pending.put(batch)

    def feed() -> None:
        batch: list[tuple[RolloutRecord, tuple[Any, ...]]] = []
        for item in items:
            batch.append(item)
            if on_read:
                on_read(1)
            if len(batch) >= batch_size:
                send(batch)
                batch = []
                if failures:
                    return
        if batch and not failures:
            send(batch)

    try:
        try:
            feed()
        finally:
            for _ in threads:
                pending.put(None)
            for t in threads:
                t.join()
    except Exception as e:  # reported below with what was committed
        stopped = e
    if failures and stopped is None:
        stopped = failures[0]
    if isinstance(stopped, RolloutIdConflict):
        raise IngestIncomplete(
            f"{str(stopped).rstrip('.')}. The ingest stopped: {report.created} rollout(s) were committed to scope "
            f"{key}, which is marked incomplete; rerun it once the ids are distinct (rollouts already stored are "
            "skipped)"
        ) from stopped
    if stopped is not None:
        raise IngestIncomplete(
            f"{str(stopped).rstrip('.')}. The ingest stopped: {report.created} rollout(s) were committed to "
            f"scope {key}, which is marked incomplete; rerun the same command to complete it "
            "(rollouts already stored are skipped)."
        ) from stopped
    phase("verify_tag_write")
    if estimate and (report.created or was_incomplete):
        everything = report.created == report.read and not report.skipped_existing and not was_incomplete
        for level in ("tool", "skill"):
            estimate_scope(store, key, level, known=(cells[level], report.created) if everything else None)
    phase("estimate")
    store.complete_scope(key)
    phase("complete")
    report.seconds = time.perf_counter() - start
    return report


#: The largest round a checkpoint name may carry (a round is stored as a 64-bit integer).
MAX_ROUND = 10**15


def _round_from(checkpoint: str) -> int:
    """A round number from a checkpoint name: the last run of the digits 0-9, else 0 (``step-200`` → 200).
    Other characters Unicode calls digits (``²``) are not digits here; a round past :data:`MAX_ROUND` is
    refused (before anything is written) with the way out: name the round with ``--round``."""
    digits = ""
    for ch in reversed(checkpoint):
        if "0" <= ch <= "9":
            digits = ch + digits
        elif digits:
            break
    if len(digits) > 16 or (digits and int(digits) > MAX_ROUND):
        raise ConfigError(f"checkpoint {checkpoint[:80]!r}: its number is past the largest round ({MAX_ROUND:,}); "
                          "give the round with --round")
    return int(digits) if digits else 0
