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
from dataclasses import dataclass, field
from typing import Any

from ace_env.modelout import is_malformed, parse_message
from ace_env.tau2.env import ASSISTANT, USER, Tau2Call, call, start, tool_schemas
from ace_env.tau2.orchestrate import GREETING, user_view
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.user import check_fidelity, scenario_fields, signal_tokens
from train.policies.base import Conversation, GenerationConfig

#: Argument names whose values identify the customer or a record: the agent must hear them (or find them).
IDENTIFYING = ("user_id", "reservation_id", "order_id", "email", "zip", "first_name", "last_name", "phone_number")

LABELS = {"user_id": "user id", "reservation_id": "reservation id", "order_id": "order id",
          "email": "email address", "zip": "zip code", "first_name": "first name", "last_name": "last name",
          "phone_number": "phone number"}

ANYTHING_ELSE = "Is there anything else I can help you with?"


def norm(text: str) -> str:
    """Text compared as :func:`ace_env.tau2.user.check_fidelity` compares it (case, ``#``, ``-``, spaces)."""
    return re.sub(r"[\s#\-]", "", (text or "").lower())


# --------------------------------------------------------------------------- what the user knows


def known_text(task: Tau2Task) -> str:
    """Everything the scenario tells the user, its unknown info left out."""
    return "\n".join(v for k, v in scenario_fields(task.user_scenario).items() if k != "unknown_info")


def identifiers(action: GoldAction) -> list[tuple[str, str]]:
    """(param, value) of an action's identifying arguments, in argument order."""
    return [(k, str(v)) for k, v in action.arguments.items()
            if k in IDENTIFYING and isinstance(v, (str, int)) and not isinstance(v, bool) and str(v).strip()]


def user_knows(task: Tau2Task, value: str) -> bool:
    """Whether the scenario gives the user ``value`` (and not only in its unknown info)."""
    unknown = scenario_fields(task.user_scenario).get("unknown_info", "")
    return norm(value) in norm(known_text(task)) and not (unknown and norm(value) in norm(unknown))


# --------------------------------------------------------------------------- the template's texts


def ask_text(params: list[str]) -> str:
    """The agent's request for identifying values: ``Could you please tell me your user id and zip code?``."""
    labels = [LABELS.get(p, p.replace("_", " ")) for p in dict.fromkeys(params)]
    said = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    return f"Could you please tell me your {said}?"


def asked_params(text: str) -> list[str]:
    """The identifying params an agent message asks for: those :func:`ask_text` names, else any label
    (:data:`LABELS`) said after "your" in a question (``What is your user id?``)."""
    m = re.search(r"Could you please tell me your (.+?)\?", text or "")
    if m:
        wanted = m.group(1)
    else:
        questions = [q for q in re.findall(r"[^.!?]*\?", text or "") if re.search(r"\byour\b", q, re.IGNORECASE)]
        wanted = " ".join(q.partition("your")[2] or q.partition("Your")[2] for q in questions)
    return [p for p in IDENTIFYING if re.search(rf"\b{re.escape(LABELS[p])}\b", wanted, re.IGNORECASE)]


def asks_anything_else(text: str) -> bool:
    """Whether an agent message asks if the user needs anything else (the template's or in other words)."""
    return ANYTHING_ELSE in (text or "") or re.search(r"\banything (?:else|more)\b[^.!]*\?", text or "",
                                                       re.IGNORECASE) is not None


def answer_text(pairs: list[tuple[str, str]]) -> str:
    """The user's answer with exactly these values: ``My user id is x and my zip code is 12345.``"""
    parts = [f"my {LABELS.get(p, p.replace('_', ' '))} is {v}" for p, v in pairs]
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Sure, {text}."


def user_action_text(action: GoldAction) -> str:
    """The agent asking the user to do something on their side (telecom)."""
    return f"Could you please do this on your phone: {action.name.replace('_', ' ')}?"


def report_text(done: list[tuple[GoldAction, bool, str]]) -> str:
    """The agent's report of the calls it just made: ``Done: cancel reservation (EHGLP3).``"""
    out = []
    for action, error, content in done:
        ids = ", ".join(v for _, v in identifiers(action))
        what = action.name.replace("_", " ") + (f" ({ids})" if ids else "")
        out.append(f"Failed: {what}: {content[:100]}." if error else f"Done: {what}.")
    return " ".join(out)


_PERSON = (
    (r"\byou're\b", "I'm"), (r"\byou are\b", "I am"), (r"\byou were\b", "I was"), (r"\byou've\b", "I've"),
    (r"\byou'll\b", "I'll"), (r"\byou'd\b", "I'd"), (r"\byourself\b", "myself"), (r"\byours\b", "mine"),
    (r"\byour\b", "my"),
)
_SUBJECT_BEFORE = re.compile(r"(?:^|[.!?;:,]\s*|\b(?:and|but|that|because|if|when|so|as|since|or|which|who|while)\s+)$",
                             re.IGNORECASE)


