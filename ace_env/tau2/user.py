"""The τ² user simulator's side: its system prompt, its stop signals, and a deterministic fidelity check.

:func:`user_system_prompt` builds what τ²'s ``UserSimulator`` is given: the simulation guidelines, read
from the installed package at call time (``simulation_guidelines_tools.md`` when the user has tools,
i.e. telecom, else ``simulation_guidelines.md``), then the task's scenario (``str(task.user_scenario)``,
persona and instructions) inside ``<scenario>`` tags, the layout of τ²'s ``SYSTEM_PROMPT``.  Nothing of
the guidelines is copied here; ``tau2.user.user_simulator`` itself is never imported (it imports litellm,
see :mod:`ace_env.tau2.package`), only ``tau2.user.base`` for the stop tokens.

:func:`parse_user_turn` reads a user message as τ²'s ``UserSimulator.is_stop`` does: a message holding
``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###`` (anywhere, case-sensitive) ends the dialogue;
a message with tool calls never does.

:func:`check_fidelity` judges the *user* of a finished dialogue (OpenAI-style message dicts: ``user``,
``assistant``, ``tool``; the first is normally the agent's greeting), without a model.  Each flag names the
offending message's index and a short reason.  Rules:

* **Tokens.**  A user statement is judged by its distinctive tokens, found in this order (a span taken by
  one kind is not read again): emails; retail order ids (``#W`` + 6 or more digits); snake-case ids
  ending in digits (user ids, payment-method ids); phone numbers (``555-123-2002``); ISO or slashed dates
  with a year; upper-case codes of 5-8 characters mixing letters and digits (reservation ids, flight
  numbers, telecom customer and line ids); numbers of 5 or more digits (zip codes, product and item
  ids).  Not caught: all-letter reservation ids (14% of airline's), cabin classes, amounts, free text.
* **Seen.**  A token is *seen* when it occurs (case, ``#``, ``-`` and white space ignored) in what the user
  was given or shown before that message: the scenario's persona, reason for call, known info and task
  instructions (never its unknown info); every earlier assistant message sent to the user (one without
  tool calls: τ² never shows the user the agent's tool calls or their results); the results of the
  user's own tool calls; the user's own earlier messages (so a token is flagged once, where it first
  appears).  Only message text is judged, not tool-call arguments.
* **(a) leak** — an unseen token that occurs in the scenario's unknown info, or whose kind the unknown
  info names as unknown (``email``; ``reservation``/``flight number``: codes; ``order``: order ids;
  ``DOB``/``birth``: dates; ``phone``; ``user id``): the user states what the scenario says it does not know.
* **(b) invented** — any other unseen token: a value in neither the scenario nor anything the user saw.
* **(c) premature_stop** — a ``###STOP###`` with no assistant message after the user's first message, or
  while some gold *write* action (τ²'s tool type) has not yet been called by its requestor with its
  compared arguments (a call made counts, whatever it returned).  It does not tell a user who quits early
  from one who accepts an agent's failure: both stop before the task is done.
* **(d) user_tool** — a tool call in a user message when the domain gives the user no tools (airline,
  retail), or of an agent-side tool, or of a name that is no user tool of the domain.

The report counts flags per kind; ``faithful`` is True when there are none.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_env.tau2.env import ASSISTANT, USER, tool_kinds
from ace_env.tau2.package import tau2_modules
from ace_env.tau2.tasks import GoldAction, Tau2Task

#: τ²'s stop signals by ACE's name for them, in the order they are looked for.
SIGNALS = ("stop", "transfer", "out_of_scope")

FLAG_KINDS = ("leak", "invented", "premature_stop", "user_tool")


# --------------------------------------------------------------------------- the prompt


def guidelines_path(use_tools: bool) -> Path:
    """The installed τ² package's user-simulation guidelines (the ``_tools`` variant when the user has tools)."""
    name = "simulation_guidelines_tools.md" if use_tools else "simulation_guidelines.md"
    return Path(tau2_modules().utils.DATA_DIR) / "tau2" / "user_simulator" / name


def user_system_prompt(task: Tau2Task) -> str:
    """The user simulator's system prompt for ``task``, as τ²'s ``UserSimulator.system_prompt`` lays it out."""
    guidelines = guidelines_path(bool(task.user_tools)).read_text(encoding="utf-8")
    return f"{guidelines}\n\n<scenario>\n{task.user_scenario}\n</scenario>".strip()


# --------------------------------------------------------------------------- stop signals


@dataclass(frozen=True)
class UserTurn:
    """A user message read for its stop signal: the text without the signal, and the signal or None."""

    text: str
    signal: str | None  # "stop" | "transfer" | "out_of_scope" | None


def signal_tokens() -> dict[str, str]:
    """ACE's signal names -> τ²'s tokens (``###STOP###`` ...), from ``tau2.user.base``."""
    base = tau2_modules().user_base
    return {"stop": base.STOP, "transfer": base.TRANSFER, "out_of_scope": base.OUT_OF_SCOPE}


