"""Conversions the agent must make: a value the user states, rewritten in another form the tools' docs define.

The ambiguity strategy's harder half (issue 34): where the ground truth passes a value the user text writes
literally, the text writes it another way, and the agent must convert it back to what the tool's documentation
asks for.  The ground truth keeps the converted (canonical) value, so the task is still verified by execution.

Kinds (``provenance["conversion"]["kind"]``):

- ``date_words``: a date the documentation asks as ``YYYY-MM-DD`` written in words ('March 3rd, 2024');
- ``month_year``: a month the documentation asks as ``MM/YYYY`` written in words ('March 2027');
- ``number_words``: a whole number written in words ('one hundred and fifty', 'two and a half thousand');
- ``scale``: a round number written with a scale word ('2.5 thousand', '1.2 million');
- ``prose_sum``: a whole number stated as a sum in prose ('100 plus another 50' for 150); no longer made (it
  read unnaturally in the blind review of issue 34), still read back for tasks made before;
- ``unit``: an amount written in another unit than the one the documentation states, with an exact factor
  ('120 quarts' where ``fillFuelTank``'s ``fuelAmount`` is documented in gallons).

Every written form is kept only if the value-provenance check's own reader
(:func:`synth.checks.values.converted_in_text`) reads it back as the value, so a task's conversion is derivable
from its text and its tools' docs by construction.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from typing import Any

from ace_env.environments import tool_catalogue_of
from ace_env.tasks import Task, Turn
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.values import is_trivial, number
from synth.checks.values import (
    UNIT_FACTORS,
    dates_in,
    documented_unit,
    identifier_like,
    month_years_in,
    param_doc,
    spoken_numbers,
    sums_in,
    units_in,
    value_in_output,
    value_in_text,
)

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}


def in_words(n: int) -> str:
    """A whole number from 0 to 999,999,999 in English words ('one hundred and fifty', 'two thousand five hundred')."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    if n < 1000:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + (f" and {in_words(rest)}" if rest else "")
    for size, name in ((1_000_000, "million"), (1000, "thousand")):
        if n >= size:
            rest = n % size
            joint = " and " if rest and rest < 100 else " "
            return f"{in_words(n // size)} {name}" + (joint + in_words(rest) if rest else "")
    raise ValueError(n)


def _date_forms(value: str, rng: random.Random) -> list[str]:
    try:
        d = _dt.date.fromisoformat(value)
    except ValueError:
        return []
    day = f"{d.day}{_ORDINAL.get(d.day, 'th')}"
    month = d.strftime("%B")
    forms = [f"{month} {day}, {d.year}", f"the {day} of {month}, {d.year}", f"{d.day} {month} {d.year}"]
    rng.shuffle(forms)
    return forms


