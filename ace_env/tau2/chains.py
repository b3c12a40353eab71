"""τ²'s two strategies that lengthen a seed's gold past B: ``depth`` (one more dependent read, last) and
``cascade`` (a second write after B).  See :mod:`ace_env.tau2.strategies` for what each must do.

``depth``'s added read consumes B's output and its answer depends on what the read returns, so an agent that
does not make it cannot guess it: airline, the price of one more seat in the reservation's cabin on one of its
flights (``search_direct_flight`` on that flight's route and date, the flight found by its number in the result,
the price by the cabin B's output shows); retail, how many *other* options of a product in the order B returns
are available now, the cheapest of them against the price paid, or the price of the one like the customer's but for
one attribute (``get_product_details``; :func:`_retail_asks`).  The user
asks for the answer in their own words, never for the lookups.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from ace_env.tau2.drafting import (
    TRANSFER,
    Draft,
    instructions_of,
    is_write,
    mentions,
    order_matches,
    outputs,
    record,
    replayed_output,
    retail_description,
    scenario_text,
    status_word,
    target_positions,
)
from ace_env.tau2.env import pristine
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import gold

NUMBER = ("no", "one", "two", "three", "four", "five")
#: A scenario that cancels, or asks to cancel, something: no depth add-on about keeping a trip (an order) there.
CANCEL = re.compile(r"(?i)\bcancel")


def cancels(text: str, entity: str, theirs: list[str]) -> bool:
    """Whether the scenario may cancel (or ask to cancel) ``entity``: it speaks of cancelling, unless it names
    another of the user's reservations (orders) by id and never this one (what it cancels is then that one)."""
    if not CANCEL.search(text):
        return False
    return mentions(text, entity) or not any(mentions(text, e) for e in theirs if e != entity)


def _which_flight(flights: list[dict[str, Any]], f: dict[str, Any]) -> str | None:
    """How the customer says which flight of the reservation, without its number or airports: by its date, as the
    earlier or later of two that day (a connection, flown in the reservation's order); None where there are more
    (s6 task 19: "the second of your flights on DATE" read as the reservation's second flight too)."""
    same_day = [x for x in flights if x["date"] == f["date"]]
    if len(same_day) == 1:
        return f"your flight on {f['date']}"
    return f"the {('earlier', 'later')[same_day.index(f)]} of your two flights on {f['date']}" \
        if len(same_day) == 2 else None


def _which_reservation(out: dict[str, Any]) -> str | None:
    """How the customer says which reservation, without its id or airports: its trip type and its first flight's
    date, when no other reservation of the user's has both (None otherwise)."""
    db = pristine("airline")[0]
    user = db.users.get(out.get("user_id"))
    flights = out.get("flights") or []
    if user is None or not flights:
        return None

    def key(r: Any) -> tuple[str, str | None]:
        return str(r.flight_type), (r.flights[0].date if r.flights else None)

    mine = (str(out.get("flight_type")), flights[0]["date"])
    if [r for r in user.reservations if r in db.reservations and key(db.reservations[r]) == mine] \
            != [out["reservation_id"]]:
        return None
    trip = "round trip" if out.get("flight_type") == "round_trip" else "one-way trip"
    return f"your {trip} reservation whose first flight is on {flights[0]['date']}"


def _search_price(seed: Tau2Task, actions: list[GoldAction], f: dict[str, Any]
                  ) -> tuple[GoldAction, dict[str, Any] | None]:
    """The search for ``f``'s route and date after ``actions``, and ``f``'s row in its result (None: not found)."""
    step = GoldAction("search_direct_flight", {"origin": f["origin"], "destination": f["destination"],
                                               "date": f["date"]})
    found = replayed_output(seed, actions + [step])
    match = [x for x in found if x.get("flight_number") == f["flight_number"]] if isinstance(found, list) else []
    return step, (match[0] if match else None)


def _flies(out: dict[str, Any]) -> bool:
    """Whether the reservation's user is one of its passengers ("join you ... in the same cabin as you")."""
    user = pristine("airline")[0].users.get(out.get("user_id"))
    if user is None:
        return False
    me = (str(user.name.first_name).lower(), str(user.name.last_name).lower())
    return any((str(p.get("first_name", "")).lower(), str(p.get("last_name", "")).lower()) == me
               for p in out.get("passengers") or [])


