"""Value provenance: every non-trivial argument value of a ground truth is in the user text up to its turn, in
the executed output of an earlier call, one arithmetic step from numbers seen there, or documented
(:func:`value_provenance`); the seeds that may be copied (:func:`seed_problems`); the text's order of
requests (:func:`text_order_problems`)."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.environments import tool_catalogue_of
from ace_env.oracle import Oracle
from ace_env.tasks import Task, Turn
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.values import is_trivial, leaves, number
from ace_graph.tagger import tag_task
from synth.checks.dates import DATE_FORMS, dates_in, month_years_in, weekday_dates_in
from synth.checks.parts import oracle_of, user_text_upto


def _trivial(v: Any) -> bool:
    """A value too common to need provenance (:func:`ace_env.values.is_trivial`); a leaf that is neither a
    string nor a number (a list, an object) is not a value of its own."""
    return is_trivial(v) or not isinstance(v, (str, int, float))


def _id_value(param: str, v: Any) -> bool:
    """A small number passed as an id (``ticket_id=1``): it must come from somewhere like any other id."""
    return param.lower().endswith("id") and isinstance(v, int) and not isinstance(v, bool)


def _canonical_task(task: Task) -> Task:
    """The task without output views (its tools' results as BFCL returns them)."""
    if not task.output_views:
        return task
    return Task(task.id, task.source, task.category,
                [Turn(list(t.user), list(t.ground_truth), list(t.tools_added)) for t in task.turns],
                task.initial_config, list(task.involved_classes), list(task.tools), task.long_context,
                dict(task.provenance), list(task.distractors))


@functools.cache
def _doc_text(tools: ToolCatalogue, tool: str) -> str:
    """The tool's documentation as one string ('' for a tool the catalogue does not have)."""
    info = tools.functions().get(tool)
    return json.dumps(info.doc) if info is not None else ""


def _documented(tools: ToolCatalogue, tool: str, value: Any) -> bool:
    """A string value the tool's own documentation names (an enum member such as 'Buy')."""
    return isinstance(value, str) and bool(value) and value in _doc_text(tools, tool)


def _unit_of_task(task: Task, tools: ToolCatalogue, value: Any) -> bool:
    """A unit a conversion takes that a tool the task calls documents ('in km' of a result, 'in miles' of a
    parameter): the docs, not the user, say which units a conversion between two tools needs."""
    called = {c.name for turn in task.turns for raw in turn.ground_truth for c in [parse_call(raw)]
              if isinstance(c, Call)}
    return isinstance(value, str) and value.isalpha() and any(
        re.search(rf"\bin {re.escape(value)}\b", _doc_text(tools, name)) for name in called)


def tool_default(tools: ToolCatalogue, tool: str, param: str) -> tuple[bool, Any]:
    """(True, default) when the tool's documentation (in ``tools``, the task's environment's catalogue) gives
    ``param`` a default, else (False, None)."""
    info = tools.functions().get(tool)
    props = ((info.doc.get("parameters") or {}).get("properties") or {}) if info is not None else {}
    spec = props.get(param)
    if isinstance(spec, dict) and "default" in spec:
        return True, spec["default"]
    return False, None


_NUMBER_EDGE = r"(?<![\d.,]){}(?![\d])"


_IDENTIFIER = re.compile(r"^(?=.*[A-Z])[A-Z0-9][A-Z0-9_-]{1,15}$")


def identifier_like(value: Any) -> bool:
    """A code-like string (a ticker 'ZETA', an id 'USR002', an airport 'SFO'): upper-case letters, digits,
    '_' or '-', no spaces; such a value is provided only where it is written or returned exactly."""
    return isinstance(value, str) and _IDENTIFIER.match(value) is not None


def identifier_in_text(value: str, text: str) -> bool:
    """Whether the text writes the identifier as a whole token, case-sensitively ('Omega' does not write
    'OMEG', 'Zeta Corp' does not write 'ZETA')."""
    return re.search(r"(?<![\w])" + re.escape(value) + r"(?![\w])", text) is not None


_ID_LABEL = r"\b([A-Za-z]+)[ _-]?(?:id|ID|Id)\b(?:\s+(?:is|of|=|:))?\s*['\"]?"


#: Labels that name an id of a kind of its own: a value so labelled is that kind's id, not a person's
#: ("Reference id 'USR002'"); any other word before "id" ("user id", "my account with id") names no kind.
_OTHER_ID_KINDS = frozenset({"reference", "order", "booking", "ticket", "transaction", "card", "tweet", "message",
                             "invoice", "confirmation", "tracking", "flight", "reservation"})


def labelled_otherwise(param: str, value: str, text: str) -> bool:
    """Whether every place the text writes an id calls it an id of another kind than the parameter's ('Reference
    id 'USR002'' labels it a reference, not whose id it is, so it does not provide ``receiver_id``; "user id" or
    "my account with id" name no other kind and count).  Only for a
    parameter ``<role>_id`` whose role word is not ``id``; a value written without such a label counts."""
    role = [w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", param.lower()) if w and w != "id"]
    if not param.lower().endswith("id") or not role:
        return False
    spots = [m.start() for m in re.finditer(r"(?<![\w])" + re.escape(value) + r"(?![\w])", text)]
    if not spots:
        return False
    for at in spots:
        m = re.search(_ID_LABEL + r"$", text[max(0, at - 40):at])
        label = m.group(1).lower() if m is not None else ""
        if m is None or label not in _OTHER_ID_KINDS or label in role or role[0].startswith(label):
            return False
    return True


def value_in_text(value: Any, text: str) -> bool:
    """Literal, case-insensitive presence of a value in text (numbers also as 1,234.5; whole numbers only)."""
    low = text.lower()
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, str):
        v = value.strip().lower()
        if v in low:
            return True
        bare = v.lstrip("#@").rstrip(".")  # a tag or mention written without its sign, a sentence without its period
        if len(bare) >= 3 and re.search(r"(?<![\w])" + re.escape(bare) + r"(?![\w])", low):
            return True
        # one word in its singular or plural form ('the document folder' names 'documents')
        stem = bare[:-1] if bare.endswith("s") else bare
        return len(stem) >= 4 and bare.isalpha() and re.search(r"(?<![\w])" + re.escape(stem) + r"s?(?![\w])", low) is not None
    if isinstance(value, (int, float)):
        forms = {str(value)}
        if float(value).is_integer():
            forms |= {str(int(value)), f"{int(value):,}"}
        else:
            forms |= {f"{value:,}", f"{value:.2f}", f"{value:,.2f}"}
        return any(re.search(_NUMBER_EDGE.format(re.escape(f)), low) for f in forms)
    if isinstance(value, (list, tuple)):
        return all(value_in_text(v, text) for v in value)
    return False


class Produced:
    """What one executed output provides: its leaves and object keys (normalized), and its string leaves."""

    def __init__(self, output: str | None):
        parsed = _json_or_none(output) if output else None
        if parsed is None:
            self.exact: set[Any] = set()
            self.raw: set[str] = set()
            self.text = output or ""
            return
        items = _leaves_and_keys(parsed)
        self.raw = {x for x in items if isinstance(x, str)}
        self.exact = {_norm(x) for x in items}
        self.text = "\n".join(x for x in items if isinstance(x, str))

    def has(self, value: Any) -> bool:
        if identifier_like(value):  # exactly, as a leaf or key or a whole token of a string leaf
            return value in self.raw or identifier_in_text(value, self.text)
        if _norm(value) in self.exact:
            return True
        if isinstance(value, str):
            return len(value) >= 3 and re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w])", self.text) is not None
        return number(value) is not None and value_in_text(value, self.text)  # a number inside a file's content


