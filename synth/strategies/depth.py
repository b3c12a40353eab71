"""depth: the target composition itself grows by 2-4 steps (a chain of 3-5 from ``b``), each consuming the last.

From the target's ``b`` step, the chain is extended by follow-ups drawn from a
table of data-flow compositions: each added call takes at least one argument
from the *output* of the call before it in the chain (``place_order`` →
``get_order_details(order_id=<its order_id>)`` → ``get_stock_info(symbol=<the
order's symbol>)``; ``estimate_distance`` (km) →
``imperial_si_conversion(value=<the distance>, unit_in='km', unit_out='miles')`` →
``estimate_drive_feasibility_by_mileage(distance=<the miles>)``, whose parameter is in miles: never the km
directly (issue 34); ``book_flight`` → ``retrieve_invoice(booking_id=<its booking_id>)`` →
``compute_exchange_rate(value=<the invoice's total>, ...)`` → ``round_number(number=<the amount>)``).
A step may bring a stateless class the seed lacks (:data:`ADDABLE`, BFCL's MathAPI, all its tools offered).
A chain shorter than :data:`MIN_ADDED` added steps makes no task.  Every value taken from
the previous call's output must be new there: not in the user text up to the
turn, not an argument or an output of any earlier call of the task (a support message on the
booking id after the invoice would take the id from the booking step, not the
invoice), and a call the task already makes on the same values is not added.
Other arguments come from the anchor's own arguments (the same entity) or
from the text the intent adds (a message the user dictates).  Only calls that
leave the state as it was are added, so every step is verified by its output.
The added calls go right after ``b``, which must be its turn's last call (the chain is
not interleaved with unrelated calls), and their intents are composed
into that turn's text after the request (:mod:`synth.strategies.text`), so
the text's order is the oracle's.  A step that restates a value of ``b``'s output in another form (km to
miles) is not added where a later turn takes that value back ('the distance you've just told me about'):
the reference would become ambiguous.
"""

from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import RolloutState, copy_json
from ace_env.oracle import fingerprint
from ace_env.tasks import Task
from ace_env.twins import all_functions
from ace_env.values import leaves, number
from synth.checks.parts import adjacent_positions, flat_calls, user_text_upto
from synth.checks.values import value_in_text
from synth.registry import register
from synth.strategies.build import build, copy_turns, memoized, parsed_output, pick_position
from synth.strategies.text import then


@dataclass(frozen=True)
class Link:
    """``tool`` after ``anchor``: arguments from the anchor's output (``o:key`` or ``o:key.sub``, at least one),
    its arguments (``a:param``) or a literal the intent states (``=value``, or ``=a||b`` for one of several).
    ``after``: tools one of which the chain must already hold (the miles a conversion made, not any rounded
    number); empty: any chain."""

    anchor: str
    tool: str
    args: tuple[tuple[str, str], ...]
    say: tuple[str, ...]  # intents (imperatives); a literal the call uses is written in them as {param}
    after: tuple[str, ...] = ()


#: A stateless class a depth chain may bring into the task for one of its steps (a conversion, a rounding).
ADDABLE = ("MathAPI",)
#: Added steps per chain: at least 2 (b and two added calls: a chain of 3 steps, each consuming the last output),
#: at most 4 (5 steps).
MIN_ADDED, MAX_ADDED = 2, 4

