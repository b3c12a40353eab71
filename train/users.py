"""The user side of a rollout: profiles, the scripted user, and user fidelity.

In the AReaL-SEA paper, RL driven by a base-model user simulator fell from
85.4 to 75.6 while an SFT-ed user took it to 95.6: a noisy user is blamed on
the agent.  So every simulated user turn is checked, deterministically,
against a *profile* derived from the task:

* the **goal** — the task's own user turns, in order;
* the **facts** the user holds — every ground-truth argument value the tagger
  says came from the user's words (``arg_sources == "user"``), with the turn in
  which the value first appears in the task's text; a fact may be revealed
  from that turn on, never before.

:func:`check_user_turn` flags the five ways a simulated user goes wrong:
``leaked`` (a fact before its turn), ``omitted`` (a fact its turn must give,
not given by the end of that turn), ``invented`` (a concrete value — a number,
a file name, an id — that is in no user turn of the task and was not said in
the conversation so far), ``tool_call`` (the user wrote a call) and
``left_role`` (the user spoke as the assistant or the system).

>>> from ace_env.tasks import Task, Turn
>>> t = Task("t", "demo", "base", [Turn([{"role": "user", "content": "Go to folder docs."}], ["cd(folder='docs')"])],
...          {}, ["GorillaFileSystem"], ["cd"])
>>> p = profile_for(t)
>>> [(f.value, f.turn) for f in p.facts]
[('docs', 0)]
>>> [v.kind for v in check_user_turn(p, 0, "Please open the folder reports_2024.")]
['omitted', 'invented']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.tasks import Task
from ace_env.values import is_trivial, leaves
from ace_graph.tagger import USER, tag_task
from train.policies.base import Conversation

LEAKED = "leaked"
OMITTED = "omitted"
INVENTED = "invented"
TOOL_CALL = "tool_call"
LEFT_ROLE = "left_role"
KINDS = (LEAKED, OMITTED, INVENTED, TOOL_CALL, LEFT_ROLE)


@dataclass(frozen=True)
class Fact:
    """A value the user holds: the argument it fills and the first turn that may reveal it."""

    value: str  # as the task's text writes it, lower-cased
    param: str  # the ground-truth argument it fills (``tool.param``)
    turn: int  # the first user turn whose text contains it


@dataclass(frozen=True)
class UserProfile:
    """What a simulated user of one task knows, and when it may say it."""

    task_id: str
    goal: tuple[str, ...]  # the task's user text per turn
    facts: tuple[Fact, ...]

    def due(self, turn: int) -> tuple[Fact, ...]:
        """The facts whose first turn is ``turn``."""
        return tuple(f for f in self.facts if f.turn == turn)


@dataclass(frozen=True)
class Violation:
    """One fidelity failure of a simulated user turn."""

    kind: str  # one of KINDS
    turn: int
    detail: str


def turn_texts(task: Task) -> list[str]:
    """The user text of each turn (all user messages of the turn, joined)."""
    return ["\n".join(str(m.get("content", "")) for m in t.user if m.get("role", "user") == "user") for t in task.turns]


# ---------------------------------------------------------------- value matching
#
# The profile matches *ground-truth values* against *user text*; the checker
# then matches the same facts against *generated* text.  Both use one rule:
# a value is said when its lower-cased text occurs as a whole word (numbers
# also in their integer form: "5" for 5.0).

_TOKEN = re.compile(r"[a-z0-9_][a-z0-9_.\-/@]*[a-z0-9_]|[a-z0-9]", re.IGNORECASE)
#: A "concrete value" in free text: has a digit, or a dot/underscore inside a word (file.txt, card_2108).
_CONCRETE = re.compile(r"^(?=.*\d)[\w.\-/@]+$|^\w+[._]\w[\w.\-]*$")


def _forms(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float) and value.is_integer():
        return [str(int(value)), repr(value)]
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, str):
        v = value.strip().lower()
        return [v] if v else []
    return []


def _said(value_text: str, text: str) -> bool:
    if not value_text:
        return False
    pattern = (r"(?<![\w])" if value_text[0].isalnum() else "") + re.escape(value_text)
    pattern += r"(?![\w])" if value_text[-1].isalnum() else ""
    return re.search(pattern, text.lower()) is not None


# ---------------------------------------------------------------- profiles


def profile_for(task: Task) -> UserProfile:
    """The task's user profile: its goal, and each user-given fact with its first turn."""
    texts = turn_texts(task)
    tags = tag_task(task)
    facts: dict[str, Fact] = {}
    flat = [(ti, c) for ti, t in enumerate(task.turns) for c in t.ground_truth]
    steps = [tag for tag in tags if tag.tool is not None]
    for tag, (turn, raw) in zip(steps, flat):
        call = parse_call(raw)
        if not isinstance(call, Call):
            continue
        for param, source in tag.arg_sources.items():
            if source != USER or param not in call.kwargs:
                continue
            for leaf in leaves(call.kwargs[param]):
                for form in _forms(leaf):
                    if is_trivial(leaf) or form in facts:
                        continue
                    first = next((k for k in range(turn + 1) if _said(form, texts[k])), None)
                    if first is not None:
                        facts[form] = Fact(form, f"{tag.tool}.{param}", first)
                        break
    ordered = sorted(facts.values(), key=lambda f: (f.turn, f.param, f.value))
    return UserProfile(task.id, tuple(texts), tuple(ordered))