def parse_user_turn(text: str | None) -> UserTurn:
    """The stop signal in a user message (the first to occur when several do), and the text without it."""
    text = text or ""
    tokens = signal_tokens()
    found = [(text.find(tok), name) for name, tok in tokens.items() if tok in text]
    signal = min(found)[1] if found else None
    for tok in tokens.values():
        text = text.replace(tok, "")
    return UserTurn(text.strip(), signal)


# --------------------------------------------------------------------------- messages


def tool_calls_of(message: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(id, name, arguments) of a message's tool calls, OpenAI-style (``function.arguments`` a JSON string
    or an object) or flat (``name``, ``arguments``).  Arguments that are not JSON stay the raw string."""
    out = []
    for i, tc in enumerate(message.get("tool_calls") or ()):
        if not isinstance(tc, dict):
            out.append((f"call_{i}", None, None))
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
        args = fn.get("arguments")
        if args is None or (isinstance(args, str) and not args.strip()):
            args = {}
        elif isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        out.append((tc.get("id") or f"call_{i}", fn.get("name"), args))
    return out


def tool_requestors(messages: list[dict[str, Any]]) -> list[str | None]:
    """For each message, who asked for it when it is a tool result (``assistant`` or ``user``), else None:
    its ``requestor`` key, else the role of the message whose call has its ``tool_call_id``, else the role
    of the latest message with tool calls."""
    by_id: dict[Any, str] = {}
    last = None
    out: list[str | None] = []
    for m in messages:
        role = m.get("role")
        if role in (ASSISTANT, USER) and m.get("tool_calls"):
            last = role
            for cid, _, _ in tool_calls_of(m):
                by_id[cid] = role
        if role == "tool":
            req = m.get("requestor")
            out.append(req if req in (ASSISTANT, USER) else by_id.get(m.get("tool_call_id"), last))
        else:
            out.append(None)
    return out


# --------------------------------------------------------------------------- the scenario

_HEADINGS = {"Reason for call:": "reason_for_call", "Known info:": "known_info",
             "Unknown info:": "unknown_info", "Task instructions:": "task_instructions"}


def scenario_fields(scenario: str) -> dict[str, str]:
    """The parts of a scenario in τ²'s text form (``str(UserScenario)``): persona, domain, reason_for_call,
    known_info, unknown_info, task_instructions (absent parts are absent; unstructured instructions are
    task_instructions)."""
    parts: dict[str, list[str]] = {}
    key, depth, in_instructions = None, 1, False
    for line in scenario.split("\n"):
        if not in_instructions and line == "Persona:":
            key, depth = "persona", 1
        elif line == "Instructions:":
            key, depth, in_instructions = "task_instructions", 1, True  # until a heading: plain instructions
        elif in_instructions and line.startswith("\tDomain: "):
            parts["domain"] = [line[len("\tDomain: "):]]
            key = None
        elif in_instructions and line[:1] == "\t" and line[1:] in _HEADINGS:
            key, depth = _HEADINGS[line[1:]], 2
        elif key is not None:
            parts.setdefault(key, []).append(line[depth:] if line.startswith("\t" * depth) else line.lstrip("\t"))
    return {k: "\n".join(v).strip() for k, v in parts.items() if "\n".join(v).strip()}


# --------------------------------------------------------------------------- tokens

_TOKEN_PATTERNS = (
    ("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),
    ("order_id", r"#?\bW\d{6,}\b"),
    ("snake_id", r"\b[a-z]+(?:_[a-z]+)*_\d+\b"),
    ("phone", r"(?<![\d-])\d{3}-\d{3}-\d{4}(?![\d-])"),
    ("date", r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"),
    ("code", r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,8}\b"),
    ("number", r"\b\d{5,}\b"),
)
_TOKEN_RES = tuple((kind, re.compile(p)) for kind, p in _TOKEN_PATTERNS)

#: Words of an unknown-info text -> the token kinds it declares unknown.
_UNKNOWN_KINDS = (
    (re.compile(r"e-?mail", re.I), ("email",)),
    (re.compile(r"reservation", re.I), ("code",)),
    (re.compile(r"flight number", re.I), ("code",)),
    (re.compile(r"\border", re.I), ("order_id",)),
    (re.compile(r"\bdob\b|birth", re.I), ("date",)),
    (re.compile(r"phone", re.I), ("phone",)),
    (re.compile(r"user id", re.I), ("snake_id",)),
)


def tokens(text: str) -> list[tuple[str, str]]:
    """The distinctive tokens of ``text`` as (kind, token), in kind order; a span is read by one kind only."""
    out = []
    work = text or ""
    for kind, rx in _TOKEN_RES:
        for m in rx.finditer(work):
            out.append((kind, m.group()))
        work = rx.sub(lambda m: " " * len(m.group()), work)
    return out


def _norm(text: str) -> str:
    return re.sub(r"[\s#\-]", "", (text or "").lower())


def unknown_kinds(unknown_info: str) -> set[str]:
    """The token kinds an unknown-info text declares unknown (e.g. "You do not remember your email" -> email)."""
    return {k for rx, kinds in _UNKNOWN_KINDS if rx.search(unknown_info or "") for k in kinds}


# --------------------------------------------------------------------------- the checker


@dataclass(frozen=True)
class FidelityFlag:
    kind: str  # leak | invented | premature_stop | user_tool
    turn: int  # index of the offending message in the dialogue
    reason: str


@dataclass
class FidelityReport:
    task_id: str
    flags: list[FidelityFlag] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {k: sum(f.kind == k for f in self.flags) for k in FLAG_KINDS}

    @property
    def faithful(self) -> bool:
        return not self.flags


def _gold_matches(a: GoldAction, name: Any, args: Any, requestor: str) -> bool:
    if name != a.name or requestor != a.requestor or not isinstance(args, dict):
        return False
    if a.compare_args is None:
        return args == a.arguments
    return all(k in args and args[k] == a.arguments.get(k) for k in a.compare_args)


def _tool_names(schemas: tuple[dict[str, Any], ...]) -> set[str]:
    return {s.get("function", {}).get("name") for s in schemas}


def check_fidelity(task: Tau2Task, dialogue: Any) -> FidelityReport:
    """Flag where the user of a finished dialogue strays from its scenario (rules: the module docstring).

    ``dialogue``: a list of message dicts, or anything with such a list as ``.messages``."""
    messages: list[dict[str, Any]] = list(getattr(dialogue, "messages", dialogue))
    fields_ = scenario_fields(task.user_scenario)
    unknown = fields_.get("unknown_info", "")
    unknown_tokens = {_norm(t) for _, t in tokens(unknown)}
    unknown_kind = unknown_kinds(unknown)
    seen = _norm(" ".join(v for k, v in fields_.items() if k != "unknown_info"))
    kinds = tool_kinds(task.domain)
    gold_writes = [a for a in task.gold_actions if kinds.get((a.requestor, a.name)) == "write"]
    user_tools, agent_tools = _tool_names(task.user_tools), _tool_names(task.tools)
    requestors = tool_requestors(messages)
    report = FidelityReport(task.id)
    calls_made: list[tuple[Any, Any, str]] = []
    first_user = None
    agent_since_first_user = False
    for i, m in enumerate(messages):
        role = m.get("role")
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        calls = tool_calls_of(m) if role in (ASSISTANT, USER) else []
        if role == ASSISTANT:
            calls_made += [(n, a, ASSISTANT) for _, n, a in calls]
            if first_user is not None:
                agent_since_first_user = True
            if not calls:
                seen += _norm(content)
            continue
        if role == "tool":
            if requestors[i] == USER:
                seen += _norm(content)
            continue
        if role != USER:
            continue
        if first_user is None:
            first_user = i
        for _, name, args in calls:
            calls_made.append((name, args, USER))
            if not user_tools:
                report.flags.append(FidelityFlag("user_tool", i, f"the user called {name!r}; in {task.domain} "
                                                                 "the user has no tools"))
            elif name in agent_tools and name not in user_tools:
                report.flags.append(FidelityFlag("user_tool", i, f"the user called the agent-side tool {name!r}"))
            elif name not in user_tools:
                report.flags.append(FidelityFlag("user_tool", i, f"the user called {name!r}, no user tool of "
                                                                 f"{task.domain}"))
        if calls:
            continue  # a tool-call message is not shown to the agent and never stops the dialogue
        flagged: set[str] = set()
        for kind, tok in tokens(content):
            n = _norm(tok)
            if n in seen or n in flagged:
                continue
            flagged.add(n)
            if n in unknown_tokens:
                report.flags.append(FidelityFlag("leak", i, f"{tok!r} is in the scenario's unknown info only"))
            elif kind in unknown_kind:
                report.flags.append(FidelityFlag("leak", i, f"{tok!r}: the scenario says the user does not know "
                                                            f"this ({kind})"))
            else:
                report.flags.append(FidelityFlag("invented", i, f"{tok!r} ({kind}) is in neither the scenario nor "
                                                                "anything the user was shown"))
        seen += _norm(content)
        if parse_user_turn(content).signal == "stop":
            if not agent_since_first_user:
                report.flags.append(FidelityFlag("premature_stop", i, "###STOP### before any agent turn"))
            else:
                missing = [a for a in gold_writes
                           if not any(_gold_matches(a, n, args, r) for n, args, r in calls_made)]
                if missing:
                    names = ", ".join(f"{a.requestor}:{a.name}" for a in missing[:3])
                    report.flags.append(FidelityFlag("premature_stop", i, f"###STOP### while {len(missing)} gold "
                                                                          f"write(s) not yet made ({names})"))
    return report
