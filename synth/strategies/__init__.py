"""Adversarial, oracle-preserving synthesis strategies aimed at one composition.

A strategy turns a seed task into a NEW task aimed at ``target = (from_tool,
to_tool)``, two calls that are adjacent in the seed's ground truth (adjacency
is over the flat list of calls, so a pair may span two turns):

``ambiguity``   look-alike entities next to the ones the target steps use
                (files, stock symbols and orders, users, tweets, tickets,
                bookings and cards), added to ``initial_config``; the ground
                truth is unchanged, the right value must be carried from the
                ``from`` step to the ``to`` step.
``distractor``  1-3 functions of other BFCL classes whose names and
                descriptions resemble the target tools, offered as
                distractors (calling one fails verification).
``cascade``     an upstream precondition fails (funds too low, logged out,
                a card declined, a file missing or truncated); the ground
                truth notices and recovers with calls whose values the user
                text states.
``depth``       turns or calls from compatible seeds spliced before the
                ``from`` step or after the ``to`` step, taking the composition
                from 2 up to 5 calls.
``random``      the baseline: one of the edits above applied to a random
                place of the same seed, not aimed at the target.

Every produced task is re-executed (:func:`ace_env.verifier.replay_oracle`) and
returned only when its ground truth runs with no error and no error output.
Ids are content-addressed, so the same inputs (and rng seed) give the same id.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from typing import Any, Callable

from ace_env import bfcl
from ace_env.calls import Call, parse_call
from ace_env.executor import Environment, copy_json
from ace_env.tasks import Task, Turn
from ace_env.verifier import replay_oracle
from synth.taskcheck import (
    adjacent_positions,
    canonical_json,
    error_output,
    execution_problems,
    flat_calls,
    user_text_upto,
    value_in_text,
)
from synth.taskcheck import (
    leaves as _leaves,
)

Strategy = Callable[[Task, tuple[str, str], float, random.Random], "Task | None"]

STRATEGIES: dict[str, Strategy] = {}


def register(name: str) -> Callable[[Strategy], Strategy]:
    """Register a strategy under ``name`` (names are unique)."""

    def deco(fn: Strategy) -> Strategy:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is already registered")
        STRATEGIES[name] = fn
        return fn

    return deco


def get(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; known: {sorted(STRATEGIES)}") from None


def synthesize(name: str, seed: Task, target: tuple[str, str], strength: float = 0.5,
               rng: random.Random | None = None) -> Task | None:
    """Run one registered strategy."""
    return get(name)(seed, tuple(target), max(0.0, min(1.0, strength)), rng or random.Random(0))


# --------------------------------------------------------------------------- building tasks


def task_id(strategy: str, turns: list[Turn], config: dict[str, Any], tools: list[str],
            distractors: list[str]) -> str:
    blob = canonical_json(
        {
            "turns": [{"user": t.user, "ground_truth": t.ground_truth, "tools_added": t.tools_added}
                      for t in turns],
            "config": config,
            "tools": tools,
            "distractors": distractors,
        }
    )
    return f"ace-{strategy}-{hashlib.sha1(blob.encode()).hexdigest()[:12]}"


def _build(seed: Task, strategy: str, target: tuple[str, str], strength: float, note: str, *,
           turns: list[Turn] | None = None, config: dict[str, Any] | None = None,
           classes: list[str] | None = None, tools: list[str] | None = None,
           distractors: list[str] | None = None, extra: dict[str, Any] | None = None) -> Task | None:
    """A new task from the seed with the given parts replaced; None unless it executes cleanly."""
    turns = turns if turns is not None else _copy_turns(seed.turns)
    config = config if config is not None else copy_json(seed.initial_config)
    classes = classes if classes is not None else list(seed.involved_classes)
    tools = tools if tools is not None else list(seed.tools)
    distractors = distractors if distractors is not None else list(seed.distractors)
    provenance = {
        "parents": [seed.id],
        "strategy": strategy,
        "target_edge": f"{target[0]}>{target[1]}",
        "strength": round(float(strength), 4),
        "note": note,
        **(extra or {}),
    }
    task = Task(
        id=task_id(strategy, turns, config, tools, distractors),
        source="ace",
        category=strategy,
        turns=turns,
        initial_config=config,
        involved_classes=classes,
        tools=tools,
        long_context=seed.long_context,
        provenance=provenance,
        distractors=distractors,
    )
    if execution_problems(replay_oracle(task)):
        return None
    return task


def _copy_turns(turns: list[Turn]) -> list[Turn]:
    return [Turn([dict(m) for m in t.user], list(t.ground_truth), list(t.tools_added)) for t in turns]


def _pick_position(seed: Task, target: tuple[str, str], rng: random.Random) -> int | None:
    positions = adjacent_positions(seed, target)
    return rng.choice(positions) if positions else None


def _add_user_text(turn: Turn, text: str, front: bool = False) -> None:
    """Add a sentence to the turn's (last) user message, or a new message if it has none."""
    for m in reversed(turn.user):
        if m.get("role") == "user":
            m["content"] = f"{text} {m['content']}" if front else f"{m['content'].rstrip()} {text}"
            return
    turn.user.append({"role": "user", "content": text})


