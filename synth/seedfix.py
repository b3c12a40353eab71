"""Seed errors the blind reviewers caught that the provenance and text checks let through (issue 34, item 2):
a value passed on in another unit than the one its consumer documents (:func:`unit_problems`), a turn whose
message goes to someone else than the person or id it names (:func:`addressee_problems`), and a date whose
weekday contradicts the words around it (:func:`weekday_problems`).

Each detector is a pure function of the task (its text, its ground truth replayed, the tools' docs).  A
seed with such a problem is repaired where the repair is safe and checked again (:func:`repair_weekdays`:
the weekday words that contradict a written date are dropped, the date stays), and is otherwise not used
(:func:`synth.checks.seeds.seed_problems` records why; :func:`synth.repair.usable_version` returns None).
No unit or addressee repair is made: the tools these seeds offer hold no conversion between km and miles,
a converted value has no provenance, and which of two named recipients was meant is not in the task.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import RolloutState
from ace_env.tasks import Task
from ace_env.twins import all_functions
from ace_env.values import is_trivial, leaves, number
from synth.checks.parts import flat_calls, oracle_of, user_text_upto
from synth.checks.values import labelled_otherwise

UNIT_MISMATCH = "seed_unit_mismatch"
WRONG_ADDRESSEE = "seed_wrong_addressee"
WEEKDAY_CONTRADICTED = "seed_weekday_contradicts_date"
REASONS = (UNIT_MISMATCH, WRONG_ADDRESSEE, WEEKDAY_CONTRADICTED)


# --------------------------------------------------------------------------- units

#: (unit, dimension, how a doc or a text writes it); speeds before lengths, so 'km/h' is not read as km.
_UNITS = (
    ("km/h", "speed", r"\bkm/h\b|\bkph\b|\bkilomet(?:er|re)s? per hour\b"),
    ("mph", "speed", r"\bmph\b|\bm/h\b|\bmiles? per hour\b"),
    ("km", "length", r"\bkm\b|\bkilomet(?:er|re)s?\b"),
    ("miles", "length", r"\bmiles?\b"),
    ("meters", "length", r"\bmet(?:er|re)s?\b"),
    ("gallons", "volume", r"\bgallons?\b"),
    ("liters", "volume", r"\blit(?:er|re)s?\b"),
    ("celsius", "temperature", r"\bcelsius\b|°\s?c\b"),
    ("fahrenheit", "temperature", r"\bfahrenheit\b|°\s?f\b"),
)
_UNIT_ANY = "|".join(f"(?:{rx})" for _, _, rx in _UNITS)
_DIMENSION = {u: d for u, d, _ in _UNITS}
#: A number written with its unit right after it ('750.0 km', '30 gallons').
_WITH_UNIT = re.compile(r"(?<![\w.])(-?\d+(?:,\d{3})*(?:\.\d+)?)\s*(" + _UNIT_ANY + ")", re.I)


def unit_in(text: str) -> str | None:
    """The one unit a doc text names ('The distance to travel in miles.' -> 'miles'); None when it names none
    or two ('in km or miles')."""
    found: list[str] = []
    rest = text
    for unit, _, rx in _UNITS:
        if re.search(rx, rest, re.I):
            found.append(unit)
            rest = re.sub(rx, " ", rest, flags=re.I)
    return found[0] if len(found) == 1 else None


def _unit_word(word: str) -> str | None:
    return next((u for u, _, rx in _UNITS if re.fullmatch(rx, word.strip(), re.I)), None)


@functools.cache
def param_units(tool: str) -> dict[str, str]:
    """The unit each parameter of a tool is documented in (only the parameters whose description names one)."""
    info = all_functions().get(tool)
    props = ((info.doc.get("parameters") or {}).get("properties") or {}) if info is not None else {}
    out = {}
    for name, spec in props.items():
        unit = unit_in(str(spec.get("description") or "")) if isinstance(spec, dict) else None
        if unit is not None:
            out[name] = unit
    return out


@functools.cache
def result_units(tool: str) -> dict[str, str]:
    """The unit each field of a tool's result is documented in, by field name at any depth (a name two fields
    share with different units is left out)."""
    info = all_functions().get(tool)
    out: dict[str, str | None] = {}
    stack = [(info.doc.get("response") or {}) if info is not None else {}]
    while stack:
        node = stack.pop()
        for name, spec in ((node.get("properties") or {}) if isinstance(node, dict) else {}).items():
            if not isinstance(spec, dict):
                continue
            unit = unit_in(str(spec.get("description") or ""))
            if unit is not None:
                out[name] = unit if out.get(name, unit) == unit else None
            stack.append(spec)
    return {k: v for k, v in out.items() if v is not None}


def _numbers_by_field(value: Any, key: str = "") -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _numbers_by_field(v, str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            out += _numbers_by_field(v, key)
    elif number(value) is not None:
        out.append((key, float(value)))
    return out


def _json(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except (TypeError, ValueError):
        return None


def _same_number(a: float, b: float) -> bool:
    return round(a, 2) == round(b, 2)


def _call_unit(name: str, param: str, arguments: dict[str, Any]) -> str | None:
    """The unit ``param`` is in for this call: its documented unit, unless another argument of the call names a
    unit of the same dimension (``adjustClimateControl(temperature=70, unit='fahrenheit')``)."""
    unit = param_units(name).get(param)
    if unit is None:
        return None
    for other, v in arguments.items():
        given = _unit_word(v) if other != param and isinstance(v, str) else None
        if given is not None and _DIMENSION[given] == _DIMENSION[unit]:
            return given
    return unit


def _other_unit(n: float, unit: str, known: list[tuple[float, str, str]]) -> str | None:
    """Where ``n`` comes from in another unit of ``unit``'s dimension, when every source of it in that
    dimension has another unit; None when one has ``unit`` or none has that dimension."""
    found = [(u, where) for m, u, where in known if _same_number(m, n) and _DIMENSION[u] == _DIMENSION[unit]]
    return found[0][1] if found and all(u != unit for u, _ in found) else None


def unit_problems(task: Task) -> list[str]:
    """Values passed on in another unit than the consumer's: a number an earlier call returned in a field
    documented in unit U (or the user wrote with unit U), passed to a parameter documented in unit V of the same
    dimension, or written with unit V into a string argument ('... is 980 miles.' where 980 is
    ``estimate_distance``'s km), with no source of that number in unit V."""
    oracle = oracle_of(task)
    out = []
    sources: list[tuple[float, str, str]] = []  # (number, unit, where it comes from)
    for t, turn in enumerate(oracle.turns):
        written = [(float(m.group(1).replace(",", "")), _unit_word(m.group(2)), m.group(0))
                   for m in _WITH_UNIT.finditer(user_text_upto(task, t))]
        known = sources + [(n, u, f"the user's {w!r}") for n, u, w in written if u is not None]
        for step in turn.steps:
            for param, arg in step.arguments.items():
                want = _call_unit(step.name, param, step.arguments)
                for v in leaves(arg):
                    if want is not None and number(v) is not None and not is_trivial(v):
                        other = _other_unit(float(v), want, known)
                        if other is not None:
                            out.append(f"turn {t}: {step.call}: {param}={v!r} is documented in {want}; "
                                       f"the value is {other}")
                    for m in _WITH_UNIT.finditer(v) if isinstance(v, str) else ():
                        said = _unit_word(m.group(2))
                        other = _other_unit(float(m.group(1).replace(",", "")), said, known) if said else None
                        if other is not None:
                            out.append(f"turn {t}: {step.call}: {param} writes {m.group(0)!r}; the number is {other}")
            units = result_units(step.name)
            if units and step.status == "ok":
                for field_, n in _numbers_by_field(_json(step.output)):
                    if field_ in units:
                        src = (n, units[field_], f"{step.name}'s {field_} ({units[field_]})")
                        sources.append(src)
                        known.append(src)
    return out


# --------------------------------------------------------------------------- addressees

#: The lookup that turns a person's name into the id a message goes to: (tool, its one parameter).
PERSON_LOOKUP = ("get_user_id", "user")
#: Parameters that name who receives a message.
_RECIPIENT = re.compile(r"^(receiver|recipient)(_?id)?$", re.I)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\b")
#: A name the user gives as their own ('I am Kelly', 'my name is Jane').
_SELF = re.compile(r"\b(?:I am|I'm|my name is|this is|it's me,?)\s*$", re.I)
#: A message addressed to a desk, not a person of the workspace ('a note to customer service').
_DESK = re.compile(r"\b(?:note|message|mail|email|text|letter|line|word)\s+to\s+(?:the\s+)?"
                   r"(customer service|customer support|support team|sales team|help ?desk|the support)\b", re.I)


def _turn_text(task: Task, t: int) -> str:
    return "\n".join(m.get("content", "") or "" for m in task.turns[t].user if m.get("role") == "user")


def _person_id(env: RolloutState, turn: int, name: str) -> str | None:
    tool, param = PERSON_LOOKUP
    r = env.call(Call(tool, (), {param: name}).render(), turn, run_not_offered=True)
    got = _json(r.output) if r.status == "ok" else None
    value = got.get(param + "_id") if isinstance(got, dict) else None
    return value if isinstance(value, str) else None


def addressee_problems(task: Task) -> list[str]:
    """Turns whose message goes to another person or id than the text names: the receiver's id is written
    only under another kind's label ("Reference id 'USR002'": :func:`synth.checks.values.labelled_otherwise`),
    the text addresses the message to a desk ("a note to customer service") while it goes to a person, or the
    turn names people none of whom has the receiver's id while the id itself is not written."""
    flat = flat_calls(task)
    if not any(_RECIPIENT.match(k) for _, _, raw, _ in flat
               for c in [parse_call(raw)] if isinstance(c, Call) for k in c.kwargs):
        return []
    out = []
    env = RolloutState(task)
    for t, i, raw, name in flat:
        call = parse_call(raw)
        recipient = next(((k, v) for k, v in call.kwargs.items() if _RECIPIENT.match(k) and isinstance(v, str)),
                         None) if isinstance(call, Call) else None
        if recipient is not None:
            param, rid = recipient
            text, own = user_text_upto(task, t), _turn_text(task, t)
            desk = _DESK.search(own)
            if labelled_otherwise(param, rid, text):
                out.append(f"turn {t}: {raw}: the text writes {rid!r} only as another kind of id, not the receiver's")
            elif desk is not None:
                out.append(f"turn {t}: {raw}: the text addresses the message to {desk.group(1)!r}")
            elif not re.search(r"(?<![\w])" + re.escape(rid) + r"(?![\w])", text):
                named = {}
                for m in _NAME.finditer(own):
                    if _SELF.search(own[max(0, m.start() - 16):m.start()]):
                        continue
                    for n in dict.fromkeys([m.group(0), *m.group(0).split()]):
                        pid = _person_id(env, t, n)
                        if pid is not None:
                            named[n] = pid
                            break
                if named and rid not in named.values():
                    who = ", ".join(f"{n} ({p})" for n, p in named.items())
                    out.append(f"turn {t}: {raw}: the turn names {who}, the message goes to {rid!r}")
        env.call(raw, t)
    return out


# --------------------------------------------------------------------------- weekdays

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = r"(" + "|".join(m[:3] + r"[a-z]*\.?" for m in _MONTHS) + r")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
#: Written dates: (pattern, group of year, month, day).
_DATES = (
    (re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+(\d{4})\b", re.I), (3, 1, 2)),  # July 1st 2026
    (re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+(\d{4})\b", re.I), (3, 2, 1)),  # 19th Sept 2026
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), (1, 2, 3)),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), (3, 1, 2)),  # US order
)
#: The day words right before a date ('this weekend ', 'next Friday, '), with what stands before them.
_BEFORE = re.compile(r"(\b(?:on|for|by)\s+)?(?:\b(?:this|next|coming|upcoming|this coming|this upcoming)\s+)?"
                     r"\b(" + "|".join(_WEEKDAYS) + r"|weekend|weekday)\b,?\s*$", re.I)
