"""A small seeded grammar that composes a turn's parts into one request.

A turn's text is built from parts: the parent's request, the intents of added
steps (each with a few phrasings of its own), in the order the ground truth
makes the calls.  The grammar draws connectives, intent phrasings and an
optional opening and closing from the task's rng, so no fixed wrapper phrase
repeats across tasks and the same rng gives the same text.  Values inside the
parts are never touched.
"""

from __future__ import annotations

import random
import re

_THEN = ["Then {x}", "After that, {x}", "Once that's done, {x}", "When that's finished, {x}", "Next, {x}",
         "Afterwards, {x}", "And then {x}", "Following that, {x}"]
_FIRST = ["First {x}, and then: ", "Before anything else, {x}.", "To start, {x}. Then: ", "Begin by {xing}. After that: "]
_POLITE = ["please {x}", "could you {x}?", "I'd like you to {x}", "can you {x}?", "{x}, please", "{x}"]


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".?!" else text + "."


def phrase(intent: str, rng: random.Random, before: str = "") -> str:
    """One phrasing of an intent written as a bare imperative (``show me the file``); no second "please" when
    the intent or the sentence right before it (``before``) already says it."""
    said = "please" in intent.lower() or "please" in re.split(r"(?<=[.?!])\s+", before.strip())[-1].lower()
    forms = [f for f in _POLITE if "please" not in f] if said else _POLITE
    return rng.choice(forms).format(x=intent)


def then(base: str, intents: list[str], rng: random.Random) -> str:
    """``base`` followed by intents that come after it, each with a drawn connective."""
    out = base.rstrip()
    if out and out[-1] not in ".?!":
        out += "."
    for x in intents:
        out += " " + _sentence(rng.choice(_THEN).format(x=phrase(x, rng, out)).replace("?.", "?"))
    return out


def first(base: str, intents: list[str], rng: random.Random) -> str:
    """Intents that come before ``base``, then ``base``."""
    joined = " and ".join(intents)
    frame = rng.choice(_FIRST)
    return _sentence(frame.format(x=joined, xing=_gerund(joined))).rstrip(".") + ". " + base.strip() \
        if not frame.endswith(": ") else _sentence(frame.format(x=joined, xing=_gerund(joined)).rstrip(": ")) \
        .rstrip(".") + ": " + base.strip()


def _gerund(intent: str) -> str:
    word, _, rest = intent.partition(" ")
    w = word.lower()
    if w.endswith("e") and not w.endswith("ee"):
        w = w[:-1]
    return f"{w}ing {rest}".strip()


#: Voices (phrasing styles) as a grammar: an opening and a closing drawn per task, never one fixed phrase.
#: Only what a person writes around a request: a greeting and thanks.  Wrapper frames ("Short version: ...
#: Nothing else.", "Let's take this one step at a time.") read as a template and are not used (issue 26;
#: ``synth.taskcheck.template_problems`` rejects them); the terse and stepwise voices keep the request as is.
VOICES: dict[str, tuple[list[str], list[str]]] = {
    "plain": ([""], [""]),
    "terse": ([""], [""]),
    "polite": (["Hi! ", "Hello. ", "Hey there. ", "Good morning! ", "Hi, hope you're well. ", "Hello, I need a hand. "],
               [" Thanks!", " Thank you.", " Appreciate it.", " Thanks a lot.", " Many thanks.", ""]),
    "stepwise": ([""], [""]),
}


def voice(text: str, style: str, rng: random.Random) -> str:
    """``text`` in a voice: an opening and closing drawn from the style's grammar (the text itself unchanged)."""
    openings, closings = VOICES.get(style, VOICES["plain"])
    opening, closing = rng.choice(openings), rng.choice(closings)
    if opening and re.match(r"^(hi|hey|hello|good (morning|afternoon|evening))\b", text.strip(), re.I):
        opening = ""
    body = text.strip()
    if closing and body[-1:] not in ".?!":
        body += "."
    return f"{opening}{body}{closing}"


__all__ = ["VOICES", "first", "phrase", "then", "voice"]