def _class_of(name: str) -> str | None:
    info = bfcl.functions().get(name)
    return info.class_name if info else None


def _parsed_output(output: str) -> Any:
    try:
        return json.loads(output)
    except (ValueError, TypeError):
        return None


def _effective(seed: Task, cls: str) -> Any:
    """A fresh instance of ``cls`` loaded from the seed's config (short context)."""
    inst = bfcl.api_class(cls)()
    if not bfcl.is_stateless(cls):
        inst._load_scenario(copy_json(seed.initial_config.get(cls, {})), long_context=False)
    return inst


def _env_before(seed: Task, flat_index: int) -> Environment:
    """An environment that has executed the seed's ground truth up to (not including) a call."""
    env = Environment(seed)
    for k, (t, _, raw, _) in enumerate(flat_calls(seed)):
        if k >= flat_index:
            break
        env.call(raw, t)
    return env


def _step_values(seed: Task, k: int) -> tuple[list[Any], list[Any]]:
    """Argument leaves and output leaves of flat calls ``k`` and ``k + 1``."""
    env = _env_before(seed, k)
    flat = flat_calls(seed)
    args, outs = [], []
    for j in (k, k + 1):
        t, _, raw, _ = flat[j]
        r = env.call(raw, t)
        args.extend(_leaves(r.arguments))
        outs.extend(_leaves(_parsed_output(r.output or "")))
    return args, outs


def _gt_text(seed: Task) -> str:
    return "\n".join(c for t in seed.turns for c in t.ground_truth)


# --------------------------------------------------------------------------- ambiguity


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


