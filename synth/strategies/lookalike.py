"""lookalike: near-identical values around the one passed on, in the result the agent reads at the target.

At the target pair ``a → b`` (``a`` called once, for one entity), the value
``a`` returns and ``b`` consumes (a zip code, an order id, a booking id, a
price) is shown among sibling records whose values are near-identical (one
character off, two characters transposed) and whose labels are near-twins of
the attribute the user text already names (the city ``Rivermist`` beside
``North Rivermist``; the ticker ``NVDA`` beside ``NVDAX``; the route
``SFO-LAX`` beside ``SFO-LAS``).  The text identifies the right record without
stating the value; the ground truth, unchanged, passes the right one.  It is
an output view (:mod:`ace_env.views`): the state is not touched.

:func:`attribute_lookalikes` (issue 34), tried first: the records all belong to the *same* entity (an exact
match on the symbol finds them all), close in every shown field, and only an attribute the agent must relate
to the request tells the right one apart (its ``updated_at`` the latest where the request asks for the current
figure, else its ``status`` active); ``provenance["lookalike_kind"]`` says which (``attribute:recency``,
``attribute:status``, or ``label`` for the near-twin labels).

:func:`lookalike_at` (near-twins added to the state, :mod:`synth.strategies.lookalike_state`) is the random
baseline's look-alike edit.
"""

from __future__ import annotations

import random
import re
from typing import Any

from ace_env.executor import copy_json
from ace_env.oracle import Oracle, replay_oracle
from ace_env.tasks import Task
from ace_env.values import leaves
from synth.checks.parts import LOOKALIKE_ID_IN_TEXT, LOOKALIKE_NOT_SHOWN, flat_calls, target_step, user_text_upto
from synth.checks.values import _json_or_none, _leaves_and_keys, _norm, value_in_text
from synth.registry import Check, register
from synth.strategies.ambiguity import fed_at
from synth.strategies.build import build, parsed_output, pick_position, target_calls
from synth.strategies.lookalike_state import lookalike_at

__all__ = ["attribute_lookalikes", "lookalike", "lookalike_at", "near_identical", "near_variants", "shown_lookalikes"]


# --------------------------------------------------------------------------- the strategy (issue 26)

#: Names of tools whose result is a lookup or a listing, which can plausibly hold several records; a call that
#: books, places, creates or sends something returns that one thing (three bookings from one ``book_flight``
#: are implausible: the blind review of issue 34).
_LOOKUP = re.compile(r"^(get|list|search|find|retrieve|view|lookup|query|fetch|display|show|filter)(_|$)", re.I)


def is_lookup(tool: str) -> bool:
    """Whether ``tool`` reads (a lookup or a listing) rather than makes something: only such a result is shown
    as several records."""
    return bool(_LOOKUP.match(tool))


_WRAP = ["matches", "results", "records", "candidates"]



def _placed_extra(placed: dict) -> dict:
    """The provenance both look-alike kinds record of what they placed (the right value, its key, the near-twins,
    their records' labels, where the right record stands)."""
    return {"target_id": placed["value"], "lookalike_key": placed["key"], "lookalikes": placed["twins"],
            "lookalike_labels": placed["siblings"], "right_record": placed["records"][0]}

