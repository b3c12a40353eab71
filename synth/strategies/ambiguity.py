"""ambiguity: a value stated in another form the docs define, or the intermediate result formatted differently.

Where the user text writes a value that ``a`` or ``b`` takes and no earlier output returns, the text writes
it in another form the tool's documentation makes convertible (a date in words where the doc asks
``YYYY-MM-DD``, a number in words or with a scale, an amount in another unit with an exact factor:
:mod:`synth.strategies.convert`); the agent must convert it back.  The kind is recorded in
``provenance["conversion"]`` and ``provenance["ambiguity_kind"]``.

At the target pair ``a → b`` where ``a``'s output feeds an argument of ``b``,
the task declares an output view (:mod:`ace_env.views`) on ``a``: its result
is semantically equivalent but formatted differently (a price as ``"$1,234.50"``
or in cents, an id as ``"#12446"`` or a string, a date as ``"March 05, 2024"``,
renamed keys, an extra wrapper, nesting, a one-element list).  The ground
truth's calls and arguments stay canonical, so the agent must still extract the
exact value; the verifier checks it.  Every choice is drawn from the task's rng.
"""

from __future__ import annotations

import random
from typing import Any

from ace_env.environments import tool_catalogue_of
from ace_env.tasks import Task, Turn
from ace_env.values import is_trivial
from ace_env.views import apply_ops
from synth.checks.parts import flat_calls, oracle_of, user_text_upto
from synth.checks.values import dates_in, documented_unit, value_in_text
from synth.registry import register
from synth.strategies.build import build, copy_turns, memoized, parsed_output, pick_position, target_calls
from synth.strategies.convert import HARDNESS, conversion_candidates, rewrite_pattern, rewrite_turns

#: Key synonyms a differently written API might use.
_SYNONYMS = {
    "price": ["current_price", "last_price", "quote"], "symbol": ["ticker", "stock_symbol"],
    "zipcode": ["zip", "postal_code"], "order_id": ["orderId", "id"], "booking_id": ["reservation_id", "bookingId"],
    "transaction_id": ["txn_id", "transactionId"], "id": ["identifier", "ref"], "user_id": ["userId", "uid"],
    "tweet_id": ["tweetId", "post_id"], "balance": ["available_balance", "funds"], "cost": ["total_cost", "fare"],
    "travel_cost": ["fare", "total_cost"], "distance": ["distance_km", "dist"], "amount": ["qty", "quantity"],
    "card_id": ["card", "card_number"], "city": ["city_name"], "symbols": ["tickers"],
    "current_working_directory": ["cwd", "directory"], "ticket_id": ["ticketId", "ref"],
}
_WRAPPERS = ["result", "data", "response", "payload"]
_NESTS = ["details", "info", "record"]
_MONEY = ("price", "cost", "balance", "amount", "fare", "total")
_DATE_FORMATS = ["%B %d, %Y", "%d %b %Y", "%Y/%m/%d", "%b %d %Y"]