def _airline_depth(seed: Tau2Task, actions: list[GoldAction], out: dict[str, Any], text: str, hidden: Any,
                   rng: random.Random) -> tuple[GoldAction, str, str, dict[str, Any]] | None:
    """(the added search, what the user asks, the answer, what it is about): the price of one seat in the
    reservation's cabin on a flight only B's output names, its route and date not in the scenario.  Only on a
    reservation the user flies on and never one the scenario cancels (or asks to); a flight with a trap (an
    answer a shortcut gets wrong: the economy price where the cabin is another, the reservation's second flight
    where "the later of your two flights on DATE" is another) preferred; the flight named by its date
    (:func:`_which_flight`)."""
    cabin = out.get("cabin")
    user = pristine("airline")[0].users.get(out.get("user_id"))
    if user is None or cancels(text, out["reservation_id"], list(user.reservations)) or not _flies(out):
        return None
    which = _which_reservation(out)
    if which is None:
        return None
    flights = [f for f in out["flights"] if hidden(f["flight_number"]) and not mentions(text, f["origin"])
               and not mentions(text, f["destination"])]
    rng.shuffle(flights)
    best = None
    for f in flights:
        said = _which_flight(out["flights"], f)
        if said is None:
            continue  # three flights or more that day: no plain way to say which
        if not _still_in_reservation(seed, out["reservation_id"], f, cabin):
            continue  # a later gold write moved the reservation off this flight (or to another cabin)
        step, row = _search_price(seed, actions, f)
        price = (row.get("prices") or {}).get(cabin) if row else None
        if not isinstance(price, (int, float)) or not (row.get("available_seats") or {}).get(cabin):
            continue
        traps = []
        economy = (row.get("prices") or {}).get("economy")
        if cabin != "economy" and isinstance(economy, (int, float)) and economy != price:
            traps.append({"shortcut": "the economy price (the cabin assumed, not read)", "answer": f"{economy:g}"})
        n = out["flights"].index(f)
        if said.startswith("the later") and n != 1:  # "the later of two": the reservation's second flight misleads
            _, other = _search_price(seed, actions, out["flights"][1])
            wrong = (other.get("prices") or {}).get(cabin) if other else None
            if isinstance(wrong, (int, float)) and wrong != price:
                traps.append({"shortcut": f"the reservation's second flight ({out['flights'][1]['flight_number']})",
                              "answer": f"{wrong:g}"})
        ask = (f"Before you end the call, say that a colleague may join you on {said} "
               f"(in {which}), in the same cabin as you: ask what one more seat in that cabin on that flight costs "
               "today. You do not remember that flight's number or its airports.")
        made = step, ask, f"{price:g}", {"flight": f["flight_number"], "cabin": cabin,
                                         **({"trap": traps} if traps else {})}
        if best is None or len(traps) > len(best[3].get("trap", [])):
            best = made
    return best


def _which_item(out: dict[str, Any], name: str, status_kept: bool = True) -> str | None:
    """How the customer says which item of the order: by its product's name, with the order's status where
    another of the user's orders holds that product too (only when ``status_kept``: the gold's writes leave the
    status as it was); None when that still fits another order."""
    db = pristine("retail")[0]
    user = db.users.get(out.get("user_id"))
    if user is None or out.get("order_id") not in db.orders:
        return None
    theirs = [db.orders[o] for o in user.orders if o in db.orders]
    for status in (None, status_word(db.orders[out["order_id"]])) if status_kept else (None,):
        if [o.order_id for o in theirs if order_matches(o, name, status)] == [out["order_id"]]:
            return f"the {name.lower()} you ordered" if status is None else \
                f"the {name.lower()} from your {status} order"
    return None


