"""What τ²'s synthesis strategies share: the :class:`Draft` a strategy returns, and readers of a seed task (its
instructions, its gold's replayed outputs) and of the domain's pristine database (an entity's owner, the user's
entities, a description of one that fits it alone).  :mod:`ace_env.tau2.strategies` (ambiguity, distractor,
lookalike) and :mod:`ace_env.tau2.chains` (depth, cascade) build on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ace_env.tau2.cow import cow_diff
from ace_env.tau2.env import Tau2Call, pristine, raw_task, run_calls, tool_kinds
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


def id_of(action: GoldAction, key: str) -> str | None:
    v = action.arguments.get(key)
    return v if isinstance(v, str) else None


def first_use(actions: list[GoldAction], value: str) -> int | None:
    for i, a in enumerate(actions):
        if value in json.dumps(a.arguments):
            return i
    return None


#: The table of each domain's main entity; a user's field listing their entities has the same name.
TABLE = {"airline": "reservations", "retail": "orders"}


def is_write(seed: Tau2Task, a: GoldAction) -> bool:
    return tool_kinds(seed.domain).get(("assistant", a.name)) == "write"


def replayed_output(seed: Tau2Task, actions: list[GoldAction]) -> Any:
    """The last action's output when ``actions`` run from the seed's initial state (parsed JSON or text)."""
    steps, _ = run_calls(seed.domain, seed.tau2_id, [Tau2Call(a.name, dict(a.arguments)) for a in actions])
    last = steps[-1]
    if last.error:
        return None
    try:
        return json.loads(last.content)
    except ValueError:
        return last.content


# --------------------------------------------------------------------------- descriptions (ambiguity)

#: How a customer says an order's status (retail's statuses as τ²'s database holds them).
STATUS_WORDS = {"pending": "pending", "pending (item modified)": "pending", "processed": "processed",
                "delivered": "delivered", "cancelled": "cancelled", "return requested": "returned",
                "exchange requested": "exchanged"}


def status_word(order: Any) -> str:
    return STATUS_WORDS.get(str(order.status), str(order.status))


def airline_description(entity: str, with_date: bool) -> str:
    r = record("airline", entity)
    trip = "round trip" if r.flight_type == "round_trip" else "one-way trip"
    text = f"your {trip} reservation from {r.origin} to {r.destination}"
    return f"{text} departing {r.flights[0].date}" if with_date and r.flights else text


#: What a customer can say of a reservation without its id, in the order they are said (and preferred).
TRAITS = ("route", "date", "cabin", "party", "trip")
AMBIGUITY_SHARED = 2  # traits a near miss shares with the description at least
TRAIT_NAMES = {"route": "route", "date": "first flight's date", "cabin": "cabin", "party": "number of passengers",
               "trip": "trip type"}
PARTY = ("no", "one passenger", "two passengers", "three passengers", "four passengers", "five passengers")


def traits(entity: str) -> dict[str, str]:
    """A reservation's traits (:data:`TRAITS`) as the customer says them."""
    r = record("airline", entity)
    n = len(r.passengers)
    return {"route": f"from {r.origin} to {r.destination}", "date": r.flights[0].date if r.flights else "",
            "cabin": str(r.cabin).replace("_", " "), "party": PARTY[n] if n < len(PARTY) else f"{n} passengers",
            "trip": "round trip" if r.flight_type == "round_trip" else "one-way trip"}


def trait_phrase(said: dict[str, str]) -> str:
    """"your economy round trip reservation from JFK to LAX departing 2024-05-20 for two passengers"."""
    head = " ".join(x for x in ("your", said.get("cabin"), said.get("trip"), "reservation") if x)
    tail = [said["route"]] if "route" in said else []
    tail += [f"departing {said['date']}"] if "date" in said else []
    tail += [f"for {said['party']}"] if "party" in said else []
    return " ".join([head, *tail])


def order_matches(order: Any, item: str, status: str | None, option: list[str] | None = None) -> bool:
    """Whether a retail order fits "your [status] order with the item [with K V]": it holds ``item`` (one whose
    option K is V), in that status."""
    return any(i.name == item and (option is None or str(i.options.get(option[0])) == option[1])
               for i in order.items) and (status is None or status_word(order) == status)