#: What an output provides, by output text (outputs repeat across the attempts of a run).
_PRODUCED: dict[str, Produced] = {}


def _produced(output: str | None) -> Produced:
    key = output or ""
    hit = _PRODUCED.get(key)
    if hit is None:
        if len(_PRODUCED) >= 16384:
            _PRODUCED.pop(next(iter(_PRODUCED)))
        hit = _PRODUCED[key] = Produced(output)
    return hit


def _norm(x: Any) -> Any:
    if isinstance(x, str):
        return x.strip().lower()
    n = number(x)
    return n if n is not None else (x if isinstance(x, (bool, type(None))) else str(x))


def value_in_output(value: Any, output: str | None) -> bool:
    """Whether an executed output shows the value: one of its leaves or keys equals it (a string may also be
    a whole word of a string leaf, a number a number in one); an output that is not JSON is read as text."""
    return bool(output) and Produced(output).has(value)


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")


def numbers_in(*texts: str) -> set[float]:
    """Every number written in the texts (1,234.5 read as 1234.5)."""
    return {float(m.group(0).replace(",", "")) for t in texts for m in _NUMBER.finditer(t or "")}


def computed_from(value: Any, seen: set[float], aux: set[float] | frozenset[float] = frozenset()) -> bool:
    """Whether a number is one of ``seen`` or one arithmetic step (+, -, *, /) from two numbers, at least one
    of them in ``seen`` (what the user wrote or an output returned).

    ``aux`` holds numbers that take part in a step but are not values of their own: the tool documentation's
    bounds and the constants 2 and 100.  A tank's capacity (the documentation's "up to 50 gallons") is
    the amount to add only once the current level was read (50 - 0); alone, or halved by a constant
    (100 / 2), it provides nothing (review v3: a fill of 50 with the level never shown)."""
    v = number(value)
    if v is None:
        return False
    target = round(v, 2)
    real = {round(x, 2) for x in seen}
    if target in real:
        return True
    every = real | {round(x, 2) for x in aux}
    for x in set(seen) | set(aux):  # is there a y with x + y, x - y, y - x, x * y, x / y or y / x equal to v?
        pool = every if round(x, 2) in real else real
        wanted = [v - x, x - v, v + x]
        if x:
            wanted += [v / x, v * x]
        if v:
            wanted.append(x / v)
        if any(round(w, 2) in pool for w in wanted):
            return True
    return False