def _number_forms(n: float, rng: random.Random) -> list[tuple[str, str]]:
    """(kind, written) forms of a whole number: in words and with a scale word."""
    if not float(n).is_integer() or not 10 <= n < 1_000_000_000:
        return []
    i = int(n)
    forms = []
    if i >= 1000 and i % 100 == 0:
        size, name = (1_000_000, "million") if i >= 1_000_000 else (1000, "thousand")
        if i % (size // 10) == 0:
            forms.append(("scale", f"{i / size:g} {name}"))
        if i % size == size // 2 and i >= 1.5 * size:
            forms.append(("number_words", f"{in_words(i // size)} and a half {name}"))
    if i < 100_000 and (i < 1000 or i % 100 == 0):
        forms.append(("number_words", in_words(i)))
    # no prose sum ('90 plus another 10 shares'): the blind review of issue 34 found it unnatural (tasks 24, 37,
    # 39, 40); its reader stays (synth.checks.values.sums_in) for tasks made before
    rng.shuffle(forms)
    return forms


def _unit_forms(n: float, unit: str, rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for other, factor in UNIT_FACTORS[unit].items():
        amount = round(n * factor, 6)
        if float(amount).is_integer():
            out.append(("unit", f"{int(amount):,} {other}"))
    rng.shuffle(out)
    return out


def written_forms(tools: ToolCatalogue, tool: str, param: str, value: Any,
                  rng: random.Random) -> list[tuple[str, str]]:
    """(kind, written) ways to state ``value`` of ``tool``'s ``param`` that its documentation (in ``tools``, the
    task's environment's catalogue) makes convertible; a date or a month only where the documentation states its
    format, a unit only where it states the unit."""
    if isinstance(value, bool) or is_trivial(value) or param.lower().endswith("id") or identifier_like(value):
        return []
    doc = param_doc(tools, tool, param)
    if isinstance(value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) and "YYYY-MM-DD" in doc:
            return [("date_words", f) for f in _date_forms(value, rng)]
        m = re.fullmatch(r"(\d{2})/(\d{4})", value)
        if m and "MM/YYYY" in doc and 1 <= int(m.group(1)) <= 12:
            return [("month_year", f"{_dt.date(2000, int(m.group(1)), 1).strftime('%B')} {m.group(2)}")]
        return []
    n = number(value)
    if n is None:
        return []
    unit = documented_unit(tools, tool, param)
    return (_unit_forms(n, unit, rng) if unit else []) + _number_forms(n, rng)


def reads_back(tools: ToolCatalogue, kind: str, written: str, tool: str, param: str, value: Any) -> bool:
    """Whether the checks' readers read ``written`` back as ``value`` (the conversion is derivable)."""
    n = number(value)
    if kind == "date_words":
        return str(value) in dates_in(written)
    if kind == "month_year":
        return str(value) in month_years_in(written)
    if kind in ("number_words", "scale"):
        return n is not None and round(n, 6) in spoken_numbers(written)
    if kind == "prose_sum":
        return n is not None and float(n) in sums_in(written)
    if kind == "unit":
        unit = documented_unit(tools, tool, param)
        return n is not None and unit is not None and round(n, 6) in units_in(written, unit)
    return False


def _literal(value: Any) -> re.Pattern[str] | None:
    """Where the text writes ``value`` literally (a quoted date with its quotes, a number with its '$')."""
    if isinstance(value, str):
        return re.compile(r"(['\"]?)" + re.escape(value) + r"\1", re.I)
    n = number(value)
    if n is None:
        return None
    forms = {str(value)} | ({str(int(n)), f"{int(n):,}", f"{n:.1f}", f"{n:.2f}"} if float(n).is_integer() else set())
    alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(r"(\$)?(?<![\d.,])(?:" + alts + r")(?![\d]|\.\d)")


#: The documented unit as the text may write it after the number (dropped when another unit replaces it).
_UNIT_WORDS = {"gallons": r"gal(?:lons?|\.)?", "km": r"(?:km|kilomet(?:er|re)s?)", "hours": r"(?:hours?|hrs?)"}


def rewrite_turns(turns: list[Turn], value: Any, written: str, unit: str | None = None) -> int:
    """Rewrite, in place, every place the user turns write ``value`` literally as ``written`` (with the
    documented ``unit`` written after it dropped, for a value written in another unit); how many."""
    pattern = _literal(value)
    if pattern is None:
        return 0
    if unit is not None:
        pattern = re.compile(pattern.pattern + r"(?:\s*" + _UNIT_WORDS.get(unit, re.escape(unit)) + r"(?![\w]))?", re.I)
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        dollars = m.group(1) == "$" if not isinstance(value, str) else False
        after = m.string[m.end():m.end() + 12].lower()
        if dollars and not re.match(r"\s*(dollars|usd|bucks)\b", after):
            return f"{written} dollars"
        return written

    for turn in turns:
        for msg in turn.user:
            if msg.get("role") == "user" and msg.get("content"):
                msg["content"] = pattern.sub(sub, msg["content"])
    return count


# --------------------------------------------------------------------------- conversions that take a step of reasoning

#: Offsets a relative date is stated with: (days, how the text says them).
_OFFSETS = ((10, "ten days"), (12, "twelve days"), (15, "fifteen days"), (18, "eighteen days"), (20, "twenty days"),
            (14, "two weeks"), (21, "three weeks"))


def _date_pattern(value: str) -> str:
    """A pattern of the ways a text writes the date ``value`` (``YYYY-MM-DD``, quoted or not; 'August 15, 2026',
    'Aug 15th 2026', 'the 15th of August, 2026')."""
    d = _dt.date.fromisoformat(value)
    mon = rf"(?:{d.strftime('%B')}|{d.strftime('%b')}\.?)"
    day = rf"0?{d.day}(?:st|nd|rd|th)?"
    return (rf"(['\"]?){re.escape(value)}\1|\b{mon}\s+{day},?\s+{d.year}\b|"
            rf"\b(?:the\s+)?{day}\s+(?:of\s+)?{mon},?\s+{d.year}\b")


def relative_date_forms(value: str, rng: random.Random) -> list[str]:
    """'the date ten days after July 29th, 2026' for 2026-08-08: a date stated against another one, the offset
    crossing a month's end where it can (a step of calendar arithmetic, not a reformat)."""
    try:
        d = _dt.date.fromisoformat(value)
    except ValueError:
        return []
    forms = []
    for days, said in _OFFSETS:
        base = d - _dt.timedelta(days=days)
        forms.append((base.month != d.month, f"the date {said} after {base.strftime('%B')} {base.day}"
                      f"{_ORDINAL.get(base.day, 'th')}, {base.year}"))
    rng.shuffle(forms)
    return [f for crosses, f in sorted(forms, key=lambda x: not x[0])][:2]


#: How the user states a budget for shares: (what replaces 'N shares', the cap said after it).  The cap is the
#: user's own words, never the rounding rule (blind review s7b: 'Whole shares only: as many as that amount
#: covers' gave the floor away, 0 of 9 adversarial); a cap makes flooring follow from the text.
_BUDGETS = (
    ("{x} worth", "I can put at most {x} into it."),
    ("{x} worth", "Just don't go over {x}."),
    ("{x} worth", "That's my ceiling, I can't spend more than {x} on it."),
    ("{x} worth", "{x} is all I have for it, not a cent more."),
    ("up to {x} worth", ""),
    ("no more than {x} worth", ""),
)


def budget_forms(x: int, rng: random.Random) -> tuple[str, str]:
    """(written, cap) stating a budget of ``x`` dollars for whole shares in the user's words ('$7,650 worth' and
    'I can put at most $7,650 into it'); every form holds '$X worth', which the checks read back (:func:`synth.checks.values.converted_in_text`)."""
    written, cap = rng.choice(_BUDGETS)
    return written.format(x=f"${x:,}"), cap.format(x=f"${x:,}")


#: Weekdays and ordinals a weekday-relative date is stated with.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NTH = ("first", "second", "third", "fourth")


def weekday_date_forms(value: str, rng: random.Random) -> list[str]:
    """'the second Friday after June 16th, 2026', 'the third Tuesday of September 2026', 'the last Friday of July
    2026' for a date: a date stated by its weekday against another one, which needs a calendar (LLMs often count
    weekdays wrong); the base date is never the same weekday, so 'after' reads one way only."""
    try:
        d = _dt.date.fromisoformat(value)
    except ValueError:
        return []
    day = _WEEKDAYS[d.weekday()]
    forms = []
    k = rng.choice((2, 2, 3))
    gap = rng.randint(1, 6)  # days from the base to the first such weekday after it
    base = d - _dt.timedelta(days=7 * (k - 1) + gap)
    forms.append(f"the {_NTH[k - 1]} {day} after {base.strftime('%B')} {base.day}{_ORDINAL.get(base.day, 'th')}, "
                 f"{base.year}")
    nth = (d.day - 1) // 7
    last = (d + _dt.timedelta(days=7)).month != d.month
    month = f"{d.strftime('%B')} {d.year}"
    forms.append(f"the last {day} of {month}" if last and (nth == 4 or rng.random() < 0.5)
                 else f"the {_NTH[nth]} {day} of {month}")
    rng.shuffle(forms)
    return forms


def worth_amount(n: int, price: float) -> int | None:
    """A round amount of money that buys ``n`` whole shares at ``price`` and leaves more than half a share over
    (so rounding instead of flooring gives ``n + 1``); None where none is round enough."""
    if n < 1 or price <= 0:
        return None
    lo, hi = n * price + 0.5 * price, (n + 1) * price
    for g in (1000, 500, 100, 50, 10, 5, 1):
        x = (int(lo // g) + 1) * g  # the smallest multiple of g above lo
        if lo < x < hi and int(x // price) == n and x / price != int(x / price):
            return x
    return None


def reasoned_candidates(task: Task, steps: list[Any], upto_outputs: list[list[str]], texts: list[str],
                        rng: random.Random) -> list[dict[str, Any]]:
    """Conversions that need a step of reasoning, defined by the docs or another value of the call: a date the
    doc asks as ``YYYY-MM-DD`` stated relative to another date (``relative_date``), a number of shares stated as
    an amount of money at the order's price (``worth``: floor(amount / price), the budget a cap in the user's words),
    a date stated by its weekday (``weekday_date``: 'the second Friday after June 16th, 2026'); only a
    value no earlier output returns (the user's words alone provide it)."""
    tools = tool_catalogue_of(task)
    out = []
    for (tool, args), outputs, text in zip(steps, upto_outputs, texts):
        for param, value in args.items():
            # the cheap tests first: an earlier output (up to ~100k characters) is searched only for a candidate
            if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) \
                    and "YYYY-MM-DD" in (doc := param_doc(tools, tool, param)):
                pattern = _date_pattern(value)
                if not re.search(pattern, text, re.I) or _quoted_or_copied(task, value) \
                        or any(value_in_output(value, o) for o in outputs):
                    continue
                for written in relative_date_forms(value, rng):
                    out.append({"kind": "relative_date", "tool": tool, "param": param, "value": value,
                                "written": written, "doc": doc, "pattern": pattern})
                for written in weekday_date_forms(value, rng):
                    out.append({"kind": "weekday_date", "tool": tool, "param": param, "value": value,
                                "written": written, "doc": doc, "pattern": pattern})
            price = number(args.get("price"))
            if param in ("amount", "quantity") and isinstance(value, int) and not isinstance(value, bool) \
                    and value >= 2 and price and price > 0:
                x = worth_amount(value, price)
                pattern = rf"(?<![\d.,$]){value}\s+(?:shares|units|stocks)\b"
                if x is None or not re.search(pattern, text, re.I) or _quoted_or_copied(task, value) \
                        or any(value_in_output(value, o) for o in outputs):
                    continue
                doc = param_doc(tools, tool, param)
                written, rule = budget_forms(x, rng)
                out.append({"kind": "worth", "tool": tool, "param": param, "value": value, "by": args["price"],
                            "by_param": "price", "written": written, "doc": doc, "pattern": pattern,
                            "rule": rule})
    return out


def rewrite_pattern(turns: list[Turn], pattern: str, written: str, rule: str = "") -> int:
    """Rewrite, in place, every match of ``pattern`` in the user turns as ``written``, with the ``rule`` that
    makes it exact (the rounding of a money amount into shares) added after the first message rewritten;
    how many."""
    count = 0
    for turn in turns:
        for msg in turn.user:
            if msg.get("role") == "user" and msg.get("content"):
                new, n = re.subn(pattern, written, msg["content"], flags=re.I)
                if n and rule and not count:
                    new = new.rstrip() + ("" if new.rstrip()[-1:] in ".?!" else ".") + " " + rule
                msg["content"], count = new, count + n
    return count


#: How hard a kind of conversion is to make (candidates are tried hardest first, ties in random order): a step of
#: reasoning (an amount of money into shares at the price, a date against another) before a documented unit,
#: before a reformat.
HARDNESS = {"worth": 6, "weekday_date": 6, "relative_date": 5, "unit": 4, "date_words": 3, "month_year": 3, "scale": 2, "prose_sum": 1, "number_words": 1}


def _quoted_or_copied(task: Task, value: Any) -> bool:
    """Whether the value is written inside a quoted span of the text or inside a string argument of the ground
    truth (a message or a ticket's description quoting it): rewriting it there would change a value to copy."""
    pattern = _literal(value)
    if pattern is None:
        return True
    for turn in task.turns:
        for msg in turn.user:
            if msg.get("role") != "user":
                continue
            for q in re.findall(r"'([^'\n]{2,}?)'(?![\w])|\"([^\"\n]+?)\"", msg.get("content") or ""):
                if any(part and part != str(value) and pattern.search(part) for part in q):
                    return True
        for raw in turn.ground_truth:
            for q in re.findall(r"'([^'\n]*)'|\"([^\"\n]*)\"", raw):
                if any(part and part != str(value) and pattern.search(part) for part in q):
                    return True
    return False


def conversion_candidates(task: Task, steps: list[Any], upto_outputs: list[list[str]], texts: list[str],
                          rng: random.Random) -> list[dict[str, Any]]:
    """Conversions possible at the given ground-truth steps: each step's (tool, arguments), the outputs of the
    calls before it, and the user text up to its turn; a value qualifies when the text writes it literally,
    outside any quote or value to copy, and no earlier output returns it (so only the user's words provide it).
    Hardest kinds first (:data:`HARDNESS`)."""
    tools = tool_catalogue_of(task)
    out = []
    for (tool, args), outputs, text in zip(steps, upto_outputs, texts):
        for param, value in args.items():
            if isinstance(value, (list, dict)) or not value_in_text(value, text):
                continue
            if any(value_in_output(value, o) for o in outputs) or _quoted_or_copied(task, value):
                continue
            for kind, written in written_forms(tools, tool, param, value, rng):
                if reads_back(tools, kind, written, tool, param, value):
                    out.append({"kind": kind, "tool": tool, "param": param, "value": value, "written": written,
                                "doc": param_doc(tools, tool, param)})
    out += reasoned_candidates(task, steps, upto_outputs, texts, rng)
    rng.shuffle(out)
    out.sort(key=lambda c: -HARDNESS[c["kind"]])
    return out