def retail_description(entity: str, scenario: str = "") -> tuple[str, dict[str, Any]] | None:
    """A description of a retail order by one of its items, with its status where the item alone would fit
    another of the user's orders too (never the order's whole item list when it holds several products), that
    fits ``entity`` and none of the user's other orders; with what it names (``item``, ``status``).  An item
    another order also holds comes first (the agent must relate the status too), then the order's items in
    name order, those the ``scenario`` does not name already before those it does (the description then adds
    what the agent must relate); None when no item, with or without the status, picks the order alone."""
    if owner("retail", entity) is None:
        return None  # not an order of the database (a seed may name one that is not)
    order = record("retail", entity)
    others = [record("retail", e) for e in entities_of("retail", order.user_id) if e != entity]
    names = sorted({i.name for i in order.items})
    shared = [n for n in names if any(order_matches(o, n, None) for o in others)]
    low = scenario.lower()
    for item in sorted(names, key=lambda n: (n not in shared, n.lower() in low, n)):
        status = status_word(order) if item in shared else None
        if any(order_matches(o, item, status) for o in others):
            continue
        said = f"your {status + ' ' if status else ''}order that includes the {item.lower()}"
        return said, {"item": item, "status": status}
    return None


def describe(domain: str, entity: str, with_date: bool = False) -> str | None:
    """A description the user can give of their reservation (order) without its id: airline, its route and
    trip type (with the first date); retail, :func:`retail_description`."""
    if domain == "airline":
        return airline_description(entity, with_date)
    found = retail_description(entity)
    return found[0] if found else None


def fits_one(domain: str, entity: str, phrase: str, by: dict[str, Any] | None = None) -> bool:
    """Whether the description ``phrase`` (retail: naming ``by``'s item and status) fits ``entity`` and none of its
    owner's other reservations (orders)."""
    mine = entities_of(domain, owner(domain, entity) or "")
    if domain == "retail":
        by = by or {}
        return [e for e in mine if order_matches(record("retail", e), by.get("item"), by.get("status"),
                                                 by.get("option"))] == [entity]
    if by and by.get("traits"):
        return [e for e in mine if all(traits(e)[k] == v for k, v in by["traits"].items())] == [entity]
    return [e for e in mine if phrase in (airline_description(e, False), airline_description(e, True))] == [entity]


def near_miss(domain: str, entity: str, by: dict[str, Any] | None = None) -> str | None:
    """Another of the owner's reservations (orders) that a description of ``entity`` nearly fits: airline, the
    same origin and destination (another trip type or first date); retail, ``by``'s item in another status.
    None when there is none."""
    others = [e for e in entities_of(domain, owner(domain, entity) or "") if e != entity]
    if domain == "airline":
        r = record("airline", entity)
        same = [e for e in others if (record("airline", e).origin, record("airline", e).destination)
                == (r.origin, r.destination)]
    else:
        item = (by or {}).get("item")
        same = [e for e in others if item and order_matches(record("retail", e), item, None)]
    return same[0] if same else None


def unique_description(domain: str, entity: str, scenario: str = "") -> str | None:
    """A description that fits ``entity`` and none of its owner's other reservations (orders), or None."""
    if domain == "retail":
        found = retail_description(entity, scenario)
        return found[0] if found else None
    others = [e for e in entities_of(domain, owner(domain, entity) or "") if e != entity]
    for with_date in (False, True):
        text = airline_description(entity, with_date)
        if all(airline_description(e, with_date) != text for e in others):
            return text
    return None


# --------------------------------------------------------------------------- near misses that are live (ambiguity)


def counterparts(domain: str, entity: str, other: str) -> dict[str, str]:
    """What an agent that took ``other`` for ``entity`` would pass instead of each id: the record's id, and
    (retail) each item's id, the other order's item of the same product name where it holds exactly one."""
    return counterparts_in(domain, entity, other, record(domain, other).model_dump(mode="json"))