def _leaves_and_keys(value: Any) -> list[Any]:
    """The scalar leaves of a JSON value and the keys of its objects (ids are often keys: cards, orders)."""
    out: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        else:
            out.append(node)
    return out


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


@dataclass(frozen=True)
class Unprovided:
    """An argument value of the ground truth that nothing provides."""

    turn: int
    step: int
    call: str
    param: str
    value: Any

    def __str__(self) -> str:
        return f"turn {self.turn} step {self.step}: {self.call} {self.param}={self.value!r} is in no user text up to " \
               f"the turn, no earlier executed output, and is not the tool's default"


def value_provenance(task: Task, oracle: Oracle | None = None) -> list[Unprovided]:
    """Every non-trivial argument value of the ground truth that has no provenance.

    A value is provided when it is (1) in the user text up to its turn, (2) in
    the executed output of an earlier call of the ground truth (found by
    replaying the task as BFCL returns results, without output views: the
    value must be *produced*, not just printed somewhere), or (3) the tool's
    documented default for that parameter or a value its documentation names
    (an enum member such as ``'Buy'``), or (4) written in another form that the
    conversion the task records reads back (:func:`converted_in_text`).  Nothing is exempt: a seed task that
    fails is not used as a seed.
    """
    oracle = oracle_of(_canonical_task(task)) if task.output_views or oracle is None else oracle
    tools = tool_catalogue_of(task)
    outputs: list[str] = []
    produced: list[Produced] = []
    out = []
    for t, turn in enumerate(oracle.turns):
        text = user_text_upto(task, t)
        dates = dates_in(text)
        for i, step in enumerate(turn.steps):
            seen: set[float] | None = None
            aux: set[float] = set()
            for param, arg in step.arguments.items():
                has_default, default = tool_default(tools, step.name, param)
                if has_default and _same(arg, default):
                    continue
                for v in leaves(arg):
                    an_id = _id_value(param, v)  # an id is written or returned, never a default or computed
                    if an_id:
                        if value_in_text(v, text) or any(p.has(v) for p in produced):
                            continue
                        out.append(Unprovided(t, i, step.call, param, v))
                        continue
                    if identifier_like(v):
                        written = identifier_in_text(v, text) and not labelled_otherwise(param, v, text)
                        if not (written or identifier_in_text(v, _doc_text(tools, step.name))
                                or any(p.has(v) for p in produced)):
                            out.append(Unprovided(t, i, step.call, param, v))
                        continue
                    if _trivial(v) or value_in_text(v, text) or _documented(tools, step.name, v) or v in dates \
                            or (step.name == "imperial_si_conversion" and _unit_of_task(task, tools, v)) \
                            or any(p.has(v) for p in produced) or converted_in_text(task, step.name, param, v, text):
                        continue
                    if number(v) is not None:
                        if seen is None:
                            seen = numbers_in(text, *outputs)
                            aux = numbers_in(_doc_text(tools, step.name)) | {2.0, 100.0}
                        if computed_from(v, seen, aux):
                            continue
                    out.append(Unprovided(t, i, step.call, param, v))
            outputs.append(step.output or "")
            produced.append(_produced(step.output))
    return out


#: Seed problems by (id, fingerprint): a seed is checked once per process.
def unobtainable_values(task: Task, oracle: Oracle | None = None) -> list[tuple[int, int, Any]]:
    """(turn, step, value) of :func:`value_provenance`'s problems (the older interface)."""
    return [(u.turn, u.step, u.value) for u in value_provenance(task, oracle)]


