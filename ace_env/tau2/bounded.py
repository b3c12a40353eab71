"""τ² rollouts under ACE's call budget: run and verify them in a watched, forked worker.

τ²'s tools are Python, and one of them evaluates arithmetic (airline's ``calculate`` accepts
``9**9**9**9``: one C-level power that never returns to the interpreter).  As for BFCL
(:mod:`ace_env.bounded`), the only reliable bound is a process that can be killed: :class:`Tau2Runner`
is a :class:`~ace_env.worker.WatchedWorker` whose worker, forked after the pristine databases and gold
states are loaded (so it inherits them), stamps every tool call into the shared clock
(:func:`ace_env.tau2.env.set_call_clock`).  A call over ``budget.call_seconds`` gets its worker killed
and the rollout the verdict ``timeout`` (reward 0); a fresh worker takes the next rollout.

:class:`GoldCheck` runs the load-time check of a τ² task file's gold
(:func:`ace_env.tau2.synthtasks.check_gold`: the gold replayed, ACE's verifier, τ²'s evaluator) in such a
worker, so a gold call over budget refuses the file instead of hanging the command that loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ace_env.tau2 import env as tau2_env
from ace_env.tau2.env import Tau2Call, Tau2Step
from ace_env.tau2.synthtasks import check_gold
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import Conversation, Tau2Verdict, gold, verify
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget, WatchedWorker, messages, worker_setup


@dataclass
class Tau2Outcome:
    """One bounded rollout: its steps and verdict, or (``attribution`` set) why it has none."""

    task_id: str
    steps: list[Tau2Step] = field(default_factory=list)
    verdict: Tau2Verdict | None = None
    attribution: str = ""  # "" when it ran; else timeout, signal N, exit code N, an error

    @property
    def reward(self) -> float:
        return self.verdict.reward if self.verdict is not None else 0.0


def _run_one(tasks: dict[str, Tau2Task], task_id: Any, calls: Any, conversation: Any = None) -> Tau2Outcome:
    task = tasks.get(task_id) if isinstance(task_id, str) else None
    if task is None:
        return Tau2Outcome(str(task_id), attribution=f"unknown τ² task {task_id!r}")
    if not isinstance(calls, (list, tuple)) or not all(isinstance(c, Tau2Call) for c in calls):
        return Tau2Outcome(task_id, attribution="a rollout is a list of Tau2Call")
    gold(task)  # the oracle's calls are stamped too
    if conversation is not None and not isinstance(conversation, Conversation):
        return Tau2Outcome(task_id, attribution="a rollout's conversation is a Conversation")
    steps, env = tau2_env.run_calls(task.domain, task.tau2_id, calls)
    return Tau2Outcome(task_id, steps, verify(task, steps, env, conversation))


def _worker(conn: Any, parent_end: Any, parent_pid: int, clock: Any, tasks: dict[str, Tau2Task],
            memory_mb: int) -> None:
    worker_setup(parent_end, parent_pid, clock, memory_mb)
    tau2_env.set_call_clock(clock)
    for task_id, calls, conversation in messages(conn):
        clock[1] += 1  # the item index moves: the watchdog sees progress between rollouts
        try:
            conn.send(_run_one(tasks, task_id, calls, conversation))
        except Exception as e:  # noqa: BLE001 - one rollout's failure is its result, not the run's end
            conn.send(Tau2Outcome(str(task_id), attribution=f"error: {type(e).__name__}: {e}"[:300]))


class Tau2Runner(WatchedWorker):
    """Run and verify τ² rollouts, every tool call under ``budget``.

    >>> with Tau2Runner(tasks_by_id(["airline"])) as runner:      # doctest: +SKIP
    ...     outcome = runner.run("tau2:airline:1", [Tau2Call("get_user_details", {"user_id": "x"})])
    """

    _name = "ace-tau2-worker"
    _slots = 2

    def __init__(self, tasks: dict[str, Tau2Task], budget: Budget | None = None, warm: bool = True):
        """``warm``: load the pristine databases of the tasks' domains here, before the fork."""
        super().__init__(budget)
        self.tasks = tasks
        if warm:
            for domain in {t.domain for t in tasks.values()}:
                tau2_env.pristine(domain)

    def _target(self) -> Any:
        return _worker

    def _worker_args(self) -> tuple[Any, ...]:
        return self.tasks, self.budget.memory_mb

    def run(self, task_id: str, calls: list[Tau2Call], conversation: Conversation | None = None) -> Tau2Outcome:
        """Run ``calls`` from the task's initial state and verify them (with what the rollout file says of the
        conversation, if anything); a call over budget ends only this rollout."""
        answer, why, _ = self._send_and_wait((task_id, list(calls), conversation))
        if answer is None:
            return Tau2Outcome(task_id, attribution=why)
        return answer


def _check_worker(conn: Any, parent_end: Any, parent_pid: int, clock: Any, tasks: dict[str, Tau2Task],
                  memory_mb: int) -> None:
    worker_setup(parent_end, parent_pid, clock, memory_mb)
    tau2_env.set_call_clock(clock)
    for task_id in messages(conn):
        clock[1] += 1  # the item index moves: the watchdog sees progress between tasks
        try:
            conn.send(check_gold(tasks[task_id]))
        except Exception as e:  # noqa: BLE001 - a check that breaks is that task's reason, not the run's end
            conn.send([f"its check failed ({type(e).__name__}: {e})"[:300]])


class GoldCheck(WatchedWorker):
    """:func:`~ace_env.tau2.synthtasks.check_gold` of tasks, in a watched worker, every gold call under ``budget``.

    The tasks must be known to the environment before the worker starts (synthesized ones registered by
    :func:`~ace_env.tau2.synthtasks.build_task`): it is forked, and inherits them.

    >>> with GoldCheck(tasks) as check:                      # doctest: +SKIP
    ...     check.reasons("tau2:airline:synth-0123")          # [] when the gold is a valid oracle
    """

    _name = "ace-tau2-gold-check"

    def __init__(self, tasks: dict[str, Tau2Task], budget: Budget | None = None):
        super().__init__(budget)
        self.tasks = tasks
        for domain in {t.domain for t in tasks.values()}:
            tau2_env.pristine(domain)  # loaded once here, inherited by every worker

    def _target(self) -> Any:
        return _check_worker

    def _worker_args(self) -> tuple[Any, ...]:
        return self.tasks, self.budget.memory_mb

    def reasons(self, task_id: str) -> list[str]:
        """Why the task's gold is not a valid oracle (empty: it is); a gold call over budget is a reason
        (``timeout: ...`` or ``resource_limit: ...``), and a fresh worker checks the next task."""
        answer, why, _ = self._send_and_wait(task_id)
        if answer is not None:
            return list(answer)
        if why == TIMEOUT:
            return [f"{TIMEOUT}: " + (f"its check made no progress for {self.stall_seconds:g} s" if self.stalled
                                      else f"a gold call ran over the {self.budget.call_seconds:g} s budget")]
        return [f"{RESOURCE_LIMIT}: the worker died ({why}) over the {self.budget.memory_mb} MiB budget"]