_LINKS = (
    Link("place_order", "get_order_details", (("order_id", "o:order_id"),),
         ("show me the details of that order", "pull up the new order's details")),
    Link("get_order_details", "get_stock_info", (("symbol", "o:symbol"),),
         ("look up the current quote for that order's stock", "check how that order's stock is trading now")),
    Link("cancel_order", "get_order_details", (("order_id", "o:order_id"),), ("show me the cancelled order's details",)),
    # estimate_distance's result is in km, the mileage check's parameter in miles (issue 34): converted first
    Link("estimate_distance", "imperial_si_conversion",
         (("value", "o:distance"), ("unit_in", "=km"), ("unit_out", "=miles")),
         ("convert that distance from km to miles", "turn that distance in km into miles")),
    Link("imperial_si_conversion", "estimate_drive_feasibility_by_mileage", (("distance", "o:result"),),
         ("tell me whether my car can cover those miles on its current fuel",
          "check if the car can drive that many miles without refuelling"), after=("estimate_distance",)),
    Link("imperial_si_conversion", "round_number", (("number", "o:result"), ("decimal_places", "=1")),
         ("round the miles to {decimal_places} decimal place",), after=("estimate_distance",)),
    Link("round_number", "estimate_drive_feasibility_by_mileage", (("distance", "o:result"),),
         ("tell me whether my car can cover that rounded mileage on its current fuel",),
         after=("estimate_distance",)),
    Link("book_flight", "retrieve_invoice", (("access_token", "a:access_token"), ("booking_id", "o:booking_id")),
         ("get me the invoice for that booking", "pull up the invoice of the new booking")),
    # the invoice's total (not known before the invoice) converted: the booking id would be the booking step's
    Link("retrieve_invoice", "compute_exchange_rate",
         (("base_currency", "=USD"), ("target_currency", "=EUR||GBP||JPY||CAD||AUD"),
          ("value", "o:invoice.travel_cost")),
         ("convert that invoice's total from USD to {target_currency}",
          "tell me what the invoiced amount comes to in {target_currency}, converting from USD",
          "work out the invoice total in {target_currency} (it is in USD)")),
    Link("compute_exchange_rate", "round_number", (("number", "o:exchanged_value"), ("decimal_places", "=2")),
         ("round the converted amount to {decimal_places} decimal places",),
         after=("retrieve_invoice", "get_flight_cost", "get_credit_card_balance")),
    Link("get_stock_info", "round_number", (("number", "o:price"), ("decimal_places", "=0||1")),
         ("round that price to {decimal_places} decimal places",), after=("get_order_details",)),
    # a fare, a card balance: converted, then rounded (a value none of the task's calls had before)
    Link("get_flight_cost", "compute_exchange_rate",
         (("base_currency", "=USD"), ("target_currency", "=EUR||GBP||JPY||CAD||AUD"),
          ("value", "o:travel_cost_list.0")),
         ("convert that fare from USD to {target_currency}", "tell me what that fare comes to in {target_currency}, "
                                                              "converting from USD")),
    Link("get_credit_card_balance", "compute_exchange_rate",
         (("base_currency", "=USD"), ("target_currency", "=EUR||GBP||JPY||CAD||AUD"), ("value", "o:card_balance")),
         ("convert that card balance from USD to {target_currency}",)),
    # the outside temperature is in degrees Celsius: in Fahrenheit, then rounded
    *(Link(tool, "imperial_si_conversion",
           (("value", "o:outsideTemperature"), ("unit_in", "=celsius"), ("unit_out", "=fahrenheit")),
           ("convert that temperature from celsius to fahrenheit",))
      for tool in ("get_outside_temperature_from_google", "get_outside_temperature_from_weather_com")),
    Link("imperial_si_conversion", "round_number", (("number", "o:result"), ("decimal_places", "=1")),
         ("round the fahrenheit figure to {decimal_places} decimal place",),
         after=("get_outside_temperature_from_google", "get_outside_temperature_from_weather_com")),
    Link("post_tweet", "get_tweet", (("tweet_id", "o:id"),), ("show me the tweet once it's posted",)),
    Link("create_ticket", "get_ticket", (("ticket_id", "o:id"),), ("show me the ticket you created",)),
    Link("get_ticket", "get_user_tickets", (("status", "o:status"),),
         ("list my other tickets with that same status",)),
)
LINKS_BY_ANCHOR: dict[str, list[Link]] = {}
for _link in _LINKS:
    LINKS_BY_ANCHOR.setdefault(_link.anchor, []).append(_link)


def _class_tools(cls: str) -> list[str]:
    return [n for n, info in all_functions().items() if info.class_name == cls]


def widened(seed: Task) -> Task:
    """The seed with the addable stateless classes (:data:`ADDABLE`) involved and their tools offered, so a chain
    step may use them; the seed itself when it has them all.  Kept for the run (the environment memos key on it)."""
    missing = [c for c in ADDABLE if c not in seed.involved_classes]
    if not missing:
        return seed

    def compute() -> Task:
        tools = list(seed.tools) + [n for c in missing for n in _class_tools(c) if n not in seed.tools]
        return dataclasses.replace(seed, involved_classes=list(seed.involved_classes) + missing, tools=tools,
                                   _offered={})  # the seed's offered-tools cache would hide the new tools

    return memoized("depth_widened", seed, (), compute)


def _get(out: Any, path: str) -> Any:
    """The value at ``path`` (keys, or a list's index, by dots) of ``out``; None where there is none."""
    for part in path.split("."):
        if isinstance(out, list) and part.isdigit() and int(part) < len(out):
            out = out[int(part)]
        elif isinstance(out, dict) and part in out:
            out = out[part]
        else:
            return None
    return out