def money(x: float) -> str:
    """An amount as the agent may say it, cut so that "12.3" is found in "$12.30" (no trailing zeros)."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


#: How the customer asks for each retail follow-up ({which}: the item; {k}, {v}: an option and the value asked,
#: {mine}: the value the customer has).
ASKS = {
    "count": ("Before you end the call, ask whether you could buy {which} in other options right now, and how many "
              "such options are in stock (not counting the one you have).",
              "Before hanging up, ask how many other versions of {which} you could order today: only those "
              "actually in stock, and not the exact one you already have.",
              "At the end, you are curious: of the other options {which} comes in (yours left out), how many can be "
              "bought right now?"),
    "cheapest": ("Before you end the call, ask what the cheapest other option of {which} that is in stock right "
                 "now costs, and how much more or less that is than what you paid for yours.",
                 "Before hanging up, ask about {which}: among its other options that can be bought today, take the "
                 "cheapest one; what is the price difference between it and what you paid?"),
    "swap": ("Before you end the call, ask whether {which} also comes exactly like yours but with {k}: {v} (instead "
             "of {mine}), whether that one is in stock, and what it costs.",
             "Before hanging up, ask what {which} would cost in exactly your configuration except {k}: {v} instead of "
             "{mine}, and whether that version is available now."),
}


def _retail_asks(item: dict[str, Any], variants: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, answer, about) for each follow-up on the product's ``variants`` (get_product_details) that has a trap,
    an answer a shortcut gets wrong: ``count``, the other options in stock (every other option counted);
    ``cheapest``, the cheapest other option in stock against the price paid (out-of-stock ones counted);
    ``swap``, the price of the one option like the customer's but for one attribute (another option with that
    value, the first a shortcut finds, costs something else)."""
    mine, paid = item["item_id"], float(item["price"])
    others = [v for k, v in variants.items() if k != mine]
    stock = [v for v in others if v.get("available")]
    made = []
    if stock and len(stock) != len(others):
        made.append(("count", str(len(stock)), {"trap": [{"shortcut": "every other option counted, in stock or not",
                                                          "answer": str(len(others))}]}))
    if stock:
        low, low_all = min(v["price"] for v in stock), min(v["price"] for v in others)
        if low != low_all and sum(v["price"] == low for v in stock) == 1:
            made.append(("cheapest", money(abs(low - paid)),
                         {"cheapest": money(low), "paid": money(paid), "more": low > paid,
                          "trap": [{"shortcut": "the cheapest other option, out of stock or not",
                                    "answer": money(abs(low_all - paid))}]}))
    options = item.get("options") or {}
    for k in sorted(options):
        for v in sorted({str(x["options"].get(k)) for x in others} - {str(options[k]), "None"}):
            want = {**options, k: v}
            twin = [x for x in others if x.get("options") == want]
            near = [x for x in others if str(x["options"].get(k)) == v and x not in twin]
            if len(twin) == 1 and twin[0].get("available") and near and near[0]["price"] != twin[0]["price"]:
                made.append(("swap", money(twin[0]["price"]),
                             {"attribute": k, "value": v, "swap_item": twin[0]["item_id"],
                              "trap": [{"shortcut": f"the first option with {k} {v}, its other options not "
                                                    "compared", "answer": money(near[0]["price"])}]}))
    return made


def _kept(seed: Tau2Task, order_id: str, item_id: str) -> tuple[bool, bool]:
    """(the item stays the customer's after the seed's gold: no write names it and the order is not cancelled,
    the order's status after the gold is still the one it had)."""
    final = gold(seed).env.tools.db.orders.get(order_id)
    before = pristine("retail")[0].orders[order_id]
    written = json.dumps([a.arguments for a in seed.agent_actions if is_write(seed, a)])
    kept = final is not None and str(final.status) != "cancelled" and f"\"{item_id}\"" not in written
    return kept, final is not None and str(final.status) == str(before.status)


