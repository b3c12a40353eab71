"""The five τ² synthesis strategies: each turns a seed task holding the target composition A>B into a new task.

A strategy reads a τ² seed (its user instructions, its gold actions, their replayed outputs and the domain
database, never written) and the target ``(A, B)``, a pair of tool names adjacent in the seed's gold, and
returns a :class:`Draft` (new gold actions, new user instructions, what changed) or None when the seed
cannot carry it.  What each does, and why the new user scenario asks for exactly what the new gold does:

``distractor``
    The task's database gains a *look-alike*: a copy of the reservation (order) the target's B acts on,
    under a near-twin id (two adjacent characters of the id swapped), listed among the user's
    reservations (orders), which the gold reads before it writes.  The scenario and the gold stay the seed's:
    the scenario names the right id and never the look-alike.  It is a live trap (checked by replay):
    the first write on the entity from B on, made on the look-alike instead, runs without an error and
    leaves another database, so an agent that confuses the two ids fails τ²'s DB check.  The addition is
    the task's ``initial_state.initialization_data`` (τ²'s own mechanism), so τ² loads the same state.
``ambiguity``
    The seed's scenario names the entity A or B acts on by its id; the new one describes it instead
    (airline: the trip's origin and destination, with the date when needed; retail: the items in the
    order), a description that fits exactly one of the user's reservations (orders) in the database.  The
    gold gains the reads that resolve it (the user's details, then the entity's details) before its first
    use: the agent must call A to disambiguate before B.
``depth``
    One more dependent step, last (the user asks for it before ending the call): a read whose argument
    first appears in B's output (airline: the status of a flight of the reservation B returns,
    ``get_flight_status``, whose flight number the scenario never says; retail: how many options of a
    product in the order B returns are available, ``get_product_details``).  The answer goes into
    ``communicate_info``.
``cascade``
    A second write right after the write B, the seed's last action, whose arguments depend on B's result
    (airline: after a flight change, one more checked bag; how many of the bags are not free depends on
    the cabin, passengers and bags B's result shows, and the user's membership; retail: after an order's
    address changes, the same address becomes the user's default, for the user B's result names).

``lookalike`` (retail)
    The task's database gains a look-alike of the order the target acts on, which the scenario describes and
    never names by id: the same order under fresh ids (order, tracking), listed before it among the user's orders,
    with one item the scenario names replaced by a catalogue variant of another product
    (:mod:`ace_env.tau2.lookalike`); only when that item is held by exactly one of the user's orders.  An exact match on what the agent sees first finds the
    look-alike; only relating the items to the request tells them apart.  A live trap (checked by replay) as
    the distractor's: the first write on the order, taken on the look-alike, runs and leaves another database.

New steps go last, after everything the seed's gold does, as the user asks for them: ACE's verifier
checks the gold's order.

Every draft is checked afterwards by the one pipeline (:mod:`synth.pipeline`, through τ²'s
:mod:`ace_env.tau2.synthesis`): the target still adjacent, the gold valid for ACE's verifier and τ²'s evaluator,
every identifier grounded, and the checks each strategy declares with it (:data:`STRATEGIES`, at the end of this
module, which the one registry, :mod:`synth.registry`, registers for τ² tasks).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from ace_env.synthesis import Candidate, Check, Declared
from ace_env.tau2.cow import cow_diff
from ace_env.tau2.env import Tau2Call, pristine, raw_task, run_calls, tool_kinds
from ace_env.tau2.lookalike import donors, look_alike, picks_one
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import gold

#: The id argument of each domain's main entity (what a near-miss or a description stands for).
ENTITY = {"airline": "reservation_id", "retail": "order_id"}
NOUN = {"airline": "reservation", "retail": "order"}
READ = {"airline": "get_reservation_details", "retail": "get_order_details"}
TRANSFER = "transfer_to_human_agents"


@dataclass
class Draft:
    """What a strategy made: the new gold agent actions, the new user instructions, and notes for the checks."""

    actions: list[GoldAction]
    instructions: dict[str, Any]
    what: str  # one line: what the strategy did (the task's description and provenance)
    communicate_info: list[str] = field(default_factory=list)
    drop_nl_assertions: bool = False
    trap: dict[str, Any] | None = None  # distractor: {"entity", "actions"} (the gold with the look-alike taken)
    agent_data: dict[str, Any] | None = None  # distractor: the records added to the task's database
    details: dict[str, Any] = field(default_factory=dict)  # provenance extras


# --------------------------------------------------------------------------- helpers


def instructions_of(seed: Tau2Task) -> dict[str, Any] | None:
    """The seed's structured user instructions as a dict (None: τ²'s free-text form, which is not edited)."""
    ins = raw_task(seed.domain, seed.tau2_id).user_scenario.instructions
    return ins.model_dump(mode="json") if hasattr(ins, "model_dump") else None


def target_positions(actions: list[GoldAction] | tuple[GoldAction, ...], target: tuple[str, str]) -> list[int]:
    """Every ``j`` where gold agent action ``j`` is A and ``j + 1`` is B."""
    return [j for j in range(len(actions) - 1) if (actions[j].name, actions[j + 1].name) == tuple(target)]


def outputs(seed: Tau2Task) -> list[Any]:
    """Each gold agent action's replayed output, parsed from JSON where it is JSON."""
    out = []
    for s in gold(seed).steps:
        if s.call.requestor != "assistant":
            continue
        try:
            out.append(json.loads(s.content))
        except ValueError:
            out.append(s.content)
    return out