def text_order_problems(task: Task) -> list[str]:
    """Turns whose text mentions the calls' distinctive values out of the ground truth's order."""
    problems = []
    tools = tool_catalogue_of(task)
    exempt = set(task.provenance.get("exempt_order_turns") or [])
    for t, turn in enumerate(task.turns):
        if t in exempt:
            continue
        text = " ".join(m.get("content", "") or "" for m in turn.user if m.get("role") == "user").lower()
        values: list[list[str]] = []
        for raw in turn.ground_truth:
            parsed = parse_call(raw)
            vals = [v for v in leaves(list(parsed.kwargs.values()) + list(parsed.args))
                    if isinstance(v, str) and len(v) >= 3 and not _documented(tools, parsed.name, v)] \
                if isinstance(parsed, Call) else []
            values.append([v.lower() for v in vals])
        counts: dict[str, int] = {}
        for vals in values:
            for v in set(vals):
                counts[v] = counts.get(v, 0) + 1
        last, last_call = -1, None
        for raw, vals in zip(turn.ground_truth, values):
            own = [text.find(v) for v in vals if counts[v] == 1 and v in text]
            if not own:
                continue
            pos = min(own)
            if pos < last:
                problems.append(f"turn {t}: the text asks for {raw} before {last_call}")
                break
            last, last_call = pos, raw
    return problems



def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def _values_missing(task: Task, oracle: Oracle) -> list[str]:
    required = list(task.provenance.get("user_values") or [])
    if not required:
        return []

    tags = tag_task(task)
    missing = []
    for value in required:
        uses = []  # (turn, source) of every argument carrying the value
        for tag in tags:
            if tag.tool is None:
                continue
            step = oracle.turns[tag.turn].steps[tag.index]
            for param, arg in step.arguments.items():
                if any(_same(leaf, value) for leaf in leaves(arg)):
                    uses.append((tag.turn, tag.arg_sources.get(param)))
        if not uses:
            continue  # not used by the ground truth: nothing to carry
        first = min(t for t, _ in uses)
        if not value_in_text(value, user_text_upto(task, first)):
            missing.append(f"{value!r} not in the user text up to turn {first}")
        elif any(src != "user" for _, src in uses):
            missing.append(f"{value!r}: the tagger does not read it from the user text")
    return missing


# --------------------------------------------------------------------------- written forms a documented conversion reads

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD_VALUE = {w: i for i, w in enumerate(_ONES)} | {w: 10 * i for i, w in enumerate(_TENS) if w != "_"}
_SPOKEN_RUN = re.compile(r"(?:\b(?:" + "|".join(list(_WORD_VALUE) + list(_SCALES) + ["and", "a", "half"])
                         + r")\b[\s-]*)+", re.I)
_DIGIT_SCALE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+(thousand|million)\b", re.I)


def _spoken_value(words: list[str]) -> float | None:
    """The number a run of number words writes ('two and a half thousand' 2500, 'one hundred and fifty' 150);
    None when the run holds no number word."""
    total, current, seen = 0.0, 0.0, False
    i = 0
    while i < len(words):
        w = words[i]
        if w in _WORD_VALUE:
            current += _WORD_VALUE[w]
            seen = True
        elif w == "a" and i + 1 < len(words) and words[i + 1] in _SCALES:
            current += 1
            seen = True
        elif w == "half" and i > 0 and words[i - 1] == "a":
            current += 0.5
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in ("thousand", "million"):
            total += (current or 1) * _SCALES[w]
            current = 0.0
        i += 1
    return total + current if seen else None


def spoken_numbers(text: str) -> set[float]:
    """Every number the text writes in words or with a scale word ('two and a half thousand', '2.5 thousand',
    'one hundred and fifty', '1.2 million'), as a number."""
    out = set()
    for m in _SPOKEN_RUN.finditer(text or ""):
        value = _spoken_value([w.lower() for w in re.split(r"[\s-]+", m.group(0)) if w])
        if value is not None:
            out.add(round(value, 6))
    for m in _DIGIT_SCALE.finditer(text or ""):
        out.add(round(float(m.group(1)) * _SCALES[m.group(2).lower()], 6))
    return out


#: Exact conversions into a unit a parameter's documentation states: documented unit -> {unit written: how many
#: of it make one documented unit}.  Only exact factors (a US gallon is 4 quarts; a kilometre 1000 metres).
UNIT_FACTORS: dict[str, dict[str, int]] = {
    "gallons": {"quarts": 4},
    "km": {"meters": 1000, "metres": 1000},
    "hours": {"minutes": 60},
}


def param_doc(tools: ToolCatalogue, tool: str, param: str) -> str:
    """The description the tool's documentation (in ``tools``) gives ``param`` ('' when it has none)."""
    info = tools.functions().get(tool)
    props = ((info.doc.get("parameters") or {}).get("properties") or {}) if info is not None else {}
    spec = props.get(param)
    return str(spec.get("description", "")) if isinstance(spec, dict) else ""