def fed_values(out: Any, args: dict[str, Any]) -> list[tuple[str, Any]]:
    """(key, value) pairs of ``out`` whose value is an argument value of the next call."""
    wanted = {(type(v), v) for v in args.values() if not is_trivial(v) and not isinstance(v, (list, dict))}
    found: list[tuple[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                vals = v if isinstance(v, list) else [v]
                for x in vals:
                    if isinstance(x, (dict, list)):
                        walk(x)
                    elif (type(x), x) in wanted:
                        found.append((k, x))
        elif isinstance(node, list):
            for x in node:
                walk(x)

    walk(out)
    return list(dict.fromkeys(found))


def fed_at(seed: Task, k: int, out: Any, args: dict[str, Any]) -> list[tuple[str, Any]]:
    """:func:`fed_values` of the target's calls at flat position ``k`` of the seed, where ``out`` is call ``k``'s
    parsed result and ``args`` call ``k + 1``'s arguments (:func:`synth.strategies.build.target_calls`); kept for
    the run (:func:`synth.strategies.build.seed_memo`)."""
    return list(memoized("fed", seed, (k,), lambda: tuple(fed_values(out, args))))


def _value_ops(key: str, value: Any, rng: random.Random) -> list[dict[str, Any]]:
    """Ways to write the fed value itself differently (units, number/date formats, types)."""
    ops: list[dict[str, Any]] = []
    if isinstance(value, float) or (isinstance(value, int) and any(m in key for m in _MONEY)):
        if any(m in key for m in _MONEY):
            ops.append({"op": "number_format", "keys": [key], "format": rng.choice(["${:,.2f}", "{:,.2f} USD", "USD {:,.2f}"])})
            if round(value * 100, 6) == int(round(value * 100, 6)):
                ops.append({"op": "scale", "keys": [key], "factor": 100, "suffix": "_cents"})
        else:
            ops.append({"op": "number_format", "keys": [key], "format": rng.choice(["{:,.3f}", "{:.4f}", "{:,}"])})
        ops.append({"op": "to_string", "keys": [key]})
    elif isinstance(value, int):
        ops.append({"op": "prefix", "keys": [key], "text": rng.choice(["#", "No. ", "ID-"])})
        ops.append({"op": "to_string", "keys": [key]})
        if value >= 1000:
            ops.append({"op": "number_format", "keys": [key], "format": "{:,}"})
    elif isinstance(value, str):
        if len(value) == 10 and value[4] == "-" and value[7] == "-":
            ops.append({"op": "date_format", "keys": [key], "format": rng.choice(_DATE_FORMATS)})
        if value.isdigit() and not value.startswith("0"):
            ops.append({"op": "to_number", "keys": [key]})
        ops.append({"op": "listify", "keys": [key]})
    return ops


#: How much reading a re-formatted value back takes (the hardest possible is used): a scale (cents) or a date
#: in another format needs a conversion, a currency format a parse, a string or a prefix only punctuation.
_OP_HARDNESS = {"scale": 3, "date_format": 3, "number_format": 2, "to_number": 1, "to_string": 1, "prefix": 1,
                "listify": 0}


def _convertibility(key: str, value: Any) -> int:
    """How hard a conversion the fed value ``key``: ``value`` can be shown in (:data:`_OP_HARDNESS`): an
    amount or a date before an identifier, whose only re-formats are punctuation."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str) and len(value) == 10 and value[4] == "-" and value[7] == "-":
        return 3
    if isinstance(value, (int, float)) and any(m in key for m in _MONEY):
        return 3 if round(value * 100, 6) == int(round(value * 100, 6)) else 2
    if isinstance(value, float):
        return 2
    return 1


def _needs_conversion(ops: list[dict[str, Any]]) -> bool:
    """Whether a view's value re-format needs a conversion to read back (an amount in cents, a date in another
    format), not only punctuation removed."""
    return any(o["op"] in ("scale", "date_format") for o in ops)


def _shape_ops(out: Any, key: str, rng: random.Random) -> list[dict[str, Any]]:
    """Ways to change the result's shape around the fed value (key names, wrappers, nesting)."""
    names = _SYNONYMS.get(key) or [key + "_value", "".join(w.capitalize() if i else w for i, w in enumerate(key.split("_")))]
    names = [n for n in names if n != key]
    ops: list[dict[str, Any]] = []
    if names:
        ops.append({"op": "rename", "map": {key: rng.choice(names)}})
    if isinstance(out, dict) and key in out and len(out) >= 1:
        ops.append({"op": "nest", "key": rng.choice(_NESTS), "fields": [key]})
    ops.append({"op": "wrap", "key": rng.choice(_WRAPPERS)})
    return ops


def format_view(seed: Task, k: int, strength: float, rng: random.Random) -> tuple[list[dict[str, Any]], list[str]] | None:
    """Operations that re-format call ``k``'s output where it feeds call ``k + 1``; None without data flow."""
    ra, rb = target_calls(seed, k)
    out = parsed_output(ra.output or "")
    if ra.status != "ok" or not isinstance(out, (dict, list)):
        return None
    fed = fed_at(seed, k, out, rb.arguments)
    if not fed:
        return None
    # the value b consumes, reshaped so that reading it needs a conversion (cents to dollars, a date in words
    # to YYYY-MM-DD) where a's result feeds b such a value; an id's punctuation only where nothing else is fed
    best = max(_convertibility(k_, v_) for k_, v_ in fed)
    key, value = rng.choice([(k_, v_) for k_, v_ in fed if _convertibility(k_, v_) == best])
    n = 1 + round(strength * 2)
    value_ops = _value_ops(key, value, rng)
    shape_ops = _shape_ops(out, key, rng)
    ops: list[dict[str, Any]] = []
    if value_ops:  # an amount or a date: one of the hardest re-formats; an id: any (they differ only in punctuation)
        top = max(_OP_HARDNESS.get(o["op"], 0) for o in value_ops) if best >= 2 else 0
        ops.append(rng.choice([o for o in value_ops if _OP_HARDNESS.get(o["op"], 0) >= top]))
    rng.shuffle(shape_ops)
    renamed = False
    for op in shape_ops:
        if len(ops) >= n:
            break
        if op["op"] == "nest" and renamed:
            continue  # nest names the original key; keep it before any rename
        ops.append(op)
        renamed = renamed or op["op"] == "rename"
    # apply in a safe order: value formats, nesting, then renames, then the wrapper
    order = {"nest": 1, "rename": 2, "wrap": 3}
    ops.sort(key=lambda o: order.get(o["op"], 0))
    if apply_ops(out, ops) == out:
        return None
    return ops, [f"{o['op']}" for o in ops]


def conversion_at(seed: Task, k: int, rng: random.Random) -> tuple[list[Turn], dict[str, Any]] | None:
    """The seed's turns with one value that ``a`` (flat call ``k``) or ``b`` takes, and that only the user's words
    provide, rewritten in another form the tool's documentation makes convertible
    (:mod:`synth.strategies.convert`), and the conversion made; None where no such value is written."""
    flat = flat_calls(seed)
    ra, rb = target_calls(seed, k)
    outputs = memoized("outputs", seed, (), lambda: tuple(s.output or "" for t in oracle_of(seed).turns for s in t.steps))
    if len(outputs) != len(flat) or ra.status != "ok" or rb.status != "ok":
        return None
    outputs = list(outputs)
    made = conversion_candidates(seed, [(flat[k][3], ra.arguments), (flat[k + 1][3], rb.arguments)],
                                 [outputs[:k], outputs[:k + 1]],
                                 [user_text_upto(seed, flat[k][0]), user_text_upto(seed, flat[k + 1][0])], rng)
    tools = tool_catalogue_of(seed)
    for conv in made:
        turns = copy_turns(seed.turns)
        unit = documented_unit(tools, conv["tool"], conv["param"]) if conv["kind"] == "unit" else None
        if "pattern" in conv:  # a step of reasoning: every way the text writes the value is rewritten
            conv = dict(conv)
            done = rewrite_pattern(turns, conv.pop("pattern"), conv["written"], conv.pop("rule", ""))
        else:
            done = rewrite_turns(turns, conv["value"], conv["written"], unit)
        if done == 0:
            continue
        probe = Task("", "ace", "ambiguity", turns, {}, [], [], seed.long_context, {}, [], [])
        said = user_text_upto(probe, len(turns) - 1)
        if value_in_text(conv["value"], said) or str(conv["value"]) in dates_in(said):
            continue  # still written literally somewhere: nothing to convert
        return turns, conv
    return None


#: How often a draft with only a reformat to undo (no unit, money or relative date: a number in words, an id's punctuation)
#: is dropped, so the planner's other seeds, which allow a reasoned conversion, fill the slot (blind review s6:
#: 0 of 9 ambiguity tasks adversarial, all reformats); the rest are kept, so yield stays.
TRIVIAL_DROPPED = 0.5


@register("ambiguity", depth=2, build_last=True,
          definition="a value b (or a) takes is stated by the user in another form the tool's docs define (a "
                     "date in words, a number in words or with a scale, another unit), and/or a's result, which "
                     "feeds b, is shown re-formatted; the ground truth keeps the canonical values",
          needs="a value the user writes that a's or b's documentation makes convertible, or a's result holding "
                "a value b takes")
def ambiguity(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    converted = conversion_at(seed, k, rng)
    made = format_view(seed, k, strength, rng)
    if converted is not None and made is not None and not _needs_conversion(made[0]) and rng.random() >= 0.5:
        made = None  # a view that only re-punctuates an id is added to a conversion half the time; one that
        #              needs a conversion (cents, a date format) always (review of issue 34: 0 of 9 adversarial)
    reasoned = converted is not None and HARDNESS[converted[1]["kind"]] >= HARDNESS["unit"]
    if not reasoned and (made is None or not _needs_conversion(made[0])) and rng.random() < TRIVIAL_DROPPED:
        return None  # only a reformat (a date in words, an id's punctuation): kept as a fallback, not always
    if converted is None and made is None:
        return None
    tool = target[0]
    notes, extra, kinds = [], {}, []
    views = list(seed.output_views)
    turns = None
    if converted is not None:
        turns, conv = converted
        kinds.append(f"conversion:{conv['kind']}")
        extra["conversion"] = conv
        notes.append(f"the user writes {conv['tool']}'s {conv['param']}={conv['value']!r} as {conv['written']!r} "
                     f"({conv['kind']}; documented: {conv['doc']!r})")
    if made is not None:
        ops, names = made
        views.append({"tool": tool, "ops": ops})
        kinds.append("view")
        extra["view"] = {"tool": tool, "ops": ops}
        notes.append(f"{tool}'s result is shown re-formatted ({', '.join(names)})")
    extra["ambiguity_kind"] = "+".join(kinds)
    return build(seed, "ambiguity", target, strength, "; ".join(notes) + "; the ground truth is unchanged",
                 turns=turns, views=views, extra=extra)