_AFTER = re.compile(r"^,?\s*\(?(?:a|which is an?|that is an?)?\s*(" + "|".join(_WEEKDAYS) + r")\b", re.I)


def _dates(text: str) -> list[tuple[int, int, datetime.date]]:
    """(start, end, date) of every calendar date the text writes."""
    out = []
    for pattern, (y, m, d) in _DATES:
        for match in pattern.finditer(text):
            month = match.group(m)
            mon = int(month) if month.isdigit() else next(
                (k + 1 for k, name in enumerate(_MONTHS) if month.lower().startswith(name[:3])), 0)
            try:
                day = datetime.date(int(match.group(y)), mon, int(match.group(d)))
            except ValueError:
                continue
            out.append((match.start(), match.end(), day))
    return out


def _contradicts(word: str, day: datetime.date) -> bool:
    word = word.lower()
    if word == "weekend":
        return day.weekday() < 5
    if word == "weekday":
        return day.weekday() >= 5
    return _WEEKDAYS.index(word) != day.weekday()


def _weekday_spots(text: str) -> list[tuple[int, int, str, datetime.date, bool]]:
    """(start, end, words, date, before) of each weekday word around a date that the calendar contradicts;
    ``before``: the words stand right before the date (start..end spans them up to the date)."""
    out = []
    for start, end, day in _dates(text):
        m = _BEFORE.search(text[max(0, start - 40):start])
        if m is not None and _contradicts(m.group(2), day):
            at = max(0, start - 40) + m.start()
            out.append((at, start, text[at:start], day, True))
        a = _AFTER.search(text[end:end + 30])
        if a is not None and _contradicts(a.group(1), day):
            out.append((end, end + a.end(), text[end:end + a.end()], day, False))
    return out


