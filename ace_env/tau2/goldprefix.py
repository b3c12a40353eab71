"""τ²'s part of gold-prefix scoring (its entry's ``gold_prefix``, :class:`ace_env.goldprefix.GoldPrefix`): the
task's ideal dialogue as prefix, and a step's answer run in the bounded τ² worker.

Moved here from ``train/goldprefix/tau2.py`` (the model side, teacher forcing and generation, stays in
:mod:`train.goldprefix`); what it builds and judges is unchanged.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ace_env.goldprefix import GoldPrefix, GoldPrefixError, GoldStep, GoldTranscript, Judge, StepVerdict
from ace_env.modelout import is_malformed, parse_message
from ace_env.tau2.agent import MALFORMED_NAME, agent_system_prompt
from ace_env.tau2.bounded import Tau2Runner
from ace_env.tau2.env import ASSISTANT, USER, Tau2Call
from ace_env.tau2.ideal import ideal_dialogue
from ace_env.tau2.rollouts import to_call
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import gold_calls
from ace_env.verifier import MALFORMED_CALL, WRONG_ARGUMENT, WRONG_TOOL
from ace_env.worker import Budget

# --------------------------------------------------------------------------- τ² tasks
#
# Gold-prefix scoring on τ² tasks (ace_env.bfcl.goldprefix is BFCL's); the model side is train.goldprefix's.
#
# A τ² task's gold holds the agent's calls but no user turns: its user is simulated.  The prefix of a step
# is therefore the task's *ideal dialogue* (:func:`ace_env.tau2.ideal.ideal_dialogue`): the gold calls in
# order, executed on the task's database, with the scripted user who answers exactly the identifying
# values each call needs (checked by τ²'s fidelity rules, the dialogue the user simulator is fine-tuned
# on).  The agent sees it as in a τ² rollout: τ²'s agent system prompt and policy, the domain's agent
# tools, the user's messages, its own calls and their outputs; telecom's user-side calls and their
# outputs are the user's and are left out of the agent's view.  A run's summary names its prefix
# (``prefix``: ``ideal-dialogue``), so a τ² gold-prefix figure is never mistaken for one over a real user.
#
# Step ``j`` is the task's ``j``-th gold agent action (the tagger's flat order, all in turn 0); a task
# without agent actions is one abstain step, scored on the closing text.
#
# * teacher forced (``hf:``): as for BFCL, one forward pass per task;
# * generated: the step's first call replaces gold action ``j`` and the whole gold (user calls included)
#   runs in the bounded τ² worker (:class:`~ace_env.tau2.bounded.Tau2Runner`).  The step passes when the
#   rollout's reward is 1 (the final database and assertions equal the gold's) *and* the call returned
#   what the gold call returned, so a read with other arguments fails even though it changes nothing,
#   and a call equal in effect but not in form passes.


def _agent_view(message: dict[str, Any]) -> dict[str, Any] | None:
    """A message of the ideal dialogue as the agent sees it (None: the user's own tool call or its output)."""
    if message["role"] == USER and message.get("tool_calls"):
        return None
    if message["role"] == "tool":
        if message.get("requestor") == USER:
            return None
        return {k: message[k] for k in ("role", "tool_call_id", "name", "content")}
    out = {"role": message["role"], "content": message.get("content") or None}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def tau2_transcript(task: Tau2Task) -> GoldTranscript:
    """The gold transcript of a τ² task: τ²'s agent prompt, then the ideal dialogue in the agent's view."""
    dialogue = ideal_dialogue(task)
    messages: list[dict[str, Any]] = [{"role": "system", "content": agent_system_prompt(task.domain)}]
    steps: list[GoldStep] = []
    for m in dialogue.messages:
        view = _agent_view(m)
        if view is None:
            continue
        if view["role"] == ASSISTANT and view.get("tool_calls"):
            fn = view["tool_calls"][0]["function"]
            prev = steps[-1].flat if steps else None
            steps.append(GoldStep(len(steps), 0, len(steps), fn["name"], fn["arguments"], len(messages), prev))
        messages.append(view)
    if not task.agent_actions:  # one abstain step: the agent's closing text
        last = max(i for i, m in enumerate(messages) if m["role"] == ASSISTANT)
        steps.append(GoldStep(0, 0, 0, None, None, last, None))
    if len(steps) != max(len(task.agent_actions), 1):
        raise GoldPrefixError(f"task {task.id}: the ideal dialogue holds {len(steps)} agent calls for "
                          f"{len(task.agent_actions)} gold agent actions")
    return GoldTranscript(task, messages, steps, tools=[dict(t) for t in task.tools])


def _first_call(reply: Any) -> Tau2Call | None:
    """The reply's first call as a τ² call (a malformed one kept as a call that errors), None without one."""
    if reply.finish_reason == "error":
        return None
    calls = parse_message(reply.message).calls
    if not calls:
        return None
    first = calls[0]
    if is_malformed(first):  # runs as a call whose arguments are not an object: an error step
        return Tau2Call(MALFORMED_NAME, "malformed: " + str(first.get("raw", ""))[:500])
    if isinstance(first, dict) and isinstance(first.get("name"), str) and isinstance(first.get("arguments"), dict):
        return Tau2Call(first["name"], dict(first["arguments"]))
    try:
        return to_call(first)
    except Exception:  # noqa: BLE001 - a call ACE cannot read is a call that errors, never a crash
        return Tau2Call(MALFORMED_NAME, "malformed: " + json.dumps(first, default=str)[:500])


def _with_step(task: Tau2Task, j: int, made: Tau2Call | None) -> tuple[list[Tau2Call], int | None]:
    """The gold calls with agent action ``j`` replaced by ``made`` (left out when None), and its position
    (None when left out)."""
    calls, at, n = [], None, 0
    for c in gold_calls(task):
        if c.requestor == ASSISTANT:
            if n == j:
                if made is not None:
                    at = len(calls)
                    calls.append(made)
                n += 1
                continue
            n += 1
        calls.append(c)
    return calls, at


def judge_tau2(runner: Tau2Runner, tr: GoldTranscript, s: GoldStep, reply: Any) -> StepVerdict:
    """The verdict on one reply at its step (the module doc)."""
    task = tr.task
    text = (reply.message.get("content") or "") if reply.finish_reason != "error" else ""
    score = StepVerdict(answer=str(text)[:500])
    if reply.finish_reason == "error":
        score.passed = score.exact = score.tool_right = False
        score.attribution = "inference_error"
        return score
    made = _first_call(reply)
    if s.tool is None:  # no gold action: the agent should only talk
        score.passed = score.exact = score.tool_right = made is None
        score.attribution = None if made is None else "acted_without_need"
        return score
    if made is None:
        score.passed = score.exact = score.tool_right = False
        score.attribution = "stopped_early"
        return score
    action = task.agent_actions[s.index]
    score.tool_right = made.name == action.name
    score.exact = score.tool_right and made.arguments == action.arguments
    calls, at = _with_step(task, s.index, made)
    assert at is not None
    outcome = runner.run(task.id, calls)
    if outcome.verdict is None:
        score.passed, score.attribution = False, outcome.attribution or "error"
        return score
    gold_output = tr.messages[s.message + 1]["content"]  # what the gold call returned, as the agent saw it
    step = outcome.steps[at] if at < len(outcome.steps) else None
    score.passed = outcome.verdict.reward == 1.0 and step is not None and step.content == gold_output
    if not score.passed:
        if not isinstance(made.arguments, dict):
            score.attribution = MALFORMED_CALL
        else:
            score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
    return score


def _judge_all(runner: Tau2Runner, steps: list[tuple[GoldTranscript, GoldStep]], replies: list[Any]) -> list[StepVerdict]:
    return [judge_tau2(runner, tr, s, reply) for (tr, s), reply in zip(steps, replies, strict=True)]


@contextmanager
def tau2_judge(tasks: Mapping[str, Tau2Task], budget: Budget) -> Iterator[Judge]:
    """A bounded τ² worker over ``tasks``, judging replies at their steps one by one (:func:`judge_tau2`)."""
    with Tau2Runner(dict(tasks), budget) as runner:
        yield functools.partial(_judge_all, runner)


#: τ²'s gold prefix: the task's ideal dialogue with a scripted user.
TAU2_GOLD_PREFIX = GoldPrefix("ideal-dialogue", tau2_transcript, tau2_judge)
