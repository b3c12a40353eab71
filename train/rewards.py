"""TRL-native rewards that call ACE's verifier.

:func:`verifier_reward` has TRL's reward signature ``(prompts, completions,
**kwargs) -> list[float]`` and reads the ``task`` column of ACE's TRL export
(``ace export --format trl``): the whole task as JSON.  A completion is graded
on the task's first turn (the turn the exported prompt asks for): its calls
(Hermes ``<tool_call>`` blocks, OpenAI ``tool_calls`` or a BFCL python list,
read by :mod:`ace_env.modelout`, never evaluated) run in a fresh environment
and the verifier compares the state and outputs with the oracle's.  A
malformed call scores 0, never crashes the batch.

>>> import json
>>> from ace_env.bfcl import load_tasks
>>> task = load_tasks("base")[0]
>>> row = {"task": json.dumps(task.to_dict())}
>>> right = "[" + ", ".join(task.turns[0].ground_truth) + "]"
>>> verifier_reward(prompts=[[], []], completions=[right, "I cannot help."], task=[row["task"]] * 2)
[1.0, 0.0]
"""

from __future__ import annotations

import functools
import json
from typing import Any, Sequence

from ace_env.modelout import parse_message, parse_output
from ace_env.tasks import Task
from ace_env.verifier import verify


@functools.lru_cache(maxsize=4096)
def first_turn_task(task_json: str) -> Task:
    """The task cut to its first turn (its oracle is the first turn's ground truth)."""
    d = json.loads(task_json)
    d["turns"] = d["turns"][:1]
    d["id"] = f"{d['id']}@turn0"  # its own id: oracles are cached by task id
    return Task.from_dict(d)


def completion_calls(completion: Any) -> list[Any]:
    """The calls of one TRL completion: text, or a list of messages (only the assistant's count)."""
    if isinstance(completion, str):
        return parse_output(completion).calls
    calls: list[Any] = []
    if isinstance(completion, list):
        for message in completion:
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                calls.extend(parse_message(message).calls)
    return calls


def verifier_reward(prompts: Sequence[Any], completions: Sequence[Any], task: Sequence[str] | None = None,
                    partial: bool = False, **kwargs: Any) -> list[float]:
    """1.0 when a completion passes the first turn's verification, else 0.0 (``partial``: share of turns)."""
    if task is None:
        raise ValueError("verifier_reward needs the 'task' column of ACE's TRL export (ace export --format trl)")
    rewards = []
    for completion, task_json in zip(completions, task, strict=True):
        verdict = verify(first_turn_task(task_json), [completion_calls(completion)])
        rewards.append(float(verdict.partial_credit if partial else verdict.reward))
    return rewards


__all__ = ["completion_calls", "first_turn_task", "verifier_reward"]
