"""Requests that do not name the tool: the words of a tool's name rewritten out of the decision turn.

A distractor offers a wrong-way twin beside the right tool ``b`` (``get_order_summary`` beside
``get_order_details``).  A request that says "the details of my order" names ``b`` and makes the twin a free
pass (blind review s6: 6 of 9 distractor tasks).  :func:`neutral_request` rewrites the right tool's
distinguishing name words ("details", "invoice", "cancel") in the decision turn's request to words that do not
name it ("particulars", "bill", "call off"); the twin's words ("summary", "quote", "preview") may stay, and are
the lure the distractor adds (blind review s7b); quoted strings (a message's words, an argument) and
all-capital tokens (a ticker) are left alone.  :func:`named_words` finds what is left: a draft whose request
still holds such a word is not made, and a declared check finds them again on the task.  Which words count:
:func:`checked_words` (a word the names share favours neither tool and is kept).
"""

from __future__ import annotations

import random
import re

__all__ = ["NEUTRAL", "QUOTED", "checked_words", "name_words", "named_words", "neutral_request"]

#: Words of a tool's name that say nothing about which tool it is (every tool "gets" something).
_GENERIC = frozenset({"get", "retrieve", "fetch", "list", "find", "show", "view", "display", "based", "on", "of",
                      "by", "to", "the", "a", "existing", "check"})

#: Per name word: (a pattern of its forms in a request, the neutral replacements of that form).  The first
#: group of each pattern is the form; one replacement is drawn by the task's rng for each form.
NEUTRAL: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "details": [(r"details", ("particulars", "specifics")),
                (r"detailed", ("thorough", "close", "full")), (r"detail", ("particular",))],
    "summary": [(r"summary", ("overview", "rundown", "recap")), (r"summaries", ("overviews",)),
                (r"summari[sz]e", ("go over",))],
    "order": [(r"orders", ("trades",)), (r"order", ("trade",)), (r"ordering", ("trading",))],
    "place": [(r"placing", ("putting in",)), (r"placed", ("put in", "made")), (r"place", ("put in",))],
    "status": [(r"status", ("standing", "state", "progress"))],
    "invoice": [(r"invoices", ("bills",)), (r"invoice", ("bill", "billing statement"))],
    "stock": [(r"stock symbols", ("ticker symbols",)), (r"stock symbol", ("ticker symbol",)),
              (r"stocks", ("shares", "equities")), (r"stock", ("share", "equity"))],
    "info": [(r"information", ("data",)), (r"info", ("data",))],
    "quote": [(r"quotes", ("prices",)), (r"quote", ("price",))],
    "message": [(r"messages", ("notes",)), (r"message", ("note",))],
    "send": [(r"sending", ("delivering",)), (r"sends", ("delivers",)), (r"send", ("deliver", "pass on"))],
    "booking": [(r"booking(?= (?:a|an|the|my|that|this|me|us)\b)", ("reserving",)), (r"bookings", ("reservations",)),
                (r"booking", ("reservation",))],
    "book": [(r"booking(?= (?:a|an|the|my|that|this|me|us)\b)", ("reserving",)), (r"bookings", ("reservations",)),
             (r"booking", ("reservation",)), (r"booked", ("reserved",)),
             (r"book", ("reserve",))],
    "flight": [(r"flights", ("air tickets",)), (r"flight", ("air ticket", "plane ticket"))],
    "cancel": [(r"cancellation", ("call-off",)), (r"cancel(?:l)?ing", ("calling off",)),
               (r"cancel(?:l)?ed", ("called off",)), (r"cancels", ("calls off",)), (r"cancel", ("call off",))],
    "cost": [(r"(?:(?<=would )|(?<=will )|(?<=could )|(?<=might )|(?<=does )|(?<=did )|(?<=to ))cost", ("run",)),
             (r"costs", ("fares",)),
             (r"cost", ("fare", "price"))],
    "estimate": [(r"an estimate", ("a rough figure",)), (r"the estimate", ("the figure",)),
                 (r"this estimate", ("this figure",)), (r"that estimate", ("that figure",)),
                 (r"estimates", ("figures",)), (r"estimated", ("projected",)), (r"estimating", ("working out",)),
                 (r"estimate", ("work out",))],
    "customer": [(r"customer support", ("the help desk",)), (r"customer service", ("the help desk",))],
    "support": [(r"support", ("help desk",))],
    "contact": [(r"contacting", ("reaching",)), (r"contact", ("reach",))],
    "engine": [(r"engines", ("motors",)), (r"engine", ("motor",))],
    "start": [(r"starting", ("firing up",)), (r"started", ("fired up",)), (r"start", ("fire up",))],
    "city": [(r"city", ("town",)), (r"cities", ("towns",))],
}