def render(link: Link, args: dict[str, Any], out: Any, rng: random.Random) -> tuple[str, str] | None:
    """The added call string and its intent, or None when a value it needs is missing."""
    kwargs: dict[str, Any] = {}
    literals: dict[str, str] = {}
    consumed = False
    for param, source in link.args:
        if source.startswith("="):  # a literal the intent states: one of its '||'-separated choices
            literals[param] = rng.choice(source[1:].split("||"))
            kwargs[param] = int(literals[param]) if literals[param].isdigit() else literals[param]
            continue
        kind, _, name = source.partition(":")
        value = args.get(name) if kind == "a" else _get(out, name)
        if value is None or isinstance(value, (dict, list)):
            return None
        consumed = consumed or kind == "o"
        kwargs[param] = value
    if not consumed:
        return None
    return Call(link.tool, (), kwargs).render(), rng.choice(link.say).format(**literals)


def _key(v: Any) -> str:
    n = number(v) if not isinstance(v, bool) else None
    return f"n:{n}" if n is not None else f"s:{v}".lower()


def _values(x: Any) -> set[str]:
    """The scalar values in ``x`` (arguments or an output), as comparable keys."""
    return {_key(v) for v in leaves(x) if v is not None and not isinstance(v, bool)} if x is not None else set()


def _fed(link: Link, call: str) -> list[Any]:
    """The values ``call`` takes from the previous call's output (its ``o:`` arguments)."""
    parsed = parse_call(call)
    if not isinstance(parsed, Call):
        return []
    return [parsed.kwargs[p] for p, src in link.args if src.startswith("o:") and p in parsed.kwargs]


def _made_already(seed: Task, call: str, link: Link) -> bool:
    """Whether the task already calls the tool on the same values taken from an output (a support message on
    the same booking, the same order's details): the added step would repeat it."""
    fed = {p: v for p, v in zip([p for p, src in link.args if src.startswith("o:")], _fed(link, call))}
    for turn in seed.turns:
        for raw in turn.ground_truth:
            if raw == call:
                return True
            c = parse_call(raw)
            if isinstance(c, Call) and c.name == link.tool and fed and \
                    all(_key(c.kwargs.get(p)) == _key(v) for p, v in fed.items()):
                return True
    return False


def _prefix(seed: Task, k: int, box: list[Any]) -> tuple[dict[str, Any], Any, frozenset[str], str] | None:
    """What :func:`extend` knows before its first draw: the anchor ``b``'s arguments and output, every value the
    chain knew before that output, and the state's fingerprint after ``b``'s turn; None when ``b`` fails.

    Kept for the run (:func:`synth.strategies.build.seed_memo`); when computed, the environment it replayed is
    left in ``box`` for the added calls."""

    def compute() -> tuple[dict[str, Any], Any, frozenset[str], str] | None:
        flat = flat_calls(seed)
        turn = flat[k + 1][0]
        env = RolloutState(seed)
        anchor_args: dict[str, Any] = {}
        anchor_out: Any = None
        a_args: dict[str, Any] = {}
        a_out: Any = None
        earlier: set[str] = set()  # every argument and output of the task before the anchor's output
        for j, (t, _, raw, _) in enumerate(flat):
            if t > turn:
                break
            r = env.call(raw, t)
            if j <= k:
                earlier |= _values(dict(r.arguments)) | _values(parsed_output(r.output or ""))
            if j == k:
                a_args, a_out = dict(r.arguments), parsed_output(r.output or "")
            if j == k + 1:
                if r.status != "ok":
                    return None
                anchor_args, anchor_out = dict(r.arguments), parsed_output(r.output or "")
        box[:] = [(env, [])]
        # what the chain knew before the anchor's output: every chain call's arguments, the outputs before it
        known = _values(a_args) | _values(a_out) | _values(anchor_args) | earlier
        return anchor_args, anchor_out, frozenset(known), fingerprint(env.public_state())

    return memoized("depth_prefix", seed, (k,), compute)


