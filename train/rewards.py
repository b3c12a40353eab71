"""ACE's reward: one definition of a verdict's scalar reward, and the TRL-native reward functions built on it.

:func:`reward_of` is the one place a verdict becomes a number: GRPO's rollouts
(:mod:`train.grpo`), the exported TRL reward (:func:`verifier_reward`), TRL's
environment (:class:`train.trlenv.TrlToolEnv`) and evaluation's pass counts all
go through it, so they cannot disagree on the same rollout.

:func:`verifier_reward` has TRL's reward signature ``(prompts, completions,
**kwargs) -> list[float]`` and reads the ``task`` column of ACE's TRL export
(``ace export --format trl``): the whole task as JSON.  A completion is graded
on the turns it reaches: a text completion, or a list of assistant and tool
messages (what ``GRPOTrainer`` produces from the export's first-turn
``prompt``), answers the first turn; a list of messages that also holds user
messages (a multi-turn consumer playing the export's ``turns``) answers one
more turn per user message.  Its calls (Hermes ``<tool_call>`` blocks, OpenAI
``tool_calls`` or a BFCL python list, read by :mod:`ace_env.modelout`, never
evaluated) run in a fresh environment, in a watched worker process with every
tool call under the verifier's budget (:class:`ace_env.bounded.BoundedVerifier`:
a call over it scores 0), and the verifier compares the state and
outputs with the oracle's, turn by turn, on the task cut to the turns
reached.  A malformed call, or more turns than the task has, scores 0; nothing
crashes the batch.

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

from ace_env.bounded import BoundedVerifier, LineError
from ace_env.errors import ConfigError
from ace_env.modelout import parse_message, parse_output
from ace_env.tasks import Task
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget

#: Whether ACE's rules stricter than the benchmark's checker (no call in a turn whose ground truth is empty, no
#: tool that was not offered, no call that does not parse) fail a rewarded rollout: GRPO, the exported reward,
#: TRL's environment and evaluation all judge by them (``ace ingest`` and ``ace verify`` leave them off unless
#: ``--strict``, as the diagnosis judges).
STRICT = True

#: Attributions of a rollout a tool call of which went over its budget: reward 0, whatever its partial credit.
OVER_BUDGET = (TIMEOUT, RESOURCE_LIMIT)


def reward_of(verdict: Any, partial_credit: float = 0.0) -> float:
    """The scalar reward of a verdict: 1 for a pass, else ``W × partial_credit`` (W = ``partial_credit``, the
    weight); 0 for a rollout that went over budget, and for a line that could not be verified (a
    :class:`~ace_env.bounded.LineError`).

    >>> from types import SimpleNamespace as V
    >>> reward_of(V(reward=1.0, partial_credit=1.0, attribution=None)), reward_of(V(reward=0.0, partial_credit=0.5, attribution="wrong_args"), 0.5)
    (1.0, 0.25)
    """
    if isinstance(verdict, LineError):
        return 0.0
    if verdict.reward >= 1.0:
        return 1.0
    if getattr(verdict, "attribution", None) in OVER_BUDGET:
        return 0.0
    return partial_credit * float(verdict.partial_credit)


def ace_reward(prompts: Sequence[Any], completions: Sequence[Any], ace_reward: Sequence[float] | None = None, **kwargs: Any) -> list[float]:
    """TRL-native reward: the verifier's reward that ACE's rollout computed for each completion (GRPO's
    ``rollout_func`` puts :func:`reward_of` of each verdict in the ``ace_reward`` field).

    >>> ace_reward(["t1", "t1"], ["...", "..."], ace_reward=[1.0, 0.0])
    [1.0, 0.0]
    """
    if ace_reward is None:
        raise ConfigError("ace_reward needs the rollout's `ace_reward` field: use it with ACE's rollout_func.")
    return [float(r) for r in ace_reward]


@functools.lru_cache(maxsize=4096)
def task_prefix(task_json: str, n_turns: int) -> Task:
    """The task cut to its first ``n_turns`` turns (its oracle is those turns' ground truth)."""
    d = json.loads(task_json)
    if n_turns < len(d["turns"]):
        d["turns"] = d["turns"][:n_turns]
        # its own id: oracles are cached by task id
        d["id"] = f"{d['id']}@turn0" if n_turns == 1 else f"{d['id']}@turns0-{n_turns - 1}"
    return Task.from_dict(d)


def first_turn_task(task_json: str) -> Task:
    """The task cut to its first turn (its oracle is the first turn's ground truth)."""
    return task_prefix(task_json, 1)


def completion_turns(completion: Any) -> list[list[Any]]:
    """The calls of one TRL completion, per user turn (a user message in a list of messages opens the next)."""
    if isinstance(completion, str):
        return [parse_output(completion).calls]
    turns: list[list[Any]] = [[]]
    if isinstance(completion, list):
        for message in completion:
            if not isinstance(message, dict):
                continue
            role = message.get("role", "assistant")
            if role == "user":
                turns.append([])
            elif role == "assistant":
                turns[-1].extend(parse_message(message).calls)
    return turns


def completion_calls(completion: Any) -> list[Any]:
    """Every call of one TRL completion: text, or a list of messages (only the assistant's count)."""
    return [c for turn in completion_turns(completion) for c in turn]


def verifier_reward(prompts: Sequence[Any], completions: Sequence[Any], task: Sequence[str] | None = None,
                    partial: bool = False, budget: Budget | None = None, **kwargs: Any) -> list[float]:
    """1.0 when a completion passes verification on the turns it reaches, else 0.0 (``partial``: share of turns);
    :func:`reward_of` of its verdict, with weight 1 when ``partial``."""
    if task is None:
        raise ValueError("verifier_reward needs the 'task' column of ACE's TRL export (ace export --format trl)")
    rewards: list[float | None] = []
    tasks: dict[str, Task] = {}
    items: list[tuple[str, list[list[Any]], None]] = []
    for completion, task_json in zip(completions, task, strict=True):
        turns = completion_turns(completion)
        if len(turns) > len(json.loads(task_json)["turns"]):
            rewards.append(0.0)  # more user turns than the task has: not a rollout of this task
            continue
        t = task_prefix(task_json, len(turns))
        tasks[t.id] = t
        items.append((t.id, turns, None))
        rewards.append(None)
    # The calls are model output: they run in a watched worker, each under the budget (never here).
    with BoundedVerifier(tasks, budget or Budget(), strict=STRICT) as verifier:
        results = iter(verifier.verify_many(items) if items else [])
    out = []
    for r in rewards:
        if r is None:
            r = reward_of(next(results), 1.0 if partial else 0.0)
        out.append(r)
    return out


__all__ = ["ace_reward", "completion_calls", "completion_turns", "first_turn_task", "reward_of", "task_prefix",
           "verifier_reward"]
