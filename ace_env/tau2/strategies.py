"""The five τ² synthesis strategies: each turns a seed task holding the target composition A>B into a new task.

A strategy reads a τ² seed (its user instructions, its gold actions, their replayed outputs and the domain
database, never written) and the target ``(A, B)``, a pair of tool names adjacent in the seed's gold, and
returns a :class:`Draft` (new gold actions, new user instructions, what changed) or None when the seed
cannot carry it.  What each does, and why the new user scenario asks for exactly what the new gold does:

``distractor``
    The task's database gains a *look-alike*: a copy of the reservation (order) B acts on under a near-twin id
    (two adjacent inner characters swapped: its first and last two characters are the real one's), listed among
    the user's reservations (orders) right before it (met first), that differs in one thing the customer states
    (airline: one passenger fewer, or another cabin; retail: one item in another option of its product).  The
    scenario no longer names the id: the customer remembers only its first and last two characters, which fit
    both, and says the thing that tells them apart ("your reservation for two passengers"); the gold gains the
    reads that find it (the user's details, then its details).  It is a live trap (checked by replay): the gold
    run on the look-alike runs without an error and leaves another database, so an agent that matches the id's
    ends and skips the stated detail fails τ²'s DB check (s6: a scenario naming the whole id caught no one).  The
    addition is the task's ``initial_state.initialization_data`` (τ²'s own mechanism), so τ² loads the same state.
``ambiguity``
    The seed's scenario names the entity A or B acts on by its id; the new one describes it instead, only where
    another of the user's records is a *live near miss*: it fits all of the description but one stated attribute,
    and the seed's gold run on it runs without an error and leaves another database (s6: a near miss the write
    refused, or none, trapped no one).  Airline: two to four of the trip's route, first date, cabin, number of
    passengers and trip type, the near miss sharing all but one; retail: one item of the order, with one of its
    options or the order's status, the near miss holding that item too (:func:`ace_env.tau2.drafting.
    live_descriptions`).  The gold gains the reads that resolve it (the user's details, then the entity's
    details) before its first use: the agent must call A to disambiguate before B.
``depth``
    One more dependent step, last (the user asks for it before ending the call, in their own words, never
    naming the lookup): a read whose arguments first appear in B's output and whose answer is read off its
    result (airline: the price today of one more seat in the reservation's cabin on one of its flights,
    ``search_direct_flight`` on that flight's route and date, which the scenario never says; retail, on a
    product of an item the customer keeps, ``get_product_details``: how many other options are in stock, the
    cheapest of them against the price paid, or the price of the option like theirs but for one attribute,
    each with a trap and in several wordings).  The answer
    goes into ``communicate_info``; :mod:`ace_env.tau2.chains`.
``cascade``
    A second write right after the write B, the seed's last action, whose arguments depend on B's result
    (airline: after a flight change, one more checked bag; how many of the bags are not free depends on
    the cabin, passengers and bags B's result shows, and the user's membership; retail: after the last write on
    an order that ships to another address than the account's, that address, which only B's result shows,
    becomes the account's; the customer says they moved there for good and do not have it at hand, and the
    account's old address is the trap).  :mod:`ace_env.tau2.chains`.

``lookalike`` (retail)
    The task's database gains a look-alike of the order the target acts on, which the scenario describes and
    never names by id: the same order under fresh ids (order, tracking), listed before it among the user's orders,
    with one item the scenario names in another catalogue variant of its product, one that differs in exactly one
    option (its colour, say; :mod:`ace_env.tau2.lookalike`).  The scenario gains one sentence: that item's value of
    the option ("The desk lamp in question is the one whose color is white."), and that the other items it names
    came in one order with it; only when that value picks exactly one of the user's orders, the look-alike included.
    An agent that takes the first order holding what the user names finds the look-alike; only the option tells
    them apart.  A live trap (checked by replay): the first write on the order, taken on the look-alike with its
    variant of the item, runs and leaves another database; and the gold's writes taken on the look-alike fail or
    leave another database, so the gold is the one way to pass.

The shared readers and :class:`Draft` live in :mod:`ace_env.tau2.drafting`.  New steps go last, after everything the seed's gold does, as the user asks for them: ACE's verifier
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
from typing import Any

from ace_env.synthesis import Candidate, Check, Declared
from ace_env.tau2.chains import cascade, depth
from ace_env.tau2.cow import cow_diff
from ace_env.tau2.drafting import (
    ENTITY,
    NOUN,
    READ,
    TABLE,
    Draft,
    counterparts_in,
    entities_of,
    first_use,
    fits_one,
    id_of,
    instructions_of,
    is_write,
    live_descriptions,
    live_miss,
    mentions,
    owner,
    record,
    scenario_text,
    swapped,
    target_positions,
    trait_phrase,
    traits,
)
from ace_env.tau2.env import Tau2Call, pristine, run_calls, tool_kinds
from ace_env.tau2.lookalike import differs, near_miss_order, picks_by, told
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import gold

# --------------------------------------------------------------------------- distractor


def twin_id(domain: str, entity: str, rng: random.Random, taken: set[str]) -> str | None:
    """A near-twin of ``entity``'s id, two adjacent different characters swapped inside it (its first and last two
    characters kept, retail's ``#W`` and the two digits after it too), that no record has; None when there is none."""
    chars = list(entity)
    start = 4 if domain == "retail" else 2
    spots = [i for i in range(start, len(chars) - 3) if chars[i] != chars[i + 1]]
    rng.shuffle(spots)
    for i in spots:
        twin = chars[:]
        twin[i], twin[i + 1] = twin[i + 1], twin[i]
        if "".join(twin) not in taken:
            return "".join(twin)
    return None


