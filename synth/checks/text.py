"""Text rules: the user text reads as one request a person wrote (no template voice, no spliced or glued
sentences, quotes that match the ground truth, no empty turn that asks for an action, no incoherent
framing), and the repairs of what a seed's text gets wrong (:func:`repair_text`)."""

from __future__ import annotations

import re

from ace_env.calls import Call, parse_call
from ace_env.environments import tool_catalogue_of
from ace_env.tasks import Task, Turn
from ace_env.values import leaves
from synth.checks.parts import (
    EMPTY_TURN_ACTIONABLE,
    INCOHERENT_TEXT,
    QUOTE_MISMATCH,
    SPLICED_TEXT,
    TEMPLATE_TEXT,
    user_text_upto,
)
from synth.checks.values import _documented, _trivial, value_in_text

#: Wrapper phrases of a template voice (a person writes the request, not a frame around it).
_TEMPLATE = re.compile(
    r"\b(short version|quick one|need this done|fast, please|in order, please|one thing after another)\s*:|"
    r"^\s*task\s*:|\bnothing else\.\s*$|\bthat's all\.\s*$|let's take this one step at a time|"
    r"work through this in order|make sure each step worked before the next|look at each result before moving on",
    re.I | re.M)
_DETERMINERS = r"(?:the|a|an|my|his|her|their|our|your)"
_DOUBLED = re.compile(rf"\b{_DETERMINERS}\s+{_DETERMINERS}\b|\b(of|to|for|with|at|in)\s+(of|to|for|with|at|in)\b", re.I)


def _turn_text(turn: Turn) -> str:
    return "\n".join(m.get("content", "") or "" for m in turn.user if m.get("role") == "user")


def template_problems(task: Task) -> list[str]:
    """Template wrapper phrases in the user text ("Short version: ... Nothing else.")."""
    out = []
    for t, turn in enumerate(task.turns):
        m = _TEMPLATE.search(_turn_text(turn))
        if m:
            out.append(f"turn {t}: template phrase {m.group(0).strip()!r}")
    return out


def splice_problems(task: Task) -> list[str]:
    """A substituted description (``provenance["described_as"]``) glued into the sentence instead of
    rewriting it: the description's head noun already written right before it ('his travel card with my
    card that ends in 3487'), a determiner before a description that has its own, or doubled
    prepositions at the seam ('150 shares of at the price')."""
    out = []
    described = task.provenance.get("described_as")
    if not isinstance(described, str) or not described:
        return out
    for t, turn in enumerate(task.turns):
        low = _turn_text(turn).lower()
        at = low.find(described.lower())
        if at < 0:
            continue
        head = [w for w in re.findall(r"[a-z]+", described.lower()) if w not in
                ("the", "a", "an", "my", "that", "ending", "ends", "in", "credit", "with", "of", "company")]
        before = low[max(0, at - 40):at]
        if head and re.search(rf"\b{re.escape(head[0])}s?\b", before):
            out.append(f"turn {t}: {head[0]!r} already written right before {described!r}")
        if re.search(rf"\b{_DETERMINERS}\s*$", before) and re.match(rf"{_DETERMINERS}\b", described.lower()):
            out.append(f"turn {t}: a determiner right before {described!r}")
        seam = low[max(0, at - 20):at + len(described) + 20]
        m = _DOUBLED.search(seam)
        if m:
            out.append(f"turn {t}: {m.group(0)!r} at the substitution")
    return out


# a single-quoted string may hold apostrophes between letters ('I'll update you soon')
_QUOTED = re.compile(r"(?<![\w])'((?:[^'\n]|(?<=\w)'(?=\w)){3,}?)'(?![\w])|\"([^\"\n]{3,}?)\"")
_QUOTED_ANY = re.compile(r"(?<![\w])'((?:[^'\n]|(?<=\w)'(?=\w))+?)'(?![\w])|\"([^\"\n]+?)\"")
#: A quote mark that opens a quote (after a non-letter, before a non-space; not a possessive 's) or a double quote.
_OPENER = re.compile(r"(?<![\w])'(?!s\b)(?=[^\s'])|\"")
#: Two sentences glued without a space ('rectified now.Use this message').
_GLUED = re.compile(r"\b([a-z]{2,}[.!?]['\"]?)([A-Z][a-z]+)\b")