def _fs_dirs(contents: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, node in contents.items():
        if isinstance(node, dict) and node.get("type") == "directory":
            out.extend(_fs_dirs(node.get("contents", {}), path + (name,)))
    return out


def _fs_files(contents: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """File name -> [(directory path, content)]."""
    out: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for name, node in contents.items():
        if not isinstance(node, dict):
            continue
        if node.get("type") == "file":
            out.setdefault(name, []).append((path, node.get("content", "")))
        elif node.get("type") == "directory":
            for k, v in _fs_files(node.get("contents", {}), path + (name,)).items():
                out.setdefault(k, []).extend(v)
    return out


def _fs_contents(config: dict[str, Any]) -> dict[str, Any] | None:
    root = config.get("GorillaFileSystem", {}).get("root")
    if not isinstance(root, dict) or len(root) != 1:
        return None
    node = next(iter(root.values()))
    return node.get("contents") if isinstance(node, dict) else None


def _fs_dir(contents: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    for name in path:
        node = contents.get(name)
        if not isinstance(node, dict) or node.get("type") != "directory":
            return None
        contents = node.setdefault("contents", {})
    return contents


def _fs_cwd(env: Environment) -> tuple[str, ...] | None:
    fs = env.instances.get("GorillaFileSystem")
    if fs is None:
        return None
    path, d = [], fs._current_dir
    while d is not None and d is not fs.root:
        path.append(d.name)
        d = d.parent
    return tuple(reversed(path))


def _ambiguity_fs(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                  config: dict[str, Any]) -> list[str]:
    contents = _fs_contents(config)
    if contents is None:
        return []
    files = _fs_files(contents)
    dirs = _fs_dirs(contents)
    cwd = _fs_cwd(_env_before(seed, k)) or ()
    gt = _gt_text(seed)
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
            d = _fs_dir(contents, where)
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


def _ambiguity_trading(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = _effective(seed, "TradingBot")
    cfg = config.setdefault("TradingBot", {})
    stocks = copy_json(inst.stocks)
    watch = list(inst.watch_list)
    gt = _gt_text(seed)
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


def _ambiguity_message(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = _effective(seed, "MessageAPI")
    user_map = dict(inst.user_map)
    by_id = {v: u for u, v in user_map.items()}
    gt = _gt_text(seed)
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


def _ambiguity_twitter(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                       config: dict[str, Any]) -> list[str]:
    inst = _effective(seed, "TwitterAPI")
    tweets = {int(i): dict(t) for i, t in copy_json(inst.tweets).items()}
    following = list(inst.following_list)
    gt = _gt_text(seed)
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


def _ambiguity_ticket(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                      config: dict[str, Any]) -> list[str]:
    inst = _effective(seed, "TicketAPI")
    queue = copy_json(inst.ticket_queue)
    by_id = {t.get("id"): t for t in queue}
    counter = int(inst.ticket_counter)
    gt = _gt_text(seed)
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


def _ambiguity_travel(seed: Task, k: int, values: list[Any], n: int, rng: random.Random,
                      config: dict[str, Any]) -> list[str]:
    inst = _effective(seed, "TravelAPI")
    cards = copy_json(inst.credit_card_list)
    bookings = copy_json(inst.booking_record)
    gt = _gt_text(seed)
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


_AMBIGUITY = {
    "GorillaFileSystem": _ambiguity_fs,
    "TradingBot": _ambiguity_trading,
    "MessageAPI": _ambiguity_message,
    "TwitterAPI": _ambiguity_twitter,
    "TicketAPI": _ambiguity_ticket,
    "TravelAPI": _ambiguity_travel,
}


def _ambiguity_at(seed: Task, k: int, strength: float, rng: random.Random) -> tuple[dict[str, Any], list[str]] | None:
    flat = flat_calls(seed)
    classes = [c for c in dict.fromkeys([_class_of(flat[k][3]), _class_of(flat[k + 1][3])]) if c in _AMBIGUITY]
    if not classes:
        return None
    args, outs = _step_values(seed, k)
    n = 1 + round(strength * 4)
    config = copy_json(seed.initial_config)
    added: list[str] = []
    for cls in classes:
        if cls not in seed.involved_classes:
            continue
        added += _AMBIGUITY[cls](seed, k, args + outs, n, rng, config)
    return (config, added) if added else None


@register("ambiguity")
def ambiguity(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = _pick_position(seed, target, rng)
    if k is None:
        return None
    made = _ambiguity_at(seed, k, strength, rng)
    if made is None:
        return None
    config, added = made
    return _build(seed, "ambiguity", target, strength, f"look-alikes added: {', '.join(added)}",
                  config=config, extra={"lookalikes": added})


# --------------------------------------------------------------------------- distractor


_STOP = {"the", "a", "an", "of", "to", "and", "or", "in", "for", "is", "on", "by", "with", "from", "at", "it",
         "be", "this", "that", "as", "if", "get", "given", "specified", "current", "user", "return", "returns"}


def _tokens(name: str) -> set[str]:
    info = bfcl.functions()[name]
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").lower().split()
    desc = re.findall(r"[a-z]+", str(info.doc.get("description", "")).lower())
    return {w for w in words + desc if w not in _STOP and len(w) > 2}


@functools.cache
def _similar(name: str) -> tuple[tuple[str, float], ...]:
    """Functions of other classes by descending token overlap (Jaccard) with ``name``."""
    mine = _tokens(name)
    cls = bfcl.functions()[name].class_name
    scored = []
    for other, info in bfcl.functions().items():
        if info.class_name == cls:
            continue
        theirs = _tokens(other)
        union = mine | theirs
        score = len(mine & theirs) / len(union) if union else 0.0
        name_bonus = 0.2 * len(set(name.lower().split("_")) & set(other.lower().split("_")))
        scored.append((other, round(score + name_bonus, 4)))
    scored.sort(key=lambda x: (-x[1], x[0]))
    return tuple(scored)


@functools.cache
def _loads_empty(cls: str) -> bool:
    try:
        inst = bfcl.api_class(cls)()
        if not bfcl.is_stateless(cls):
            inst._load_scenario({}, long_context=False)
    except Exception:
        return False
    return True


def _with_distractors(seed: Task, chosen: list[str]) -> tuple[list[str], list[str], dict[str, Any], list[str]]:
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
    used = {n for _, _, _, n in flat_calls(seed)}
    pool: dict[str, float] = {}
    for name in names:
        for other, score in _similar(name)[:8]:
            cls = bfcl.functions()[other].class_name
            if other in used or other in seed.tools or score <= 0 or not _loads_empty(cls):
                continue
            pool[other] = max(pool.get(other, 0.0), score)
    return [n for n, _ in sorted(pool.items(), key=lambda x: (-x[1], x[0]))]


@register("distractor")
def distractor(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    if _pick_position(seed, target, rng) is None:
        return None
    cands = _distractor_candidates(seed, [target[1], target[0]])[:6]
    if not cands:
        return None
    n = min(len(cands), 1 + round(strength * 2))
    weights = [len(cands) - i for i in range(len(cands))]
    chosen: list[str] = []
    while len(chosen) < n:
        pick = rng.choices(cands, weights=weights)[0]
        if pick not in chosen:
            chosen.append(pick)
    classes, tools, config, distractors = _with_distractors(seed, chosen)
    return _build(seed, "distractor", target, strength, f"distractor tools offered: {', '.join(chosen)}",
                  config=config, classes=classes, tools=tools, distractors=distractors,
                  extra={"added_distractors": chosen})


# --------------------------------------------------------------------------- cascade

_FUNDS_TEXT = [
    "My cash balance is running low, so if it doesn't cover this, first deposit ${amount} into the trading account.",
    "Heads up: the account may be short on funds. Add ${amount} to it before buying if needed.",
    "I might not have enough money in the account; top it up with ${amount} first if the order can't go through.",
]
_TRADING_LOGIN_TEXT = [
    "If you find I'm logged out of the trading platform, sign in with username '{user}' and password '{pw}'.",
    "My trading session may have expired; the login is '{user}' with password '{pw}'.",
]
_TWITTER_LOGIN_TEXT = [
    "I may have been signed out of Twitter; my username is '{user}' and the password is '{pw}'.",
    "If the posting session has expired, log back in as '{user}' using password '{pw}'.",
    "Should Twitter say I'm not authenticated, use '{user}' / '{pw}' to sign in again.",
]
_MESSAGE_LOGIN_TEXT = [
    "If the messaging app has logged me out, log in again with my user id {uid}.",
    "My messaging session might have dropped; my user id is {uid} if you need to sign back in.",
]
_TICKET_LOGIN_TEXT = [
    "If the ticket system says I'm not logged in, sign in as '{user}' with password '{pw}'.",
    "The support portal may have logged me out: username '{user}', password '{pw}'.",
]
_CARD_TEXT = [
    "Card {card} may not have enough left on it; if it's declined, pay with my backup card {backup} instead.",
    "If {card} gets declined for insufficient funds, use the other card on file, {backup}.",
    "I'm not sure {card} still has the balance for this. Fall back to card {backup} if it doesn't.",
]
_FILE_MISSING_TEXT = [
    "The file '{name}' may have gone missing; if so, recreate it with the content: \"{content}\".",
    "If '{name}' isn't there anymore, create it again and put this in it: \"{content}\".",
]
_FILE_TRUNCATED_TEXT = [
    "'{name}' might be incomplete; it should read exactly: \"{content}\". Rewrite it if it doesn't.",
    "I think '{name}' got cut off. Its full content is \"{content}\"; restore that if needed.",
]


def _insert_calls(turns: list[Turn], t: int, i: int, calls: list[str]) -> None:
    turns[t].ground_truth[i:i] = calls


def _first_error_index(task: Task) -> int | None:
    """Flat index of the first ground-truth call whose output is an error, if any."""
    oracle = replay_oracle(task)
    k = 0
    for turn in oracle.turns:
        for step in turn.steps:
            if step.status != "ok" or error_output(step.output):
                return k
            k += 1
    return None


def _recover(seed: Task, target: tuple[str, str], k: int, config: dict[str, Any], calls: list[str],
             text: str, strength: float, note: str, values: list[Any], pattern: str,
             at: int | None = None) -> Task | None:
    """Insert recovery calls before the call that now fails (or before ``from``), with the text."""
    probe = Task(seed.id + "~probe", "ace-probe", "probe", _copy_turns(seed.turns), config,
                 list(seed.involved_classes), list(seed.tools), seed.long_context, {}, list(seed.distractors))
    if at is None:
        at = _first_error_index(probe)
        if at is None:
            return None  # the edit did not make anything fail: not a cascade
    if at > k + 1:
        return None  # the failure is downstream of the target: not aimed at it
    if at == k + 1:
        at = k  # never split the target pair
    flat = flat_calls(seed)
    t, i = flat[at][0], flat[at][1]
    turns = _copy_turns(seed.turns)
    _insert_calls(turns, t, i, calls)
    _add_user_text(turns[t], text)
    return _build(seed, "cascade", target, strength, note, turns=turns, config=config,
                  extra={"pattern": pattern, "recovery": calls, "user_values": values})


def _cascade_funds(seed, target, k, strength, rng):
    flat = flat_calls(seed)
    buys = []
    for j in (k, k + 1):
        p = parse_call(flat[j][2])
        if isinstance(p, Call) and p.name == "place_order":
            env = _env_before(seed, j)
            r = env.call(flat[j][2], flat[j][0])
            a = r.arguments
            if str(a.get("order_type", "")).lower() == "buy":
                buys.append(float(a["price"]) * int(a["amount"]))
    if not buys or "fund_account" not in seed.tools:
        return None
    cost = buys[0]
    inst = _effective(seed, "TradingBot")
    if not inst.authenticated:
        return None
    config = copy_json(seed.initial_config)
    cfg = config.setdefault("TradingBot", {})
    info = copy_json(inst.account_info)
    low = round(cost * (0.6 - 0.5 * strength) * rng.uniform(0.5, 1.0), 2)
    info["balance"] = low
    cfg["account_info"] = info
    amount = int((cost - low) // 500 + 1 + rng.randint(0, 3)) * 500
    text = rng.choice(_FUNDS_TEXT).format(amount=f"{amount:,}")
    return _recover(seed, target, k, config, [f"fund_account(amount={amount})"], text, strength,
                    f"balance lowered to {low}; ground truth funds {amount} before the order",
                    [amount], "insufficient_funds")


def _cascade_login(cls, flag, value_off, make_call, text_list, fmt, pattern):
    def fn(seed, target, k, strength, rng):
        inst = _effective(seed, cls)
        if getattr(inst, flag) == value_off:
            return None
        config = copy_json(seed.initial_config)
        config.setdefault(cls, {})[flag] = value_off
        call, values, fields = make_call(inst, rng)
        if call.split("(")[0] not in seed.tools:
            return None
        text = rng.choice(text_list).format(**fields)
        return _recover(seed, target, k, config, [call], text, strength,
                        f"{cls} starts logged out; ground truth logs in with credentials from the text",
                        values, pattern)
    return fn


def _twitter_call(inst, rng):
    return (f"authenticate_twitter(username={inst.username!r}, password={inst.password!r})",
            [inst.username, inst.password], {"user": inst.username, "pw": inst.password})


def _message_call(inst, rng):
    return f"message_login(user_id={inst.current_user!r})", [inst.current_user], {"uid": inst.current_user}


def _ticket_call(inst, rng):
    pw = rng.choice(["Tk!", "pass", "Sup"]) + str(rng.randint(1000, 9999))
    return (f"ticket_login(username={inst.current_user!r}, password={pw!r})", [inst.current_user, pw],
            {"user": inst.current_user, "pw": pw})


def _trading_call(inst, rng):
    user = rng.choice(["trader", "investor", "jdoe"]) + str(rng.randint(10, 99))
    pw = rng.choice(["Mkt", "Bull", "Stk"]) + "#" + str(rng.randint(1000, 9999))
    return f"trading_login(username={user!r}, password={pw!r})", [user, pw], {"user": user, "pw": pw}


_cascade_twitter = _cascade_login("TwitterAPI", "authenticated", False, _twitter_call, _TWITTER_LOGIN_TEXT, None, "twitter_logged_out")
_cascade_message = _cascade_login("MessageAPI", "current_user", None, _message_call, _MESSAGE_LOGIN_TEXT, None, "message_logged_out")
_cascade_ticket = _cascade_login("TicketAPI", "current_user", None, _ticket_call, _TICKET_LOGIN_TEXT, None, "ticket_logged_out")
_cascade_trading_login = _cascade_login("TradingBot", "authenticated", False, _trading_call, _TRADING_LOGIN_TEXT, None, "trading_logged_out")


def _cascade_card(seed, target, k, strength, rng):
    flat = flat_calls(seed)
    for j in (k, k + 1):
        if flat[j][3] != "book_flight":
            continue
        env = _env_before(seed, j)
        r0 = env.call(flat[j][2], flat[j][0])
        card = r0.arguments.get("card_id")
        travel = env.instances["TravelAPI"]
        if card not in travel.credit_card_list:
            return None
        rec = next((v for v in travel.booking_record.values() if v.get("card_id") == card), None)
        inst = _effective(seed, "TravelAPI")
        if rec is None or card not in inst.credit_card_list:
            return None
        cost = float(rec["travel_cost"])
        cards = copy_json(inst.credit_card_list)
        backup = None
        for _ in range(10):
            cand = "".join(str(rng.randint(0, 9)) if ch.isdigit() else ch for ch in card)
            if cand not in cards and cand not in _gt_text(seed):
                backup = cand
                break
        if backup is None:
            return None
        cards[backup] = dict(cards[card])
        cards[card]["balance"] = round(cost * rng.uniform(0.1, 0.8), 2)
        config = copy_json(seed.initial_config)
        config.setdefault("TravelAPI", {})["credit_card_list"] = cards
        turns = _copy_turns(seed.turns)
        t, i = flat[j][0], flat[j][1]
        p = parse_call(flat[j][2])
        kwargs = dict(p.kwargs)
        if "card_id" in kwargs:
            kwargs["card_id"] = backup
        else:
            return None
        turns[t].ground_truth[i] = Call(p.name, p.args, kwargs).render()
        _add_user_text(turns[t], rng.choice(_CARD_TEXT).format(card=card, backup=backup))
        return _build(seed, "cascade", target, strength,
                      f"card {card} lowered below the fare; ground truth books with backup card {backup}",
                      turns=turns, config=config,
                      extra={"pattern": "card_declined", "recovery": [turns[t].ground_truth[i]], "user_values": [backup]})
    return None


def _cascade_file(seed, target, k, strength, rng):
    flat = flat_calls(seed)
    config = copy_json(seed.initial_config)
    contents = _fs_contents(config)
    if contents is None:
        return None
    cwd = _fs_cwd(_env_before(seed, k))
    if cwd is None:
        return None
    here = _fs_dir(contents, cwd)
    if here is None:
        return None
    names = []
    for j in (k + 1, k):
        p = parse_call(flat[j][2])
        if isinstance(p, Call):
            names += [v for v in list(p.kwargs.values()) + list(p.args) if isinstance(v, str) and v in here
                      and here[v].get("type") == "file"]
    names = list(dict.fromkeys(names))
    if not names:
        return None
    name = names[0]
    content = here[name].get("content", "")
    if not content or len(content) > 240 or '"' in content:
        return None
    if strength >= 0.5 or len(content) < 8:
        del here[name]
        calls = [f"touch(file_name={name!r})", f"echo(content={content!r}, file_name={name!r})"]
        text = rng.choice(_FILE_MISSING_TEXT).format(name=name, content=content)
        pattern = "file_missing"
    else:
        cut = max(1, len(content) // 2)
        here[name] = {"type": "file", "content": content[:cut]}
        calls = [f"echo(content={content!r}, file_name={name!r})"]
        text = rng.choice(_FILE_TRUNCATED_TEXT).format(name=name, content=content)
        pattern = "file_truncated"
    for c in calls:
        if c.split("(")[0] not in seed.tools:
            return None
    return _recover(seed, target, k, config, calls, text, strength,
                    f"{pattern}: {name} in /{'/'.join(cwd)}; ground truth restores it from the text",
                    [content], pattern, at=k)


_PASSWORD_TEXT = [
    "Oh, and I changed my password recently: if '{old}' is rejected, the new one is '{new}'.",
    "If the old password doesn't work anymore, try '{new}' - I reset it last week.",
    "My password may have been rotated; the current one should be '{new}'.",
]
_DIR_TEXT = [
    "If the folder '{folder}' doesn't exist yet, create it first.",
    "The '{folder}' directory might have been deleted; make it again if it's not there.",
    "Make sure '{folder}' exists (create it if it's missing) before working in it.",
]


def _cascade_password(seed, target, k, strength, rng):
    """The password in the user's words was rotated: the first login fails, the new one works."""
    flat = flat_calls(seed)
    for j in range(k + 1, -1, -1):
        if flat[j][3] != "authenticate_twitter":
            continue
        p = parse_call(flat[j][2])
        old = p.kwargs.get("password")
        if not isinstance(old, str) or "password" not in p.kwargs:
            return None
        new = old[: max(3, len(old) // 2)] + rng.choice(["#2025", "!new", "_v2", "$9"]) + str(rng.randint(10, 99))
        config = copy_json(seed.initial_config)
        config.setdefault("TwitterAPI", {})["password"] = new
        turns = _copy_turns(seed.turns)
        t, i = flat[j][0], flat[j][1]
        kwargs = {**p.kwargs, "password": new}
        turns[t].ground_truth[i] = Call(p.name, p.args, kwargs).render()
        _add_user_text(turns[t], rng.choice(_PASSWORD_TEXT).format(old=old, new=new))
        return _build(seed, "cascade", target, strength,
                      "the Twitter password was rotated; the login with the new one from the text succeeds",
                      turns=turns, config=config,
                      extra={"pattern": "password_rotated", "recovery": [turns[t].ground_truth[i]],
                             "user_values": [new]})
    return None


def _cascade_dir(seed, target, k, strength, rng):
    """An empty folder the ground truth enters is missing: recreate it (mkdir) before the cd."""
    flat = flat_calls(seed)
    for j in range(k, -1, -1):
        if flat[j][3] != "cd":
            continue
        p = parse_call(flat[j][2])
        folder = (p.kwargs.get("folder") or (p.args[0] if p.args else None))
        if not isinstance(folder, str) or folder in (".", "..", "/"):
            continue
        config = copy_json(seed.initial_config)
        contents = _fs_contents(config)
        cwd = _fs_cwd(_env_before(seed, j))
        here = _fs_dir(contents, cwd) if contents is not None and cwd is not None else None
        node = (here or {}).get(folder)
        if not isinstance(node, dict) or node.get("type") != "directory" or node.get("contents"):
            continue
        if "mkdir" not in seed.tools:
            return None
        del here[folder]
        text = rng.choice(_DIR_TEXT).format(folder=folder)
        return _recover(seed, target, k, config, [f"mkdir(dir_name={folder!r})"], text, strength,
                        f"empty folder {folder} removed; ground truth recreates it before entering",
                        [folder], "dir_missing")
    return None


_CASCADES = {
    "TradingBot": [_cascade_funds, _cascade_trading_login],
    "TwitterAPI": [_cascade_twitter, _cascade_password],
    "MessageAPI": [_cascade_message],
    "TicketAPI": [_cascade_ticket],
    "TravelAPI": [_cascade_card],
    "GorillaFileSystem": [_cascade_file, _cascade_dir],
}


def _cascade_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    flat = flat_calls(seed)
    classes = list(dict.fromkeys(c for c in (_class_of(flat[k][3]), _class_of(flat[k + 1][3])) if c))
    patterns = [p for c in classes for p in _CASCADES.get(c, [])]
    rng.shuffle(patterns)
    for pattern in patterns:
        task = pattern(seed, target, k, strength, rng)
        if task is not None:
            return task
    return None


@register("cascade")
def cascade(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = _pick_position(seed, target, rng)
    if k is None:
        return None
    return _cascade_at(seed, target, k, strength, rng)


# --------------------------------------------------------------------------- depth

_JOIN_AFTER = ["{orig} After that: {extra}", "{orig} Once that's done: {extra}", "{orig} And one more thing: {extra}"]
_JOIN_BEFORE = ["Before anything else: {extra} {orig}", "{extra} Next: {orig}", "First: {extra} Then: {orig}"]


def _derivable(task: Task, spliced: set[tuple[int, int]]) -> bool:
    """Every non-trivial argument value of the spliced calls is in the user text or an earlier output."""

    oracle = replay_oracle(task)
    outputs: list[str] = []
    for t, turn in enumerate(oracle.turns):
        text = None
        for i, step in enumerate(turn.steps):
            if (t, i) in spliced:
                text = text if text is not None else user_text_upto(task, t)
                for v in _leaves(step.arguments):
                    trivial = v is None or isinstance(v, bool) or (isinstance(v, (int, float)) and -2 <= v <= 2) \
                        or (isinstance(v, str) and len(v.strip()) < 3)
                    if trivial or value_in_text(v, text):
                        continue
                    if not any(str(v) in out for out in outputs):
                        return False
            outputs.append(step.output)
    return True


@functools.cache
def _donor_turns(classes: frozenset[str]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(seed id, user text, calls) of base-task turns whose classes fit inside ``classes``."""
    out = []
    for task in bfcl.load_tasks("base"):
        if not set(task.involved_classes) <= classes:
            continue
        for turn in task.turns:
            texts = [m["content"] for m in turn.user if m.get("role") == "user" and m.get("content")]
            if texts and 1 <= len(turn.ground_truth) <= 3:
                out.append((task.id, " ".join(texts), tuple(turn.ground_truth)))
    return tuple(out)


def _depth_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random,
              strategy: str = "depth") -> Task | None:
    extra_needed = max(1, min(3, round(strength * 3)))
    flat = flat_calls(seed)
    donors = [d for d in _donor_turns(frozenset(seed.involved_classes)) if d[0] != seed.id]
    rng.shuffle(donors)
    turns = _copy_turns(seed.turns)
    t_from, i_from = flat[k][0], flat[k][1]
    t_to, i_to = flat[k + 1][0], flat[k + 1][1]
    added = 0
    used: list[str] = []
    before = 0  # calls inserted before ``from`` in its turn
    tried = 0
    current = None
    for donor_id, text, calls in donors:
        if added >= extra_needed or tried >= 40:
            break
        if added + len(calls) > extra_needed:
            continue
        offered = set(seed.tools)
        if any(not isinstance(parse_call(c), Call) or parse_call(c).name not in offered for c in calls):
            continue
        tried += 1
        trial = _copy_turns(turns)
        after = rng.random() < 0.6
        if after:
            pos = i_to + 1 + (before if t_to == t_from else 0)
            trial[t_to].ground_truth[pos:pos] = list(calls)
            t_ins = t_to
            tgt = trial[t_to]
            joined = rng.choice(_JOIN_AFTER)
        else:
            pos = i_from + before
            trial[t_from].ground_truth[pos:pos] = list(calls)
            t_ins = t_from
            tgt = trial[t_from]
            joined = rng.choice(_JOIN_BEFORE)
        for m in reversed(tgt.user):
            if m.get("role") == "user":
                m["content"] = joined.format(orig=m["content"].strip(), extra=text.strip())
                break
        note = f"depth +{added + len(calls)}: spliced {len(calls)} call(s) from {donor_id}"
        task = _build(seed, strategy, target, strength, note, turns=trial,
                      extra={"donors": used + [donor_id], "added_calls": added + len(calls)})
        if task is None or not adjacent_positions(task, target):
            continue
        start = pos
        if not _derivable(task, {(t_ins, start + x) for x in range(len(calls))}):
            continue
        turns = trial
        current = task
        used.append(donor_id)
        added += len(calls)
        if not after:
            before += len(calls)
    return current


@register("depth")
def depth(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = _pick_position(seed, target, rng)
    if k is None:
        return None
    return _depth_at(seed, target, k, strength, rng)


# --------------------------------------------------------------------------- random baseline


@register("random")
def random_augmentation(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """CoVERT-style oracle-preserving random augmentation of the same seed, not aimed at ``target``."""
    if _pick_position(seed, target, rng) is None:
        return None
    flat = flat_calls(seed)
    if len(flat) < 2:
        return None
    kinds = ["ambiguity", "distractor", "cascade", "depth"]
    rng.shuffle(kinds)
    for kind in kinds:
        k = rng.randrange(len(flat) - 1)
        applied = f"{flat[k][3]}>{flat[k + 1][3]}"
        extra = {"random_kind": kind, "applied_to": applied}
        if kind == "distractor":
            used = {n for _, _, _, n in flat}
            pool = [n for n, info in bfcl.functions().items()
                    if info.class_name not in seed.involved_classes and n not in used and _loads_empty(info.class_name)]
            if not pool:
                continue
            chosen = rng.sample(sorted(pool), min(len(pool), 1 + round(strength * 2)))
            classes, tools, config, distractors = _with_distractors(seed, chosen)
            task = _build(seed, "random", target, strength, f"random distractors: {', '.join(chosen)}",
                          config=config, classes=classes, tools=tools, distractors=distractors,
                          extra={**extra, "added_distractors": chosen})
        elif kind == "ambiguity":
            made = _ambiguity_at(seed, k, strength, rng)
            if made is None:
                continue
            config, added = made
            task = _build(seed, "random", target, strength, f"random look-alikes: {', '.join(added)}",
                          config=config, extra={**extra, "lookalikes": added})
        elif kind == "cascade":
            inner = _cascade_at(seed, (flat[k][3], flat[k + 1][3]), k, strength, rng)
            task = _retag(inner, seed, target, strength, extra) if inner else None
        else:
            inner = _depth_at(seed, (flat[k][3], flat[k + 1][3]), k, strength, rng, strategy="random")
            task = _retag(inner, seed, target, strength, extra) if inner else None
        # the baseline edits the seed at random but keeps its compositions (so the task
        # still has the target the benchmark compares on)
        if task is not None and adjacent_positions(task, target):
            return task
    return None


def _retag(inner: Task, seed: Task, target: tuple[str, str], strength: float, extra: dict[str, Any]) -> Task | None:
    """A task made by another strategy, relabelled as the random baseline for ``target``."""
    keep = {k: v for k, v in inner.provenance.items()
            if k not in ("parents", "strategy", "target_edge", "strength", "note")}
    return _build(seed, "random", target, strength, "random " + inner.provenance.get("note", ""),
                  turns=inner.turns, config=inner.initial_config, classes=inner.involved_classes,
                  tools=inner.tools, distractors=inner.distractors, extra={**keep, **extra})


__all__ = ["STRATEGIES", "register", "get", "synthesize", "task_id"]