def scenario_text(ins: dict[str, Any]) -> str:
    return "\n".join(str(ins.get(k) or "") for k in ("reason_for_call", "known_info", "unknown_info",
                                                       "task_instructions"))


def mentions(text: str, value: str) -> bool:
    return value in text or value.lstrip("#") in text


def owner(domain: str, entity: str) -> str | None:
    db = pristine(domain)[0]
    table = db.reservations if domain == "airline" else db.orders
    rec = table.get(entity) if entity in table else None  # pristine dicts: reading never copies
    return rec.user_id if rec is not None else None


def entities_of(domain: str, user_id: str) -> list[str]:
    user = pristine(domain)[0].users.get(user_id)
    if user is None:
        return []
    return list(user.reservations if domain == "airline" else user.orders)


def record(domain: str, entity: str) -> Any:
    db = pristine(domain)[0]
    return (db.reservations if domain == "airline" else db.orders)[entity]


def describe(domain: str, entity: str, with_date: bool = False) -> str:
    """A description the user can give of their reservation (order) without its id."""
    r = record(domain, entity)
    if domain == "airline":
        trip = "round trip" if r.flight_type == "round_trip" else "one-way trip"
        text = f"your {trip} reservation from {r.origin} to {r.destination}"
        return f"{text} departing {r.flights[0].date}" if with_date and r.flights else text
    names = sorted({i.name for i in r.items})
    return "your order with " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])


def unique_description(domain: str, entity: str) -> str | None:
    """A description that fits ``entity`` and none of its owner's other reservations (orders), or None."""
    others = [e for e in entities_of(domain, owner(domain, entity) or "") if e != entity]
    for with_date in (False, True):
        text = describe(domain, entity, with_date)
        if all(describe(domain, e, with_date) != text for e in others):
            return text
    return None


def _id_of(action: GoldAction, key: str) -> str | None:
    v = action.arguments.get(key)
    return v if isinstance(v, str) else None


def _first_use(actions: list[GoldAction], value: str) -> int | None:
    for i, a in enumerate(actions):
        if value in json.dumps(a.arguments):
            return i
    return None


# --------------------------------------------------------------------------- distractor


#: The table of each domain's main entity; a user's field listing their entities has the same name.
TABLE = {"airline": "reservations", "retail": "orders"}