def _retail_depth(seed: Tau2Task, actions: list[GoldAction], out: dict[str, Any], text: str, hidden: Any,
                  rng: random.Random) -> tuple[GoldAction, str, str, dict[str, Any]] | None:
    """(the added read, what the user asks, the answer, what it is about): one follow-up on a product in the order
    (:func:`_retail_asks`: the other options in stock, the cheapest of them against the price paid, or the one
    like the customer's but for one attribute), drawn among those that have a trap, in one of several wordings.
    Only where the order holds one option of that product ("the one you have" is then one), on an order the
    scenario does not cancel (or ask to), an item the gold does not return, exchange or change (the customer
    keeps it), the order's status said only where the gold leaves it as it was."""
    user = pristine("retail")[0].users.get(out.get("user_id"))
    if user is None or cancels(text, out["order_id"], list(user.orders)):
        return None
    items = [i for i in out["items"] if hidden(i["product_id"])
             and sum(x.get("product_id") == i["product_id"] for x in out["items"]) == 1]
    rng.shuffle(items)
    for item in items:
        kept, same_status = _kept(seed, out["order_id"], item["item_id"])
        if not kept:
            continue
        step = GoldAction("get_product_details", {"product_id": item["product_id"]})
        details = replayed_output(seed, actions + [step])
        if not isinstance(details, dict) or not isinstance(details.get("variants"), dict):
            continue
        which = _which_item(out, item["name"], same_status)
        asks = _retail_asks(item, details["variants"])
        if which is None or not asks:
            continue
        kind = rng.choice(sorted({k for k, _, _ in asks}))  # the kind first: "swap" has one per attribute
        _, answer, about = rng.choice([a for a in asks if a[0] == kind])
        ask = rng.choice(ASKS[kind]).format(which=which, k=about.get("attribute"), v=about.get("value"),
                                            mine=(item.get("options") or {}).get(about.get("attribute")))
        return step, ask, answer, {"kind": kind, "item_id": item["item_id"], **about}
    return None


def _chainable(seed: Tau2Task) -> tuple[dict[str, Any], list[GoldAction], list[Any]] | None:
    """(instructions, agent actions, their outputs) of a seed a chain may extend: scenario instructions, only agent
    actions in its gold, no transfer to a human; else None."""
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    if ins is None or len(actions) != len(seed.gold_actions) or any(a.name == TRANSFER for a in actions):
        return None
    return ins, actions, outputs(seed)


def depth(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    chainable = _chainable(seed)
    if chainable is None:
        return None
    ins, actions, outs = chainable
    text = scenario_text(ins)
    earlier_arguments = json.dumps([a.arguments for a in actions])  # values the agent already had or passed
    for j in target_positions(actions, target):
        out = outs[j + 1]
        seen = json.dumps(outs[: j + 1])  # what the outputs before B already showed: not B's to give

        def hidden(value: str) -> bool:  # a value only B's output gives
            return not mentions(text, value) and f"\"{value}\"" not in earlier_arguments and f"\"{value}\"" not in seen

        if not isinstance(out, dict):
            continue
        if seed.domain == "airline" and isinstance(out.get("flights"), list) and out.get("reservation_id"):
            made = _airline_depth(seed, actions, out, text, hidden, rng)
        elif seed.domain == "retail" and isinstance(out.get("items"), list) and out.get("order_id"):
            made = _retail_depth(seed, actions, out, text, hidden, rng)
        else:
            continue
        if made is None:
            continue
        step, ask, fact, about = made
        if any(a.name == step.name and a.arguments == step.arguments for a in actions):
            continue  # the gold makes that call already: nothing new to chain
        new = dict(ins)
        new["task_instructions"] = f"{ins['task_instructions'].rstrip()}\n\n{ask}"
        # last, as the user asks for it: before ending the call (ACE's verifier checks the gold's order)
        return Draft(actions + [step], new, f"{step.name} on a value only {actions[j + 1].name}'s output gives; "
                     "the answer read off its result", communicate_info=[fact],
                     details={"added_step": step.name, "answer": fact, **about})
    return None


def _still_in_reservation(seed: Tau2Task, reservation: str, flight: dict[str, Any], cabin: Any) -> bool:
    """Whether the flight is still part of the reservation, in the same cabin, and the reservation not cancelled,
    once the seed's whole gold has run (a customer does not ask about a flight they just gave up)."""
    final = gold(seed).env.tools.db.reservations.get(reservation)
    return final is not None and getattr(final, "status", None) != "cancelled" and final.cabin == cabin \
        and any((f.flight_number, f.date) == (flight["flight_number"], flight["date"]) for f in final.flights)


# --------------------------------------------------------------------------- cascade

#: Free checked bags per passenger, by membership and cabin (airline policy.md, "Checked bag allowance").
FREE_BAGS = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 4}}


