"""The records of τ²'s ``lookalike`` strategy (retail): the look-alike order and what tells it apart.

The look-alike is a copy of a real order in which one item the scenario names is replaced by another variant of
the same product, one that differs from it in exactly one option (its colour, say; the catalogue's own variant:
its item id, options and price as the catalogue has them), under fresh ids for everything an order must not share
with another (its order id and its fulfillments' tracking ids); its payment is the real one's, changed by the
price difference.  The scenario gains one sentence, :func:`told`: the named item's value of that option, and,
where it names other items of the order, that they came in that one order.  It is used only when that value
picks exactly one of the user's orders, the look-alike included (:func:`picks_by`): the item as the user
states it is in the real order and in no other, so the gold's order is the one defensible choice.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from ace_env.tau2.env import pristine


@functools.cache
def _variants() -> tuple[dict[str, Any], ...]:
    """Every variant of retail's product catalogue as an order's item (name, product, item id, price, options)."""
    db = pristine("retail")[0]
    return tuple({"name": p.name, "product_id": p.product_id, "item_id": v.item_id, "price": v.price,
                  "options": dict(v.options)}
                 for p in sorted(db.products.values(), key=lambda p: p.product_id)
                 for v in sorted(p.variants.values(), key=lambda v: v.item_id))


@functools.cache
def _taken() -> frozenset[str]:
    """Every order id and tracking id of retail's pristine database."""
    db = pristine("retail")[0]
    return frozenset(set(db.orders) | {t for o in db.orders.values() for f in o.fulfillments for t in f.tracking_id})


def _fresh(rng: random.Random, like: str, taken: set[str]) -> str:
    """A fresh id shaped as ``like`` (its non-digit prefix kept, its digits drawn anew)."""
    head = like[:len(like) - len(like.lstrip("#W"))]
    while True:
        new = head + "".join(rng.choice("0123456789") for _ in range(len(like) - len(head)))
        if new not in taken:
            taken.add(new)
            return new


def look_alike(real: dict[str, Any], swap: dict[str, Any], donor: dict[str, Any],
               rng: random.Random) -> dict[str, Any]:
    """``real`` (an order's JSON) with ``swap`` (one of its items) replaced by ``donor``, under fresh ids."""
    taken = set(_taken())
    twin = _fresh(rng, real["order_id"], taken)
    items = [dict(donor, options=dict(donor["options"])) if i is swap else i for i in real["items"]]
    fulfillments = [{**f, "tracking_id": [_fresh(rng, t, taken) for t in f.get("tracking_id") or []],
                     "item_ids": [donor["item_id"] if x == swap["item_id"] else x for x in f.get("item_ids", [])]}
                    for f in real.get("fulfillments") or []]
    payments = [dict(p) for p in real.get("payment_history") or []]
    if len(payments) == 1 and payments[0].get("transaction_type") == "payment":
        payments[0]["amount"] = round(payments[0]["amount"] + donor["price"] - swap["price"], 2)
    return {**real, "order_id": twin, "items": items, "fulfillments": fulfillments, "payment_history": payments}


#: The option a look-alike's variant differs in, most preferred first (what a customer says of an item first).
PREFERRED = ("color", "material", "size", "capacity", "style", "length")
_VAGUE = {"yes", "no", "none", "true", "false"}  # "whose waterproof is yes" is no way to name an item


def near_variants(item: dict[str, Any], text: str, avoid: str) -> list[tuple[dict[str, Any], str]]:
    """(variant, option) for each catalogue variant of ``item``'s product that differs from it in exactly that
    option, the preferred options first; none whose option the scenario (``text``) speaks of, whose values are
    vague or named in it already, nor whose item id is in ``avoid`` (the gold's arguments)."""
    low = text.lower()
    out = []
    for v in _variants():
        if v["product_id"] != item["product_id"] or v["item_id"] in avoid or set(v["options"]) != set(item["options"]):
            continue
        diff = [k for k in item["options"] if v["options"][k] != item["options"][k]]
        if len(diff) != 1:
            continue
        k = diff[0]
        mine, theirs = str(item["options"][k]).lower(), str(v["options"][k]).lower()
        if k.lower()[:4] in low or theirs in low or {mine, theirs} & _VAGUE:
            continue
        out.append((v, k))
    rank = {k: n for n, k in enumerate(PREFERRED)}
    return sorted(out, key=lambda vk: (rank.get(vk[1], len(PREFERRED)), vk[0]["item_id"]))