def weekday_problems(task: Task) -> list[str]:
    """Turns that write a date beside a weekday word the calendar contradicts ('this weekend July 1st 2026':
    a Wednesday; 'next Friday 19th Sept 2026': a Saturday)."""
    out = []
    for t in range(len(task.turns)):
        text = _turn_text(task, t)
        for _, _, words, day, _ in _weekday_spots(text):
            out.append(f"turn {t}: {words.strip()!r} beside {day.isoformat()}, a {day.strftime('%A')}")
    return out


def repair_weekdays(task: Task) -> int:
    """Drop the weekday words a written date contradicts, in place ('a flight this weekend July 1st 2026' ->
    'a flight on July 1st 2026'; after 'on', 'for' or 'by' nothing is put in); how many.  The date, which the
    ground truth uses, stays; words after the date and words a ground-truth string quotes are left (the seed
    is then not used)."""
    fixed = 0
    for turn in task.turns:
        quoted = [v for raw in turn.ground_truth for c in [parse_call(raw)] if isinstance(c, Call)
                  for v in leaves(list(c.kwargs.values()) + list(c.args)) if isinstance(v, str)]
        for msg in turn.user:
            if msg.get("role") != "user":
                continue
            for _ in range(4):
                text = msg.get("content") or ""
                spot = next((s for s in _weekday_spots(text) if s[4]), None)
                if spot is None:
                    break
                start, end, words, _, _ = spot
                if any(words.strip() in v for v in quoted):
                    break
                lead = _BEFORE.search(words)
                keep = lead.group(1) if lead is not None and lead.group(1) else "on "
                msg["content"] = text[:start] + keep + text[end:]
                fixed += 1
    return fixed


# --------------------------------------------------------------------------- all of them


def seedfix_problems(task: Task) -> list[tuple[str, str]]:
    """(reason, detail) of every problem above the task has."""
    out = [(WEEKDAY_CONTRADICTED, d) for d in weekday_problems(task)]
    out += [(UNIT_MISMATCH, d) for d in unit_problems(task)]
    out += [(WRONG_ADDRESSEE, d) for d in addressee_problems(task)]
    return out


__all__ = ["PERSON_LOOKUP", "REASONS", "UNIT_MISMATCH", "WEEKDAY_CONTRADICTED", "WRONG_ADDRESSEE",
           "addressee_problems", "param_units", "repair_weekdays", "result_units", "seedfix_problems",
           "unit_in", "unit_problems", "weekday_problems"]
