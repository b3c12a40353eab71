"""The bounded verifier: rollouts verified in a watched worker, every tool call under a budget.

A rollout is model output, and one of its calls can run for ever or grow
without bound; :class:`BoundedVerifier` verifies rollouts in a
:class:`ace_env.worker.WatchedWorker` (see there why a process, not a
thread), which kills the worker when a call goes over
:class:`ace_env.worker.Budget`; that rollout gets the verdict ``timeout`` or
``resource_limit`` (reward 0) and the rest of the batch goes on in a fresh
worker.

Rollouts travel in batches (``batch_size``), so the per-rollout cost is one
share of a pickle round trip, not a process start; a fresh process per call
or per rollout would cost milliseconds each, more than verifying the rollout.
The overhead is measured by ``benchmarks/verify_bench.py`` (the "bounded" row).

A task whose *oracle* (its ground truth) goes over budget gives every one of
its rollouts the same verdict without running them again.

Everything that goes wrong with one line (a rollout that does not fit its
task, an unknown task id, an unexpected error inside the verifier) comes back
as a :class:`LineError` for that line, never as a crash of the run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from ace_env.errors import BudgetExceeded, ConfigError, RolloutFormatError
from ace_env.oracle import Oracle, has_oracle, oracle_for
from ace_env.tasks import Task
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT, Verdict, over_budget, verify
from ace_env.worker import INDEX, Budget, WatchedWorker, messages, worker_setup

log = logging.getLogger(__name__)

#: Slot [2] of the verifier worker's shared clock (after the watched worker's CALL and INDEX): the phase.
_PHASE = 2
_IDLE, _ROLLOUT, _ORACLE, _SENDING = 0.0, 1.0, 2.0, 3.0


@dataclass(frozen=True)
class LineError:
    """One rollout that could not be verified; ``message`` says why (the line is data, not a crash)."""

    message: str


Result = Verdict | LineError


def verify_one(tasks: dict[str, Task], task_id: str, turns: Any, rollout_id: str | None,
               fast_forward: bool = True, oracle: Oracle | None = None, strict: bool = True) -> Result:
    """Verify one rollout in this process; every failure is a result (no budget enforced here).

    ``oracle``: the task's oracle if the caller has it (else it is looked up by the task's fingerprint).
    """
    task = tasks.get(task_id)
    if task is None:
        return LineError(f"unknown task_id {task_id!r}")
    try:
        return verify(task, turns, rollout_id=rollout_id, oracle=oracle, fast_forward=fast_forward, strict=strict)
    except RolloutFormatError as e:
        return LineError(str(e))
    except MemoryError:
        return over_budget(task, rollout_id, RESOURCE_LIMIT, "ran out of memory", 0, 0)
    except Exception as e:  # a line that breaks the verifier is reported as that line's error
        log.debug("verifier failed on %r", rollout_id, exc_info=True)
        return LineError(f"cannot be verified ({type(e).__name__}: {str(e)[:200]})")


def _worker(conn: Any, parent_end: Any, parent_pid: int, clock: Any, tasks: dict[str, Task], memory_mb: int,
            fast_forward: bool, keep_steps: bool, strict: bool = True) -> None:
    worker_setup(parent_end, parent_pid, clock, memory_mb)
    # The tasks are this process's own snapshot, taken at the fork and never edited here, so
    # each task's content fingerprint (the oracle cache's key) is computed once, not per rollout.
    fingerprints: dict[str, str] = {}
    for batch in messages(conn):
        out: list[Result] = []
        for i, (task_id, turns, rollout_id) in enumerate(batch):
            clock[INDEX] = i
            task = tasks.get(task_id) if isinstance(task_id, str) else None
            oracle = None
            if task is not None:
                fp = fingerprints.get(task_id)
                if fp is None:
                    fp = fingerprints[task_id] = task.fingerprint()
                clock[_PHASE] = _ROLLOUT if has_oracle(task, fp) else _ORACLE
                try:
                    oracle = oracle_for(task, fp)
                except BudgetExceeded as e:
                    out.append(over_budget(task, rollout_id, e.kind, f"the oracle of task {task.id}: {e}", 0, 0))
                    continue
                except Exception:  # verify() below reports it for this line
                    pass
            clock[_PHASE] = _ROLLOUT
            result = verify_one(tasks, task_id, turns, rollout_id, fast_forward, oracle, strict)
            if not keep_steps and isinstance(result, Verdict):
                result.steps, result.turn_ok = [], []  # not sent back unless asked for: most of the pickle
            out.append(result)
        clock[_PHASE] = _SENDING
        conn.send(out)
        clock[_PHASE] = _IDLE


FLUSH = object()


def read_ahead(rollouts: Iterable[Any], size: int) -> Iterator[Any]:
    """The rollouts with FLUSH after every ``size`` of them and at the end.

    When reading fails (a bad line without --skip-invalid), FLUSH comes first,
    so the rollouts read before the bad line are still verified, in order, and
    then the error is raised.
    """
    n = 0
    it = iter(rollouts)
    while True:
        try:
            r = next(it)
        except StopIteration:
            yield FLUSH
            return
        except Exception:
            yield FLUSH
            raise
        yield r
        n += 1
        if n % size == 0:
            yield FLUSH


class BoundedVerifier(WatchedWorker):
    """Verify rollouts in a watched worker process, every tool call under ``budget``.

    >>> with BoundedVerifier(tasks) as bv:                       # doctest: +SKIP
    ...     for rollout, result in bv.verify_stream(read_any(path)):
    ...         ...  # result is a Verdict (maybe attribution "timeout") or a LineError
    """

    def __init__(self, tasks: dict[str, Task], budget: Budget | None = None, batch_size: int = 64,
                 fast_forward: bool = True, keep_steps: bool = False, strict: bool = True):
        """``keep_steps``: also return each verdict's per-step results (``Verdict.steps``), which cost
        most of the transfer; the stored record and the printed verdict do not need them.  ``strict``:
        ACE's rules stricter than BFCL's checker fail rollouts (:func:`ace_env.verifier.verify`)."""
        if batch_size < 1:
            raise ConfigError(f"batch size must be at least 1, not {batch_size}")
        super().__init__(budget)
        self.tasks = tasks
        self.batch_size = batch_size
        self.fast_forward = fast_forward
        self.keep_steps = keep_steps
        self.strict = strict
        self._over_budget: dict[str, tuple[str, str]] = {}  # task id -> (kind, detail) of its oracle

    _name = "ace-verify-worker"
    _slots = 3  # and [2]: the phase (rollout, oracle, sending the verdicts)

    def _target(self) -> Any:
        return _worker

    def _worker_args(self) -> tuple[Any, ...]:
        return self.tasks, self.budget.memory_mb, self.fast_forward, self.keep_steps, self.strict

    # ------------------------------------------------------------------ verification

    def verify_stream(self, rollouts: Iterable[Any]) -> Iterator[tuple[Any, Result]]:
        """(rollout, result) for every rollout (``task_id``, ``turns``, ``rollout_id``), in order."""
        batch: list[Any] = []
        for r in read_ahead(rollouts, self.batch_size):
            if r is FLUSH:
                yield from zip(batch, self.verify_many([(x.task_id, x.turns, x.rollout_id) for x in batch]))
                batch = []
            else:
                batch.append(r)


    def verify_many(self, items: Sequence[tuple[str, Any, str | None]]) -> list[Result]:
        """Results for ``(task_id, turns, rollout_id)`` items, in order; a call over budget ends only its rollout."""
        results: list[Result | None] = [None] * len(items)
        todo = list(range(len(items)))
        single = False  # after a worker died while sending a batch, send one rollout at a time
        while todo:
            for i in list(todo):  # rollouts of a task whose oracle is over budget are not run again
                known = self._over_budget.get(items[i][0])
                if known is not None:
                    task = self.tasks[items[i][0]]
                    results[i] = over_budget(task, items[i][2], known[0], known[1], 0, 0)
                    todo.remove(i)
            if not todo:
                break
            chunk = todo[:1] if single else todo
            got, failed_at, kind, phase = self._round(items, chunk)
            for i, res in zip(chunk, got):
                results[i] = res
            done = len(got)
            if failed_at is None:
                todo = todo[done:] if single else []
                continue
            if phase == _SENDING:
                if single:  # this rollout's verdict itself does not fit
                    i = chunk[0]
                    results[i] = self._budget_verdict(items[i], RESOURCE_LIMIT, "its verdict exceeded the memory budget")
                    todo = todo[1:]
                single = True
                continue
            i = chunk[failed_at]
            if kind == TIMEOUT:
                detail = (f"the verifier made no progress for {self.stall_seconds:g} s outside any tool call"
                          if self.stalled else f"a tool call ran over the {self.budget.call_seconds:g} s budget")
            else:
                detail = f"the worker died ({kind}) over the {self.budget.memory_mb} MiB budget"
            kind = TIMEOUT if kind == TIMEOUT else RESOURCE_LIMIT
            if phase == _ORACLE and items[i][0] in self.tasks:
                self._over_budget[items[i][0]] = (kind, f"the oracle of task {items[i][0]}: {detail}")
                results[i] = self._budget_verdict(items[i], kind, self._over_budget[items[i][0]][1])
            else:
                results[i] = self._budget_verdict(items[i], kind, detail)
            log.info("rollout %r: %s", items[i][2], detail)
            # Verdicts of the rollouts before it were lost with the worker: redo them (deterministic).
            todo = [j for j in todo if j != i and results[j] is None]
        return results  # type: ignore[return-value]

    def _budget_verdict(self, item: tuple[str, Any, str | None], kind: str, detail: str) -> Result:
        task = self.tasks.get(item[0])
        if task is None:
            return LineError(f"unknown task_id {item[0]!r}")
        return over_budget(task, item[2], kind, detail, 0, 0)

    def _round(self, items: Sequence[Any], chunk: list[int]) -> tuple[list[Result], int | None, str, float]:
        """Send ``chunk`` to the worker and wait: (results, index that failed or None, why, phase)."""
        answer, why, clock = self._send_and_wait([items[i] for i in chunk])
        if not why:
            return answer, None, "", _IDLE
        if not clock:
            return [], 0, why, _ROLLOUT
        return [], int(clock[INDEX]), why, clock[_PHASE]
