"""distractor: similar tools that point the wrong way, offered where the choice is made.

At the target pair's decision step (the ``to`` tool), from that step's turn on
(``tools_added`` of the turn, so earlier turns do not offer them), 1-3 functions the seed
does not already offer, of a class of the same domain that the seed does not
involve (money, travel and driving, social; BFCL offers every function of an
involved class, so nothing of those classes would be new) whose names,
descriptions and parameters
overlap the right tool's (``get_nearest_airport_by_city`` beside
``get_zipcode_based_on_city``, ``cp`` beside ``mv``, ``withdraw_funds`` beside
``fund_account``) are offered and declared distractors: calling one fails the
task (the executor refuses it as ``distractor``; in BFCL's own format, where
nothing can be declared, the look-alike stays an offered tool whose call
leaves the wrong state).  Functions the ground truth uses are never chosen.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

from ace_env import bfcl
from ace_env.executor import copy_json
from ace_env.tasks import Task
from synth.strategies.build import build, copy_turns, pick_position
from synth.strategies.registry import register
from synth.taskcheck import flat_calls

_STOP = {"the", "a", "an", "of", "to", "and", "or", "in", "for", "is", "on", "by", "with", "from", "at", "it",
         "be", "this", "that", "as", "if", "get", "given", "specified", "current", "user", "return", "returns"}


def _tokens(name: str) -> set[str]:
    info = bfcl.functions()[name]
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").lower().split()
    desc = re.findall(r"[a-z]+", str(info.doc.get("description", "")).lower())
    return {w for w in words + desc if w not in _STOP and len(w) > 2}


#: Domains: classes whose tools an agent could mistake for each other.
DOMAINS = (
    frozenset({"GorillaFileSystem"}),
    frozenset({"TradingBot", "TravelAPI"}),  # money: funds, cards, budgets, orders
    frozenset({"TravelAPI", "VehicleControlAPI"}),  # places, distances, trips
    frozenset({"MessageAPI", "TwitterAPI", "TicketAPI"}),  # people, posts, messages, tickets
    frozenset({"MathAPI"}),
)


#: Wrong-way twins across classes (BFCL's own functions): a careless agent could take one for the key:
#: a flight cost for a driving distance, an invoice for an order's details, a support ticket for an invoice.
#: Only close confusions are listed; a tool with none (``place_order``: no other class buys stock) gets no
#: distractor, and the planner does not plan one on it.
TWINS: dict[str, tuple[str, ...]] = {
    "estimate_distance": ("get_flight_cost", "get_nearest_airport_by_city"),
    "get_zipcode_based_on_city": ("get_nearest_airport_by_city",),
    "estimate_drive_feasibility_by_mileage": ("get_flight_cost",),
    "get_order_details": ("retrieve_invoice", "get_ticket"),
    "cancel_order": ("cancel_booking",),
    "get_order_history": ("get_booking_history",),
    "retrieve_invoice": ("get_order_details", "get_ticket", "get_transaction_history"),
    "cancel_booking": ("cancel_order",),
    "get_booking_history": ("get_order_history", "get_transaction_history"),
    "get_account_info": ("get_credit_card_balance",),
    "send_message": ("post_tweet", "comment"),
    "post_tweet": ("send_message",),
    "create_ticket": ("contact_customer_support",),
    "contact_customer_support": ("create_ticket", "send_message"),
    "get_ticket": ("get_order_details",),
}


def same_domain(a: str, b: str) -> bool:
    """Whether two classes share a domain (a class is always in its own)."""
    return a == b or any(a in d and b in d for d in DOMAINS)


def _params(name: str) -> set[str]:
    props = (bfcl.functions()[name].doc.get("parameters") or {}).get("properties") or {}
    return set(props)


@functools.cache
def _similar(name: str) -> tuple[tuple[str, float], ...]:
    """Same-domain functions by descending similarity to ``name``: tokens (Jaccard), shared name words, parameters."""
    mine = _tokens(name)
    cls = bfcl.functions()[name].class_name
    params = _params(name)
    scored = []
    for other, info in bfcl.functions().items():
        if other == name or not same_domain(cls, info.class_name):
            continue
        theirs = _tokens(other)
        union = mine | theirs
        score = len(mine & theirs) / len(union) if union else 0.0
        name_bonus = 0.2 * len((set(name.lower().split("_")) & set(other.lower().split("_"))) - _STOP)
        shared = len(params & _params(other))
        if shared == 0 and name_bonus == 0:
            continue  # nothing in common an agent could confuse
        scored.append((other, round(score + name_bonus + 0.15 * shared, 4)))
    scored.sort(key=lambda x: (-x[1], x[0]))
    return tuple(scored)


@functools.cache
def loads_empty(cls: str) -> bool:
    try:
        inst = bfcl.api_class(cls)()
        if not bfcl.is_stateless(cls):
            inst._load_scenario({}, long_context=False)
    except Exception:
        return False
    return True


def with_distractors(seed: Task, chosen: list[str]) -> tuple[list[str], list[str], dict[str, Any], list[str]]:
    classes = list(seed.involved_classes)
    config = copy_json(seed.initial_config)
    for name in chosen:
        cls = bfcl.functions()[name].class_name
        if cls not in classes:
            classes.append(cls)
    tools = list(seed.tools) + [n for n in chosen if n not in seed.tools]
    distractors = list(seed.distractors) + [n for n in chosen if n not in seed.distractors]
    return classes, tools, config, distractors


def _distractor_candidates(seed: Task, names: list[str]) -> list[str]:
    """Functions similar to ``names`` that the seed does not already offer.

    A function of a class the seed involves is never new: BFCL offers every function of an involved
    class (those it withholds in miss_func come back later and are part of the task).  So a distractor
    comes from a same-domain class the seed does not involve, and within BFCL's 128 functions that is
    the only kind of new tool there is.
    """
    used = {n for _, _, _, n in flat_calls(seed)}
    pool: dict[str, float] = {}
    for name in names:
        twins = [(t, 10.0 - i) for i, t in enumerate(TWINS.get(name, ())) if t in bfcl.functions()]
        for other, score in twins + list(_similar(name)[:12]):
            cls = bfcl.functions()[other].class_name
            if other in used or other in seed.tools or other in seed.distractors or score <= 0 \
                    or cls in seed.involved_classes or not loads_empty(cls):
                continue
            pool[other] = max(pool.get(other, 0.0), score)
    return [n for n, _ in sorted(pool.items(), key=lambda x: (-x[1], x[0]))]


@register("distractor")
def distractor(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    cands = _distractor_candidates(seed, [target[1]])[:6]
    if not cands:
        return None
    n = min(len(cands), 1 + round(strength * 2))
    weights = [len(cands) - i for i in range(len(cands))]
    chosen: list[str] = []
    while len(chosen) < n:
        pick = rng.choices(cands, weights=weights)[0]
        if pick not in chosen:
            chosen.append(pick)
    classes, tools, config, distractors = with_distractors(seed, chosen)
    turns = copy_turns(seed.turns)
    at = flat_calls(seed)[k + 1][0]  # the decision step's turn: the distractors arrive there, not in turn 1
    turns[at].tools_added = turns[at].tools_added + [n for n in chosen if n not in turns[at].tools_added]
    return build(seed, "distractor", target, strength, f"distractor tools offered from turn {at + 1}: {', '.join(chosen)}",
                  turns=turns, config=config, classes=classes, tools=tools, distractors=distractors,
                  extra={"added_distractors": chosen, "seed_classes": list(seed.involved_classes),
                         "seed_tools": len(seed.tools), "distractor_turn": at})
