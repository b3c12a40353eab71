"""The random baseline's look-alike edit: near-twins of the values at a call added to the state (files, tickers
and orders, users, tweets, tickets, cards and bookings): :func:`lookalike_at`.  Moved out of
:mod:`synth.strategies.lookalike`, which re-exports it."""

from __future__ import annotations

import random
import re
from typing import Any

from ace_env.environments import tool_catalogue_of
from ace_env.executor import copy_json
from ace_env.tasks import Task
from synth.checks.parts import flat_calls
from synth.strategies.build import class_of, effective, env_before, gt_text, step_values
from synth.strategies.fs import fs_contents, fs_cwd, fs_dir, fs_dirs, fs_files

_NAME_CHARS = re.compile(r'[|/\\?%*:"><]')


def _name_variants(name: str, rng: random.Random) -> list[str]:
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    ext = f".{ext}" if ext else ""
    other_ext = {".pdf": ".docx", ".txt": ".md", ".csv": ".xlsx", ".md": ".txt", ".json": ".yaml"}.get(ext, ".txt")
    cands = [
        stem.capitalize() + ext if stem.capitalize() != stem else stem.upper() + ext,
        stem + "_v2" + ext,
        stem + "_old" + ext,
        stem + " (1)" + ext,
        stem + "-copy" + ext,
        "draft_" + stem + ext,
        stem + other_ext,
        stem + ext + ".bak",
        stem.replace("_", "-") + ext if "_" in stem else stem + "_final" + ext,
    ]
    out = []
    for c in cands:
        if c != name and c not in out and not _NAME_CHARS.search(c):
            out.append(c)
    rng.shuffle(out)
    return out


def _twin_files(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                  config: dict[str, Any]) -> list[str]:
    contents = fs_contents(config)
    if contents is None:
        return []
    files = fs_files(contents)
    dirs = fs_dirs(contents)
    cwd = fs_cwd(env_before(seed, k)) or ()
    gt = gt_text(seed)
    names = [v for v in dict.fromkeys(values) if isinstance(v, str) and (v in files or re.fullmatch(r"[\w\- ]+\.\w{1,5}", v))]
    added = []
    for name in names:
        homes = [p for p, _ in files.get(name, [])] or [cwd]
        content = (files.get(name) or [((), "")])[0][1]
        for variant in _name_variants(name, rng):
            if len(added) >= n:
                break
            if variant in gt or variant in files:
                continue
            where = homes[0] if rng.random() < 0.6 else rng.choice(dirs)
            d = fs_dir(contents, where)
            if d is None or variant in d:
                continue
            body = content
            if body:
                words = body.split()
                if len(words) > 3:
                    i = rng.randrange(len(words))
                    words[i] = words[i] + rng.choice([" (draft)", " v2", " (old)", "s"])
                    body = " ".join(words)
                else:
                    body = body + " (old copy)"
            d[variant] = {"type": "file", "content": body}
            files.setdefault(variant, []).append((where, body))
            added.append("/".join(where + (variant,)))
    return added


def _ticker_variants(sym: str, rng: random.Random) -> list[str]:
    cands = [sym[:-1], sym + "L", sym + "X", sym[0] + sym, sym[:-1] + chr((ord(sym[-1]) - 64) % 26 + 65)]
    if len(sym) >= 3:
        cands.append(sym[0] + sym[2] + sym[1] + sym[3:])
    out = [c for c in dict.fromkeys(cands) if c != sym and len(c) >= 2 and c.isalpha()]
    rng.shuffle(out)
    return out