def holds(order: dict[str, Any], name: str, key: str, value: Any) -> bool:
    return any(i["name"] == name and i["options"].get(key) == value for i in order["items"])


def picks_by(text: str, name: str, key: str, value: Any, orders: list[dict[str, Any]]) -> bool:
    """The scenario names the item ``name`` with ``key`` ``value`` and exactly one of ``orders`` holds it so."""
    low = text.lower()
    return (name.lower() in low and f"{key} is {value}".lower() in low
            and sum(holds(o, name, key, value) for o in orders) == 1)


def _plural(name: str) -> bool:
    return name.endswith("s") and not name.endswith("ss")


def told(real: dict[str, Any], swap: dict[str, Any], key: str, text: str, written: str = "",
         theirs: list[dict[str, Any]] = ()) -> str:
    """The sentence that names the item ``swap`` by its ``key`` and says that the other items of ``real`` the gold
    writes (their ids in ``written``, the gold's writes on the order) or the scenario names came in one order with it;
    a named one only where no other of the user's orders (``theirs``) holds its product ("the grill" of a scenario
    that speaks of two grills would read as either)."""
    name = swap["name"].lower()
    verb, one = ("are", "ones") if _plural(swap["name"]) else ("is", "one")
    out = f"The {name} in question {verb} the {one} whose {key} is {swap['options'][key]}."
    held = [x["name"] for o in theirs if o["order_id"] != real["order_id"] for x in o["items"]]
    others = [i["name"].lower() for i in real["items"] if i["name"] != swap["name"]
              and (f'"{i["item_id"]}"' in written or (i["name"].lower() in text.lower() and i["name"] not in held))]
    others = list(dict.fromkeys(others))
    if others:
        listed = ", ".join(f"the {o}" for o in others[:-1]) + (" and " if len(others) > 1 else "") + f"the {others[-1]}"
        out += f" {'They' if _plural(swap['name']) else 'It'} came in one order together with {listed}."
    return out


def differs(real: dict[str, Any], copy: dict[str, Any]) -> list[tuple[str, str]]:
    """(item name, option) for every option in which ``copy``'s items differ from ``real``'s, item by item."""
    if len(real["items"]) != len(copy["items"]):
        return [("", "items")]
    out = []
    for a, b in zip(real["items"], copy["items"]):
        if a["name"] != b["name"] or set(a["options"]) != set(b["options"]):
            out.append((a["name"], "product"))
        else:
            out += [(a["name"], k) for k in a["options"] if a["options"][k] != b["options"][k]]
    return out


def near_miss_order(real: dict[str, Any], theirs: list[dict[str, Any]], text: str, written: str, avoid: str,
                    rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str] | None:
    """(look-alike, the item varied, its variant there, the option) for ``real``: an item the scenario names, once
    among the user's orders (``real`` among ``theirs``), varied in one option whose value then picks ``real`` alone among ``theirs`` (the user's orders)
    and the look-alike; the items the first write names (``written``) first.  None when no item allows it."""
    low = text.lower()
    # an item the scenario names, once in the order and in no other of the user's: "the hose in question" must not
    # read as either of two hoses the scenario speaks of
    named = [i for i in real["items"] if i["name"].lower() in low
             and sum(x["name"] == i["name"] for o in theirs for x in o["items"]) == 1]
    rng.shuffle(named)
    named.sort(key=lambda i: i["item_id"] not in written)
    for swap in named:
        for donor, key in near_variants(swap, text, avoid):
            copy = look_alike(real, swap, donor, rng)
            if picks_by(f"{text} {swap['name']} {key} is {swap['options'][key]}", swap["name"], key,
                        swap["options"][key], theirs + [copy]):
                return copy, swap, donor, key
    return None