# ---------------------------------------------------------------- the checker

_ROLE_MARKERS = re.compile(
    r"^\s*(assistant|system|tool)\s*:|<\|im_start\|>|<\|im_end\|>|\bas an ai\b|"
    r"\bi (?:have|'ve) (?:now )?(?:created|moved|copied|deleted|executed|run|called|booked|sent|posted)\b|"
    r"\bhere (?:is|are) the (?:result|output)s?\b",
    re.IGNORECASE | re.MULTILINE,
)
_CALL_MARKERS = re.compile(r"<tool_call>|\"(?:name|function)\"\s*:|\b[a-z_][a-z0-9_]*\(\s*[a-z_]+\s*=", re.IGNORECASE)


def _concrete_tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text) if _CONCRETE.match(t)]


def check_user_turn(
    profile: UserProfile,
    turn: int,
    text: str,
    history: Sequence[str] = (),
) -> list[Violation]:
    """Every fidelity violation of the simulated user's message ``text`` in ``turn``.

    ``history`` holds what was said earlier in the conversation (the user's own
    earlier messages, the assistant's answers, tool results): a value found
    there is not invented, and a fact said there counts as given.
    """
    out: list[Violation] = []
    said_before = "\n".join(history).lower()
    for fact in profile.facts:
        if fact.turn > turn and _said(fact.value, text) and not _said(fact.value, said_before):
            out.append(Violation(LEAKED, turn, f"{fact.value!r} ({fact.param}) belongs to turn {fact.turn}"))
    for fact in profile.due(turn):
        if not _said(fact.value, text) and not _said(fact.value, said_before):
            out.append(Violation(OMITTED, turn, f"{fact.value!r} ({fact.param}) is due in turn {turn}"))
    known = "\n".join(profile.goal).lower()
    invented = [
        tok for tok in dict.fromkeys(_concrete_tokens(text)) if not _said(tok, known) and not _said(tok, said_before)
    ]
    if invented:
        out.append(Violation(INVENTED, turn, ", ".join(repr(t) for t in invented[:5])))
    if _CALL_MARKERS.search(text) or _looks_like_json_call(text):
        out.append(Violation(TOOL_CALL, turn, "the user wrote a tool call"))
    m = _ROLE_MARKERS.search(text)
    if m:
        out.append(Violation(LEFT_ROLE, turn, f"speaks as the assistant or system: {m.group(0).strip()!r}"))
    return out


def _looks_like_json_call(text: str) -> bool:
    s = text.strip()
    if not s.startswith("{"):
        return False
    try:
        obj = json.loads(s)
    except ValueError:
        return False
    return isinstance(obj, dict) and ("arguments" in obj or "tool_calls" in obj)


@dataclass(frozen=True)
class Fidelity:
    """Fidelity of many simulated user turns: the share with no violation, and counts per kind."""

    turns: int
    clean: int
    by_kind: dict[str, int]

    @property
    def rate(self) -> float:
        return self.clean / self.turns if self.turns else 1.0


def fidelity(checked: Iterable[list[Violation]]) -> Fidelity:
    """Summarise per-turn violation lists (one list per simulated user turn)."""
    turns = clean = 0
    by_kind = {k: 0 for k in KINDS}
    for violations in checked:
        turns += 1
        clean += not violations
        for v in violations:
            by_kind[v.kind] += 1
    return Fidelity(turns, clean, by_kind)


# ---------------------------------------------------------------- users