def documented_unit(tools: ToolCatalogue, tool: str, param: str) -> str | None:
    """The unit the tool's documentation states for ``param`` ('gallons' for ``fillFuelTank``'s
    ``fuelAmount``), one of :data:`UNIT_FACTORS`; None when it states none of them."""
    desc = param_doc(tools, tool, param)
    return next((u for u in UNIT_FACTORS if re.search(rf"\bin {u}\b", desc)), None)


def units_in(text: str, unit: str) -> set[float]:
    """Amounts the text writes in another unit than ``unit`` (a documented one), converted into it
    ('120 quarts' is 30 gallons)."""
    out = set()
    for other, factor in UNIT_FACTORS.get(unit, {}).items():
        for m in re.finditer(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)\s+" + other + r"\b", (text or "").lower()):
            out.add(round(float(m.group(1).replace(",", "")) / factor, 6))
    return out


_PLUS = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*)\s+plus another\s+(\d+(?:,\d{3})*)(?![\d])", re.I)


def sums_in(text: str) -> set[float]:
    """Amounts the text states as a sum in prose ('100 plus another 50' is 150)."""
    return {float(m.group(1).replace(",", "")) + float(m.group(2).replace(",", "")) for m in _PLUS.finditer(text or "")}


_RELATIVE = re.compile(r"\b(\d+|[a-z]+) (days?|weeks?) after ")
_WORTH = re.compile(r"\$(\d[\d,]*(?:\.\d+)?) worth\b")


def relative_dates_in(text: str) -> set[str]:
    """Dates the text states relative to a date it writes ('ten days after July 29th, 2026' is 2026-08-08)."""
    out, low = set(), (text or "").lower()
    for m in _RELATIVE.finditer(low):
        n = int(m.group(1)) if m.group(1).isdigit() else _WORD_VALUE.get(m.group(1))
        rest = low[m.end():m.end() + 40]
        base = next((x for pattern, _ in DATE_FORMS if (x := pattern.match(rest)) is not None), None)
        if n is None or base is None:
            continue
        for d in dates_in(base.group(0)):
            try:
                day = _dt.date.fromisoformat(d) + _dt.timedelta(days=n * (7 if m.group(2).startswith("week") else 1))
            except ValueError:
                continue
            out.add(day.isoformat())
    return out


def _worth(task: Task, conv: dict[str, Any], value: Any, text: str) -> bool:
    """A quantity stated as an amount of money at a price a ground-truth call of the tool passes ('$34,200 worth'
    at 227.16 a share is 150 whole shares)."""
    by, n = number(conv.get("by")), number(value)
    calls = [c for turn in task.turns for raw in turn.ground_truth for c in [parse_call(raw)] if isinstance(c, Call)]
    if by is None or n is None or by <= 0 or not any(
            c.name == conv.get("tool") and _same(c.kwargs.get(conv.get("by_param")), conv.get("by")) for c in calls):
        return False
    return any(int(float(m.group(1).replace(",", "")) // by) == n for m in _WORTH.finditer(text or ""))


def converted_in_text(task: Task, tool: str, param: str, value: Any, text: str) -> bool:
    """Whether the text writes ``value`` in a form the task's recorded conversion (``provenance["conversion"]``,
    made by the ambiguity strategy) names and a reader here reads back: in words or with a scale, as a sum in
    prose, a month of a year in words, or an amount in another unit than the one the tool's documentation states."""
    conv = task.provenance.get("conversion") or {}
    if conv.get("kind") == "relative_date" and _same(conv.get("value"), value):  # any call may take the date
        return str(value) in relative_dates_in(text)
    if conv.get("kind") == "weekday_date" and _same(conv.get("value"), value):
        return str(value) in weekday_dates_in(text)
    if conv.get("kind") == "worth" and _same(conv.get("value"), value):
        return _worth(task, conv, value, text)
    if not conv or conv.get("tool") != tool or conv.get("param") != param or not _same(conv.get("value"), value):
        return False
    kind = conv.get("kind")
    n = number(value)
    if kind in ("number_words", "scale") and n is not None:
        return round(n, 6) in spoken_numbers(text)
    if kind == "month_year":
        return str(value) in month_years_in(text)
    if kind == "prose_sum" and n is not None:
        return float(n) in sums_in(text)
    if kind == "unit" and n is not None:
        unit = documented_unit(tool_catalogue_of(task), tool, param)
        return unit is not None and round(n, 6) in units_in(text, unit)
    if kind == "date_words":
        return str(value) in dates_in(text)
    return False
