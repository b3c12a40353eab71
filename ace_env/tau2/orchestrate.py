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

Every tool call, the agent's and the user's, runs under ACE's call budget by default (``budget``: a
:class:`~ace_env.worker.Budget`, by default :meth:`Budget.from_env`): in the watched worker of a
:class:`ace_env.tau2.calls.Tau2Calls`, one call per pipe round trip, the dialogue's environment living
there.  Pass ``calls`` (a long-lived :class:`Tau2Calls`) to run many dialogues in one worker; without it
each dialogue forks its own and closes it at the end.  A call over the wall-clock budget ends the dialogue
with ``timeout``, one over the memory budget with ``resource_limit`` (:attr:`Dialogue.detail` says which
call and why; its tool message is an error); the process, and the next dialogue, go on.  When the dialogue
has ended otherwise, ACE's verifier (:func:`ace_env.tau2.verify.verify`) runs in the worker on the executed
steps and the final environment, and :meth:`Dialogue.verdict` returns that verdict (the environment stays
there: ``Dialogue.env`` is None).  ``budget=None`` (for benchmarks and trusted callables only) runs the
calls in this process, unbounded, through :func:`ace_env.tau2.env.call` on one environment (``env``, or a
fresh one), which the :class:`Dialogue` keeps: :meth:`Dialogue.verdict` verifies it here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ace_env.boundedcalls import Overrun
from ace_env.errors import ConfigError
from ace_env.tau2.calls import Tau2Calls
from ace_env.tau2.env import ASSISTANT, USER, Tau2Call, Tau2Step, call, start
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.user import parse_user_turn, tool_calls_of, tool_requestors, user_system_prompt
from ace_env.tau2.verify import Tau2Verdict, verify
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget

#: τ²'s ``DEFAULT_FIRST_AGENT_MESSAGE`` (tau2/orchestrator/orchestrator.py).
GREETING = "Hi! How can I help you today?"

#: The agent's stop token (τ²'s ``LLMSoloAgent.STOP_TOKEN``).
AGENT_STOP = "###STOP###"

_SIGNAL_TERMINATION = {"stop": "user_stop", "transfer": "transfer", "out_of_scope": "out_of_scope"}

Callable_ = Callable[[list[dict[str, Any]]], Any]

#: ``run_dialogue``'s default budget: :meth:`Budget.from_env` when the dialogue starts.
FROM_ENV: Any = object()


@dataclass
class Dialogue:
    """A finished dialogue: its messages, its executed tool calls and final environment, why it ended."""

    task_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # tool results carry "requestor", "error"
    steps: list[Tau2Step] = field(default_factory=list)  # every executed call, in order, with its requestor
    env: Any = None  # the final environment when the calls ran in this process (budget=None), else None
    termination: str = ""  # user_stop transfer out_of_scope agent_stop max_turns too_many_errors *_error
    #                        timeout resource_limit (a call over the budget)
    turns: int = 0  # messages from the two callables
    detail: str = ""  # why a call over the budget ended the dialogue
    checked: Tau2Verdict | None = None  # ACE's verdict, computed in the worker (bounded calls)

    @property
    def tau2_termination(self) -> str:
        """τ²'s ``TerminationReason`` value (a transfer or out-of-scope signal is τ²'s ``user_stop``;
        ``timeout`` and ``resource_limit`` are ACE's own: τ² has no call budget)."""
        return "user_stop" if self.termination in ("transfer", "out_of_scope") else self.termination

    @property
    def overrun(self) -> bool:
        """Whether a call over the budget ended the dialogue."""
        return self.termination in (TIMEOUT, RESOURCE_LIMIT)

    def verdict(self, task: Tau2Task) -> Tau2Verdict:
        """ACE's verifier on the dialogue's executed calls and final state: reward 0 when a call went over
        the budget; else the verdict computed in the worker, or (calls run here) :func:`verify` now."""
        if task.id != self.task_id:
            raise ValueError(f"the dialogue ran {self.task_id!r}, not {task.id!r}")
        if self.overrun:
            return Tau2Verdict(task.id, 0.0, False, state_ok=False, assertions_ok=False, actions_ok=False,
                               detail=[f"{self.termination}: {self.detail}"])
        if self.checked is not None:
            return self.checked
        if self.env is None:
            raise ValueError("the dialogue has neither a verdict from the worker nor an environment")
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
                 max_errors: int = 10, budget: Budget | None = FROM_ENV, calls: Tau2Calls | None = None) -> Dialogue:
    """Run ``agent`` and ``user`` on ``task`` in τ²'s turn order (see the module docstring).

    The tool calls run in ``calls``'s watched worker, or (no ``calls``) in a worker of this dialogue's own
    under ``budget`` (default :meth:`Budget.from_env`); ``budget=None`` runs them here, unbounded, on
    ``env`` (default: a fresh environment in the task's initial state)."""
    if budget is FROM_ENV:
        budget = Budget.from_env()
    bounded = calls is not None or budget is not None
    if bounded and env is not None:
        raise ConfigError("run_dialogue: an environment of your own runs in this process: pass budget=None "
                          "(unbounded) or leave env out")
    d = Dialogue(task.id)
    own = calls is None and budget is not None
    runner = Tau2Calls({task.id: task}, budget) if own else calls
    try:
        if runner is not None:
            rid = runner.open(task)
            try:
                _converse(d, task, agent, user, max_turns, max_errors,
                          lambda c, cid: runner.call(rid, c, cid))
                if not d.overrun:
                    got = runner.verdict(rid)
                    d.checked = got if isinstance(got, Tau2Verdict) else \
                        Tau2Verdict(task.id, 0.0, False, detail=[f"the verifier: {got.kind}: {got.detail}"])
            finally:
                runner.finish(rid)
        else:
            d.env = env if env is not None else start(task.domain, task.tau2_id)
            _converse(d, task, agent, user, max_turns, max_errors, lambda c, cid: call(d.env, c, cid))
    finally:
        if own and runner is not None:
            runner.close()
    return d


def _converse(d: Dialogue, task: Tau2Task, agent: Callable_, user: Callable_, max_turns: int, max_errors: int,
              execute: Callable[[Tau2Call, str], Tau2Step | Overrun]) -> None:
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
            return
        if not calls and not msg["content"].strip():
            d.termination = "user_error" if side == USER else "agent_error"
            return
        if calls:
            for cid, name, args in calls:
                c = Tau2Call(name, args, side)
                result = execute(c, cid)
                if isinstance(result, Overrun):
                    step = Tau2Step(c, f"Error: the call was stopped: {result.detail}", True)
                else:
                    step = result
                d.steps.append(step)
                errors += step.error
                d.messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": step.content,
                                   "requestor": side, "error": step.error})
                if isinstance(result, Overrun):
                    d.termination = result.kind if result.kind in (TIMEOUT, RESOURCE_LIMIT) else RESOURCE_LIMIT
                    d.detail = f"{side}'s call {name}: {result.detail}"
                    return
        elif side == USER:
            signal = parse_user_turn(msg["content"]).signal
            if signal is not None:
                d.termination = _SIGNAL_TERMINATION[signal]
                return
            side = ASSISTANT
        else:
            side = USER
        if errors >= max_errors:
            d.termination = "too_many_errors"
            return
        if d.turns >= max_turns:
            d.termination = "max_turns"
            return