def near_variants(value: Any, rng: random.Random) -> list[Any]:
    """Values near-identical to ``value``: one character off, two neighbours transposed, one more digit
    or letter; of the same type (an int stays an int, a price keeps its cents)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, float):
        cents = f"{value:.2f}"
        out = [float(v) for v in near_variants(cents, rng) if re.fullmatch(r"\d+\.\d\d", v)]
        return [v for v in dict.fromkeys(out) if v != value and v > 0]
    if isinstance(value, int):
        out = [int(v) for v in near_variants(str(value), rng) if v.isdigit() and not v.startswith("0")]
        return [v for v in dict.fromkeys(out) if v != value]
    if not isinstance(value, str) or len(value) < 2:
        return []
    chars = list(value)
    out = []
    for i in range(len(chars) - 1):  # transpositions
        if chars[i] != chars[i + 1]:
            out.append("".join(chars[:i] + [chars[i + 1], chars[i]] + chars[i + 2:]))
    for i, ch in enumerate(chars):  # one character off
        if ch.isdigit():
            out.append("".join(chars[:i] + [str((int(ch) + rng.randint(1, 9)) % 10)] + chars[i + 1:]))
        elif ch.isalpha():
            sub = chr((ord(ch.upper()) - 65 + rng.randint(1, 25)) % 26 + 65)
            out.append("".join(chars[:i] + [sub if ch.isupper() else sub.lower()] + chars[i + 1:]))
    out = [v for v in dict.fromkeys(out) if v != value]
    rng.shuffle(out)
    return out


def _sibling_names(name: str, rng: random.Random) -> list[str]:
    """Labels of sibling records: near-twins of the attribute the text names (a city, a ticker, a route)."""
    if re.fullmatch(r"[A-Z]{2,5}", name):
        out = near_variants(name, rng)
        return [v for v in out if v.isalpha()]
    if re.fullmatch(r"[A-Z]{3}-[A-Z]{3}", name):
        a, b = name.split("-")
        return [f"{a}-{v}" for v in near_variants(b, rng)[:2]] + [f"{v}-{b}" for v in near_variants(a, rng)[:2]]
    words = [f"North {name}", f"{name} Heights", f"New {name}", f"{name} Springs", f"East {name}", f"{name} Falls"]
    rng.shuffle(words)
    return words


def _discriminator(seed: Task, k: int, args: dict[str, Any]) -> tuple[str, str] | None:
    """(parameter, label) of ``a``'s argument that the user text names and that tells its record apart."""
    text = user_text_upto(seed, flat_calls(seed)[k][0]).lower()
    for param in ("city", "symbol", "location", "name", "stock", "folder"):
        v = args.get(param)
        if isinstance(v, str) and len(v) >= 2 and v.lower() in text:
            return param, v
    return None


