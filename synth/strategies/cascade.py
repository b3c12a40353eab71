"""cascade: an upstream call returns a partly wrong or incomplete result; the oracle notices and recovers.

At the target pair ``a → b`` where ``a``'s output feeds ``b`` and ``a`` only
reads (calling it twice leaves the state as calling it once), the task declares
an output view on the one call of ``a`` that feeds the target: its result is
partial, and nothing in it says so.  The seed must call ``a`` once (with one entity): a view
applies to a tool's n-th call, so with two calls of ``a`` (two cities) the
cut-short result would follow the position, and an agent that orders the
independent lookups otherwise would meet the other entity cut short —

``truncated_listing``  the list ``b`` reads the fed value from is cut before it,
                       and a count (``total``) says how many it should hold;
``stale_value``        the fed number is off by a few percent, and the previous value
                       and the change since add up to the complete one, not to it;
``incomplete_value``   the fed string is cut short (``"4165…"``) beside its length.

No flag announces it ("stale", "cached", ``live: false``, issue 34): the result looks
plausible, and only the cross-check read off its own fields (a count, a total that
does not add up, a length) shows it is partial.  There is more than one way back
(``provenance["recovery_paths"]``): call ``a`` again (the ground truth), or, for a
stale value, take previous + change.

The damage hits exactly the value ``b`` takes: it is nowhere in the shown
result afterwards (review v3: a cut moving-average list beside an intact
price changed nothing ``b`` used), and the cross-check is the result's first
field, so it is read before any long field.  The ground truth notices it (a **check**: ``a`` is called again, and this time
the result is complete) and **recovers** (``b`` with the complete value).  The
user text states the goal only; it never mentions the failure or the recovery.
"""

from __future__ import annotations

import random
import re
from typing import Any

from ace_env.oracle import Oracle, fingerprint, replay_oracle
from ace_env.tasks import Task
from ace_env.values import is_trivial, leaves, number
from ace_env.views import apply_ops
from synth.checks.parts import CASCADE_MISSES_VALUE, CASCADE_RECOVERY_IN_TEXT, flat_calls, target_step, user_text_upto
from synth.checks.values import _json_or_none, _norm
from synth.registry import Check, register
from synth.strategies.ambiguity import fed_at
from synth.strategies.build import build, copy_turns, env_before, memoized, parsed_output, pick_position, target_calls

#: The name of the count a cut-short listing keeps (the full length: more than the list holds).
_COUNT_KEYS = ("total", "count", "total_count", "num_results")
#: Fields derived from a stale value's change (``percent_change`` beside ``price``): recomputed from the added
#: previous value and change, so the shown value is the result's only figure they disagree with (review bfcl2).
_PERCENT_KEYS = ("percent_change", "pct_change", "change_percent", "percentage_change", "{key}_percent_change")
#: The number of steps ``_exact_parts`` tries for a split of the complete value that adds up exactly.
_SPLIT_TRIES = 8


def _reads_only(seed: Task, k: int) -> bool:
    """Whether calling flat call ``k`` a second time leaves every instance as the first call did."""

    def compute() -> bool:
        flat = flat_calls(seed)
        env = env_before(seed, k)
        t, _, raw, _ = flat[k]
        env.call(raw, t)
        once = fingerprint(env.public_state())
        env.call(raw, t)
        return fingerprint(env.public_state()) == once

    return memoized("reads_only", seed, (k,), compute)


def _holds(x: Any, value: Any) -> bool:
    """Whether ``value`` is one of the scalar leaves of ``x`` (numbers compared as numbers)."""
    n = number(value)
    if n is not None and abs(n) < 2**53:
        return _holds_number(x, n)
    return any(leaf == value if n is None else number(leaf) == n for leaf in leaves(x))


_CONTAINERS = (dict, list, tuple, set, frozenset)


def _holds_number(x: Any, n: float) -> bool:
    """Whether a number leaf of ``x`` equals ``n`` as a float, for ``abs(n) < 2**53``: there a number leaf equals
    ``n`` as a float exactly when ``leaf == n``, so each list is first searched in C (``n in list``, a long
    moving-average list) and its elements are compared one by one only on a hit (``True == 1.0`` is a hit); a
    list is searched for nested containers only when the set of its elements' types has one."""
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            if n in v and any(number(e) == n for e in v):
                return True
            if any(issubclass(t, _CONTAINERS) for t in set(map(type, v))):
                stack.extend(e for e in v if isinstance(e, _CONTAINERS))
        elif isinstance(v, (set, frozenset)):
            stack.extend(v)
        elif number(v) == n:
            return True
    return False


