"""Dates the user text writes: a calendar date in any usual form (:func:`dates_in`), a month of a year in words
(:func:`month_years_in`), a date stated by its weekday (:func:`weekday_dates_in`); moved out of
:mod:`synth.checks.values`, which re-exports them."""

from __future__ import annotations

import datetime as _dt
import re

__all__ = ["DATE_FORMS", "dates_in", "month_years_in", "weekday_dates_in"]

_MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                              "september", "october", "november", "december"))}
_MONTH = r"(" + "|".join(m[:3] + r"[a-z]*\.?" for m in _MONTHS) + r")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
DATE_FORMS = (
    (re.compile(_MONTH + r"\s+" + _DAY + r",?\s+(\d{4})"), (3, 1, 2)),  # November 10th, 2024
    (re.compile(_DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+(\d{4})"), (3, 2, 1)),  # 10th of November 2024
    (re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"), (1, 2, 3)),
    (re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})"), (3, 1, 2)),  # US order
)


def dates_in(text: str) -> set[str]:
    """Every calendar date the text writes, as ``YYYY-MM-DD``."""
    out = set()
    for pattern, (y, m, d) in DATE_FORMS:
        for match in pattern.finditer(text.lower()):
            month = match.group(m)
            mon = int(month) if month.isdigit() else _MONTHS.get(next((k for k in _MONTHS if month.startswith(k[:3])), ""), 0)
            day = int(match.group(d))
            if 1 <= mon <= 12 and 1 <= day <= 31:
                out.add(f"{int(match.group(y)):04d}-{mon:02d}-{day:02d}")
    return out


def month_years_in(text: str) -> set[str]:
    """Every month of a year the text writes in words ('March 2027'), as ``MM/YYYY``."""
    out = set()
    for m in re.finditer(_MONTH + r",?\s+(\d{4})\b", (text or "").lower()):
        key = next((k for k in _MONTHS if m.group(1).startswith(k[:3])), None)
        if key is not None:
            out.add(f"{_MONTHS[key]:02d}/{m.group(2)}")
    return out


_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NTH_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
_WEEKDAY_AFTER = re.compile(r"\bthe (first|second|third|fourth|fifth) (" + "|".join(_WEEKDAY_NAMES) + r") after ")
_WEEKDAY_OF = re.compile(r"\bthe (first|second|third|fourth|fifth|last) (" + "|".join(_WEEKDAY_NAMES) + r") of "
                         + _MONTH + r",?\s+(\d{4})\b")


def weekday_dates_in(text: str) -> set[str]:
    """Dates the text states by their weekday: 'the second Friday after June 16th, 2026' (the second Friday
    strictly after that date), 'the third Tuesday of September 2026', 'the last Friday of July 2026'."""
    out, low = set(), (text or "").lower()
    for m in _WEEKDAY_AFTER.finditer(low):
        rest = low[m.end():m.end() + 40]
        base = next((x for pattern, _ in DATE_FORMS if (x := pattern.match(rest)) is not None), None)
        for d in dates_in(base.group(0)) if base is not None else ():
            try:
                start = _dt.date.fromisoformat(d)
            except ValueError:
                continue
            ahead = (_WEEKDAY_NAMES.index(m.group(2)) - start.weekday()) % 7 or 7
            out.add((start + _dt.timedelta(days=ahead + 7 * (_NTH_WORDS[m.group(1)] - 1))).isoformat())
    for m in _WEEKDAY_OF.finditer(low):
        mon = _MONTHS.get(next((k for k in _MONTHS if m.group(3).startswith(k[:3])), ""), 0)
        if not mon:
            continue
        year, want = int(m.group(4)), _WEEKDAY_NAMES.index(m.group(2))
        days = [_dt.date(year, mon, 1) + _dt.timedelta(days=i) for i in range(31)]
        days = [x for x in days if x.month == mon and x.weekday() == want]
        n = len(days) if m.group(1) == "last" else _NTH_WORDS[m.group(1)]
        if n <= len(days):
            out.add(days[n - 1].isoformat())
    return out
