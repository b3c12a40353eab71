"""The records of τ²'s ``lookalike`` strategy (retail): the look-alike order and the test that it is told apart.

The look-alike is a copy of a real order in which one item the scenario names is replaced by a real variant of
another product from the domain's catalogue (its own item id, product id, name, options and price, as the
catalogue has them), under fresh ids for everything an order must not share with another (its order id and its
fulfillments' tracking ids); its payment is the real one's, changed by the price difference.  The variant ids of the
items it keeps are shared, as any two orders of the same variants share them.  It is used only when the item the
scenario names is held by exactly one of the user's orders, the look-alike included (:func:`picks_one`): naming it
then picks the real order, and nothing else in the listing does.
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


def donors(names: set[str], low: str) -> list[dict[str, Any]]:
    """Catalogue variants of products neither in the order (``names``) nor in the scenario (``low``, lower case)."""
    return [v for v in _variants() if v["name"] not in names and v["name"].lower() not in low]


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


def picks_one(text: str, name: str, orders: list[dict[str, Any]]) -> bool:
    """The scenario names the item ``name`` and exactly one of ``orders`` (the user's, the look-alike's) holds it."""
    return name.lower() in text.lower() and sum(any(i["name"] == name for i in o["items"]) for o in orders) == 1
