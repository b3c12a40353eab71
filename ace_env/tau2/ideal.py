"""τ²'s ideal dialogue: a task's gold calls played with a scripted user who says exactly the identifying
values each call needs (moved from :mod:`train.users_tau2`, whose module doc describes it, so that the
environment's gold-prefix transcript, :mod:`ace_env.tau2.goldprefix`, is built below the training layer;
the user simulator's SFT rows and its users stay there)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ace_env.tau2.env import ASSISTANT, USER, Tau2Call, call, start
from ace_env.tau2.orchestrate import GREETING
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.user import scenario_fields, signal_tokens

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
