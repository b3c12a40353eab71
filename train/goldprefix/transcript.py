"""A task's gold transcript: its oracle played as a conversation, one oracle call per assistant message, and the steps a policy is asked (BFCL's here; τ²'s in :mod:`train.goldprefix.tau2`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import OK
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from train.engine import ScriptedUser, offered_schemas
from train.errors import ExportError
from train.export import ABSTAIN_MESSAGE, DONE_MESSAGE, SYSTEM_PROMPT, tool_arguments
from train.policies.base import Conversation

# --------------------------------------------------------------------------- the gold transcript


@dataclass(frozen=True)
class GoldStep:
    """One oracle step of a task and where its gold answer sits in the task's transcript."""

    flat: int  # index among the task's oracle steps (the tagger's flat order)
    turn: int
    index: int  # index in the turn's ground truth (0 for an abstain step)
    tool: str | None  # None: a turn whose ground truth is empty (the step is to abstain)
    call: str | None  # the ground-truth call string
    message: int  # index of the gold assistant message in Transcript.messages
    prev: int | None  # flat index of the oracle's previous call step (abstain steps skipped)


@dataclass
class Transcript:
    """A task's oracle played as a conversation, and its steps."""

    task: Any  # a BFCL Task, or a τ² task (train.goldprefix.tau2)
    messages: list[dict[str, Any]]
    steps: list[GoldStep]
    tools: list[dict[str, Any]] | None = None  # the tools of every turn (τ²); None: the BFCL turn's own

    def tools_for(self, turn: int) -> list[dict[str, Any]]:
        return self.tools if self.tools is not None else offered_schemas(self.task, turn)

    def conversation(self, step: GoldStep) -> Conversation:
        """The conversation up to (not including) the gold answer of ``step``, as a policy is asked it."""
        return Conversation(
            [dict(m) for m in self.messages[: step.message]],
            self.tools_for(step.turn),
            key=f"{self.task.id}@{step.turn}.{step.index}",
            task=self.task,
            turn=step.turn,
            state={"gold_step": (step.turn, step.index)},
        )


@dataclass(frozen=True)
class GoldPrefixHooks:
    """What gold-prefix scoring needs of one environment's tasks: how its gold transcript is built, how its
    generated steps are verified, and what a step's prefix is (a run's summary names it)."""

    task_type: type  # the environment's task type (ace_env.environments.ToolEnvironment.task_type)
    prefix: str
    transcript: Callable[[Any], "Transcript"]
    generated: Callable[..., dict[tuple[str, int], Any]]
    #: The verdicts on replies at their steps ([(transcript, step)], replies, budget) -> [StepScore]: what a
    #: transition-mode GRPO run (train.transitions) rewards.
    judge: Callable[[list[tuple["Transcript", GoldStep]], list[Any], Any], list[Any]]


def bfcl_transcript(task: Task) -> Transcript:
    """The gold transcript of a task: the system prompt, each turn's user message (as the rollout engine
    shows it), each oracle call as one assistant tool call with its real output, and each turn's closing
    text (``DONE_MESSAGE``, or ``ABSTAIN_MESSAGE`` in a turn whose ground truth is empty).

    Raises :class:`train.errors.ExportError` when the ground truth does not execute cleanly.
    """
    oracle = oracle_for(task)
    bad = [s for t in oracle.turns for s in t.steps if s.status != OK]
    if oracle.errors or bad:
        raise ExportError(f"task {task.id}: the oracle does not execute cleanly ({(oracle.errors or ['?'])[0]})")
    user = ScriptedUser()
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    steps: list[GoldStep] = []
    last_call: int | None = None
    for t, (turn, oturn) in enumerate(zip(task.turns, oracle.turns)):
        messages.append(user.message(task, t, messages))
        for i, (raw, ostep) in enumerate(zip(turn.ground_truth, oturn.steps)):
            call = parse_call(raw)
            if not isinstance(call, Call):
                raise ExportError(f"task {task.id}: turn {t}: malformed ground truth {raw!r}")
            call_id = f"call_{t}_{i}"
            steps.append(GoldStep(len(steps), t, i, call.name, raw, len(messages), last_call))
            last_call = steps[-1].flat
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": call.name, "arguments": json.dumps(tool_arguments(call))}}],
            })
            messages.append({"role": "tool", "tool_call_id": call_id, "name": call.name, "content": ostep.output})
        if not turn.ground_truth:
            steps.append(GoldStep(len(steps), t, 0, None, None, len(messages), last_call))
        messages.append({"role": "assistant", "content": DONE_MESSAGE if turn.ground_truth else ABSTAIN_MESSAGE})
    return Transcript(task, messages, steps)