def _list_with(out: Any, key: str, value: Any) -> tuple[str, int, int] | None:
    """(list key, index of ``value``, length) of the top-level list ``key`` when it holds the fed value (the list
    itself is what ``b`` reads from; a value that merely also occurs in another list is not cut there)."""
    if not isinstance(out, dict) or not isinstance(out.get(key), list):
        return None
    v = out[key]
    for i, x in enumerate(v):
        if x == value or (isinstance(x, dict) and value in x.values()):
            return key, i, len(v)
    return None


def _repeating(out: dict[str, Any], key: str, value: Any) -> list[str]:
    """``key`` and every other field of ``out`` that repeats ``value`` (a moving-average list holding today's price)."""
    return [key] + [k for k, v in out.items() if k != key and _holds(v, value)]


def _exact_parts(value: float, factor: float) -> tuple[float, float] | None:
    """(previous, change) with ``previous + change == value`` exactly in floating point, ``previous`` near
    ``value / factor``, both with at most 2 decimals; None when no such split is found."""
    base = round(value / factor, 2)
    for i in range(_SPLIT_TRIES):
        previous = round(base + i * 0.01, 2)
        change = round(value - previous, 2)
        if previous + change == value and change != 0:
            return previous, change
    return None


def _derived_percent(out: dict[str, Any], key: str, previous: float, change: float) -> dict[str, float]:
    """The percent-change fields of ``out`` (:data:`_PERCENT_KEYS`, numbers) recomputed as ``change / previous``
    in percent, rounded to 2 decimals: they then agree with the added previous value and change (the complete
    value), and the stale shown value is the one figure that does not."""
    if not previous:
        return {}
    pct = round(change / previous * 100, 2)
    names = [p.format(key=key) for p in _PERCENT_KEYS]
    return {f: pct for f in names if f in out and number(out[f]) is not None and not isinstance(out[f], bool)}


