"""A τ² dialogue between an agent and a user simulator, in τ²'s turn order, executed on an ACE environment.

:func:`run_dialogue` follows τ²'s ``Orchestrator`` (non-solo mode): the trajectory opens with the agent's
fixed greeting (:data:`GREETING`, τ²'s ``DEFAULT_FIRST_AGENT_MESSAGE``; that module imports litellm, so the
text is written here and a test pins it to the installed file), then the user answers.  A message with
tool calls goes to the environment and its results go back to whoever called (the agent calls as
``assistant``, the user, in telecom, as ``user``); a message without tool calls goes to the other side.
It ends when

* the user's text holds a stop signal (:func:`ace_env.tau2.user.parse_user_turn`): ``user_stop``,
  ``transfer`` or ``out_of_scope`` (τ² records all three as ``user_stop``: :attr:`Dialogue.tau2_termination`);
* the agent's text holds ``###STOP###`` (τ²'s solo-agent stop token; its tool calls, if any, are not run):
  ``agent_stop``;
* ``max_turns`` messages have come from the two callables (a turn is one message, with its tool results):
  ``max_turns``;
* ``max_errors`` tool calls have errored (τ²'s default, 10): ``too_many_errors``;
* a callable sends an empty message (no text, no tool calls): ``agent_error`` / ``user_error``.

``agent`` and ``user`` are plain callables, ``messages -> message``, in OpenAI chat form: they get their
own view of the dialogue (:func:`agent_view`: the greeting, the user's texts, the agent's calls and their
results, never the user's calls; :func:`user_view`: :func:`~ace_env.tau2.user.user_system_prompt` then the
dialogue with roles flipped as τ²'s ``UserState.flip_roles`` does: the agent's texts as ``user``, the
user's own messages as ``assistant``, its own tool results) and answer with a dict
(``{"content": ..., "tool_calls": [...]}``) or a string.  Their own system prompts and tool schemas
(``task.tools``, ``task.user_tools``) are theirs to add.  Tool-call arguments are parsed as JSON, never
evaluated; a call that does not parse runs as an error step.

Execution is in-process, through :func:`ace_env.tau2.env.call` on one environment: the bounded runner
(:class:`ace_env.tau2.bounded.Tau2Runner`) runs a whole list of calls per rollout and has no per-call
interface, which a dialogue needs (each result goes back to a model before the next call).  So a call here
has no wall-clock or memory bound.  The :class:`Dialogue` keeps the executed steps (with requestors) and the
final environment: :func:`ace_env.tau2.verify.verify` takes them as they are (:meth:`Dialogue.verdict`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ace_env.tau2.env import ASSISTANT, USER, Tau2Call, Tau2Step, call, start
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.user import parse_user_turn, tool_calls_of, tool_requestors, user_system_prompt
from ace_env.tau2.verify import Tau2Verdict, verify

#: τ²'s ``DEFAULT_FIRST_AGENT_MESSAGE`` (tau2/orchestrator/orchestrator.py).
GREETING = "Hi! How can I help you today?"

#: The agent's stop token (τ²'s ``LLMSoloAgent.STOP_TOKEN``).
AGENT_STOP = "###STOP###"

_SIGNAL_TERMINATION = {"stop": "user_stop", "transfer": "transfer", "out_of_scope": "out_of_scope"}

Callable_ = Callable[[list[dict[str, Any]]], Any]


@dataclass
class Dialogue:
    """A finished dialogue: its messages, its executed tool calls and final environment, why it ended."""

    task_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # tool results carry "requestor", "error"
    steps: list[Tau2Step] = field(default_factory=list)  # every executed call, in order, with its requestor
    env: Any = None
    termination: str = ""  # user_stop transfer out_of_scope agent_stop max_turns too_many_errors *_error
    turns: int = 0  # messages from the two callables

    @property
    def tau2_termination(self) -> str:
        """τ²'s ``TerminationReason`` value (a transfer or out-of-scope signal is τ²'s ``user_stop``)."""
        return "user_stop" if self.termination in ("transfer", "out_of_scope") else self.termination

    def verdict(self, task: Tau2Task) -> Tau2Verdict:
        """ACE's verifier on the dialogue's executed calls and final state."""
        return verify(task, self.steps, self.env)


def _clean(message: dict[str, Any], role: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def agent_view(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the agent sees: every assistant message, the user's texts, the results of its own calls."""
    req = tool_requestors(messages)
    out = []
    for m, r in zip(messages, req):
        if m["role"] == ASSISTANT:
            out.append(_clean(m, ASSISTANT))
        elif m["role"] == USER and not m.get("tool_calls"):
            out.append({"role": USER, "content": m.get("content")})
        elif m["role"] == "tool" and r == ASSISTANT:
            out.append({"role": "tool", "tool_call_id": m.get("tool_call_id"), "content": m.get("content")})
    return out


