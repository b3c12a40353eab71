"""The τ² user simulator, for real: a policy playing the user, and SFT rows that teach it.

:class:`Tau2LLMUser` is a callable for :func:`ace_env.tau2.orchestrate.run_dialogue`'s ``user``: it gets
the user's view of the dialogue (:func:`~ace_env.tau2.orchestrate.user_view`: τ²'s user system prompt,
the agent's texts as ``user``, its own messages as ``assistant``), or the dialogue itself when it is bound
to a task, and asks any policy (``hf:``, ``openai:``) for the next user message.  The answer is text; it
is a tool call only when the domain gives the user tools (telecom) and every call the policy wrote names
one of them.  Otherwise the calls are dropped and the text around them is the message (a user of airline
or retail never calls a tool).

:func:`tau2_user_rows` builds SFT rows for that user, deterministically, from each task's scenario and
gold actions: an *ideal dialogue* (:func:`ideal_dialogue`) in which

* the agent greets (τ²'s greeting);
* the user states the reason for the call, in the first person, without its identifiers;
* a template agent makes the gold calls in order; before a call whose identifying arguments
  (:data:`IDENTIFYING`: user id, reservation id, order id, email, zip, names, phone number) hold a value
  the user knows (it is in the scenario, outside its unknown info) and the dialogue has not yet shown
  (neither said by the user nor in an earlier call's result), it asks for those values
  (:func:`ask_text`), and the user answers with exactly them (:func:`answer_text`); a gold call the user
  makes (telecom) is asked for, and the user makes it and says so;
* the agent reports each call's outcome (:func:`report_text`) and asks whether there is anything else;
  the user ends with ``###STOP###``.

Each user message is a training target, its view before it the input, in the row form of
:func:`train.users.user_sim_rows` (``{"messages", "tools", "task_id"}``), so ``ace train user-sim`` trains
on them unchanged.  Every ideal dialogue is checked with :func:`ace_env.tau2.user.check_fidelity` and by
its own rules (every known identifier it needs is said; nothing of the unknown info is); a dialogue that
fails is dropped with its reason.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from ace_env.modelout import is_malformed, parse_message
from ace_env.tau2.env import USER, tool_schemas
from ace_env.tau2.ideal import (  # the ideal dialogue lives beside τ²'s environment; __all__ keeps its names here
    ANYTHING_ELSE,
    IDENTIFYING,
    LABELS,
    IdealDialogue,
    answer_text,
    ask_text,
    asked_params,
    asks_anything_else,
    first_person,
    ideal_dialogue,
    identifiers,
    known_text,
    norm,
    opening_text,
    report_text,
    user_action_text,
    user_knows,
)
from ace_env.tau2.orchestrate import user_view
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.user import check_fidelity, scenario_fields, signal_tokens
from train.policies.base import Conversation, GenerationConfig


def ideal_problems(task: Tau2Task, d: IdealDialogue) -> list[str]:
    """Why an ideal dialogue may not teach the user: fidelity flags, a known identifier never said,
    unknown info said, a last message without ``###STOP###``."""
    out = [f"{f.kind} at message {f.turn}: {f.reason}" for f in check_fidelity(task, d.messages).flags]
    said = norm(" ".join(m["content"] or "" for m in d.messages if m["role"] == USER))
    out += [f"the known identifier {v!r} is never said" for v in d.needed if norm(v) not in said]
    unknown = scenario_fields(task.user_scenario).get("unknown_info", "")
    if unknown:
        known = norm(known_text(task))
        for m in d.messages:
            if m["role"] == USER:
                for word in re.findall(r"[A-Za-z0-9_#@.\-]{4,}", m["content"] or ""):
                    w = norm(word)
                    if len(w) >= 4 and any(c.isdigit() for c in w) and w in norm(unknown) and w not in known:
                        out.append(f"{word!r} is unknown info")
    last = d.messages[-1]
    if last["role"] != USER or not (last["content"] or "").endswith(signal_tokens()["stop"]):
        out.append("the dialogue does not end with the user's ###STOP###")
    return out


def _target(message: dict[str, Any]) -> dict[str, Any]:
    out = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def tau2_user_rows(tasks: Iterable[Tau2Task], dropped: list[str] | None = None) -> list[dict[str, Any]]:
    """SFT rows for the τ² user simulator: for each task's ideal dialogue and user message, the user's
    view before it -> that message.  A dialogue that fails :func:`ideal_problems` gives no row; its task
    id and first problem go to ``dropped``."""
    rows = []
    for task in tasks:
        d = ideal_dialogue(task)
        problems = ideal_problems(task, d)
        if problems:
            if dropped is not None:
                dropped.append(f"{task.id}: {problems[0]}")
            continue
        for n, i in enumerate(d.user_indices):
            view = user_view(task, d.messages[:i])
            rows.append({"messages": view + [_target(d.messages[i])], "tools": list(task.user_tools),
                         "task_id": f"{task.id}#user{n}"})
    return rows