def twin_id(domain: str, entity: str, rng: random.Random, taken: set[str]) -> str | None:
    """A near-twin of ``entity``'s id, two adjacent different characters swapped (retail's ``#W`` kept), that
    no record has; None when there is none."""
    chars = list(entity)
    start = 2 if domain == "retail" else 0
    spots = [i for i in range(start, len(chars) - 1) if chars[i] != chars[i + 1]]
    rng.shuffle(spots)
    for i in spots:
        twin = chars[:]
        twin[i], twin[i + 1] = twin[i + 1], twin[i]
        if "".join(twin) not in taken:
            return "".join(twin)
    return None


def distractor(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    key, noun, table = ENTITY[seed.domain], NOUN[seed.domain], TABLE[seed.domain]
    if ins is None or len(actions) != len(seed.gold_actions):
        return None
    text = scenario_text(ins)
    for j in target_positions(actions, target):
        entity = _id_of(actions[j + 1], key)  # B acts on it: the choice of record is made there
        if not entity or not mentions(text, entity):
            continue
        writes = [i for i in range(j + 1, len(actions)) if _id_of(actions[i], key) == entity and _is_write(seed, actions[i])]
        user = owner(seed.domain, entity)
        if not writes or user is None:
            continue
        w = writes[0]
        # the agent has seen the user's list, look-alike included, before it writes
        if not any(a.name == "get_user_details" and a.arguments.get("user_id") == user for a in actions[:w]):
            continue
        twin = twin_id(seed.domain, entity, rng, set(getattr(pristine(seed.domain)[0], table)))
        if twin is None or mentions(text, twin):
            continue
        copy = {**record(seed.domain, entity).model_dump(mode="json"), key: twin}
        listing = list(entities_of(seed.domain, user))
        listing.insert(listing.index(entity) + 1 if entity in listing else len(listing), twin)
        lured = GoldAction(actions[w].name, {**actions[w].arguments, key: twin}, "assistant", actions[w].compare_args)
        return Draft(actions, dict(ins), f"look-alike {noun} {twin} ({entity} with two characters swapped, the same "
                     f"{noun} otherwise) added to the user's {noun}s; {actions[w].name} on it would run",
                     trap={"entity": twin, "actions": actions[:w] + [lured] + actions[w + 1:]},
                     agent_data={table: {twin: copy}, "users": {user: {table: listing}}},
                     details={"look_alike": twin, "of": entity, "lured_step": w})
    return None


def _is_write(seed: Tau2Task, a: GoldAction) -> bool:
    return tool_kinds(seed.domain).get(("assistant", a.name)) == "write"


# --------------------------------------------------------------------------- ambiguity


def _replace_id(text: str, value: str, phrase: str, noun: str) -> str:
    """``text`` with every mention of ``value`` (with or without a leading #) replaced by ``phrase``; a
    wording like "reservation id ABC123" or "the order #W1" is replaced whole."""
    if value.lstrip("#") not in text:
        return text
    bare = re.escape(value.lstrip("#"))
    # a sentence that states the id ("Your reservation ID is ABC123.", "The reservation ID is ABC123 for your
    # DTW to LGA trip.") goes: the user no longer knows it, and what qualifies the id goes with it
    text = re.sub(rf"(?m)^[ \t]*(?:[Tt]he|[Yy]our)\s+{noun}\s+(?:id|ID|Id|number)\s+is\s+#?{bare}\b[^.\n]*\.?[ \t]*$",
                  "", text)
    lead = rf"(?:(?:[Tt]he|[Yy]our)\s+)?(?:{noun}\s+)?(?:(?:id|ID|number|Id)\s+)?(?:(?:is|of)\s+)?"
    return re.sub(rf"{lead}#?{bare}\b", phrase, text).strip()


def _listed_with_others(text: str, value: str) -> bool:
    """Whether ``value`` is named in a list of ids ("reservation IDs XEHM4B and 59XX6W"): a description
    spliced into the list would not read as a sentence, so the strategy leaves such a seed alone."""
    bare = re.escape(value.lstrip("#"))
    other = r"#?[A-Z0-9][A-Z0-9]{4,}"
    return bool(re.search(rf"\b(?:ids|IDs|Ids|numbers)\b[^.\n]*#?{bare}\b", text)
                or re.search(rf"#?{bare}\b\s*(?:,|and|or)\s+{other}\b", text)
                or re.search(rf"\b{other}\s*(?:,|and|or)\s+#?{bare}\b", text))


def _described(ins: dict[str, Any], entity: str, phrase: str, noun: str) -> dict[str, Any] | None:
    """The user instructions with ``entity``'s id replaced by ``phrase`` and the id said to be forgotten;
    None when the id would still be in them."""
    new = {k: (_replace_id(v, entity, phrase, noun) if isinstance(v, str) else v) for k, v in ins.items()}
    if mentions(scenario_text(new), entity):
        return None
    forgot = f"You do not remember the {noun} id of {phrase}."
    new["unknown_info"] = f"{new['unknown_info'].rstrip()}\n{forgot}" if new.get("unknown_info") else forgot
    return new


def _with_reads(actions: list[GoldAction], entity: str, user: str, domain: str) -> list[GoldAction]:
    """The gold with the reads that find a described entity before its first use: the user's details (which
    list the candidates), then the entity's details."""
    key, read = ENTITY[domain], READ[domain]
    out = list(actions)
    first = _first_use(out, entity)
    if out[first].name != read:
        out.insert(first, GoldAction(read, {key: entity}))
    if not any(x.name == "get_user_details" and x.arguments.get("user_id") == user for x in out[:first]):
        out.insert(first, GoldAction("get_user_details", {"user_id": user}))
    return out


def ambiguity(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    key, noun = ENTITY[seed.domain], NOUN[seed.domain]
    if ins is None or len(actions) != len(seed.gold_actions):
        return None
    text = scenario_text(ins)
    for j in target_positions(actions, target):
        for a in (actions[j + 1], actions[j]):
            entity = _id_of(a, key)
            if not entity or not mentions(text, entity) or _listed_with_others(text, entity):
                continue
            phrase = unique_description(seed.domain, entity)
            user = owner(seed.domain, entity)
            if phrase is None or user is None:
                continue
            new = _described(ins, entity, phrase, noun)
            if new is None:
                continue
            out = _with_reads(actions, entity, user, seed.domain)
            return Draft(out, new, f"{noun} {entity} described ({phrase}) instead of named; the agent reads the "
                         f"user's {noun}s to find it", details={"described": entity, "description": phrase})
    return None


# --------------------------------------------------------------------------- depth


def depth(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    if ins is None or len(actions) != len(seed.gold_actions) or any(a.name == TRANSFER for a in actions):
        return None
    outs = outputs(seed)
    text = scenario_text(ins)
    earlier_arguments = json.dumps([a.arguments for a in actions])  # values the agent already had or passed
    for j in target_positions(actions, target):
        out = outs[j + 1]
        seen = json.dumps(outs[: j + 1])  # what the outputs before B already showed: not B's to give
        if not isinstance(out, dict):
            continue
        if seed.domain == "airline" and isinstance(out.get("flights"), list) and out.get("reservation_id"):
            flights = [f for f in out["flights"] if not mentions(text, f["flight_number"])  # a value only B's
                       and f"\"{f['flight_number']}\"" not in earlier_arguments  # output gives
                       and f"\"{f['flight_number']}\"" not in seen]
            if not flights:
                continue
            f = rng.choice(flights)
            step = GoldAction("get_flight_status", {"flight_number": f["flight_number"], "date": f["date"]})
            trip = "round trip" if out.get("flight_type") == "round_trip" else "one-way trip"
            ask = (f"Before you end the call, also ask what the current status is of your flight from {f['origin']} "
                   f"to {f['destination']} on {f['date']} (part of your {trip} reservation from {out.get('origin')} "
                   f"to {out.get('destination')}); you do not know its flight number.")
            if not _still_in_reservation(seed, out["reservation_id"], f):
                continue  # a later gold write moved the reservation off this flight
            fact = _replayed_output(seed, actions + [step])
            what = f"{step.name} on a flight only {actions[j + 1].name}'s output names"
        elif seed.domain == "retail" and isinstance(out.get("items"), list) and out.get("order_id"):
            items = [i for i in out["items"] if not mentions(text, i["product_id"])
                     and f"\"{i['product_id']}\"" not in seen and f"\"{i['product_id']}\"" not in earlier_arguments]
            if not items:
                continue
            item = rng.choice(items)
            step = GoldAction("get_product_details", {"product_id": item["product_id"]})
            ask = (f"Before you end the call, also ask how many options of the {item['name']} (the one in "
                   f"{describe('retail', out['order_id'])}) are available right now; you do not know its product id.")
            details = _replayed_output(seed, actions + [step])
            if not isinstance(details, dict) or not isinstance(details.get("variants"), dict):
                continue
            fact = str(sum(bool(v.get("available")) for v in details["variants"].values()))
            what = f"{step.name} on a product only {actions[j + 1].name}'s output names"
        else:
            continue
        if not isinstance(fact, str) or not fact:
            continue
        if any(a.name == step.name and a.arguments == step.arguments for a in actions):
            continue  # the gold makes that call already: nothing new to chain
        new = dict(ins)
        new["task_instructions"] = f"{ins['task_instructions'].rstrip()}\n\n{ask}"
        # last, as the user asks for it: before ending the call (ACE's verifier checks the gold's order)
        return Draft(actions + [step], new, what, communicate_info=[fact],
                     details={"added_step": step.name, "answer": fact})
    return None


def _still_in_reservation(seed: Tau2Task, reservation: str, flight: dict[str, Any]) -> bool:
    """Whether the flight is still part of the reservation, and the reservation not cancelled, once the seed's
    whole gold has run (a customer does not ask for the status of a flight they just gave up)."""
    final = gold(seed).env.tools.db.reservations.get(reservation)
    return final is not None and getattr(final, "status", None) != "cancelled" and any((f.flight_number, f.date) == (flight["flight_number"], flight["date"])
                                     for f in final.flights)


def _replayed_output(seed: Tau2Task, actions: list[GoldAction]) -> Any:
    """The last action's output when ``actions`` run from the seed's initial state (parsed JSON or text)."""
    steps, _ = run_calls(seed.domain, seed.tau2_id, [Tau2Call(a.name, dict(a.arguments)) for a in actions])
    last = steps[-1]
    if last.error:
        return None
    try:
        return json.loads(last.content)
    except ValueError:
        return last.content


# --------------------------------------------------------------------------- cascade

#: Free checked bags per passenger, by membership and cabin (airline policy.md, "Checked bag allowance").
FREE_BAGS = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 4}}


def cascade(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    if ins is None or len(actions) != len(seed.gold_actions) or any(a.name == TRANSFER for a in actions):
        return None
    outs = outputs(seed)
    for j in target_positions(actions, target):
        if j + 2 != len(actions):
            continue  # B must be the seed's last action: "after B" is then unambiguous, for ACE's ordered check too
        b, out = actions[j + 1], outs[j + 1]
        if not isinstance(out, dict):
            continue
        if seed.domain == "airline" and b.name == "update_reservation_flights":
            payment = b.arguments.get("payment_id")
            user = pristine("airline")[0].users.get(out.get("user_id"))
            if not isinstance(payment, str) or user is None or out.get("cabin") not in FREE_BAGS["regular"] \
                    or "bag" in scenario_text(ins).lower():
                continue  # a scenario that already speaks of bags would say two things about them
            free = FREE_BAGS[str(user.membership)][out["cabin"]] * len(out.get("passengers", []))
            total = int(out.get("total_baggages", 0)) + 1
            nonfree = max(0, total - free)
            if nonfree < int(out.get("nonfree_baggages", 0)):
                continue  # the bags already paid for would say otherwise: not one clear answer
            second = GoldAction("update_reservation_baggages", {"reservation_id": out["reservation_id"],
                                "total_baggages": total, "nonfree_baggages": nonfree, "payment_id": payment})
            ask = ("After the flight change is made, also add one checked bag to that reservation; if it costs "
                   "anything, pay with the same payment method as the flight change.")
            what = ("update_reservation_baggages after the flight change: how many bags are not free follows from "
                    "the cabin, passengers and bags the change returns, and the membership")
            details = {"second_write": second.name, "nonfree_baggages": nonfree, "free_allowance": free}
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
            ask = ("After the order's shipping address is changed, also ask to make that same address your default "
                   "address.")
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


# --------------------------------------------------------------------------- lookalike


def lookalike(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    if seed.domain != "retail" or ins is None or len(actions) != len(seed.gold_actions):
        return None
    text = scenario_text(ins)
    low = text.lower()
    db = pristine("retail")[0]
    for j in target_positions(actions, target):
        for a in (actions[j + 1], actions[j]):
            entity = _id_of(a, "order_id")
            if not entity or mentions(text, entity) or entity not in db.orders:
                continue  # named by its id, an exact match finds it: the look-alike must be told apart by content
            writes = [i for i in range(j, len(actions)) if _id_of(actions[i], "order_id") == entity
                      and _is_write(seed, actions[i])]
            user = owner("retail", entity)
            if not writes or user is None:
                continue
            w = writes[0]
            if not any(x.name == "get_user_details" and x.arguments.get("user_id") == user for x in actions[:w]):
                continue
            real = record("retail", entity).model_dump(mode="json")
            written = json.dumps(actions[w].arguments)
            names = {i["name"] for i in real["items"]}
            theirs = [record("retail", o).model_dump(mode="json") for o in entities_of("retail", user)]
            told = [i for i in real["items"] if i["item_id"] not in written and picks_one(text, i["name"], theirs)]
            pool = donors(names, low)
            if not told or not pool or len(real["items"]) < 2:
                continue  # one item only: the look-alike would share nothing with it but the address
            swap = rng.choice(told)
            copy = look_alike(real, swap, rng.choice(pool), rng)
            if not picks_one(text, swap["name"], theirs + [copy]):
                continue  # naming the item must pick exactly one of the user's orders, the look-alike among them
            twin, name = copy["order_id"], next(i["name"] for i in copy["items"] if i["name"] not in names)
            listing = list(entities_of("retail", user))
            listing.insert(listing.index(entity) if entity in listing else 0, twin)  # listed first: met first
            lured = GoldAction(actions[w].name, {**actions[w].arguments, "order_id": twin}, "assistant",
                               actions[w].compare_args)
            return Draft(actions, dict(ins), f"look-alike order {twin}: {entity} with its {swap['name']} (which the "
                         f"scenario names) replaced by {name} (a catalogue variant), listed before it; "
                         f"{actions[w].name} on it would run",
                         trap={"entity": twin, "actions": actions[:w] + [lured] + actions[w + 1:]},
                         agent_data={"orders": {twin: copy}, "users": {user: {"orders": listing}}},
                         details={"look_alike": twin, "of": entity, "told_apart_by": swap["name"], "lured_step": w})
    return None


# --------------------------------------------------------------------------- the strategies' own checks

TRAP_NOT_LIVE = "trap_not_live"
NOT_TOLD_APART = "not_told_apart"
STILL_NAMED = "still_named"
ANSWER_IN_SCENARIO = "answer_in_scenario"


def trap_problems(c: Candidate) -> list[str]:
    """distractor: the gold never writes the look-alike, and the look-alike taken instead must run without an
    error and leave another database."""
    task, draft = c.task, c.draft
    if draft.trap is None:
        return []
    steps, env = run_calls(task.domain, task.tau2_id, [Tau2Call(a.name, dict(a.arguments))
                                                      for a in draft.trap["actions"]])
    kinds = tool_kinds(task.domain)
    touched = any(draft.trap["entity"] in json.dumps(a.arguments) for a in task.gold_actions
                  if kinds.get((a.requestor, a.name)) == "write")  # read it may; write it, never
    if touched or any(s.error for s in steps) or not cow_diff(env.tools.db, gold(task).env.tools.db):
        return [f"the look-alike {draft.trap['entity']} is not a live trap"]
    return []


def told_apart_problems(c: Candidate) -> list[str]:
    """lookalike: the scenario names an item exactly one of the user's orders holds (the look-alike included), and
    never the look-alike's id."""
    text, d = c.task.user_scenario, c.draft.details
    orders = [record("retail", o).model_dump(mode="json") for o in entities_of("retail", owner("retail", d["of"]))]
    if not picks_one(text, d["told_apart_by"], orders + [c.draft.agent_data["orders"][d["look_alike"]]]) \
            or mentions(text, d["look_alike"]):
        return [f"the scenario does not tell {d['of']} from {d['look_alike']} by its {d['told_apart_by']}"]
    return []


def still_named_problems(c: Candidate) -> list[str]:
    """ambiguity: the scenario no longer says the described entity's id."""
    described = c.draft.details["described"]
    return [f"the scenario still names {described}"] if mentions(c.task.user_scenario, described) else []


def answer_problems(c: Candidate) -> list[str]:
    """depth: the new step's argument is not in the scenario (only B's output gives it)."""
    task, text = c.task, c.task.user_scenario
    added = next(a for a in task.agent_actions if a.name == c.draft.details["added_step"])
    return [f"the scenario says {v!r}, an argument of {added.name}" for v in added.arguments.values()
            if isinstance(v, str) and v in text and v != added.arguments.get("date")][:1]


# --------------------------------------------------------------------------- declared (for the one registry)

#: τ²'s strategies, in the plans' order: ambiguity, distractor, cascade, depth, lookalike (the fifth, added last: the other plans keep their ids).  The names and depths are their
#: BFCL counterparts' (synth.strategies); :mod:`synth.registry` registers them for τ² tasks.
STRATEGIES: tuple[Declared, ...] = (
    Declared("ambiguity", depth=2, build=ambiguity,
             definition="the scenario describes the reservation (order) A or B acts on instead of naming its id; the "
                        "gold gains the reads that find it",
             needs="an id the scenario names, whose owner's other reservations (orders) a description tells apart",
             checks=(Check(STILL_NAMED, still_named_problems),)),
    Declared("distractor", depth=2, build=distractor,
             definition="a look-alike of the reservation (order) B acts on, under a near-twin id, joins the user's "
                        "list; taking it instead runs and leaves another database",
             needs="B acts on an entity the scenario names and the gold reads the user's list before it writes",
             checks=(Check(TRAP_NOT_LIVE, trap_problems),)),
    Declared("cascade", depth=3, build=cascade,
             definition="a second write after B, the seed's last action, whose arguments depend on B's result",
             needs="B is the seed's last action and a flight change (airline) or an order's address change (retail)",
             checks=()),
    Declared("depth", depth=4, build=depth,
             definition="one more dependent read, last, whose argument first appears in B's output; its answer is "
                        "communicated",
             needs="B's output names a flight (airline) or a product (retail) nothing earlier shows",
             checks=(Check(ANSWER_IN_SCENARIO, answer_problems),)),
    Declared("lookalike", depth=2, build=lookalike,
             definition="a look-alike of the order the target acts on, under a fresh id and listed first, the same "
                        "but for one item the scenario names; taking it instead runs and leaves another database",
             needs="retail: an order the scenario describes (not by id) with an item it names that the write does "
                   "not, the user's list read before the write",
             checks=(Check(NOT_TOLD_APART, told_apart_problems), Check(TRAP_NOT_LIVE, trap_problems))),
)
