"""τ² tool calls one at a time, each under ACE's wall-clock and memory budget: what a dialogue needs.

A dialogue (:func:`ace_env.tau2.orchestrate.run_dialogue`) hands each tool-call result back to a model
before the next call is made, so it cannot use :class:`ace_env.tau2.bounded.Tau2Runner` (a whole list of
calls per rollout).  :class:`Tau2Calls` is the rollout engine's :class:`ace_env.boundedcalls.BoundedCalls`
with τ² environments in its worker: one long-lived *forked* worker process holds the environment of every
live dialogue (a :class:`Tau2Session`), each call is one pipe round trip, and the same machinery bounds it
(:mod:`ace_env.worker`: the call's start stamped into the shared clock, SIGKILL at its deadline,
``RLIMIT_AS`` for memory; the other live dialogues' environments rebuilt by replaying their calls in a
fresh worker).  A call over ``budget.call_seconds`` comes back as an
:class:`~ace_env.boundedcalls.Overrun` of kind ``timeout``, one that runs out of the memory budget as
``resource_limit``; either ends its dialogue, never the process.

τ²'s ``Environment.get_response`` turns every ``Exception`` into an ``Error: ...`` tool message, a
``MemoryError`` included, so a tool that ran out of the budget would read as an ordinary failed call.  In
the worker, each session's ``make_tool_call`` is wrapped so that a ``MemoryError`` passes τ²'s handler
(as a ``BaseException``) and ends the dialogue with ``resource_limit``, as BFCL's executor does.

The final state never leaves the worker (airline's database view pickles as 7 MB): :meth:`Tau2Calls.verdict`
runs ACE's verifier (:func:`ace_env.tau2.verify.verify`) there, on the session's executed steps and
environment, under the same budget (the gold replay it needs is stamped too).

>>> with Tau2Calls(tasks_by_id(["airline"]), Budget(call_seconds=2)) as calls:      # doctest: +SKIP
...     rid = calls.open(task)
...     step = calls.call(rid, Tau2Call("calculate", {"expression": "2+2"}))  # a Tau2Step, or an Overrun
...     verdict = calls.verdict(rid)  # a Tau2Verdict, or an Overrun
...     calls.finish(rid)
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from ace_env.boundedcalls import BoundedCalls, Overrun
from ace_env.tau2 import env as tau2_env
from ace_env.tau2.env import Tau2Call, Tau2Step
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import Tau2Verdict, verify
from ace_env.worker import Budget


@dataclass(frozen=True)
class VerifyRequest:
    """Sent in place of a tool call: the session answers with ACE's verdict on its steps and final state."""


VERIFY = VerifyRequest()


class _OutOfMemory(BaseException):
    """A ``MemoryError`` inside a τ² tool, carried past τ²'s ``except Exception`` in ``get_response``."""


def _guarded(make_tool_call: Any) -> Any:
    @functools.wraps(make_tool_call)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return make_tool_call(*args, **kwargs)
        except MemoryError as e:
            raise _OutOfMemory(str(e) or "MemoryError") from None
    return guarded


class Tau2Session:
    """One dialogue's environment, in the worker: it runs the calls and keeps the steps they made."""

    def __init__(self, task: Tau2Task):
        self.task = task
        self.env = tau2_env.start(task.domain, task.tau2_id)
        self.env.make_tool_call = _guarded(self.env.make_tool_call)
        self.steps: list[Tau2Step] = []

    def call(self, c: Tau2Call | VerifyRequest, call_id: str) -> Tau2Step | Tau2Verdict:
        if isinstance(c, VerifyRequest):
            return verify(self.task, self.steps, self.env)
        try:
            step = tau2_env.call(self.env, c, call_id)
        except _OutOfMemory as e:
            raise MemoryError(f"the τ² tool {c.name} ran out of memory: {e}") from None
        self.steps.append(step)
        return step


class Tau2Calls(BoundedCalls):
    """τ² dialogues' environments in a watched worker; every tool call, agent- or user-side, under ``budget``.

    ``tasks`` (by ACE id) are the tasks the worker is forked with; :meth:`open` on a task it was not forked
    with has the next call start a fresh worker (the live dialogues' environments are rebuilt by replay).
    ``warm``: load their domains' pristine databases and τ² tasks here, before the fork, so that every
    worker inherits them.
    """

    _name = "ace-tau2-calls"

    def __init__(self, tasks: dict[str, Tau2Task] | Iterable[Tau2Task] = (), budget: Budget | None = None,
                 warm: bool = True):
        by_id = dict(tasks) if isinstance(tasks, dict) else {t.id: t for t in tasks}
        super().__init__(by_id, budget)  # type: ignore[arg-type]  # τ² tasks, read by _new_env below
        self.warm = warm
        self._numbers = itertools.count()
        self._open: set[str] = set()  # dialogues opened and not yet ended
        for domain in {t.domain for t in by_id.values()}:
            self._warm(domain)

    def _warm(self, domain: str) -> None:
        if self.warm:
            tau2_env.raw_tasks(domain)
            tau2_env.pristine(domain)

    # ------------------------------------------------------------------ the worker's side

    def _worker_init(self, clock: Any) -> None:
        tau2_env.set_call_clock(clock)

    def _new_env(self, rollout_id: str) -> Tau2Session:
        return Tau2Session(self.tasks[rollout_id.rpartition("#")[0]])  # type: ignore[arg-type]

    def _call_failed(self, call: Any, error: Exception) -> Any:
        if isinstance(call, Tau2Call):
            return Tau2Step(call, f"Error: ACE's τ² executor failed ({type(error).__name__}: {error})", True)
        return Overrun("error", f"ACE's verifier failed ({type(error).__name__}: {error})")

    # ------------------------------------------------------------------ the caller's side

    def open(self, task: Tau2Task) -> str:
        """A new dialogue on ``task``: its rollout id, for :meth:`call`, :meth:`verdict` and :meth:`finish`."""
        known = self.tasks.get(task.id)
        if known is not task and known != task:
            self.tasks[task.id] = task  # type: ignore[assignment]
            self._warm(task.domain)
            self.close()  # the worker was forked without it: the next call forks one that has it
        rollout_id = f"{task.id}#{next(self._numbers)}"
        self._open.add(rollout_id)
        return rollout_id

    def finish(self, rollout_id: str) -> None:
        """The dialogue has ended (an Overrun ends it too): its environment is freed with the next message."""
        self._open.discard(rollout_id)
        super().finish(rollout_id)

    def _one(self, rollout_id: str, c: Any, call_id: str) -> Any:
        if rollout_id not in self._open:
            raise ValueError(f"no open dialogue {rollout_id!r}: it has ended, or was never opened")
        [result] = self.run([(rollout_id, c, call_id)])  # type: ignore[list-item]
        return result

    def call(self, rollout_id: str, c: Tau2Call, call_id: str = "call") -> Tau2Step | Overrun:
        """Run one call of the dialogue: its step, or the Overrun (timeout, resource_limit) that ended it."""
        return self._one(rollout_id, c, call_id)

    def verdict(self, rollout_id: str) -> Tau2Verdict | Overrun:
        """ACE's verdict on the dialogue's executed calls and final state, computed in the worker."""
        return self._one(rollout_id, VERIFY, "verify")