def quoted(text: str) -> list[str]:
    """The strings the text puts in quotes ('...' not taken from an apostrophe, or "...")."""
    return [a or b for a, b in _QUOTED.findall(text)]


def _loose(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return " ".join(w for w in words if w not in ("the", "a", "an"))


def near_quote(q: str, value: str) -> bool:
    """Whether a quoted string and a value are meant to be the same text but differ (an article, a period)."""
    if q == value or len(value) < 3:
        return False
    if q.strip().lstrip("#@") == value.strip().lstrip("#@"):
        return False  # a tag or mention quoted without its sign is the same value
    lq, lv = _loose(q), _loose(value)
    if lq and lq == lv:
        return True
    short, long_ = sorted((q.strip(), value.strip()), key=len)
    return len(short) >= 8 and short in long_ and len(short) / len(long_) >= 0.85


def quote_problems(task: Task) -> list[tuple[int, str, str]]:
    """(turn, quoted, ground-truth value) where a quote in the user text nearly equals a string argument."""
    out = []
    for t, turn in enumerate(task.turns):
        quotes = quoted(_turn_text(turn))
        if not quotes:
            continue
        values = [v for raw in turn.ground_truth for v in _string_args(raw)]
        for q in quotes:
            if q in values:
                continue
            for v in values:
                if near_quote(q, v):
                    out.append((t, q, v))
                    break
    return out


def _string_args(raw: str) -> list[str]:
    parsed = parse_call(raw)
    if not isinstance(parsed, Call):
        return []
    return [v for v in leaves(list(parsed.kwargs.values()) + list(parsed.args)) if isinstance(v, str)]


def repair_quotes(task: Task) -> int:
    """Make each nearly-equal quote in the user text equal the ground truth's value (in place); how many.

    A quote whose closing mark sits before the value's last characters ('... soon'. where the value ends
    "soon.") takes them inside: '... soon.'"""
    fixed = 0
    for t, q, v in quote_problems(task):
        for m in task.turns[t].user:
            content = m.get("content") or ""
            if m.get("role") != "user" or q not in content:
                continue
            tail = v[len(q):] if v.startswith(q) else ""
            moved = False
            for mark in ("'", '"'):
                if tail and f"{mark}{q}{mark}{tail}" in content:
                    content = content.replace(f"{mark}{q}{mark}{tail}", f"{mark}{v}{mark}")
                    moved = True
            m["content"] = content if moved else content.replace(q, v)
            fixed += 1
    return fixed


def _unclosed(text: str) -> int | None:
    """Where ``text`` opens a quote it never closes, or None."""
    rest = _QUOTED_ANY.sub(lambda m: " " * len(m.group(0)), text)
    m = _OPENER.search(rest)
    return m.start() if m else None


def unclosed_quote_problems(task: Task) -> list[str]:
    """Turns whose text opens a quote it never closes ('... with the description 'There is an issue ...')."""
    out = []
    for t, turn in enumerate(task.turns):
        text = _turn_text(turn)
        at = _unclosed(text)
        if at is not None:
            out.append(f"turn {t}: a quote opened at {text[at:at + 30]!r} is never closed")
    return out


def repair_unclosed_quotes(task: Task) -> int:
    """Close a quote the text leaves open where what follows the opening mark is a ground-truth string of
    the turn ('password is 'SecurePass123' -> 'SecurePass123'; a typographic closing mark made plain; a
    closing mark glued to the next word spaced); in place; how many.  Others stay (the task is rejected)."""
    fixed = 0
    for turn in task.turns:
        values = sorted({v for raw in turn.ground_truth for v in _string_args(raw) if len(v) >= 3}, key=len,
                        reverse=True)
        for m in turn.user:
            if m.get("role") != "user":
                continue
            for _ in range(4):
                content = m.get("content") or ""
                at = _unclosed(content)
                if at is None or content[at] != "'":
                    break
                after = content[at + 1:]
                v = next((v for v in values if after.startswith(v)), None)
                if v is None:
                    break
                nxt, rest = after[len(v):len(v) + 1], after[len(v) + 1:]
                if nxt in ("", " ", ".", ",", ";", "!", "?", "\n"):
                    tail = after[len(v):]
                elif nxt == "\u2019":
                    tail = rest
                elif nxt == "'" and rest[:1].isalpha():
                    tail = " " + rest
                else:
                    break
                m["content"] = f"{content[:at + 1]}{v}'{tail}"
                fixed += 1
    return fixed


def _glued(task: Task, t: int) -> list[re.Match[str]]:
    """Glued sentences in turn ``t`` that are not part of a ground-truth string (a message may hold one)."""
    values = [v for raw in task.turns[t].ground_truth for v in _string_args(raw)]
    return [m for m in _GLUED.finditer(_turn_text(task.turns[t])) if not any(m.group(0) in v for v in values)]


def glued_sentence_problems(task: Task) -> list[str]:
    """Turns where two sentences are glued without a space ('rectified now.Use this message')."""
    return [f"turn {t}: sentences glued at {m.group(0)!r}" for t in range(len(task.turns)) for m in _glued(task, t)]


def repair_glued_sentences(task: Task) -> int:
    """Put the missing space between glued sentences (in place); how many."""
    fixed = 0
    for t, turn in enumerate(task.turns):
        for g in _glued(task, t):
            for m in turn.user:
                if m.get("role") == "user" and g.group(0) in (m.get("content") or ""):
                    m["content"] = m["content"].replace(g.group(0), f"{g.group(1)} {g.group(2)}")
                    fixed += 1
    return fixed


def repair_text(task: Task) -> int:
    """The safe text repairs (glued sentences spaced, quotes left open closed after the ground truth's value,
    nearly-equal quotes made equal), in place; how many."""
    fixed = repair_glued_sentences(task) + repair_unclosed_quotes(task) + repair_quotes(task)
    return fixed + repair_glued_sentences(task) if fixed else 0


def empty_turn_problems(task: Task) -> list[str]:
    """Turns with an empty ground truth whose text asks for something the agent could do then.

    Such a turn is sound when the call the next turns need is not offered yet (BFCL miss_func), a value it
    needs is not provided yet (miss_param), or the turn is not about that request at all.  It asks for
    action when all three fail: the needed tools are offered, every value is provided, and the text names
    one of them.
    """
    out = []
    tools = tool_catalogue_of(task)
    for t, turn in enumerate(task.turns):
        if turn.ground_truth:
            continue
        nxt = next((u for u in task.turns[t + 1:] if u.ground_truth), None)
        if nxt is None:
            continue
        calls = [parse_call(raw) for raw in nxt.ground_truth]
        calls = [c for c in calls if isinstance(c, Call)]
        if not calls or any(c.name not in task.offered_tools(t) for c in calls):
            continue
        text = user_text_upto(task, t)
        own = _turn_text(turn)
        values = [v for c in calls for v in leaves(list(c.kwargs.values()) + list(c.args)) if not _trivial(v)]
        if not values or not all(value_in_text(v, text) or _documented(tools, c.name, v) for c in calls
                                 for v in leaves(list(c.kwargs.values()) + list(c.args)) if not _trivial(v)):
            continue
        if any(isinstance(v, str) and value_in_text(v, own) for v in values):
            out.append(f"turn {t}: the ground truth is empty, yet the text asks for {nxt.ground_truth[0]} "
                       f"with every value given and the tool offered")
    return out


#: Narrated or role-play framing: the text describes a scene or casts the agent as the user instead of asking
#: (review v3 #14, #18: "Consider this: A patient, a traveler in this context, ...", "imagine you're poised to").
_FRAMING = re.compile(
    r"\bconsider this\s*:|\bimagine (?:you|that)\b|\byou(?:'re| are) poised\b|\breflect on\b|\bin this context\b|"
    r"\bour (?:traveler|traveller|patient|user|client|customer|protagonist)\b|\byou(?:'ve| have) resolved\b|"
    r"\byou(?:'re| are) driven to\b|\bcuriosity strikes\b|\bleads you to\b|\bhaving established the\b|"
    r"\bthat's it, let me just\b",
    re.I)
#: A clause glued onto the request, acting on an "it" the turn never named (#21: "... due to an unfilled tank
#: so round it to nearest hundredth and fill that in").
_GLUED_CLAUSE = re.compile(r"[a-z,] so (?:round|fill|use|set|convert|add|put|multiply|divide|send)\s+(?:it|that|this)\b",
                           re.I)
#: "Use <word> of <value>" overriding a <word> the same turn already specified otherwise (#17: "the logarithm
#: ... to the base the previous fuel value ... Use base of 20").
_OVERRIDE = re.compile(r"\buse (?:a |the )?([a-z]+) of\b", re.I)
#: Requests for a read the turn's ground truth never makes: (what the text asks, tools that would answer it).
#: The request spliced onto the turn leaves an actionable ask without a call (#23: "How much would a flight
#: ... even cost? ... let me just do it", #7: "After confirming the market's operational status").
_ASKS = (
    (re.compile(r"\bhow much (?:would|will|does|do|is|did)\b[^.?!]{0,80}\bcost\b", re.I), re.compile(r"cost|price")),
    (re.compile(r"\b(?:confirm|check|verify|ensure)\w*\b[^.?!]{0,40}\bmarket'?s?\b[^.?!]{0,30}\b(?:status|open)", re.I),
     re.compile(r"market")),
)


def coherence_problems(task: Task) -> list[str]:
    """Turns whose text does not read as one request: narrated or second-person framing, a clause glued onto
    the request, an instruction that contradicts one the same turn gives, a question or check the turn's
    ground truth never answers (review v3: #7, 14, 17, 18, 21, 23)."""
    out = []
    for t, turn in enumerate(task.turns):
        text = _turn_text(turn)
        m = _FRAMING.search(text)
        if m:
            out.append(f"turn {t}: narrated framing {m.group(0)!r}")
        m = _GLUED_CLAUSE.search(text)
        if m:
            out.append(f"turn {t}: a clause glued onto the request at {m.group(0)!r}")
        for m in _OVERRIDE.finditer(text):
            if re.search(rf"\b{re.escape(m.group(1))}\b", text[:m.start()], re.I):
                out.append(f"turn {t}: {m.group(0)!r} contradicts the {m.group(1)!r} given before it")
        names = [c.name for c in map(parse_call, turn.ground_truth) if isinstance(c, Call)]
        for asks, tools in _ASKS:
            m = asks.search(text)
            if m and not any(tools.search(n) for n in names):
                out.append(f"turn {t}: asks {m.group(0)!r} and the ground truth makes no such call")
    return out


def text_problems(task: Task) -> list[tuple[str, str]]:
    """(reason, detail) of every text rule the task breaks."""
    out = [(TEMPLATE_TEXT, d) for d in template_problems(task)]
    out += [(SPLICED_TEXT, d) for d in splice_problems(task)]
    out += [(QUOTE_MISMATCH, f"turn {t}: the text quotes {q!r}, the ground truth writes {v!r}")
            for t, q, v in quote_problems(task)]
    out += [(QUOTE_MISMATCH, d) for d in unclosed_quote_problems(task)]
    out += [(SPLICED_TEXT, d) for d in glued_sentence_problems(task)]
    out += [(EMPTY_TURN_ACTIONABLE, d) for d in empty_turn_problems(task)]
    out += [(INCOHERENT_TEXT, d) for d in coherence_problems(task)]
    return out


# --------------------------------------------------------------------------- the check
