"""What the rollout engine asks of an environment whose rollouts play the task's own user turns: its entry's
``task_turns`` (:class:`TaskTurns`).

A free-running rollout (``ace rollout``, ``ace eval``, synthesis's and GRPO's rollouts: :mod:`train.engine`)
is a conversation: per user turn the user speaks, the policy answers, the calls in its answer run against
the rollout's own state and their results go back, until the policy answers without calls; then the next
turn.  The batching, the budget of every call (a watched worker, :mod:`ace_env.boundedcalls`) and the rows
written are the engine's; what a turn is belongs to the environment, so its entry gives:

* ``user_message(task, turn)``: the user's message that opens turn ``turn`` (a chat message); the task's
  ``n_turns`` says how many turns there are;
* ``tools(task, turn)``: the OpenAI tool schemas offered in that turn (what the policy is shown);
* ``state(task)``: a fresh state of one rollout, whose ``call(call, turn)`` runs one call as the policy wrote
  it (a call string or a ``{name, arguments}`` object, read as data, never evaluated) and returns an
  :class:`ace_env.executor.StepResult` (``executed``, ``output``, ``detail``, ``name``); it is built and
  called in the engine's watched worker, and rebuilt there by replaying a rollout's earlier calls, so its
  calls must be deterministic.  A ``MemoryError`` (or :class:`ace_env.errors.BudgetExceeded`) ends the
  rollout with ``resource_limit``; any other exception is that call's error output.

An environment whose rollouts are dialogues with a simulated user gives ``policy_dialogues`` instead
(:mod:`ace_env.dialogues`); one that gives neither is not rolled out freely (``ace eval`` refuses its tasks
unless ``--gold-prefix``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskTurns:
    """What the rollout engine needs of one environment's tasks (the module doc)."""

    user_message: Callable[[Any, int], dict[str, Any]]
    tools: Callable[[Any, int], list[dict[str, Any]]]
    state: Callable[[Any], Any]