# --------------------------------------------------------------------------- users


class ScriptedTau2User:
    """The ideal dialogue's user, answering any agent: the opening first, then the values it is asked for
    (:func:`asked_params`; what it does not know it says so), and the closing once the agent asks whether
    there is anything else.  A perfect-fidelity reference (airline, retail: no user tools)."""

    name = "scripted"

    def __init__(self, task: Tau2Task) -> None:
        self.task = task
        self.ideal = ideal_dialogue(task)

    def __call__(self, view: list[dict[str, Any]]) -> dict[str, Any]:
        texts = [m for m in view if m["role"] in ("user", "assistant")]
        if len(texts) <= 1:
            return {"role": USER, "content": self.ideal.opening}
        last = texts[-1].get("content") or ""
        if asks_anything_else(last):
            return {"role": USER, "content": self.ideal.closing}
        said = norm(" ".join(m.get("content") or "" for m in view if m["role"] == "assistant"))  # its own
        pairs = []
        for p in asked_params(last):
            values = self.ideal.answers.get(p, [])
            fresh = [v for v in values if norm(v) not in said]
            if values:
                pairs.append((p, (fresh or values)[0]))
        if pairs:
            return {"role": USER, "content": answer_text(pairs)}
        return {"role": USER, "content": "Sorry, I don't know that."}


@functools.cache
def _user_tools(domain: str) -> tuple[dict[str, Any], ...]:
    return tool_schemas(domain)[1]


def _tool_names(schemas: Iterable[dict[str, Any]]) -> set[str]:
    return {s.get("function", s).get("name") for s in schemas}


class Tau2LLMUser:
    """A policy playing the τ² user; a callable for ``run_dialogue(task, agent, user)``.

    Called with the user's view (a system message first, as ``run_dialogue`` passes it) it answers from
    it; called with the dialogue itself (the agent's greeting first) it builds the view with
    :func:`~ace_env.tau2.orchestrate.user_view`, which needs ``task``.  The domain's user tools (telecom)
    are offered to the policy; a call is kept only when every call of the answer names one of them.
    """

    name = "llm"

    def __init__(self, policy: Any, generation: GenerationConfig, task: Tau2Task | None = None) -> None:
        self.policy = policy
        self.generation = generation
        self.task = task
        self.replies: list[Any] = []  # every policy reply, in order (tokens, finish reason)

    def for_task(self, task: Tau2Task) -> "Tau2LLMUser":
        """The same policy and sampling, bound to ``task``."""
        return Tau2LLMUser(self.policy, self.generation, task)

    def _view(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if messages and messages[0].get("role") == "system":
            return messages
        if self.task is None:
            raise ValueError("Tau2LLMUser got a dialogue, not a user view: bind it to its task (for_task)")
        return user_view(self.task, messages)

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        view = self._view(messages)
        system = view[0].get("content") or ""
        domain = self.task.domain if self.task is not None else \
            scenario_fields(system.partition("<scenario>")[2].rpartition("</scenario>")[0].strip("\n")).get("domain")
        tools = list(self.task.user_tools if self.task is not None else _user_tools(domain) if domain else ())
        key = "tau2-user:" + hashlib.sha256(system.encode()).hexdigest()[:12]
        reply = self.policy.generate([Conversation(view, tools, key, None, len(view))], self.generation)[0]
        self.replies.append(reply)
        parsed = parse_message(reply.message)
        names = _tool_names(tools)
        calls = [c for c in parsed.calls if isinstance(c, dict) and not is_malformed(c)]
        if tools and parsed.calls and len(calls) == len(parsed.calls) and all(c["name"] in names for c in calls):
            return {"role": USER, "content": parsed.text, "tool_calls": [
                {"id": f"user_{len(self.replies)}_{k}", "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                for k, c in enumerate(calls)]}
        text = parsed.text if parsed.calls else (reply.message.get("content") or "")
        return {"role": USER, "content": text.strip()}


__all__ = ["ANYTHING_ELSE", "IDENTIFYING", "IdealDialogue", "LABELS", "ScriptedTau2User", "Tau2LLMUser", "answer_text", "ask_text", "asked_params", "asks_anything_else", "first_person", "ideal_dialogue", "ideal_problems", "identifiers", "known_text", "norm", "opening_text", "report_text", "tau2_user_rows", "user_action_text", "user_knows"]
