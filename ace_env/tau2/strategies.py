"""The five τ² synthesis strategies: each turns a seed task holding the target composition A>B into a new task.

A strategy reads a τ² seed (its user instructions, its gold actions, their replayed outputs and the domain
database, never written) and the target ``(A, B)``, a pair of tool names adjacent in the seed's gold, and
returns a :class:`Draft` (new gold actions, new user instructions, what changed) or None when the seed
cannot carry it.  What each does, and why the new user scenario asks for exactly what the new gold does:

``distractor``
    The task's database gains a *look-alike*: a copy of the reservation (order) the target's B acts on,
    under a near-twin id (two adjacent characters of the id swapped), listed among the user's
    reservations (orders) right before it (met first), which the gold reads before it writes.  The scenario and the gold stay the seed's:
    the scenario names the right id and never the look-alike.  It is a live trap (checked by replay):
    the first write on the entity from B on, made on the look-alike instead, runs without an error and
    leaves another database, so an agent that confuses the two ids fails τ²'s DB check.  The addition is
    the task's ``initial_state.initialization_data`` (τ²'s own mechanism), so τ² loads the same state.
``ambiguity``
    The seed's scenario names the entity A or B acts on by its id; the new one describes it instead
    (airline: the trip's origin and destination, with the date when needed; retail: one item of the order,
    with the order's status where another order holds that item too, never the whole item list of an order of
    several products), a description that fits exactly one of the user's reservations (orders) in the database
    (checked again after the build).  The
    gold gains the reads that resolve it (the user's details, then the entity's details) before its first
    use: the agent must call A to disambiguate before B.
``depth``
    One more dependent step, last (the user asks for it before ending the call, in their own words, never
    naming the lookup): a read whose arguments first appear in B's output and whose answer is read off its
    result (airline: the price today of one more seat in the reservation's cabin on one of its flights,
    ``search_direct_flight`` on that flight's route and date, which the scenario never says; retail: how many
    other options of a product in the order B returns are available, ``get_product_details``).  The answer
    goes into ``communicate_info``; :mod:`ace_env.tau2.chains`.
``cascade``
    A second write right after the write B, the seed's last action, whose arguments depend on B's result
    (airline: after a flight change, one more checked bag; how many of the bags are not free depends on
    the cabin, passengers and bags B's result shows, and the user's membership; retail: after an order's
    address changes, the same address becomes the user's default, for the user B's result names; the user says
    they move there for good, not "default address").  :mod:`ace_env.tau2.chains`.

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
    entities_of,
    first_use,
    fits_one,
    id_of,
    instructions_of,
    is_write,
    mentions,
    near_miss,
    owner,
    record,
    retail_description,
    scenario_text,
    target_positions,
    unique_description,
)
from ace_env.tau2.env import Tau2Call, pristine, run_calls, tool_kinds
from ace_env.tau2.lookalike import differs, near_miss_order, picks_by, told
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_env.tau2.verify import gold

# --------------------------------------------------------------------------- distractor


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
        entity = id_of(actions[j + 1], key)  # B acts on it: the choice of record is made there
        if not entity or not mentions(text, entity):
            continue
        writes = [i for i in range(j + 1, len(actions)) if id_of(actions[i], key) == entity and is_write(seed, actions[i])]
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
        listing.insert(listing.index(entity) if entity in listing else 0, twin)  # listed first: met first
        lured = GoldAction(actions[w].name, {**actions[w].arguments, key: twin}, "assistant", actions[w].compare_args)
        return Draft(actions, dict(ins), f"look-alike {noun} {twin} ({entity} with two characters swapped, the same "
                     f"{noun} otherwise) added to the user's {noun}s; {actions[w].name} on it would run",
                     trap={"entity": twin, "actions": actions[:w] + [lured] + actions[w + 1:]},
                     agent_data={table: {twin: copy}, "users": {user: {table: listing}}},
                     details={"look_alike": twin, "of": entity, "lured_step": w})
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
            if not entity or not mentions(text, entity) or _listed_with_others(text, entity):
                continue
            phrase = unique_description(seed.domain, entity, text)
            by = retail_description(entity, text)[1] if seed.domain == "retail" and phrase else None
            user = owner(seed.domain, entity)
            if phrase is None or user is None:
                continue
            new = _described(ins, entity, phrase, noun)
            if new is None or _redundant(new, phrase, seed.domain, by):
                continue
            out = _with_reads(actions, entity, user, seed.domain)
            miss = near_miss(seed.domain, entity, by)
            trap = [{"shortcut": f"the user's other {noun} that fits the description but for "
                                 f"{'its trip type or date' if seed.domain == 'airline' else 'its status'}",
                     "answer": miss}] if miss else []
            made.append(Draft(out, new, f"{noun} {entity} described ({phrase}) instead of named; the agent reads "
                              f"the user's {noun}s to find it",
                              details={"described": entity, "description": phrase, **({"by": by} if by else {}),
                                       **({"near_miss": miss, "trap": trap} if miss else {})}))
    # a description with a near-miss among the user's own records first: the agent must check what tells them apart
    return next((d for d in made if "near_miss" in d.details), made[0] if made else None)


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
             definition="the scenario describes the reservation (order) A or B acts on instead of naming its id; the "
                        "gold gains the reads that find it",
             needs="an id the scenario names, whose owner's other reservations (orders) a description tells apart",
             checks=(Check(STILL_NAMED, still_named_problems), Check(NOT_ONE, description_problems),
                     Check(SHORTCUT_RIGHT, shortcut_problems))),
    Declared("distractor", depth=2, build=distractor,
             definition="a look-alike of the reservation (order) B acts on, under a near-twin id, joins the user's "
                        "list; taking it instead runs and leaves another database",
             needs="B acts on an entity the scenario names and the gold reads the user's list before it writes",
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