def _altered(domain: str, entity: str, rng: random.Random) -> tuple[dict[str, Any], str] | None:
    """A copy of ``entity``'s record that differs in one thing the customer states, and the customer's phrase for
    the real one: airline, one passenger fewer ("your reservation for two passengers") or another cabin ("your
    business reservation"); retail, one item in another option of the same product that differs in one option
    ("your order with the desk lamp with color black"); None when nothing fits."""
    real = record(domain, entity).model_dump(mode="json")
    if domain == "airline":
        if len(real["passengers"]) >= 2:  # paid for one passenger fewer (blind review s7, task 19: 498 for 249)
            n = len(real["passengers"])
            paid = [{**p, "amount": round(p["amount"] * (n - 1) / n, 2)} for p in real["payment_history"]]
            return ({**real, "passengers": real["passengers"][:-1], "payment_history": paid},
                    trait_phrase({"party": traits(entity)["party"]}))
        other = {"economy": "business", "business": "economy", "basic_economy": "economy"}.get(real["cabin"])
        return ({**real, "cabin": other}, trait_phrase({"cabin": traits(entity)["cabin"]})) if other else None
    products = pristine("retail")[0].products
    items = [i for i in real["items"] if sum(x["name"] == i["name"] for x in real["items"]) == 1]
    rng.shuffle(items)
    for item in items:
        opts = item["options"]
        for v in products[item["product_id"]].variants.values():
            diff = [k for k in opts if str(v.options.get(k)) != str(opts[k])]
            if len(diff) == 1 and v.item_id != item["item_id"]:
                new = {**item, "item_id": v.item_id, "options": dict(v.options), "price": v.price}
                # its own tracking ids, and a first payment that pays its items (blind review s7, tasks 1, 17)
                paid, first = [], True
                for p in real["payment_history"]:
                    if first and p.get("transaction_type") == "payment":
                        p, first = {**p, "amount": round(p["amount"] + v.price - item["price"], 2)}, False
                    paid.append(p)
                copy = {**real, "items": [new if x is item else x for x in real["items"]], "payment_history": paid,
                        "fulfillments": [{**f, "item_ids": [v.item_id if i == item["item_id"] else i
                                                            for i in f["item_ids"]],
                                          "tracking_id": [str(rng.randrange(10 ** 11, 10 ** 12))
                                                          for _ in f.get("tracking_id", [])]}
                                         for f in real["fulfillments"]]}
                return copy, f"your order with the {item['name'].lower()} with {diff[0]} {opts[diff[0]]}"
    return None