def _damage(out: dict[str, Any], key: str, value: Any, strength: float, rng: random.Random,
            repeating: Any = _repeating) -> tuple[list[dict[str, Any]], dict[str, Any], str, dict[str, Any]] | None:
    """(operations that damage ``value`` where it sits, the cross-check fields, the pattern, the cross-check),
    or None.  The result carries no flag ("stale", "cached", ``live: false``): it looks plausible, and only a
    cross-check read off its own fields shows it is not (issue 34) —

    ``truncated_listing``  a count (``total``) larger than the list holds: the count does not match;
    ``stale_value``        the previous value and the change since (``previous_price``, ``price_change``):
                           they add up to the complete value, not to the value shown;
    ``incomplete_value``   the string's length (``code_length``) is longer than the string shown.

    ``repeating(out, key, value)``: the fields a stale value is stale in (:func:`_repeating`, or a memo of it)."""
    listed = _list_with(out, key, value)
    if listed is not None:
        lkey, idx, total = listed
        count = next((c for c in _COUNT_KEYS if c not in out), None)
        if count is None:
            return None
        return ([{"op": "truncate", "keys": [lkey], "keep": idx}], {count: total}, "truncated_listing",
                {"kind": "count", "fields": [count], "reads": f"{count} = {total}, the list {lkey!r} holds {idx}"})
    n = number(value)
    if n is not None and not isinstance(value, bool):
        delta = rng.uniform(0.02, 0.12) * rng.choice([-1, 1])
        factor = round(1 + delta, 4)
        if round(value * factor, 2) == value:
            return None
        parts = _exact_parts(float(value), factor)
        if parts is None:
            return None
        keys = repeating(out, key, value)  # every field that repeats the value is stale with it
        previous, change = parts
        fields = {f"previous_{key}": previous, f"{key}_change": change}
        if any(f in out for f in fields):
            return None
        ops = [{"op": "perturb", "keys": keys, "factor": factor}]
        cross = {"kind": "total", "fields": list(fields),
                 "reads": f"previous_{key} + {key}_change = {value}, not the {key} shown"}
        derived = _derived_percent(out, key, previous, change)
        if derived:
            # a percent change left at its source value would be a second contradiction (it fits neither the
            # shown value nor previous + change): it describes the same change as the added fields
            ops.append({"op": "add", "fields": derived})
            cross["recomputed"] = {f: f"{key}_change / previous_{key} * 100" for f in derived}
        return ops, fields, "stale_value", cross
    if isinstance(value, str) and len(value) >= 4:
        keep = max(1, len(value) // 2)
        field = f"{key}_length"
        if field in out:
            return None
        return ([{"op": "mask", "keys": [key], "keep": keep}], {field: len(value)}, "incomplete_value",
                {"kind": "length", "fields": [field], "reads": f"{field} = {len(value)}, longer than the {key} shown"})
    return None


def partial_view(seed: Task, k: int, strength: float,
                 rng: random.Random) -> tuple[list[dict[str, Any]], str, dict[str, Any]] | None:
    """Operations that make call ``k``'s result partial exactly where it feeds call ``k + 1``, and the pattern.

    The damage must hide the value ``b`` takes: once applied, that value is nowhere in the shown result (a
    price also listed in a moving average is stale there too; a list is cut only when ``b`` reads from it),
    so an agent that goes on without checking passes ``b`` another value or none, and the check changes
    ``b``'s arguments.  The cross-check comes first in the result, where it is read before any long field."""
    ra, rb = target_calls(seed, k)
    out = parsed_output(ra.output or "")
    if ra.status != "ok" or not isinstance(out, dict):
        return None
    fed = fed_at(seed, k, out, rb.arguments)
    rng.shuffle(fed)

    def repeating(out: dict[str, Any], key: str, value: Any) -> list[str]:  # the same for every draw on (seed, k)
        return list(memoized("repeating", seed, (k, key, type(value).__name__, value), lambda: _repeating(out, key, value)))

    for key, value in fed:
        made = _damage(out, key, value, strength, rng, repeating)
        if made is None:
            continue
        ops, fields, pattern, cross = made
        if _holds(apply_ops(out, ops), value):
            continue  # the complete value is still readable: the damage would miss the value passed on
        # the cross-check is the first field added; a recomputed percent change (if any) follows it
        ops = ops[:1] + [{"op": "add", "fields": fields, "first": True}] + ops[1:]
        return ops, pattern, {**cross, "value": value, "key": key}
    return None


def cascade_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random,
               strategy: str = "cascade") -> Task | None:
    flat = flat_calls(seed)
    if sum(1 for f in flat if f[3] == flat[k][3]) != 1:
        # the partial result must belong to the entity, not to a position: with two calls of the tool
        # (Rivermist and San Francisco) an agent that orders them otherwise would meet the other one cut short
        return None
    if not _reads_only(seed, k):
        return None
    made = partial_view(seed, k, strength, rng)
    if made is None:
        return None
    ops, pattern, cross = made
    tool = flat[k][3]
    occurrence = sum(1 for j in range(k) if flat[j][3] == tool)
    view = {"tool": tool, "calls": [occurrence], "ops": ops}
    turns = copy_turns(seed.turns)
    t, i, raw, _ = flat[k]
    recovery = flat[k + 1][2]
    if cross["kind"] == "total":
        # two ways back: the cross-check itself gives the complete value (previous + change, one arithmetic step
        # from the numbers shown), which the ground truth takes; or a again, an extra read the verifier accepts
        checks: list[str] = []
        paths = [f"compute: {' + '.join(cross['fields'])} = {cross['value']!r}, then {recovery}",
                 f"retry: {raw}, then {recovery}"]
    else:
        turns[t].ground_truth.insert(i + 1, raw)  # the check: ask again, get the complete result
        checks = [raw]
        paths = [f"retry: {raw}, then {recovery}"]
    return build(seed, strategy, target, strength,
                 f"{pattern}: the call {raw} returns a plausible partial result that only a cross-check "
                 f"({cross['kind']}) shows; the ground truth {'checks it again and ' if checks else ''}"
                 f"continues with the complete value",
                 turns=turns, views=list(seed.output_views) + [view],
                 extra={"pattern": pattern, "check": checks, "recovery": [recovery], "partial_view": view,
                        "cross_check": cross, "recovery_paths": paths})


