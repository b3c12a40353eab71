"""BFCL's part of gold-prefix scoring (its entry's ``gold_prefix``, :class:`ace_env.goldprefix.GoldPrefix`): a
task's gold transcript played over its own user turns, and a step's answer judged by running its turn.

Moved here from ``train/goldprefix/transcript.py`` and ``generated.py`` (the model side, teacher forcing and
generation, stays in :mod:`train.goldprefix`); what it builds and judges is unchanged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ace_env import bfcl, twins
from ace_env.bounded import BoundedVerifier, LineError
from ace_env.calls import Call, parse_call
from ace_env.executor import OK
from ace_env.goldprefix import (
    ABSTAIN_MESSAGE,
    DONE_MESSAGE,
    SYSTEM_PROMPT,
    GoldPrefix,
    GoldPrefixError,
    GoldStep,
    GoldTranscript,
    Judge,
    StepVerdict,
)
from ace_env.modelout import parse_message
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.verifier import WRONG_ARGUMENT, WRONG_TOOL
from ace_env.worker import Budget

# --------------------------------------------------------------------------- the gold transcript


def user_message(task: Task, turn: int) -> dict[str, Any]:
    """The task's own user turn as one message (BFCL's sentence for tools-only turns), as the rollout engine's
    scripted user says it."""
    texts = [m.get("content", "") for m in task.turns[turn].user if m.get("role", "user") == "user"]
    text = "\n\n".join(t for t in texts if t)
    return {"role": "user", "content": text or bfcl.ADDED_TOOLS_PROMPT}


def offered_schemas(task: Task, turn: int) -> list[dict[str, Any]]:
    """OpenAI tool schemas of the tools offered in a turn, in the task's order."""
    offered = task.offered_tools(turn)
    known = twins.all_functions()  # BFCL's functions and the task's wrong-way twins
    return [twins.tool_schema(n) for n in task.tools if n in offered and n in known]


def bfcl_transcript(task: Task) -> GoldTranscript:
    """The gold transcript of a task: the system prompt, each turn's user message (as the rollout engine
    shows it), each oracle call as one assistant tool call with its real output, and each turn's closing
    text (``DONE_MESSAGE``, or ``ABSTAIN_MESSAGE`` in a turn whose ground truth is empty).

    Raises :class:`~ace_env.goldprefix.GoldPrefixError` when the ground truth does not execute cleanly.
    """
    oracle = oracle_for(task)
    bad = [s for t in oracle.turns for s in t.steps if s.status != OK]
    if oracle.errors or bad:
        raise GoldPrefixError(f"task {task.id}: the oracle does not execute cleanly ({(oracle.errors or ['?'])[0]})")
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    steps: list[GoldStep] = []
    last_call: int | None = None
    for t, (turn, oturn) in enumerate(zip(task.turns, oracle.turns)):
        messages.append(user_message(task, t))
        for i, (raw, ostep) in enumerate(zip(turn.ground_truth, oturn.steps)):
            call = parse_call(raw)
            if not isinstance(call, Call):
                raise GoldPrefixError(f"task {task.id}: turn {t}: malformed ground truth {raw!r}")
            call_id = f"call_{t}_{i}"
            steps.append(GoldStep(len(steps), t, i, call.name, raw, len(messages), last_call))
            last_call = steps[-1].flat
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": call.name, "arguments": json.dumps(twins.tool_arguments(call))}}],
            })
            messages.append({"role": "tool", "tool_call_id": call_id, "name": call.name, "content": ostep.output})
        if not turn.ground_truth:
            steps.append(GoldStep(len(steps), t, 0, None, None, len(messages), last_call))
        messages.append({"role": "assistant", "content": DONE_MESSAGE if turn.ground_truth else ABSTAIN_MESSAGE})
    return GoldTranscript(task, messages, steps, turn_tools=functools.partial(offered_schemas, task))


# --------------------------------------------------------------------------- judging


def _replaced(task: Task, step: GoldStep, calls: list[Any]) -> list[list[Any]]:
    """The ground truth up to the step's turn, with the step's call replaced by ``calls``."""
    turns = [list(turn.ground_truth) for turn in task.turns[: step.turn + 1]]
    if step.tool is None:
        turns[step.turn] = list(calls)
    else:
        turns[step.turn][step.index:step.index + 1] = list(calls)
    return turns


def judge_replies(verifier: BoundedVerifier, steps: list[tuple[GoldTranscript, GoldStep]],
                  replies: list[Any]) -> list[StepVerdict]:
    """The verdict on each reply at its step: its first call replaces the oracle's call there, the rest of the
    turn stays the oracle's, and the turn is verified in ``verifier`` (a started BoundedVerifier over the
    steps' tasks, ``keep_steps=True``)."""
    firsts = []
    for reply in replies:
        calls = [] if reply.finish_reason == "error" else parse_message(reply.message).calls
        firsts.append(calls[:1])
    results = verifier.verify_many([
        (tr.task.id, _replaced(tr.task, s, first), f"{tr.task.id}@{s.turn}.{s.index}")
        for (tr, s), first in zip(steps, firsts)
    ])
    return [_judge(tr, s, reply, first, verdict)
            for (tr, s), reply, first, verdict in zip(steps, replies, firsts, results)]


def _judge(tr: GoldTranscript, s: GoldStep, reply: Any, first: list[Any], verdict: Any) -> StepVerdict:
    text = reply.message.get("content") or ""
    score = StepVerdict(answer=str(text)[:500])
    if reply.finish_reason == "error":
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "inference_error"
        return score
    if isinstance(verdict, LineError):
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "malformed_call"
        return score
    turn_ok = len(verdict.turn_ok) > s.turn and verdict.turn_ok[s.turn]
    if s.tool is None:  # the turn needs no call
        score.passed = score.exact = score.tool_right = not first and turn_ok
        score.attribution = None if score.passed else verdict.attribution or "acted_without_need"
        return score
    made = verdict.steps[s.turn][s.index] if first and len(verdict.steps) > s.turn and \
        len(verdict.steps[s.turn]) > s.index else None
    gold = oracle_for(tr.task).turns[s.turn].steps[s.index]
    score.tool_right = made is not None and made.name == gold.name
    score.exact = made is not None and made.executed and made.name == gold.name and \
        repr(made.arguments) == repr(gold.arguments)
    score.passed = bool(first) and turn_ok
    if not score.passed:
        if not first:
            score.attribution = "stopped_early"
        elif verdict.attribution in (None, WRONG_ARGUMENT, WRONG_TOOL):
            score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
        else:
            score.attribution = verdict.attribution
    return score


@contextmanager
def bfcl_judge(tasks: Mapping[str, Task], budget: Budget) -> Iterator[Judge]:
    """A bounded verifier over ``tasks``, judging replies at their steps (:func:`judge_replies`)."""
    with BoundedVerifier(dict(tasks), budget, keep_steps=True) as verifier:
        yield functools.partial(judge_replies, verifier)


#: BFCL's gold prefix: the task's own user turns.
BFCL_GOLD_PREFIX = GoldPrefix("task-turns", bfcl_transcript, bfcl_judge)
