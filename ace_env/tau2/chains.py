"""τ²'s two strategies that lengthen a seed's gold past B: ``depth`` (one more dependent read, last) and
``cascade`` (a second write after B).  See :mod:`ace_env.tau2.strategies` for what each must do.

``depth``'s added read consumes B's output and its answer depends on what the read returns, so an agent that
does not make it cannot guess it: airline, the price of one more seat in the reservation's cabin on one of its
flights (``search_direct_flight`` on that flight's route and date, the flight found by its number in the result,
the price by the cabin B's output shows); retail, how many *other* options of a product in the order B returns
are available now (``get_product_details``, the variants counted but for the one the order holds).  The user
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
    mentions,
    order_matches,
    outputs,
    record,
    replayed_output,
    scenario_text,
    status_word,
    target_positions,
)
from ace_env.tau2.env import pristine
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import gold

ORDINAL = ("first", "second", "third", "fourth", "fifth", "sixth")
NUMBER = ("no", "one", "two", "three", "four", "five")
#: A scenario that cancels, or asks to cancel, something: no depth add-on about keeping a trip (an order) there.
CANCEL = re.compile(r"(?i)\bcancel")


def cancels(text: str, entity: str, theirs: list[str]) -> bool:
    """Whether the scenario may cancel (or ask to cancel) ``entity``: it speaks of cancelling, unless it names
    another of the user's reservations (orders) by id and never this one (what it cancels is then that one)."""
    if not CANCEL.search(text):
        return False
    return mentions(text, entity) or not any(mentions(text, e) for e in theirs if e != entity)


def _which_flight(flights: list[dict[str, Any]], f: dict[str, Any]) -> str:
    """How the customer says which flight of the reservation, without its number or airports: by its date, with
    its place among that day's flights where there are several."""
    same_day = [x for x in flights if x["date"] == f["date"]]
    if len(same_day) == 1:
        return f"your flight on {f['date']}"
    return f"the {ORDINAL[same_day.index(f)]} of your flights on {f['date']}"


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
    answer a shortcut gets wrong: the economy price where the cabin is another, or the price on the
    reservation's own n-th flight where "the n-th of your flights on DATE" is another flight) preferred."""
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
        said = _which_flight(out["flights"], f)
        if said.startswith("the "):  # "the n-th of your flights on DATE": the reservation's n-th flight misleads
            n = ORDINAL.index(said.split()[1])
            g = out["flights"][n] if n < len(out["flights"]) else None
            if g is not None and g["flight_number"] != f["flight_number"]:
                _, other = _search_price(seed, actions, g)
                wrong = (other.get("prices") or {}).get(cabin) if other else None
                if isinstance(wrong, (int, float)) and wrong != price:
                    traps.append({"shortcut": f"the reservation's {ORDINAL[n]} flight ({g['flight_number']})",
                                  "answer": f"{wrong:g}"})
        ask = (f"Before you end the call, say that a colleague may join you on {said} "
               f"(in {which}), in the same cabin as you: ask what one more seat in that cabin on that flight costs "
               "today. You do not remember that flight's number or its airports.")
        made = step, ask, f"{price:g}", {"flight": f["flight_number"], "cabin": cabin,
                                         **({"trap": traps} if traps else {})}
        if best is None or len(traps) > len(best[3].get("trap", [])):
            best = made
    return best


def _which_item(out: dict[str, Any], name: str) -> str | None:
    """How the customer says which item of the order: by its product's name, with the order's status where
    another of the user's orders holds that product too; None when that still fits another order."""
    db = pristine("retail")[0]
    user = db.users.get(out.get("user_id"))
    if user is None or out.get("order_id") not in db.orders:
        return None
    theirs = [db.orders[o] for o in user.orders if o in db.orders]
    for status in (None, status_word(db.orders[out["order_id"]])):
        if [o.order_id for o in theirs if order_matches(o, name, status)] == [out["order_id"]]:
            return f"the {name.lower()} you ordered" if status is None else \
                f"the {name.lower()} from your {status} order"
    return None


def _retail_depth(seed: Tau2Task, actions: list[GoldAction], out: dict[str, Any], text: str, hidden: Any,
                  rng: random.Random) -> tuple[GoldAction, str, str, dict[str, Any]] | None:
    """(the added read, what the user asks, the answer, what it is about): how many other options of a product in
    the order are available now, its own option not counted.  Only where the order holds one option of that
    product ("the one you have" is then one), on an order the scenario does not cancel (or ask to), and with a
    trap: some other options are out of stock, so counting every option gives another answer."""
    user = pristine("retail")[0].users.get(out.get("user_id"))
    if user is None or cancels(text, out["order_id"], list(user.orders)):
        return None
    items = [i for i in out["items"] if hidden(i["product_id"])
             and sum(x.get("product_id") == i["product_id"] for x in out["items"]) == 1]
    rng.shuffle(items)
    for item in items:
        step = GoldAction("get_product_details", {"product_id": item["product_id"]})
        details = replayed_output(seed, actions + [step])
        if not isinstance(details, dict) or not isinstance(details.get("variants"), dict):
            continue
        others = [v for k, v in details["variants"].items() if k != item["item_id"]]
        other = sum(bool(v.get("available")) for v in others)
        if other == len(others):
            continue  # every option in stock: counting them all is right too, no trap
        which = _which_item(out, item["name"])
        if which is None:
            continue
        ask = (f"Before you end the call, ask whether you could buy {which} in other options right now, and how "
               "many such options are in stock (not counting the one you have).")
        trap = [{"shortcut": "every other option counted, in stock or not", "answer": str(len(others))}]
        return step, ask, str(other), {"item_id": item["item_id"], "trap": trap}
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
        elif seed.domain == "retail" and b.name == "modify_pending_order_address":
            user = out.get("user_id")
            if not isinstance(user, str):
                continue
            address = {k: b.arguments[k] for k in ("address1", "address2", "city", "state", "country", "zip")
                       if k in b.arguments}
            current = pristine("retail")[0].users.get(user)
            if current is None or {k: getattr(current.address, k, None) for k in address} == address:
                continue  # already the default address: the write would change nothing, so test nothing
            second = GoldAction("modify_user_address", {"user_id": user, **address})
            ask = ("You are moving to that address for good: once the order is sorted out, you want everything you "
                   "order from now on to go there as well.")
            what = "modify_user_address with the address and the user the order's address change returns"
            details = {"second_write": second.name}
        else:
            continue
        if any(a.name == second.name and a.arguments == second.arguments for a in actions):
            continue  # the seed makes it already
        new = dict(ins)
        new["task_instructions"] = f"{ins['task_instructions'].rstrip()}\n\n{ask}"
        return Draft(actions + [second], new, what, drop_nl_assertions=True,
                     details=details)
    return None

