"""depth: the composition around the target grows to 3-5 calls with steps that cohere.

Added steps are drawn from a table of compositions that connect to a step the
ground truth already makes, about the same entity:

* a **follow-up** after a turn's last call, reading what that call changed or
  returned (``echo(file_name=f)`` → ``cat(file_name=f)``; ``place_order`` →
  ``get_order_details(order_id=<its output>)``): its arguments come from the
  step's arguments (same entity) or output (data flow);
* a **prelude** before a turn's first call, looking up what that call needs
  (``get_stock_info(symbol=s)`` before ``place_order(symbol=s, ...)``).

Only reads are added, so the ground truth's state is unchanged.  The intent of
each added step is composed into the turn's text by the grammar
(:mod:`synth.strategies.text`) where the oracle makes it: preludes first,
follow-ups last, so the text's order is the oracle's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call
from ace_env.tasks import Task
from synth.strategies.build import build, copy_turns, env_before, parsed_output, pick_position
from synth.strategies.registry import register
from synth.strategies.text import first, then
from synth.taskcheck import adjacent_positions, flat_calls


@dataclass(frozen=True)
class Link:
    """One composition: ``tool`` added after (or before) ``anchor``, arguments taken from the anchor."""

    anchor: str
    tool: str
    args: tuple[tuple[str, str], ...]  # (param, "a:<anchor param>" | "o:<output key>" | "=<literal>")
    say: tuple[str, ...]  # intents, formatted with the anchor's arguments
    before: bool = False


_LINKS = (
    Link("echo", "cat", (("file_name", "a:file_name"),), ("show me what {file_name} says now", "read {file_name} back to me")),
    Link("echo", "wc", (("file_name", "a:file_name"), ("mode", "=w")), ("count the words in {file_name}",)),
    Link("touch", "ls", (), ("list the folder so I can see {file_name} is there",)),
    Link("mkdir", "ls", (), ("list the folder so I can see {dir_name} in it",)),
    Link("mv", "ls", (), ("list what's in the folder afterwards",)),
    Link("cp", "ls", (), ("show me the folder's contents afterwards",)),
    Link("cd", "pwd", (), ("tell me the full path of {folder}", "confirm which folder I'm in")),
    Link("cd", "ls", (), ("list what's inside {folder}",)),
    Link("sort", "wc", (("file_name", "a:file_name"), ("mode", "=l")), ("tell me how many lines {file_name} has",)),
    Link("cat", "wc", (("file_name", "a:file_name"), ("mode", "=l")), ("tell me how many lines {file_name} has",)),
    Link("place_order", "get_order_details", (("order_id", "o:order_id"),), ("show me the details of that order",)),
    Link("place_order", "get_stock_info", (("symbol", "a:symbol"),), ("check the current price of {symbol}",), True),
    Link("cancel_order", "get_order_details", (("order_id", "a:order_id"),), ("confirm the order's status",)),
    Link("add_to_watchlist", "get_watchlist", (), ("show me my watchlist with {stock} on it",)),
    Link("fund_account", "get_account_info", (), ("show me my account balance afterwards",)),
    Link("withdraw_funds", "get_account_info", (), ("show me what's left in my account",)),
    Link("book_flight", "get_booking_history", (("access_token", "a:access_token"),), ("show me my booking history with the new booking",)),
    Link("book_flight", "get_credit_card_balance", (("access_token", "a:access_token"), ("card_id", "a:card_id")),
         ("check how much is left on card {card_id}",), True),
    Link("book_flight", "retrieve_invoice", (("access_token", "a:access_token"), ("booking_id", "o:booking_id")),
         ("get me the invoice for that booking",)),
    Link("cancel_booking", "get_booking_history", (("access_token", "a:access_token"),), ("show me my bookings afterwards",)),
    Link("register_credit_card", "get_all_credit_cards", (), ("list all my cards on file",)),
    Link("post_tweet", "get_tweet", (("tweet_id", "o:id"),), ("show me the tweet once it's posted",)),
    Link("comment", "get_tweet_comments", (("tweet_id", "a:tweet_id"),), ("show me the comments on that tweet",)),
    Link("retweet", "get_tweet", (("tweet_id", "a:tweet_id"),), ("show me the tweet I retweeted",)),
    Link("follow_user", "list_all_following", (), ("show me everyone I follow now",)),
    Link("send_message", "view_messages_sent", (), ("show me the messages I've sent",)),
    Link("delete_message", "view_messages_sent", (), ("show me my sent messages afterwards",)),
    Link("create_ticket", "get_ticket", (("ticket_id", "o:id"),), ("show me the ticket you created",)),
    Link("edit_ticket", "get_ticket", (("ticket_id", "a:ticket_id"),), ("show me the ticket after the edit",)),
    Link("resolve_ticket", "get_ticket", (("ticket_id", "a:ticket_id"),), ("show me the resolved ticket",)),
    Link("close_ticket", "get_ticket", (("ticket_id", "a:ticket_id"),), ("show me the ticket's final state",)),
    Link("startEngine", "displayCarStatus", (("option", "=engine"),), ("show me the engine status",)),
    Link("lockDoors", "displayCarStatus", (("option", "=doors"),), ("show me the status of the doors",)),
    Link("fillFuelTank", "displayCarStatus", (("option", "=fuel"),), ("show me the fuel level",)),
    Link("setHeadlights", "displayCarStatus", (("option", "=headlights"),), ("show me the headlight status",)),
    Link("activateParkingBrake", "displayCarStatus", (("option", "=parkingBrake"),), ("show me the parking brake status",)),
)
LINKS_BY_ANCHOR: dict[str, list[Link]] = {}
for _link in _LINKS:
    LINKS_BY_ANCHOR.setdefault(_link.anchor, []).append(_link)


def _render(link: Link, args: dict[str, Any], out: Any) -> tuple[str, str] | None:
    """The added call string and its intent, or None when a value it needs is missing."""
    kwargs: dict[str, Any] = {}
    for param, source in link.args:
        kind, _, name = source.partition(":") if not source.startswith("=") else ("=", "", source[1:])
        if kind == "a":
            if name not in args or args[name] is None:
                return None
            kwargs[param] = args[name]
        elif kind == "o":
            if not isinstance(out, dict) or out.get(name) is None:
                return None
            kwargs[param] = out[name]
        else:
            kwargs[param] = name
    try:
        intent = link.say[0].format(**{k: v for k, v in args.items() if isinstance(v, (str, int, float))})
    except (KeyError, IndexError):
        return None
    return Call(link.tool, (), kwargs).render(), intent


def _candidates(seed: Task, k: int) -> list[tuple[int, bool, str, str, str]]:
    """(turn, before?, call, intent, anchor) for every link that fits a turn boundary near the target."""
    flat = flat_calls(seed)
    turns_near = sorted({flat[k][0], flat[k + 1][0]})
    out = []
    for t in turns_near:
        idx = [j for j, f in enumerate(flat) if f[0] == t]
        if not idx:
            continue
        for j, before in ((idx[-1], False), (idx[0], True)):
            env = env_before(seed, j)
            r = env.call(flat[j][2], t)
            if r.status != "ok":
                continue
            parsed = parsed_output(r.output or "")
            for link in LINKS_BY_ANCHOR.get(flat[j][3], []):
                if link.before != before or link.tool not in seed.tools:
                    continue
                made = _render(link, r.arguments, parsed)
                if made is not None and made[0] not in seed.turns[t].ground_truth:
                    out.append((t, before, made[0], made[1], flat[j][3]))
    return list(dict.fromkeys(out))


def depth_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random,
             strategy: str = "depth") -> Task | None:
    want = max(1, min(3, round(strength * 3)))
    cands = _candidates(seed, k)
    rng.shuffle(cands)
    chosen: list[tuple[int, bool, str, str, str]] = []
    for c in cands:
        if len(chosen) >= want:
            break
        if any(c[2] == d[2] and c[0] == d[0] for d in chosen):
            continue
        chosen.append(c)
    if not chosen:
        return None
    turns = copy_turns(seed.turns)
    for t in sorted({c[0] for c in chosen}):
        pre = [c for c in chosen if c[0] == t and c[1]]
        post = [c for c in chosen if c[0] == t and not c[1]]
        turns[t].ground_truth = [c[2] for c in pre] + turns[t].ground_truth + [c[2] for c in post]
        for m in reversed(turns[t].user):
            if m.get("role") == "user" and m.get("content"):
                text = m["content"].strip()
                if post:
                    text = then(text, [c[3] for c in post], rng)
                if pre:
                    text = first(text, [c[3] for c in pre], rng)
                m["content"] = text
                break
        else:
            return None
    task = build(seed, strategy, target, strength,
                 f"depth +{len(chosen)}: " + "; ".join(f"{'before' if c[1] else 'after'} {c[4]}: {c[2]}" for c in chosen),
                 turns=turns, extra={"added_calls": len(chosen), "added": [c[2] for c in chosen],
                                     "links": [f"{c[4]}>{c[2].split('(')[0]}" if not c[1] else f"{c[2].split('(')[0]}>{c[4]}"
                                               for c in chosen]})
    if task is None or not adjacent_positions(task, target):
        return None
    return task


@register("depth")
def depth(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    return depth_at(seed, target, k, strength, rng)