def user_view(task: Tau2Task, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the user simulator sees, roles flipped as in τ²: its system prompt, the agent's texts as
    ``user``, its own messages (and tool calls) as ``assistant``, the results of its own calls."""
    req = tool_requestors(messages)
    out = [{"role": "system", "content": user_system_prompt(task)}]
    for m, r in zip(messages, req):
        if m["role"] == USER:
            out.append(_clean(m, ASSISTANT))
        elif m["role"] == ASSISTANT and not m.get("tool_calls"):
            out.append({"role": USER, "content": m.get("content")})
        elif m["role"] == "tool" and r == USER:
            out.append({"role": "tool", "tool_call_id": m.get("tool_call_id"), "content": m.get("content")})
    return out


def _as_message(raw: Any, role: str, used_ids: set[str]) -> dict[str, Any]:
    """A callable's answer as a message of ``role``: text, tool calls in OpenAI form with ids unique in the
    dialogue (a missing or repeated id is replaced)."""
    if isinstance(raw, str) or raw is None:
        return {"role": role, "content": raw or ""}
    if not isinstance(raw, dict):
        return {"role": role, "content": str(raw)}
    content = raw.get("content")
    msg: dict[str, Any] = {"role": role, "content": content if isinstance(content, str) else ""}
    calls = []
    for tc, (_, name, args) in zip(raw.get("tool_calls") or (), tool_calls_of(raw)):
        cid = tc.get("id") if isinstance(tc, dict) else None
        if not isinstance(cid, str) or not cid or cid in used_ids:
            cid = f"call_{len(used_ids)}"
            while cid in used_ids:
                cid += "_"
        used_ids.add(cid)
        calls.append({"id": cid, "type": "function",
                      "function": {"name": name, "arguments": args if isinstance(args, str) else
                                   json.dumps(args, default=str)}})
    if calls:
        msg["tool_calls"] = calls
    return msg


def run_dialogue(task: Tau2Task, agent: Callable_, user: Callable_, max_turns: int = 100, env: Any = None,
                 max_errors: int = 10) -> Dialogue:
    """Run ``agent`` and ``user`` on ``task`` in τ²'s turn order (see the module docstring) on ``env``
    (default: a fresh environment in the task's initial state)."""
    d = Dialogue(task.id, env=env if env is not None else start(task.domain, task.tau2_id))
    d.messages.append({"role": ASSISTANT, "content": GREETING})
    used_ids: set[str] = set()
    errors = 0
    side = USER
    while True:
        if side == USER:
            msg = _as_message(user(user_view(task, d.messages)), USER, used_ids)
        else:
            msg = _as_message(agent(agent_view(d.messages)), ASSISTANT, used_ids)
        d.turns += 1
        d.messages.append(msg)
        calls = tool_calls_of(msg)
        if side == ASSISTANT and AGENT_STOP in msg["content"]:
            d.termination = "agent_stop"
            return d
        if not calls and not msg["content"].strip():
            d.termination = "user_error" if side == USER else "agent_error"
            return d
        if calls:
            for cid, name, args in calls:
                step = call(d.env, Tau2Call(name, args, side), cid)
                d.steps.append(step)
                errors += step.error
                d.messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": step.content,
                                   "requestor": side, "error": step.error})
        elif side == USER:
            signal = parse_user_turn(msg["content"]).signal
            if signal is not None:
                d.termination = _SIGNAL_TERMINATION[signal]
                return d
            side = ASSISTANT
        else:
            side = USER
        if errors >= max_errors:
            d.termination = "too_many_errors"
            return d
        if d.turns >= max_turns:
            d.termination = "max_turns"
            return d