def _twin_stocks_and_orders(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = effective(seed, "TradingBot")
    cfg = config.setdefault("TradingBot", {})
    stocks = copy_json(inst.stocks)
    watch = list(inst.watch_list)
    gt = gt_text(seed)
    added = []
    syms = [v for v in dict.fromkeys(values) if isinstance(v, str) and v in stocks]
    for sym in syms:
        for variant in _ticker_variants(sym, rng):
            if len(added) >= n:
                break
            if variant in stocks or variant in gt:
                continue
            base = dict(stocks[sym])
            factor = 1 + rng.choice([-1, 1]) * rng.uniform(0.005, 0.04)
            for key in ("price", "MA(5)", "MA(20)"):
                if isinstance(base.get(key), (int, float)):
                    base[key] = round(base[key] * factor, 2)
            stocks[variant] = base
            if rng.random() < 0.7 and variant not in watch:
                watch.append(variant)
            added.append(f"stock {variant}")
    orders = {int(o): v for o, v in copy_json(inst.orders).items() if str(o).isdigit()}
    ids = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v in orders]
    counter = int(inst.order_counter)
    for oid in ids[:1]:
        for _ in range(max(1, n // 2)):
            nid = counter - rng.randint(1, 60)
            if nid <= 0 or nid in orders or str(nid) in gt:
                continue
            twin = dict(orders[oid])
            if isinstance(twin.get("price"), (int, float)):
                twin["price"] = round(float(twin["price"]) * (1 + rng.uniform(-0.03, 0.03)), 2)
            twin["id"] = nid
            orders[nid] = twin
            added.append(f"order {nid}")
    if not added:
        return []
    cfg["stocks"] = stocks
    cfg["watch_list"] = watch
    if ids and any(a.startswith("order") for a in added):
        cfg["orders"] = {str(o): v for o, v in orders.items()}
        cfg["order_counter"] = counter
    return added


def _person_variants(name: str, rng: random.Random) -> list[str]:
    cands = [name.lower(), name + "a", name + " " + rng.choice("BKMRT") + ".", name[:-1] if len(name) > 3 else name + "e",
             name + "_" + str(rng.randint(1, 9)), name.upper()]
    out = [c for c in dict.fromkeys(cands) if c != name]
    rng.shuffle(out)
    return out


def _twin_users(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = effective(seed, "MessageAPI")
    user_map = dict(inst.user_map)
    by_id = {v: u for u, v in user_map.items()}
    gt = gt_text(seed)
    people = [v for v in dict.fromkeys(values) if isinstance(v, str) and (v in user_map or v in by_id)]
    people = [by_id.get(p, p) for p in people]
    added = []
    used_ids = set(user_map.values())
    for person in dict.fromkeys(people):
        for variant in _person_variants(person, rng):
            if len(added) >= n:
                break
            if variant in user_map or variant in gt:
                continue
            uid = f"USR{rng.randint(100, 999)}"
            if uid in used_ids or uid in gt:
                continue
            used_ids.add(uid)
            user_map[variant] = uid
            added.append(f"user {variant}={uid}")
    if not added:
        return []
    config.setdefault("MessageAPI", {})["user_map"] = user_map
    return added


def _twin_tweets(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = effective(seed, "TwitterAPI")
    tweets = {int(i): dict(t) for i, t in copy_json(inst.tweets).items()}
    following = list(inst.following_list)
    gt = gt_text(seed)
    added = []
    next_id = int(inst.tweet_counter) + 100  # far from the ids new posts receive
    strings = [v for v in dict.fromkeys(values) if isinstance(v, str) and len(v) >= 3]
    for s in strings:
        if len(added) >= n:
            break
        if s in following or s == inst.username:
            for variant in _person_variants(s, rng)[:2]:
                if variant not in following and variant not in gt and len(added) < n:
                    following.append(variant)
                    added.append(f"following {variant}")
        elif " " in s:  # tweet or comment content
            words = s.split()
            i = rng.randrange(len(words))
            words[i] = rng.choice(["soon", "today", "again", words[i].upper(), words[i] + "!"])
            twin = " ".join(words)
            if twin != s and twin not in gt:
                tweets[next_id] = {"id": next_id, "username": rng.choice([inst.username + "_", "the_" + inst.username, inst.username + "2"]),
                                   "content": twin, "tags": [], "mentions": []}
                added.append(f"tweet {next_id}")
                next_id += 1
    if not added:
        return []
    cfg = config.setdefault("TwitterAPI", {})
    cfg["tweets"] = {str(i): t for i, t in tweets.items()}
    cfg["following_list"] = following
    if "tweet_counter" not in cfg:
        cfg["tweet_counter"] = int(inst.tweet_counter)
    return added


def _twin_tickets(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                      config: dict[str, Any]) -> list[str]:
    inst = effective(seed, "TicketAPI")
    queue = copy_json(inst.ticket_queue)
    by_id = {t.get("id"): t for t in queue}
    counter = int(inst.ticket_counter)
    gt = gt_text(seed)
    added = []
    ids = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v in by_id]
    for tid in ids[:1]:
        digits = str(tid)
        cands = {int(digits[::-1]) if digits[::-1][0] != "0" else tid + 9, tid + 10, tid - 1, tid + 100}
        if len(digits) >= 2:
            cands.add(int(digits[:-2] + digits[-1] + digits[-2]) if (digits[:-2] + digits[-1])[0] != "0" else tid + 1)
        for nid in sorted(cands, key=lambda _: rng.random()):
            if len(added) >= n:
                break
            if nid == tid or nid in by_id or counter <= nid < counter + 30 or str(nid) in gt or nid <= 0:
                continue
            twin = dict(by_id[tid])
            twin["id"] = nid
            desc = str(twin.get("description", ""))
            twin["description"] = (desc + " " + rng.choice(["(duplicate?)", "again", "- follow-up"])).strip()
            queue.append(twin)
            by_id[nid] = twin
            added.append(f"ticket {nid}")
    if not added:
        return []
    cfg = config.setdefault("TicketAPI", {})
    cfg["ticket_queue"] = queue
    cfg.setdefault("ticket_counter", counter)
    return added


def _twin_cards_and_bookings(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                      config: dict[str, Any]) -> list[str]:
    inst = effective(seed, "TravelAPI")
    cards = copy_json(inst.credit_card_list)
    bookings = copy_json(inst.booking_record)
    gt = gt_text(seed)
    added = []
    strings = [v for v in dict.fromkeys(values) if isinstance(v, str)]
    for card in [s for s in strings if s in cards]:
        for _ in range(n):
            if len(added) >= n:
                break
            digits = [i for i, ch in enumerate(card) if ch.isdigit()]
            if len(digits) < 4:
                break
            chars = list(card)
            i = rng.choice(digits[-4:])
            chars[i] = str((int(chars[i]) + rng.randint(1, 9)) % 10)
            twin = "".join(chars)
            if twin in cards or twin in gt:
                continue
            cards[twin] = dict(cards[card])
            added.append(f"card {twin}")
    airports = [s for s in strings if re.fullmatch(r"[A-Z]{3}", s)]
    dates = [s for s in strings if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s)]
    if len(airports) >= 2 and len(added) < n:
        for _ in range(n - len(added)):
            bid = str(rng.randint(1000000, 9999999))
            if bid in bookings or bid in gt:
                continue
            date = dates[0] if dates else "2024-12-01"
            if rng.random() < 0.6:
                y, m, d = date.split("-")
                date = f"{y}-{m}-{min(28, max(1, int(d) + rng.choice([-2, -1, 1, 2]))):02d}"
            bookings[bid] = {
                "card_id": rng.choice(list(cards)) if cards else "0000",
                "travel_date": date,
                "travel_from": airports[0],
                "travel_to": airports[1],
                "travel_class": rng.choice(["economy", "business", "first"]),
                "travel_cost": round(rng.uniform(200, 2000), 2),
                "transaction_id": str(rng.randint(10000000, 99999999)),
            }
            added.append(f"booking {bid}")
    if not added:
        return []
    cfg = config.setdefault("TravelAPI", {})
    cfg["credit_card_list"] = cards
    cfg["booking_record"] = bookings
    return added


#: Per class: near-twins of the values at a call added to the state (files, tickers and orders, users, tweets,
#: tickets, cards and bookings), for the random baseline's look-alike edit (:func:`lookalike_at`).
_STATE_TWINS = {
    "GorillaFileSystem": _twin_files,
    "TradingBot": _twin_stocks_and_orders,
    "MessageAPI": _twin_users,
    "TwitterAPI": _twin_tweets,
    "TicketAPI": _twin_tickets,
    "TravelAPI": _twin_cards_and_bookings,
}


def lookalike_at(seed: Task, k: int, strength: float, rng: random.Random) -> tuple[dict[str, Any], list[str]] | None:
    flat = flat_calls(seed)
    tools = tool_catalogue_of(seed)
    classes = [c for c in dict.fromkeys([class_of(tools, flat[k][3]), class_of(tools, flat[k + 1][3])])
               if c in _STATE_TWINS]
    if not classes:
        return None
    args, outs = step_values(seed, k)
    n = 1 + round(strength * 4)
    config = copy_json(seed.initial_config)
    added: list[str] = []
    for cls in classes:
        if cls not in seed.involved_classes:
            continue
        added += _STATE_TWINS[cls](seed, k, args + outs, n, rng, config)
    return (config, added) if added else None