def checked_words(right: str, *others: str) -> list[str]:
    """The name words a request must not say: the words of the right tool's name that no twin's name shares (its
    distinguishing words: ``details`` of ``get_order_details`` beside ``get_order_summary``).  A twin's words may
    be said, and are the lure (blind review s7b: "a concise breakdown", pulling toward ``get_order_summary``
    while the need was one only the right tool meets, was the one distractor that worked); a word both names
    share favours neither."""
    theirs = set(name_words(*others))
    return [w for w in name_words(right) if w not in theirs]


def name_words(*tools: str) -> list[str]:
    """The words of the tools' names that tell what they do (``get_order_details`` -> order, details;
    ``startEngineCheck`` -> start, engine)."""
    out: list[str] = []
    for tool in tools:
        for w in re.split(r"_|(?<=[a-z])(?=[A-Z])", tool):
            w = w.lower()
            if w and w not in _GENERIC and w not in out:
                out.append(w)
    return out


#: A quoted string (a message's words, a file's content): an apostrophe inside a word ("it's") opens none.
QUOTED = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"|‘[^’\n]*’|“[^”\n]*”")


def _forms(word: str) -> list[str]:
    """The patterns of a name word's forms in a request: the word, its plain inflections, and its forms in
    :data:`NEUTRAL` ("detailed" for details, "summarize" for summary, "information" for info)."""
    out = [re.escape(word) + r"(?:s|es|ed|ing)?"]
    out += [form for form, _ in NEUTRAL.get(word, [])]
    return out


def named_words(text: str, words: list[str]) -> list[str]:
    """The name ``words`` a request ``text`` still says (any form: "detailed" for details, "orders" for order),
    outside quoted strings and all-capital tokens (a ticker)."""
    body = QUOTED.sub(" ", text)
    found = []
    for w in words:
        for form in _forms(w):
            if any(not m.group(0).isupper() for m in re.finditer(rf"\b{form}\b", body, re.I)):
                found.append(w)
                break
    return found


_MARK = "\x00"  # marks a rewritten word until its article is fixed


def _case(form: str, new: str) -> str:
    return new[:1].upper() + new[1:] if form[:1].isupper() else new


def neutral_request(text: str, words: list[str], rng: random.Random) -> str | None:
    """``text`` with every form of the name ``words`` it says rewritten to a neutral word (outside quoted
    strings and all-capital tokens); None when a form is said that has no neutral rewrite (the draft is not made)."""
    parts, last = [], 0
    for m in QUOTED.finditer(text):
        parts.append((text[last:m.start()], True))
        parts.append((m.group(0), False))
        last = m.end()
    parts.append((text[last:], True))
    out = []
    for chunk, free in parts:
        if free:
            for w in words:
                for form, news in sorted(NEUTRAL.get(w, []), key=lambda fn: -len(fn[0])):
                    def swap(m: re.Match, news: tuple[str, ...] = news) -> str:
                        if m.group(0).isupper():
                            return m.group(0)
                        return _MARK + _case(m.group(0), rng.choice(news))
                    chunk = re.sub(rf"\b{form}\b", swap, chunk, flags=re.I)
            # the article before a rewritten word follows it ("an order" -> "a trade", "a summary" -> "an overview")
            chunk = re.sub(rf"\b([Aa])n {_MARK}(?=[^aeiouAEIOU])", r"\1 ", chunk)
            chunk = re.sub(rf"\b([Aa]) {_MARK}(?=[aeiouAEIOU])", r"\1n ", chunk)
            chunk = chunk.replace(_MARK, "")
        out.append(chunk)
    new = "".join(out)
    return None if named_words(new, words) else new