def distractor(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    key, noun, table = ENTITY[seed.domain], NOUN[seed.domain], TABLE[seed.domain]
    if ins is None or len(actions) != len(seed.gold_actions):
        return None
    text = scenario_text(ins)
    for j in target_positions(actions, target):
        entity = id_of(actions[j + 1], key)  # B acts on it: the choice of record is made there
        user = owner(seed.domain, entity) if entity else None
        if not entity or user is None or not mentions(text, entity) or _listed_with_others(text, entity):
            continue
        twin = twin_id(seed.domain, entity, rng, set(getattr(pristine(seed.domain)[0], table)))
        altered = _altered(seed.domain, entity, rng)
        if twin is None or altered is None or mentions(text, twin):
            continue
        copy, phrase = altered
        copy[key] = twin
        head, tail = entity[:4] if seed.domain == "retail" else entity[:2], entity[-2:]
        listing = list(entities_of(seed.domain, user))
        if {e for e in listing + [twin] if e.startswith(head) and e.endswith(tail)} != {entity, twin}:
            continue  # another of the user's ids fits what the customer remembers of it too
        new = {k: (_replace_id(v, entity, phrase, noun) if isinstance(v, str) else v) for k, v in ins.items()}
        if mentions(scenario_text(new), entity):
            continue
        part = (f"You remember only part of the {noun} id of {phrase}: it starts with {head} and ends with {tail}. "
                f"Say so when asked for it.")
        new["known_info"] = f"{new['known_info'].rstrip()}\n{part}" if new.get("known_info") else part
        out = _with_reads(actions, entity, user, seed.domain)
        writes = [i for i, a in enumerate(out) if id_of(a, key) == entity and is_write(seed, a)]
        if not writes:
            continue
        listing.insert(listing.index(entity) if entity in listing else 0, twin)  # listed first: met first
        lured = swapped(out, counterparts_in(seed.domain, entity, twin, copy))
        return Draft(out, new, f"look-alike {noun} {twin} ({entity} with two inner characters swapped, one thing "
                     f"the customer states changed) added to the user's {noun}s; the customer remembers only the "
                     f"id's ends ({head}…{tail}) and that it is {phrase}; the gold run on it would run",
                     trap={"entity": twin, "actions": lured},
                     agent_data={table: {twin: copy}, "users": {user: {table: listing}}},
                     details={"look_alike": twin, "of": entity, "told_apart_by": phrase, "lured_step": writes[0]})
    return None


# --------------------------------------------------------------------------- ambiguity


def _replace_id(text: str, value: str, phrase: str, noun: str) -> str:
    """``text`` with every mention of ``value`` (with or without a leading #) replaced by ``phrase``; a
    wording like "reservation id ABC123" or "the order #W1" is replaced whole."""
    if value.lstrip("#") not in text:
        return text
    bare = re.escape(value.lstrip("#"))
    # a sentence that states the id ("Your reservation ID is ABC123.", "The reservation ID is ABC123 for your
    # DTW to LGA trip.") goes: the user no longer knows it, and what qualifies the id goes with it
    kind = rf"(?:{noun}|confirmation|booking)"  # "Your confirmation number is JMO1MG." names it too
    text = re.sub(rf"(?m)^[ \t]*(?:[Tt]he|[Yy]our)\s+{kind}\s+(?:id|ID|Id|number|code)\s+is:?\s+#?{bare}\b[^.\n]*"
                  rf"\.?[ \t]*$", "", text)
    lead = rf"(?:(?:[Tt]he|[Yy]our)\s+)?(?:{kind}\s+)?(?:(?:id|ID|number|Id|code)\s+)?(?:(?:is|of)\s+)?"
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
    if phrase not in scenario_text(new):  # the sentence stating the id went whole: say which one it is
        which = f"The {noun} you are calling about is {phrase}."
        new["known_info"] = f"{new['known_info'].rstrip()}\n{which}" if new.get("known_info") else which
    forgot = f"You do not remember the {noun} id of {phrase}."
    new["unknown_info"] = f"{new['unknown_info'].rstrip()}\n{forgot}" if new.get("unknown_info") else forgot
    return new


def _redundant(ins: dict[str, Any], phrase: str, domain: str, by: dict[str, Any] | None) -> bool:
    """Whether a sentence the description went into already says what it says ("the Desk Lamp in your order that
    includes the desk lamp", "from Boston to Minneapolis under your ... reservation from BOS to MSP")."""
    for line in scenario_text(ins).splitlines():
        if phrase not in line:
            continue
        rest = line.replace(phrase, " ").lower()
        if domain == "airline" and re.search(r"\bfrom\b.+\bto\b", rest):
            return True
        if domain == "retail" and by and str(by.get("item", "")).lower() in rest:
            return True
    return False


def _with_reads(actions: list[GoldAction], entity: str, user: str, domain: str) -> list[GoldAction]:
    """The gold with the reads that find a described entity before its first use: the user's details (which
    list the candidates), then the entity's details."""
    key, read = ENTITY[domain], READ[domain]
    out = list(actions)
    first = first_use(out, entity)
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
    made: list[Draft] = []
    for j in target_positions(actions, target):
        for a in (actions[j + 1], actions[j]):
            entity = id_of(a, key)
            user = owner(seed.domain, entity) if entity else None
            if not entity or user is None or not mentions(text, entity) or _listed_with_others(text, entity):
                continue
            out = _with_reads(actions, entity, user, seed.domain)
            # only a description another of the user's records nearly fits, one the same writes accept (s6: a
            # near miss the write refuses, or none at all, trapped no one)
            for phrase, by, miss, apart in live_descriptions(seed, out, entity, text):
                new = _described(ins, entity, phrase, noun)
                if new is None or _redundant(new, phrase, seed.domain, by):
                    continue
                trap = [{"shortcut": f"the user's other {noun} that fits the description but for {apart}",
                         "answer": miss}]
                made.append(Draft(out, new, f"{noun} {entity} described ({phrase}) instead of named; the agent reads "
                                  f"the user's {noun}s to find it and must rule out {miss} by {apart}",
                                  details={"described": entity, "description": phrase, **({"by": by} if by else {}),
                                           "near_miss": miss, "told_apart_by": apart, "trap": trap}))
    return rng.choice(made) if made else None


# --------------------------------------------------------------------------- lookalike


def lookalike(seed: Tau2Task, target: tuple[str, str], strength: float, rng: random.Random) -> Draft | None:
    ins = instructions_of(seed)
    actions = list(seed.agent_actions)
    if seed.domain != "retail" or ins is None or len(actions) != len(seed.gold_actions):
        return None
    text = scenario_text(ins)
    db = pristine("retail")[0]
    for j in target_positions(actions, target):
        for a in (actions[j + 1], actions[j]):
            entity = id_of(a, "order_id")
            if not entity or mentions(text, entity) or entity not in db.orders:
                continue  # named by its id, an exact match finds it: the look-alike must be told apart by content
            writes = [i for i in range(j, len(actions)) if id_of(actions[i], "order_id") == entity
                      and is_write(seed, actions[i])]
            user = owner("retail", entity)
            if not writes or user is None:
                continue
            w = writes[0]
            if not any(x.name == "get_user_details" and x.arguments.get("user_id") == user for x in actions[:w]):
                continue
            real = record("retail", entity).model_dump(mode="json")
            theirs = [record("retail", o).model_dump(mode="json") for o in entities_of("retail", user)]
            made = near_miss_order(real, theirs, text, json.dumps(actions[w].arguments),
                                   json.dumps([x.arguments for x in actions]), rng)
            if made is None:
                continue
            copy, swap, donor, key = made
            twin, name = copy["order_id"], swap["name"]
            sentence = told(real, swap, key, text, json.dumps([x.arguments for x in actions if is_write(seed, x)
                                                               and id_of(x, "order_id") == entity]), theirs)
            new = {**ins, "known_info": f"{(ins.get('known_info') or '').rstrip()}\n{sentence}".strip()}
            listing = list(entities_of("retail", user))
            listing.insert(listing.index(entity) if entity in listing else 0, twin)  # listed first: met first
            # the agent that takes the look-alike acts on its variant of the item: the write runs there
            lured = GoldAction(actions[w].name, json.loads(json.dumps({**actions[w].arguments, "order_id": twin})
                                                           .replace(f'"{swap["item_id"]}"', f'"{donor["item_id"]}"')),
                               "assistant", actions[w].compare_args)
            return Draft(actions, new, f"look-alike order {twin}: {entity} with its {name} ({key} "
                         f"{swap['options'][key]}, which the scenario now states) in {key} {donor['options'][key]}, "
                         f"listed before it; {actions[w].name} on it would run",
                         trap={"entity": twin, "actions": actions[:w] + [lured] + actions[w + 1:]},
                         agent_data={"orders": {twin: copy}, "users": {user: {"orders": listing}}},
                         details={"look_alike": twin, "of": entity, "told_apart_by": name,
                                  "attribute": [key, swap["options"][key]], "look_alike_value": donor["options"][key],
                                  "told": sentence, "lured_step": w})
    return None


# --------------------------------------------------------------------------- the strategies' own checks

TRAP_NOT_LIVE = "trap_not_live"
NOT_TOLD_APART = "not_told_apart"
STILL_NAMED = "still_named"
NOT_ONE = "description_not_unique"
ANSWER_IN_SCENARIO = "answer_in_scenario"
SHORTCUT_RIGHT = "shortcut_gives_the_answer"
NOT_UNIQUE = "look_alike_passes_too"
MISS_NOT_LIVE = "near_miss_not_live"


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
    """lookalike: the scenario names an item by one option whose value exactly one of the user's orders holds (the
    look-alike included), the look-alike differs from the order in that option of that item alone, and the
    scenario never names the look-alike's id."""
    text, d = c.task.user_scenario, c.draft.details
    key, value = d["attribute"]
    copy = (c.draft.agent_data or {}).get("orders", {}).get(d["look_alike"])
    orders = [record("retail", o).model_dump(mode="json") for o in entities_of("retail", owner("retail", d["of"]))]
    real = record("retail", d["of"]).model_dump(mode="json")
    if copy is None or not picks_by(text, d["told_apart_by"], key, value, orders + [copy]) or mentions(text, d["look_alike"]) \
            or differs(real, copy) != [(d["told_apart_by"], key)]:
        return [f"the scenario does not tell {d['of']} from {d['look_alike']} by its {d['told_apart_by']}'s {key}"]
    return []


def unique_pass_problems(c: Candidate) -> list[str]:
    """lookalike: the gold's writes on the order, every one taken on the look-alike instead, fail or leave another
    database than the gold's (the gold is the one way to pass)."""
    task, d = c.task, c.draft.details
    kinds = tool_kinds(task.domain)
    moved = [Tau2Call(a.name, {**a.arguments, "order_id": d["look_alike"]}
                      if kinds.get((a.requestor, a.name)) == "write" and a.arguments.get("order_id") == d["of"]
                      else dict(a.arguments)) for a in task.gold_actions if a.requestor == "assistant"]
    steps, env = run_calls(task.domain, task.tau2_id, moved)
    if not any(s.error for s in steps) and not cow_diff(env.tools.db, gold(task).env.tools.db):
        return [f"the gold's writes taken on {d['look_alike']} pass as well"]
    return []


def still_named_problems(c: Candidate) -> list[str]:
    """ambiguity: the scenario no longer says the described entity's id."""
    described = c.draft.details["described"]
    return [f"the scenario still names {described}"] if mentions(c.task.user_scenario, described) else []


def description_problems(c: Candidate) -> list[str]:
    """ambiguity: the description fits the described entity and none of the user's others (retail: the order
    holding the item it names, in the status it names)."""
    d = c.draft.details
    if not fits_one(c.task.domain, d["described"], d["description"], d.get("by")):
        return [f"{d['description']!r} does not pick {d['described']} alone among the user's"]
    return []


def answer_problems(c: Candidate) -> list[str]:
    """depth: the new step's argument is not in the scenario (only B's output gives it)."""
    task, text = c.task, c.task.user_scenario
    added = next(a for a in task.agent_actions if a.name == c.draft.details["added_step"])
    return [f"the scenario says {v!r}, an argument of {added.name}" for v in added.arguments.values()
            if isinstance(v, str) and v in text and v != added.arguments.get("date")][:1]


def miss_problems(c: Candidate) -> list[str]:
    """ambiguity: the gold run on the near miss instead runs without an error and leaves another database."""
    d = c.draft.details
    if not live_miss(c.task, list(c.task.agent_actions), d["described"], d["near_miss"]):
        return [f"the near miss {d['near_miss']} of {d['described']} is not a live trap"]
    return []


def shortcut_problems(c: Candidate) -> list[str]:
    """depth, cascade, ambiguity: every recorded trap (the answer a shortcut gives) differs from the gold's answer
    (depth: what is communicated; cascade: the bags not free; ambiguity: the described record)."""
    d = c.draft.details
    right = d.get("answer", d.get("nonfree_baggages", d.get("described")))
    return [f"the shortcut {t['shortcut']!r} gives the gold's answer {right!r}" for t in d.get("trap", [])
            if str(t["answer"]) == str(right)][:1]


# --------------------------------------------------------------------------- declared (for the one registry)

#: τ²'s strategies, in the plans' order: ambiguity, distractor, cascade, depth, lookalike (the fifth, added last: the other plans keep their ids).  The names and depths are their
#: BFCL counterparts' (synth.strategies); :mod:`synth.registry` registers them for τ² tasks.
STRATEGIES: tuple[Declared, ...] = (
    Declared("ambiguity", depth=2, build=ambiguity,
             definition="the scenario describes the reservation (order) A or B acts on instead of naming its id, "
                        "another of the user's, which the same writes accept, fitting all of it but one attribute; "
                        "the gold gains the reads that find it",
             needs="an id the scenario names, whose owner has a live near miss of it",
             checks=(Check(STILL_NAMED, still_named_problems), Check(NOT_ONE, description_problems),
                     Check(MISS_NOT_LIVE, miss_problems), Check(SHORTCUT_RIGHT, shortcut_problems))),
    Declared("distractor", depth=2, build=distractor,
             definition="a look-alike of the reservation (order) B acts on, under a near-twin id with the same ends and "
                        "one stated detail changed, joins the user's list; the customer remembers only the id's ends; "
                        "taking the look-alike instead runs and leaves another database",
             needs="B acts on an entity the scenario names by id and writes it; a passenger, cabin (airline) or item "
                   "option (retail) to change",
             checks=(Check(TRAP_NOT_LIVE, trap_problems),)),
    Declared("cascade", depth=3, build=cascade,
             definition="a second write after B, the seed's last action, whose arguments depend on B's result",
             needs="B is the seed's last action and its only write of that kind, a flight change (airline; one whose "
                   "cabin change changes the bags to pay) or an order's address change (retail)",
             checks=(Check(SHORTCUT_RIGHT, shortcut_problems),)),
    Declared("depth", depth=4, build=depth,
             definition="one more dependent read, last, whose argument first appears in B's output; its answer is "
                        "communicated",
             needs="B's output names a flight (airline) or a product (retail) nothing earlier shows",
             checks=(Check(ANSWER_IN_SCENARIO, answer_problems), Check(SHORTCUT_RIGHT, shortcut_problems))),
    Declared("lookalike", depth=2, build=lookalike,
             definition="a look-alike of the order the target acts on, under a fresh id and listed first, the same "
                        "but for one option of one item the scenario names, whose value the scenario now states; "
                        "taking it instead runs and leaves another database",
             needs="retail: an order the scenario describes (not by id) with an item it names, once, whose product "
                   "has a variant differing in one option that no other order of the user holds as the order does; "
                   "the user's list read before the write",
             checks=(Check(NOT_TOLD_APART, told_apart_problems), Check(TRAP_NOT_LIVE, trap_problems),
                     Check(NOT_UNIQUE, unique_pass_problems))),
)
