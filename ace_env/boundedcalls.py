"""The rollout engine's tool calls, each under a wall-clock and a memory budget.

A policy's answer is model output, and model output can ask for
``power(base=10, exponent=1000000000)``: one C-level bigint operation that
never returns to the interpreter.  Run in the engine's own process, that one
call would stall every conversation of the batch (and the model) forever.  So
the engine never executes a call itself: the environments of all its live
rollouts live in one long-lived *forked* worker process (forked, so it
inherits the loaded BFCL classes and the tasks without pickling them), the
same watched worker (:mod:`ace_env.worker`) that bounds the verifier, with the
same :class:`ace_env.worker.Budget` (and so the same flags, ``--call-timeout``
and ``--memory-limit``):

* each engine step sends the calls of the whole batch in one message; the
  worker runs them in order (a rollout's calls against that rollout's own
  :class:`ace_env.executor.RolloutState`) and stamps the start of every call
  into a shared clock (:func:`ace_env.executor.set_call_clock`);
* the parent sleeps exactly until the running call's deadline; a call still
  running then gets the worker killed (SIGKILL), and ends *its* rollout with
  ``timeout``; a call that runs out of the worker's ``RLIMIT_AS`` (its size at
  start + ``memory_mb``) ends its rollout with ``resource_limit`` (a
  ``MemoryError`` inside the call, or a worker that dies anyway);
* the memory budget bounds the worker's growth, and the worker holds the
  environments of all the live rollouts (at most the engine's ``batch_size``;
  each is freed when its rollout ends), where the verifier holds one at a time;
* the other rollouts go on: a fresh worker is forked, and it rebuilds each
  of their environments the first time it is asked for a call of theirs, by
  replaying that rollout's earlier calls (the executor is deterministic: fresh
  instances from the task's initial configuration, seeded generators), then
  the calls of the batch the killed worker had not answered are sent again.

Why not a fork per call (child runs the call, returns the StepResult and the
environment's ``checkpoint()``)?  That pays a process start (of a process that
may hold a model) and a pickle of the environment's whole state on every
call; the long-lived worker pays one pipe round trip per engine step, and the
replay only when a call was killed (not measured against each other).  Measured on this machine (2 cores shared with
other work, so noisy; the simulated agent, which answers in microseconds, so
the tool calls are all there is): all 200 ``bfcl:base`` tasks, 1,142 calls,
batches of 8, three runs each way — 0.69 / 0.96 / 1.20 s with the calls in the
engine's process (``RolloutConfig(budget=None)``), 1.14 / 1.21 / 2.03 s through
the worker: about 0.4 ms per call (best against best; one round trip per
engine step carries the calls of the whole batch).  Next to a model's answer
(seconds on 2 CPU cores, tens of ms on a GPU) it does not show.

The environments are BFCL's by default; a subclass names another kind through three hooks that run in
the worker (:meth:`BoundedCalls._new_env`, :meth:`BoundedCalls._call_failed`,
:meth:`BoundedCalls._worker_init`): :class:`ace_env.tau2.calls.Tau2Calls` runs τ² dialogues' calls so.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Sequence

from ace_env import executor
from ace_env.errors import BudgetExceeded
from ace_env.executor import RolloutState, StepResult
from ace_env.tasks import Task
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import INDEX, Budget, WatchedWorker, messages, worker_setup

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Overrun:
    """A call that went over its budget: ``kind`` is ``timeout`` or ``resource_limit``; it ends its rollout."""

    kind: str
    detail: str


#: One call to run: (rollout id, the call as the policy wrote it, the user turn it is made in).
Item = tuple[str, Any, int]


def _worker(conn: Any, parent_end: Any, parent_pid: int, clock: Any, owner: "BoundedCalls", memory_mb: int) -> None:
    worker_setup(parent_end, parent_pid, clock, memory_mb)
    owner._worker_init(clock)
    envs: dict[str, Any] = {}
    for drops, batch in messages(conn):
        for rid in drops:
            envs.pop(rid, None)
        out: list[StepResult | Overrun] = []
        ended: set[str] = set()
        for i, (rid, replay, call, turn) in enumerate(batch):
            clock[INDEX] = i
            if rid in ended:  # an earlier call of this rollout went over budget: it has ended
                out.append(Overrun(RESOURCE_LIMIT, "an earlier call of the rollout ran out of memory"))
                continue
            try:
                if replay is not None:  # first call of this rollout in this worker: rebuild its environment
                    env = envs[rid] = owner._new_env(rid)
                    for old_call, old_turn in replay:
                        env.call(old_call, old_turn)
                out.append(envs[rid].call(call, turn))
            except (BudgetExceeded, MemoryError) as e:
                envs.pop(rid, None)
                ended.add(rid)
                out.append(Overrun(RESOURCE_LIMIT, f"ran out of the memory budget ({e})"))
            except Exception as e:  # a defect of the executor is this call's error output, not a dead batch
                log.debug("the executor failed on %r", call, exc_info=True)
                out.append(owner._call_failed(call, e))
        try:
            conn.send(out)
        except MemoryError:  # the results themselves do not fit: the parent sees the worker die
            os._exit(3)


class BoundedCalls(WatchedWorker):
    """The environments of an engine's rollouts, in a watched worker; every call under ``budget``.

    ``tasks`` maps each rollout id the engine will use to its task (known up
    front, so the forked worker inherits them).

    >>> with BoundedCalls({"t#0": task}, Budget(call_seconds=2)) as calls:        # doctest: +SKIP
    ...     [result] = calls.run([("t#0", "ls()", 0)])  # a StepResult, or an Overrun
    """

    _name = "ace-rollout-calls"

    def __init__(self, tasks: dict[str, Task], budget: Budget | None = None):
        super().__init__(budget)
        self.tasks = tasks
        self._history: dict[str, list[tuple[Any, int]]] = {}  # calls each live rollout has made
        self._in_worker: set[str] = set()  # rollouts whose environment the current worker holds
        self._drops: list[str] = []

    def _target(self) -> Any:
        return _worker

    def _worker_args(self) -> tuple[Any, ...]:
        return self, self.budget.memory_mb  # forked, not pickled: the worker calls the hooks below

    # ------------------------------------------------- in the worker: the kind of environment (BFCL's)

    def _worker_init(self, clock: Any) -> None:
        """Once, in a fresh worker, after :func:`~ace_env.worker.worker_setup` (which has the executor stamp
        its calls into ``clock``); another kind of environment has its own calls stamped here."""

    def _new_env(self, rollout_id: str) -> Any:
        """A fresh environment for ``rollout_id``: anything whose ``call(call, turn)`` runs one call and
        returns its result (raising MemoryError or BudgetExceeded when it runs out of memory)."""
        return RolloutState(self.tasks[rollout_id])

    def _call_failed(self, call: Any, error: Exception) -> Any:
        """The result of a call whose environment raised ``error`` (a defect of ACE's, not of the call)."""
        return StepResult(call, executor.ERROR, detail=f"ACE's executor failed ({type(error).__name__}: {error})")

    def _on_start(self) -> None:
        self._in_worker = set()  # a fresh worker holds no environment yet
        self._drops = []

    def finish(self, rollout_id: str) -> None:
        """A rollout has ended: its environment is freed (with the next batch)."""
        self._history.pop(rollout_id, None)
        if rollout_id in self._in_worker:
            self._in_worker.discard(rollout_id)
            self._drops.append(rollout_id)

    # ------------------------------------------------------------------ calls

    def run(self, items: Sequence[Item]) -> list[StepResult | Overrun]:
        """Run the calls in order; each result is a StepResult, or an Overrun that ended its rollout."""
        results: list[StepResult | Overrun | None] = [None] * len(items)
        todo = list(range(len(items)))
        while todo:
            got, failed_at, why = self._round([items[i] for i in todo])
            for i, res in zip(todo, got):
                results[i] = res
                rid, call, turn = items[i]
                if isinstance(res, Overrun):
                    self.finish(rid)
                else:
                    self._history.setdefault(rid, []).append((call, turn))
            if failed_at is None:
                break
            bad = todo[failed_at]
            rid = items[bad][0]
            if why == TIMEOUT:
                over = Overrun(TIMEOUT, f"the executor made no progress for {self.stall_seconds:g} s outside the call"
                               if self.stalled else f"the call ran over the {self.budget.call_seconds:g} s budget")
            else:
                over = Overrun(RESOURCE_LIMIT, f"the worker died ({why}) over the {self.budget.memory_mb} MiB budget")
            log.info("rollout %r: %s", rid, over.detail)
            results[bad] = over
            self.finish(rid)
            # Results of the calls before it were lost with the worker: they run again in a fresh one
            # (after their rollouts' environments are rebuilt); later calls of the ended rollout never run.
            todo = [j for j in todo if results[j] is None and items[j][0] != rid]
            for j in [j for j in range(len(items)) if results[j] is None and items[j][0] == rid]:
                results[j] = Overrun(over.kind, "an earlier call of the rollout went over budget")
        return results  # type: ignore[return-value]

    def _round(self, items: list[Item]) -> tuple[list[StepResult | Overrun], int | None, str]:
        """Send one batch and wait: (results, index that failed or None, why it failed)."""
        self.start()
        batch = []
        for rid, call, turn in items:
            replay = None
            if rid not in self._in_worker:
                replay = list(self._history.get(rid, ()))
                self._in_worker.add(rid)
            batch.append((rid, replay, call, turn))
        drops, self._drops = self._drops, []
        answer, why, clock = self._send_and_wait((drops, batch))
        if not why:
            return answer, None, ""
        return [], int(clock[INDEX]) if clock else 0, why