def counterparts_in(domain: str, entity: str, other: str, theirs: dict[str, Any]) -> dict[str, str]:
    """:func:`counterparts` with ``other``'s record given (a look-alike not in the database)."""
    swap = {entity: other}
    if domain == "retail":
        for i in record("retail", entity).items:
            same = [x for x in theirs["items"] if x["name"] == i.name]
            if len(same) == 1:
                swap[i.item_id] = same[0]["item_id"]
    return swap


def swapped(actions: list[GoldAction], swap: dict[str, str]) -> list[GoldAction]:
    """The gold with every argument value in ``swap`` replaced by its counterpart (what an agent that took the
    near miss for the described record would do)."""
    def one(v: Any) -> Any:
        if isinstance(v, str):
            return swap.get(v, v)
        if isinstance(v, list):
            return [one(x) for x in v]
        return {k: one(x) for k, x in v.items()} if isinstance(v, dict) else v
    return [GoldAction(a.name, one(a.arguments), a.requestor, a.compare_args) for a in actions]


def live_miss(seed: Tau2Task, actions: list[GoldAction], entity: str, other: str) -> bool:
    """Whether the gold, run on ``other`` instead of ``entity`` (:func:`counterparts`), runs without an error and
    leaves another database than the seed's gold: a near miss the same writes accept, so taking it fails τ²'s DB
    check."""
    calls = swapped(actions, counterparts(seed.domain, entity, other))
    steps, env = run_calls(seed.domain, seed.tau2_id, [Tau2Call(a.name, dict(a.arguments)) for a in calls])
    return not any(s.error for s in steps) and bool(cow_diff(env.tools.db, gold(seed).env.tools.db))


def live_descriptions(seed: Tau2Task, actions: list[GoldAction], entity: str, scenario: str = ""
                      ) -> list[tuple[str, dict[str, Any] | None, str, str]]:
    """(description, what it names (retail), the near miss, what tells them apart) for each description of
    ``entity`` that fits it alone among its owner's records while another of them, a *live* near miss
    (:func:`live_miss`), fits all of it but one stated attribute.  Airline: the route (the near miss: the same
    route), with the first flight's date or the trip type.  Retail: one item (the near miss holds it too), with
    one of its options or the order's status."""
    user = owner(seed.domain, entity)
    others = [e for e in entities_of(seed.domain, user or "") if e != entity]
    made = []
    if seed.domain == "airline":
        mine, r = traits(entity), record("airline", entity)
        # what the rest of the scenario already says of it (s6: "from LAS to IAH" in the reason for the call ruled
        # out a near miss with another route): the near miss must share it too
        stated = [k for k, said in (("route", mentions(scenario, r.origin) or mentions(scenario, r.destination)),
                                    ("date", bool(r.flights) and mentions(scenario, r.flights[0].date))) if said]
        for miss in others:
            shared = [k for k in TRAITS if traits(miss)[k] == mine[k]][:3]
            if len(shared) < AMBIGUITY_SHARED or any(k not in shared for k in stated) \
                    or not live_miss(seed, actions, entity, miss):
                continue  # a near miss shares at least two of what the customer says, and the writes accept it
            for apart in (k for k in TRAITS if k not in shared):
                said = {k: mine[k] for k in TRAITS if k in shared or k == apart}
                if fits_one("airline", entity, "", {"traits": said}):
                    made.append((trait_phrase(said), {"traits": said}, miss, f"its {TRAIT_NAMES[apart]}"))
        return made
    order = record("retail", entity)
    for item in sorted({i.name for i in order.items}):
        same = [e for e in others if order_matches(record("retail", e), item, None)]
        live = [e for e in same if live_miss(seed, actions, entity, e)]
        if not live:
            continue
        status = status_word(order)
        if fits_one("retail", entity, "", {"item": item, "status": status}):
            made.append((f"your {status} order that includes the {item.lower()}", {"item": item, "status": status},
                         live[0], "its status"))
        mine = [i for i in order.items if i.name == item]
        for k in sorted(mine[0].options) if len(mine) == 1 else ():
            by = {"item": item, "status": None, "option": [k, str(mine[0].options[k])]}
            if fits_one("retail", entity, "", by):
                made.append((f"your order that includes the {item.lower()} with {k} {by['option'][1]}", by,
                             live[0], f"the {item.lower()}'s {k}"))
    return made