def shown_lookalikes(seed: Task, k: int, rng: random.Random, n: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """Output-view operations that place the value ``a`` (flat call ``k``) passes to ``b`` among near-identical
    values in sibling records of ``a``'s shown result, and what was placed; None where it cannot be done."""
    ra, rb = target_calls(seed, k)
    out = parsed_output(ra.output or "")
    if ra.status != "ok" or rb.status != "ok" or not isinstance(out, dict):
        return None
    fed = [(key, v) for key, v in fed_at(seed, k, out, rb.arguments) if key in out]
    text = user_text_upto(seed, len(seed.turns) - 1)
    fed = [(key, v) for key, v in fed if not value_in_text(v, text)]  # no turn of the text may state it
    if not fed:
        return None
    key, value = fed[0]
    found = _discriminator(seed, k, ra.arguments)
    if found is None:
        return None
    param, label = found
    names = [x for x in _sibling_names(label, rng) if x != label][:max(SIBLINGS, n)]
    twins = near_variants(value, rng)[:max(SIBLINGS, n)]
    names = names[:len(twins)] if len(twins) >= 2 else names
    if len(names) < 1 or len(twins) < len(names):
        return None
    field = param if param not in out else f"record_{param}"
    siblings: list[dict[str, Any]] = []
    for name, twin in zip(names, twins):
        record = {k2: v2 for k2, v2 in out.items() if not isinstance(v2, (dict, list))}
        for other, v2 in record.items():  # a sibling has its own ids, never a copy of the right record's
            if other != key and ("id" in other.lower().split("_") or other.lower().endswith("id")):
                record[other] = next(iter(near_variants(v2, rng)), v2)
        record[key] = twin
        record[field] = name
        siblings.append(record)
    ops, keys = _placed(out, {field: label}, siblings, rng)
    return ops, {"key": key, "value": value, "twins": twins[:len(names)], "label": label, "siblings": names,
                 "records": keys}


def _placed(out: dict[str, Any], added: dict[str, Any], siblings: list[dict[str, Any]],
            rng: random.Random) -> tuple[list[dict[str, Any]], list[str]]:
    """View operations that show ``out`` (with the ``added`` fields) among ``siblings`` under neutral keys
    (``record_1`` ...; never a key that spells out what tells the records apart), the right record at a seeded
    random position that is never the first (blind review s6: 3 of 9 tasks put it first, so "take record_1"
    passed) and, with two siblings or more, never the last (blind review s7b: in short outputs the right record
    came last, so "take the last" passed), so taking either end is always wrong; and the keys, the right
    record's first."""
    slot = rng.randrange(1, len(siblings)) if len(siblings) >= 2 else 1
    names = [f"record_{i + 1}" for i in range(len(siblings) + 1)]
    before = {names[i]: sib for i, sib in enumerate(siblings[:slot])}
    after = {names[slot + 1 + i]: sib for i, sib in enumerate(siblings[slot:])}
    ops: list[dict[str, Any]] = []
    if added:
        ops.append({"op": "add", "fields": added})
    ops.append({"op": "nest", "key": names[slot], "fields": list(out) + [f for f in added if f not in out]})
    if before:
        ops.append({"op": "add", "fields": before, "first": True})
    if after:
        ops.append({"op": "add", "fields": after})
    ops.append({"op": "wrap", "key": rng.choice(_WRAP)})
    return ops, [names[slot]] + [n for n in names if n != names[slot]]


#: How many sibling records a look-alike result shows at least where the value has that many variants: with the
#: right one, four records, the right one strictly inside (blind review s7b: traps worked only when it was buried).
SIBLINGS = 3


# --------------------------------------------------------------------------- look-alikes told apart by an attribute

#: Words of a request that ask for the record in effect now (the latest one).
_RECENT = re.compile(r"\b(current(ly)?|latest|most recent|up[- ]to[- ]date|prevailing|right now|"
                     r"(going|ongoing|present|existing) (market )?(rate|price|value))\b", re.I)
_SENTENCES = re.compile(r"(?<=[.?!])\s+")


def request_sentences(text: str, names: list[str]) -> list[str]:
    """The sentences of a turn's ``text`` that make the request about the entity ``names`` (its symbol, city);
    all of them where none names it.  Quoted strings are left out (a message's words ask for nothing)."""
    text = re.sub(r"'[^'\n]*'|\"[^\"\n]*\"", "", text)
    parts = [p for p in _SENTENCES.split(text) if p.strip()]
    hit = [p for p in parts if any(n and n.lower() in p.lower() for n in names)]
    return hit or parts
#: Keys of a record about an entity (an order, a booking, a stock, a place, a user), which can have a status.
_ENTITY = re.compile(r"(^|_)(id|symbol|name|city|zipcode|zip|username|card|booking|order|ticket|account|price)($|_)",
                     re.I)
_INACTIVE = ["inactive", "archived", "expired", "superseded", "closed"]


def close_variants(value: Any, rng: random.Random) -> list[Any]:
    """Near-identical values that are also close as quantities: a number with one digit off by one to three, its
    last digit or another within 1% (227.16 -> 227.15, 227.36, 226.16; 150 -> 151, 153; never 510), the variants taking turns
    over the digits that can change (a random digit first), so the first few do not all share every digit but
    the last one with the value; a string one character off or two neighbours transposed."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        text = f"{value:.2f}" if isinstance(value, float) else str(value)
        by_digit: list[list[Any]] = []
        for i in range(len(text) - 1, -1, -1):
            if not text[i].isdigit():
                continue
            got = []
            for step in (1, 2, 3, -1, -2, -3):
                d = int(text[i]) + step
                if 0 <= d <= 9 and not (i == 0 and d == 0):
                    v = text[:i] + str(d) + text[i + 1:]
                    got.append(float(v) if isinstance(value, float) else int(v))
            last = i == len(text) - 1  # the last digit always (150 -> 151, 153); another only within 1%
            got = [v for v in dict.fromkeys(got) if v != value and v > 0 and near_identical(v, value)
                   and (last or abs(v - value) <= 0.01 * abs(value))]
            if got:
                rng.shuffle(got)
                by_digit.append(got)
        rng.shuffle(by_digit)
        out = [col[r] for r in range(max(map(len, by_digit), default=0)) for col in by_digit if r < len(col)]
        return list(dict.fromkeys(out))
    return near_variants(value, rng)


def _close_record(record: dict[str, Any], key: str, twin: Any, rng: random.Random,
                  asked: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """A sibling of ``record``: the value passed on near-identical, every other number within 1%, every id
    one character off, every other string the same (the same symbol, city or route); a value the request
    itself gave ``a`` (``asked``: the price and amount of the order placed) stays the same, so matching it
    does not find the right record."""
    out = {}
    for k2, v2 in copy_json(record).items():
        if k2 == key:
            out[k2] = twin
        elif not isinstance(v2, (dict, list)) and v2 in asked:
            out[k2] = v2
        elif "id" in k2.lower().split("_") or k2.lower().endswith("id"):
            out[k2] = next(iter(near_variants(v2, rng)), v2)
        elif isinstance(v2, float) and not isinstance(v2, bool) and v2:
            out[k2] = round(v2 * (1 + rng.choice([-1, 1]) * rng.uniform(0.002, 0.01)), 2)
        else:
            out[k2] = v2
    return out


def attribute_lookalikes(seed: Task, k: int, rng: random.Random, n: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """Output-view operations that show ``a``'s result (flat call ``k``) as several records about the *same*
    entity (the same symbol, city or route: an exact match on it finds them all), close in every shown field,
    the value passed on near-identical in each; only an attribute the agent must relate to the request tells
    the right record apart: its ``updated_at`` is the latest where the request asks for the current or latest
    figure (``recency``), else its ``status`` is ``active`` and the others' not (``status``)."""
    ra, rb = target_calls(seed, k)
    out = parsed_output(ra.output or "")
    if ra.status != "ok" or rb.status != "ok" or not isinstance(out, dict):
        return None
    fed = [(key, v) for key, v in fed_at(seed, k, out, rb.arguments) if out.get(key) == v]  # a scalar of a's record
    text = user_text_upto(seed, len(seed.turns) - 1)
    fed = [(key, v) for key, v in fed if not value_in_text(v, text)]
    if not fed:
        return None
    key, value = fed[0]
    twins = close_variants(value, rng)[:max(SIBLINGS, n)]
    if len(twins) < 2:
        return None
    asked = frozenset(v for v in leaves(ra.arguments) if isinstance(v, (str, int, float)))
    siblings = [_close_record(out, key, twin, rng, asked) for twin in twins]
    turn_text = " ".join(request_sentences(user_text_upto(seed, flat_calls(seed)[k][0]).split("\n")[-1],
                                           [v for v in ra.arguments.values() if isinstance(v, str)]))
    entity = any(_ENTITY.search(k2) for k2 in out)
    if not entity and not isinstance(value, (int, float)):
        return None  # a computed result (a count, a log) has no status or revision history to tell apart
    if _RECENT.search(turn_text):
        kind, field = "recency", "updated_at" if "updated_at" not in out else "record_updated_at"
        day, hour = rng.randint(3, 25), rng.randint(9, 16)
        stamps = [f"2024-06-{day:02d}T{hour - i - 1:02d}:{rng.choice([0, 15, 30, 45]):02d}:00" for i in range(len(siblings))]
        rng.shuffle(stamps)  # the records are in no date order: neither the first nor the last is the newest by rule
        right, wrong = f"2024-06-{day:02d}T{hour:02d}:{rng.choice([0, 15, 30, 45]):02d}:00", stamps
        how = "the latest updated_at (the request asks for the current figure)"
    elif entity:
        kind, field = "status", "status" if "status" not in out else "record_status"  # never over a's own field
        right, wrong = "active", [rng.choice(_INACTIVE) for _ in siblings]
        how = "the active status (the others are no longer in effect)"
    else:
        return None
    for sib, w in zip(siblings, wrong):
        sib[field] = w
    ops, keys = _placed(out, {field: right}, siblings, rng)
    return ops, {"key": key, "value": value, "twins": twins, "kind": kind, "attribute": field, "right": right,
                 "wrong": wrong, "how": how, "siblings": keys[1:], "records": keys}


# --------------------------------------------------------------------------- its checks


def near_identical(a: Any, b: Any) -> bool:
    """Whether two values differ by one edit: a character changed, added or dropped, or two neighbours
    transposed (compared as written: 12446 and 14246, 'NVDA' and 'NVAD')."""
    x, y = str(a), str(b)
    if x == y or abs(len(x) - len(y)) > 1:
        return False
    if len(x) == len(y):
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]])
    short, long_ = sorted((x, y), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def lookalike_problems(task: Task, oracle: Oracle | None = None) -> list[str]:
    """For a lookalike task: the value ``a`` passes to ``b`` (``provenance["target_id"]``) and its look-alikes
    (``provenance["lookalikes"]``) must all be in ``a``'s result *as the agent sees it* at the target edge,
    and each look-alike must be near-identical to the value (:func:`near_identical`)."""
    if task.provenance.get("strategy") != "lookalike":
        return []
    value, twins = task.provenance.get("target_id"), task.provenance.get("lookalikes") or []
    step = target_step(task)
    if value is None or not twins or step is None or step == 0:
        return ["no value and look-alikes recorded at the target edge"]
    oracle = oracle or replay_oracle(task)
    steps = [s for turn in oracle.turns for s in turn.steps]
    shown = _json_or_none(steps[step - 1].output or "")
    seen = {_norm(x) for x in _leaves_and_keys(shown)} if shown is not None else set()
    out = []
    if _norm(value) not in seen:
        out.append(f"the value passed on, {value!r}, is not in {steps[step - 1].call}'s shown result")
    for twin in twins:
        if _norm(twin) not in seen:
            out.append(f"look-alike {twin!r} is not in {steps[step - 1].call}'s shown result")
        elif not near_identical(twin, value):
            out.append(f"look-alike {twin!r} is not near-identical to {value!r}")
    return out


def lookalike_text_problems(task: Task) -> list[str]:
    """For a lookalike task: the text must not name the target's id (``provenance["target_id"]``)."""
    text = user_text_upto(task, len(task.turns) - 1)
    target_id = task.provenance.get("target_id")
    if task.provenance.get("strategy") == "lookalike" and target_id is not None \
            and str(target_id).lower() in text.lower():
        return [f"the text names the target's id {target_id!r}"]
    return []


@register("lookalike", depth=2, build_last=True,
          checks=(Check(LOOKALIKE_NOT_SHOWN, lambda c: lookalike_problems(c.task, c.oracle), needs_clean_run=True),
                  Check(LOOKALIKE_ID_IN_TEXT, lambda c: lookalike_text_problems(c.task))),
          definition="the value a passes to b sits among near-identical values of sibling records in a's shown "
                     "result; the text names the right record's attribute and never the value",
          needs="a returns the value b takes, for an entity the text names")
def lookalike(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """The value ``a`` passes to ``b`` shown among near-identical values of sibling records in ``a``'s result;
    the text names the right record's attribute (the city, the ticker, the route) and never the value."""
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    flat = flat_calls(seed)
    if sum(1 for f in flat if f[3] == flat[k][3]) != 1:
        return None  # a view follows the call's position: with two calls of `a` it could show the wrong entity
    if not is_lookup(flat[k][3]):
        return None  # one booking or order placed comes back as one record, never as several (review, issue 34)
    n = 1 + round(strength * 2)
    made = attribute_lookalikes(seed, k, rng, n) if rng.random() < 0.75 else None
    if made is not None:
        ops, placed = made
        view = {"tool": flat[k][3], "ops": ops}
        found = _discriminator(seed, k, target_calls(seed, k)[0].arguments)
        return build(seed, "lookalike", target, strength,
                     f"{flat[k][3]}'s result shows {placed['key']}={placed['value']!r} among records of the same "
                     f"entity with near-identical values {', '.join(map(repr, placed['twins']))}, told apart only by "
                     f"{placed['how']}",
                     views=list(seed.output_views) + [view],
                     extra={**_placed_extra(placed), "lookalike_kind": f"attribute:{placed['kind']}",
                            "distinguished_by": {"attribute": placed["attribute"], "right": placed["right"],
                                                 "others": placed["wrong"]},
                            "identified_by": f"{placed['attribute']}={placed['right']}",
                            "entity": found[1] if found else None, "lookalike_view": view})
    made = shown_lookalikes(seed, k, rng, n)
    if made is None:
        return None
    ops, placed = made
    view = {"tool": flat[k][3], "ops": ops}
    return build(seed, "lookalike", target, strength,
                 f"{flat[k][3]}'s result shows {placed['key']}={placed['value']!r} of {placed['label']!r} among "
                 f"near-identical values of {', '.join(map(repr, placed['siblings']))}: "
                 f"{', '.join(map(repr, placed['twins']))}",
                 views=list(seed.output_views) + [view],
                 extra={**_placed_extra(placed), "lookalike_kind": "label", "identified_by": placed["label"],
                        "lookalike_view": view})