# --------------------------------------------------------------------------- its checks


_RECOVERY_CUES = re.compile(
    r"\bif\b[^.?!]{0,80}\b(fail|declin|reject|missing|not there|doesn't work|isn't|not enough|logged out|expired|"
    r"incomplete|cut off|truncat|stale|out of date|partial)\w*|\b(fall back|fallback|backup card|try again|retry|"
    r"re-?query|ask again|call it again|recreate)\b", re.I)


def cascade_problems(task: Task, oracle: Oracle | None = None) -> list[str]:
    """For a cascade task: the partial result must hide a value ``b`` takes from the complete one (so going on
    without the check changes ``b``'s arguments) and carry its cross-check first (read before any long field).

    The target step is ``b``; the call right before it is the check (``a`` again, complete) and the one
    before that the partial call; where the ground truth makes no check (``provenance["check"]`` empty: the
    cross-check's total gives the complete value), the partial call is right before ``b`` and the complete value
    is the cross-check's (``provenance["cross_check"]["value"]``), which its fields must add up to."""
    if task.provenance.get("strategy") != "cascade":
        return []
    checked = bool(task.provenance.get("check", [None]))
    step = target_step(task)
    if step is None or step < (2 if checked else 1):
        return ["no partial call and check before the target step"]
    oracle = oracle or replay_oracle(task)
    steps = [s for turn in oracle.turns for s in turn.steps]
    out = []
    if checked:
        partial, complete = _json_or_none(steps[step - 2].output or ""), _json_or_none(steps[step - 1].output or "")
        if not isinstance(partial, dict) or not isinstance(complete, dict):
            return ["the partial call or the check returns no record"]
        full = {_norm(x) for x in leaves(complete)}
        first_ok = next(iter(partial), None) not in complete
    else:
        partial = _json_or_none(steps[step - 1].output or "")
        cross = task.provenance.get("cross_check") or {}
        if not isinstance(partial, dict) or "value" not in cross:
            return ["the partial call returns no record, or the task names no cross-check"]
        fields = list(cross.get("fields") or [])
        full = {_norm(cross["value"])}
        if not fields or any(number(partial.get(f)) is None for f in fields):
            out.append("the partial result lacks its cross-check")
        elif sum(number(partial[f]) for f in fields) != number(cross["value"]):
            out.append(f"the cross-check {fields} does not add up to the complete value {cross['value']!r}")
        first_ok = bool(fields) and next(iter(partial), None) == fields[0]
    shown = {_norm(x) for x in leaves(partial)}
    taken = [v for v in leaves(steps[step].arguments) if not is_trivial(v) and _norm(v) in full]
    if not taken:
        out.append(f"{steps[step].call} takes nothing from the complete result")
    elif all(_norm(v) in shown for v in taken):
        out.append(f"the partial result still shows every value {steps[step].call} takes ({taken!r}): "
                   f"the check changes nothing b uses")
    if not first_ok:
        out.append("the partial result's first field is not its cross-check")
    return out


def cascade_text_problems(task: Task) -> list[str]:
    """For a cascade task: the text must not describe the failure or the recovery (no "if ... fails / is
    missing / is declined", "retry", "fall back", ...)."""
    if task.provenance.get("strategy") != "cascade":
        return []
    m = _RECOVERY_CUES.search(user_text_upto(task, len(task.turns) - 1))
    return [f"the text describes the recovery: {m.group(0)!r}"] if m else []


@register("cascade", depth=3, build_last=True,
          checks=(Check(CASCADE_MISSES_VALUE, lambda c: cascade_problems(c.task, c.oracle), needs_clean_run=True),
                  Check(CASCADE_RECOVERY_IN_TEXT, lambda c: cascade_text_problems(c.task))),
          definition="a (read-only, called once) returns a plausible partial result, unflagged, that damages the value b "
                     "takes and that only a cross-check of its own fields (a count, a total, a length) shows; "
                     "the ground truth checks again and recovers; the text states the goal only",
          needs="a read-only a called once whose result holds the value b takes")
def cascade(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    return cascade_at(seed, target, k, strength, rng)