def _added_call(seed: Task, k: int, chain: list[str], call: str, state: str,
                box: list[Any]) -> tuple[str, str | None, bool, dict[str, Any]]:
    """(status, output, whether the state's fingerprint is still ``state``, arguments) of ``call`` made after
    ``b``'s turn and the added calls ``chain``; kept for the run.  Computed on the environment in ``box`` (or
    one replayed to that point)."""

    def compute() -> tuple[str, str | None, bool, dict[str, Any]]:
        if not box or box[0][1] != chain:
            flat = flat_calls(seed)
            turn = flat[k + 1][0]
            env = RolloutState(seed)
            for t, _, raw, _ in flat:
                if t > turn:
                    break
                env.call(raw, t)
            for c in chain:
                env.call(c, turn)
            box[:] = [(env, list(chain))]
        env, made = box[0]
        r = env.call(call, flat_calls(seed)[k + 1][0])
        made.append(call)
        return r.status, r.output, fingerprint(env.public_state()) == state, dict(r.arguments)

    status, output, same, arguments = memoized("depth_call", seed, (k, tuple(chain), call), compute)
    return status, output, same, copy_json(arguments)


def later_references(seed: Task, turn: int, b_out: Any) -> set[str]:
    """The values of ``b``'s output (``b`` in ``turn``) that a call of a later turn takes without the user
    text up to that turn writing them: the later turn refers back to them ('the distance you've just told me
    about'), so an added step must not restate them in another form (review of issue 34, task 9)."""
    mine = _values(b_out)
    out: set[str] = set()
    for t in range(turn + 1, len(seed.turns)):
        text = user_text_upto(seed, t)
        for raw in seed.turns[t].ground_truth:
            c = parse_call(raw)
            if not isinstance(c, Call):
                continue
            for v in leaves(dict(c.kwargs)):
                if v is None or isinstance(v, bool) or _key(v) not in mine or value_in_text(v, text):
                    continue
                out.add(_key(v))
    return out


def last_in_turn(seed: Task, k: int) -> bool:
    """Whether ``b`` (flat call ``k + 1``) is its turn's last call: the added chain goes right after it, not
    after unrelated calls that follow it in the turn (review of issue 34, task 36)."""
    flat = flat_calls(seed)
    return k + 2 >= len(flat) or flat[k + 2][0] != flat[k + 1][0]


def extend(seed: Task, k: int, want: int, rng: random.Random) -> list[tuple[str, str, str]] | None:
    """Up to ``want`` calls that extend the chain after flat call ``k + 1`` (``b``): (call, intent, link).

    Each added call is made on the state after ``b``'s turn and the calls added before it; a call that fails
    or changes the state ends the chain."""
    flat = flat_calls(seed)
    turn = flat[k + 1][0]
    box: list[Any] = []  # the environment the added calls run on, once one is needed
    prefix = _prefix(seed, k, box)
    if prefix is None:
        return None
    anchor_args, anchor_out, known_before, state = prefix
    anchor_args, anchor_out, known = copy_json(anchor_args), copy_json(anchor_out), set(known_before)
    anchor = flat[k + 1][3]
    text = user_text_upto(seed, turn)
    referred = later_references(seed, turn, anchor_out)
    chosen: list[tuple[str, str, str]] = []
    tools_in_chain = {flat[k][3], anchor}
    while len(chosen) < want:
        links = [x for x in LINKS_BY_ANCHOR.get(anchor, [])
                 if x.tool in seed.tools and (not x.after or any(t in tools_in_chain for t in x.after))]
        rng.shuffle(links)
        for link in links:
            made = render(link, anchor_args, anchor_out, rng)
            if made is None or any(made[0] == c[0] for c in chosen) or _made_already(seed, made[0], link):
                continue
            fed = _fed(link, made[0])
            if not fed or any(_key(v) in known or value_in_text(v, text) for v in fed):
                continue  # it would take a value the task had before the previous call's output (review v2: 23, 34)
            status, output, same, arguments = _added_call(seed, k, [c[0] for c in chosen], made[0], state, box)
            out = parsed_output(output or "")
            if status != "ok" or not same or (isinstance(out, dict) and "error" in out):
                return chosen or None  # a failing or state-changing step ends the chain here
            if any(_key(v) in referred and _key(v) not in _values(out) for v in fed):
                continue  # a later turn takes b's value back ('the distance you just told me'): a step that
                #          restates it in another form (km -> miles) would make that reference ambiguous (review 9)
            chosen.append((made[0], made[1], f"{anchor}>{link.tool}"))
            tools_in_chain.add(link.tool)
            known |= _values(anchor_out) | _values(arguments)
            anchor, anchor_args, anchor_out = link.tool, dict(arguments), out
            break
        else:
            break
    return chosen or None