class ScriptedUser:
    """The task's own user turns, verbatim: the default user, and a perfect-fidelity reference."""

    name = "scripted"

    def __init__(self, task: Task) -> None:
        self._texts = turn_texts(task)

    def message(self, turn: int, history: Sequence[dict[str, Any]] = ()) -> str:
        """The user's message opening ``turn`` (``history`` is the conversation so far; unused)."""
        return self._texts[turn]


# ---------------------------------------------------------------- the LLM user

USER_SIM_SYSTEM = (
    "You play the USER in a conversation with an assistant that can call tools. You are not the assistant: "
    "never call tools, never describe results you have not been shown, never speak for the assistant. "
    "Say only what the user of this task would say, one message at a time, in the user's own words.\n\n"
    "Your requests, in order:\n{requests}\n\n"
    "You are now making request {current}. Give the facts of this request; keep later requests and "
    "their facts for later. If the assistant asks for something you know, answer it; if you do not know it, say so."
)


def user_sim_system(profile: UserProfile, turn: int) -> str:
    """The system message of the user simulator at ``turn``: the goal so far and where it stands."""
    requests = "\n".join(f"{k + 1}. {text}" for k, text in enumerate(profile.goal[: turn + 1]))
    return USER_SIM_SYSTEM.format(requests=requests, current=turn + 1)


def user_sim_messages(profile: UserProfile, turn: int, conversation: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user simulator's own view of a conversation: roles swapped, tool traffic left out.

    The agent's messages become the simulator's ``user`` messages and the
    user's earlier messages its own ``assistant`` messages; what it writes next
    is the user's message that opens ``turn``.  Tool calls and tool results are
    the agent's business and are not shown to the user.
    """
    view: list[dict[str, Any]] = [
        {"role": "system", "content": user_sim_system(profile, turn)},
        {"role": "user", "content": "(the conversation begins)"},
    ]
    for m in conversation:
        role, content = m.get("role"), m.get("content") or ""
        if role == "user":
            view.append({"role": "assistant", "content": content})
        elif role == "assistant" and content and not m.get("tool_calls"):
            view.append({"role": "user", "content": content})
    if view[-1]["role"] != "user":
        view.append({"role": "user", "content": "(go on)"})
    return view


def user_sim_rows(tasks: Iterable[Task], transcripts: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """SFT rows for the user simulator: for each task and turn, its view so far → the scripted user message.

    ``transcripts`` maps a task id to an oracle conversation (OpenAI messages,
    the ground truth played out, as :func:`train.export.to_openai_sft` writes
    it); the conversation before each user message is the simulator's input and
    that message its target.  Turns where the user answers a clarifying request
    (BFCL miss_param: a turn the agent could not act on, then the user's
    answer) are in there as they happen.
    """
    rows = []
    for task in tasks:
        messages = transcripts.get(task.id)
        if not messages:
            continue
        profile = profile_for(task)
        user_at = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        for turn, i in enumerate(user_at[: len(task.turns)]):
            view = user_sim_messages(profile, turn, messages[:i])
            view.append({"role": "assistant", "content": messages[i].get("content") or ""})
            rows.append({"messages": view, "tools": [], "task_id": f"{task.id}#user{turn}"})
    return rows


class LLMUser:
    """A policy playing the user from the task's profile; every message it writes is fidelity-checked.

    ``policy`` is any policy (``hf:``, ``openai:``); it sees only its own view
    of the conversation (:func:`user_sim_messages`).  ``checked`` collects one
    violation list per message written, for :func:`fidelity`.
    """

    name = "llm"

    def __init__(self, policy: Any, generation: Any) -> None:
        self.policy = policy
        self.generation = generation
        self.checked: list[list[Violation]] = []
        self._profiles: dict[str, UserProfile] = {}

    def profile(self, task: Task) -> UserProfile:
        if task.id not in self._profiles:
            self._profiles[task.id] = profile_for(task)
        return self._profiles[task.id]

    def write(self, task: Task, turn: int, conversation: Sequence[dict[str, Any]]) -> str:
        """The user's message that opens ``turn``, written by the policy and checked."""
        profile = self.profile(task)
        view = user_sim_messages(profile, turn, conversation)
        reply = self.policy.generate([Conversation(view, [], f"{task.id}#user{turn}", None, turn)], self.generation)[0]
        text = (reply.message.get("content") or "").strip()
        history = [str(m.get("content") or "") for m in conversation if m.get("role") in ("user", "assistant", "tool")]
        self.checked.append(check_user_turn(profile, turn, text, history))
        return text

    def message(self, task: Task, turn: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The rollout engine's user seam (:class:`train.engine.User`)."""
        return {"role": "user", "content": self.write(task, turn, messages)}