def _cased(repl: str, matched: str) -> str:
    return repl if repl.startswith("I") or not matched[0].isupper() else repl[0].upper() + repl[1:]


def first_person(text: str) -> str:
    """A scenario's second-person text as the user would say it (``You want to`` -> ``I want to``)."""
    for pattern, repl in _PERSON:
        text = re.sub(pattern, lambda m, r=repl: _cased(r, m.group()), text, flags=re.IGNORECASE)

    def you(m: re.Match) -> str:
        return "I" if _SUBJECT_BEFORE.search(text[: m.start()]) else "me"

    return re.sub(r"\byou\b", you, text, flags=re.IGNORECASE)


def opening_text(task: Tau2Task, withheld: Iterable[str]) -> str:
    """The user's first message: the reason for the call (its first paragraph) in the first person, the
    identifying values the agent will ask for taken out."""
    reason = scenario_fields(task.user_scenario).get("reason_for_call", "") or "I need some help."
    first = next((p for p in re.split(r"\n\s*\n", reason) if p.strip()), reason)
    text = " ".join(first.split())
    for value in sorted(set(withheld), key=len, reverse=True):
        text = re.sub(r"\s*#?" + re.escape(value.lstrip("#")) + r"\b", "", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+(?:and|or)(?=\s*[.,;:!?)]|$)", "", text)  # "ids X and Y" -> "ids", "(X and Y)" -> "(X)"
    text = re.sub(r"\s*\(\s*\)", "", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text).strip()
    return "Hi! " + first_person(text)


# --------------------------------------------------------------------------- the ideal dialogue


@dataclass
class IdealDialogue:
    """A task's ideal dialogue (OpenAI messages in :func:`~ace_env.tau2.orchestrate.run_dialogue`'s form)
    and what its user says: the opening, the answer to each identifying param, the closing."""

    task_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    opening: str = ""
    answers: dict[str, list[str]] = field(default_factory=dict)  # param -> the values it gives for it, in order
    closing: str = ""
    needed: list[str] = field(default_factory=list)  # the known identifying values the gold calls use

    @property
    def user_indices(self) -> list[int]:
        return [i for i, m in enumerate(self.messages) if m["role"] == USER]


def _call_message(role: str, action: GoldAction, cid: str) -> dict[str, Any]:
    return {"role": role, "content": "", "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": action.name, "arguments": json.dumps(action.arguments)}}]}


def ideal_dialogue(task: Tau2Task) -> IdealDialogue:
    """The task's ideal dialogue (the module docstring), its gold calls executed on a fresh environment."""
    stop = signal_tokens()["stop"]
    env = start(task.domain, task.tau2_id)
    withheld = {v for a in task.gold_actions if a.requestor == ASSISTANT for _, v in identifiers(a)
                if user_knows(task, v)}
    d = IdealDialogue(task.id)
    d.opening = opening_text(task, withheld)
    msgs = d.messages
    msgs += [{"role": ASSISTANT, "content": GREETING}, {"role": USER, "content": d.opening}]
    shown = norm(d.opening)  # what the agent has heard or seen in its own results
    pending: list[tuple[GoldAction, bool, str]] = []  # calls made since the agent last spoke

    def say(text: str) -> None:
        report = report_text(pending)
        pending.clear()
        msgs.append({"role": ASSISTANT, "content": f"{report} {text}".strip()})

    for k, action in enumerate(task.gold_actions):
        cid = f"gold_{k}"
        if action.requestor == USER:
            say(user_action_text(action))
            msgs.append(_call_message(USER, action, cid))
            step = call(env, Tau2Call(action.name, dict(action.arguments), USER), cid)
            msgs.append({"role": "tool", "tool_call_id": cid, "name": action.name, "content": step.content,
                         "requestor": USER, "error": step.error})
            msgs.append({"role": USER, "content": f"Okay, I did that: {action.name.replace('_', ' ')}."})
            continue
        missing = [(p, v) for p, v in identifiers(action) if norm(v) not in shown and user_knows(task, v)]
        missing = list({v: (p, v) for p, v in missing}.values())
        if missing:
            say(ask_text([p for p, _ in missing]))
            text = answer_text(missing)
            msgs.append({"role": USER, "content": text})
            shown += norm(text)
            for p, v in missing:
                d.answers.setdefault(p, []).append(v)
                d.needed.append(v)
        msgs.append(_call_message(ASSISTANT, action, cid))
        step = call(env, Tau2Call(action.name, dict(action.arguments), ASSISTANT), cid)
        msgs.append({"role": "tool", "tool_call_id": cid, "name": action.name, "content": step.content,
                     "requestor": ASSISTANT, "error": step.error})
        shown += norm(step.content)
        pending.append((action, step.error, step.content))
    say(ANYTHING_ELSE)
    d.closing = f"No, that's all. Thank you! {stop}"
    msgs.append({"role": USER, "content": d.closing})
    return d


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