#: Intents of the mileage check when the km-to-miles step before it is left for the agent to see (the docs say
#: the distance is in km and the check takes miles): no unit named, the goal only.
_UNSAID_MILES = ("tell me whether my car can make that trip on its current fuel",
                 "check if the car can drive that far without refuelling",
                 "let me know if the tank as it is gets me there")


#: Intents of the rounding when the km-to-miles step before it is left unsaid: "mileage" only, never the conversion
#: ("give me the trip in miles, rounded" asked for it: blind review s8, task 14, not faithful).
_UNSAID_ROUND = ("round the mileage to {dp} decimal place", "give me the mileage rounded to {dp} decimal place")

#: The links whose intent follows a km-to-miles step left unsaid: (link, its intents then).
_AFTER_UNSAID = {"imperial_si_conversion>estimate_drive_feasibility_by_mileage": _UNSAID_MILES,
                 "imperial_si_conversion>round_number": _UNSAID_ROUND}


def unsaid_steps(chosen: list[tuple[str, str, str]], rng: random.Random) -> list[int]:
    """Indexes of added steps whose intent is left out of the text: a km-to-miles conversion, always where the
    chain allows it (blind review s7b: only the task that left it unsaid was a trap), right before the mileage
    check (whose intent then names no unit) or the rounding of the miles.  The agent must see from the docs that
    the distance (km) is not what the next step takes (miles); a competent agent may pass the km straight on.
    ``rng`` is kept for the callers' draws (none is made here)."""
    return [i for i in range(len(chosen) - 1)
            if chosen[i][2] == "estimate_distance>imperial_si_conversion" and chosen[i + 1][2] in _AFTER_UNSAID]


def _intent_after_unsaid(link: str, rng: random.Random, arguments: str) -> str:
    """The intent of the step right after an unsaid km-to-miles conversion (the rounding keeps its places)."""
    intent = rng.choice(_AFTER_UNSAID[link])
    m = re.search(r"decimal_places=(\d+)", arguments)
    return intent.format(dp=m.group(1) if m else "1")


def depth_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random,
             strategy: str = "depth") -> Task | None:
    """A chain of ``b`` and :data:`MIN_ADDED` to :data:`MAX_ADDED` added steps (3-5 steps, each consuming the
    output of the one before it); None where the seed's links give a shorter chain."""
    if not last_in_turn(seed, k):
        return None
    want = MIN_ADDED + round(strength * (MAX_ADDED - MIN_ADDED))
    wide = widened(seed)
    chosen = extend(wide, k, want, rng)
    if not chosen or len(chosen) < MIN_ADDED:
        return None
    flat = flat_calls(seed)
    t = flat[k + 1][0]
    turns = copy_turns(seed.turns)
    turns[t].ground_truth = turns[t].ground_truth + [c[0] for c in chosen]
    unsaid = unsaid_steps(chosen, rng)
    intents = [_intent_after_unsaid(c[2], rng, c[0]) if i - 1 in unsaid else c[1] for i, c in enumerate(chosen)]
    for m in reversed(turns[t].user):
        if m.get("role") == "user" and m.get("content"):
            m["content"] = then(m["content"].strip(), [x for i, x in enumerate(intents) if i not in unsaid], rng)
            break
    else:
        return None
    used = {c[2].partition(">")[2] for c in chosen}
    brought = [c for c in ADDABLE if c not in seed.involved_classes and any(n in used for n in _class_tools(c))]
    classes = list(seed.involved_classes) + brought
    tools = list(seed.tools) + [n for c in brought for n in _class_tools(c) if n not in seed.tools]
    task = build(seed, strategy, target, strength,
                 f"depth +{len(chosen)} after {target[1]}: " + "; ".join(c[0] for c in chosen),
                 turns=turns, classes=classes, tools=tools,
                 extra={"added_calls": len(chosen), "added": [c[0] for c in chosen],
                        "links": [c[2] for c in chosen], "chain": 2 + len(chosen),
                        "chain_length": 1 + len(chosen), "classes_added": brought,
                        "unsaid": [chosen[i][0] for i in unsaid]})
    if task is None or not adjacent_positions(task, target):
        return None
    return task


@register("depth", depth=4, build_last=True,
          definition="the target composition grows from 2 to up to 5 tools: each added read consumes the result "
                     "of the call before it in the chain, and each is verified by its output; a step the tools' "
                     "docs require (a distance in km converted to the miles the next tool takes) may be left unsaid",
          needs="two or more read-only follow-ups of b, each taking a value only the step before it provides")
def depth(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    return depth_at(seed, target, k, strength, rng)