def cascade(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    chainable = _chainable(seed)
    if chainable is None:
        return None
    ins, actions, outs = chainable
    for j in target_positions(actions, target):
        if j + 2 != len(actions):
            continue  # B must be the seed's last action: "after B" is then unambiguous, for ACE's ordered check too
        b, out = actions[j + 1], outs[j + 1]
        if not isinstance(out, dict) or sum(a.name == b.name for a in actions) != 1:
            continue  # several writes of B's kind: "that reservation (order)" would not say which
        if seed.domain == "airline" and b.name == "update_reservation_flights":
            payment = b.arguments.get("payment_id")
            user = pristine("airline")[0].users.get(out.get("user_id"))
            if not isinstance(payment, str) or user is None or out.get("cabin") not in FREE_BAGS["regular"] \
                    or "bag" in scenario_text(ins).lower():
                continue  # a scenario that already speaks of bags would say two things about them
            allowance = FREE_BAGS[str(user.membership)]
            before = str(record("airline", out["reservation_id"]).cabin)  # the cabin before the change
            if before not in allowance or before == out["cabin"]:
                continue  # the allowance does not change: the stale one would give the same answer, no trap
            free = allowance[out["cabin"]] * len(out.get("passengers", []))
            # the fewest bags added (1 to 5) for which the allowance before the change gives another number to pay
            bags = next((n for n in range(1, 6) if max(0, int(out.get("total_baggages", 0)) + n - free)
                         != max(0, int(out.get("total_baggages", 0)) + n - allowance[before]
                                * len(out.get("passengers", [])))), None)
            if bags is None:
                continue
            total = int(out.get("total_baggages", 0)) + bags
            nonfree = max(0, total - free)
            stale = max(0, total - allowance[before] * len(out.get("passengers", [])))
            if nonfree < int(out.get("nonfree_baggages", 0)):
                continue  # the bags already paid for would say otherwise: not one clear answer
            second = GoldAction("update_reservation_baggages", {"reservation_id": out["reservation_id"],
                                "total_baggages": total, "nonfree_baggages": nonfree, "payment_id": payment})
            ask = (f"After the flight change is made, also add {NUMBER[bags]} checked "
                   f"bag{'s' if bags > 1 else ''} to that reservation; if it costs anything, pay with the same "
                   "payment method as the flight change.")
            what = ("update_reservation_baggages after the flight change: how many bags are not free follows from "
                    "the cabin, passengers and bags the change returns, and the membership")
            details = {"second_write": second.name, "nonfree_baggages": nonfree, "free_allowance": free,
                       "bags_added": bags, "cabin_before": before,
                       "trap": [{"shortcut": f"the allowance of the cabin before the change ({before})",
                                 "answer": str(stale)}]}
        # (an order's address change made the account's default is not made: the customer dictates the address,
        # nothing is read off an output and there is no trap; blind review s7, tasks 7 and 22)
        elif seed.domain == "retail" and isinstance(out.get("address"), dict) and isinstance(out.get("user_id"), str) \
                and is_write(seed, b) and not any("address" in a.name for a in actions):
            # any other write on an order: the order's shipping address, which only its output shows, becomes
            # the account's (the customer does not have it at hand); the account's own address is the shortcut
            current = pristine("retail")[0].users.get(out["user_id"])
            address = {k: out["address"].get(k) for k in ("address1", "address2", "city", "state", "country", "zip")}
            said = retail_description(out.get("order_id", ""))
            if current is None or said is None or {k: getattr(current.address, k, None) for k in address} == address:
                continue  # the order ships to the account's address: nothing to change, no trap
            second = GoldAction("modify_user_address", {"user_id": out["user_id"], **address})
            verb = "was to ship" if b.name == "cancel_pending_order" else "ships"
            ask = (f"One more thing, once that is done: you have moved for good to the address {said[0]} {verb} to, "
                   "but you do not have it at hand. You want everything you order from now on to go there.")
            what = ("modify_user_address with the shipping address and the user the order's output shows (after "
                    f"{b.name})")
            details = {"second_write": second.name, "answer": address["address1"],
                       "trap": [{"shortcut": "the account's address, left as it is", "answer":
                                 str(current.address.address1)}]}
        else:
            continue
        if any(a.name == second.name and a.arguments == second.arguments for a in actions):
            continue  # the seed makes it already
        new = dict(ins)
        new["task_instructions"] = f"{ins['task_instructions'].rstrip()}\n\n{ask}"
        return Draft(actions + [second], new, what, drop_nl_assertions=True,
                     details=details)
    return None

