"""cascade: an upstream precondition fails and the ground truth recovers."""

from __future__ import annotations

import random
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import copy_json
from ace_env.tasks import Task, Turn
from ace_env.verifier import replay_oracle
from synth.strategies.build import (
    add_user_text,
    build,
    class_of,
    copy_turns,
    effective,
    env_before,
    gt_text,
    pick_position,
)
from synth.strategies.fs import fs_contents, fs_cwd, fs_dir
from synth.strategies.registry import register
from synth.taskcheck import error_output, flat_calls

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
    probe = Task(seed.id + "~probe", "ace-probe", "probe", copy_turns(seed.turns), config,
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
    turns = copy_turns(seed.turns)
    _insert_calls(turns, t, i, calls)
    add_user_text(turns[t], text)
    return build(seed, "cascade", target, strength, note, turns=turns, config=config,
                  extra={"pattern": pattern, "recovery": calls, "user_values": values})


def _cascade_funds(seed, target, k, strength, rng):
    flat = flat_calls(seed)
    buys = []
    for j in (k, k + 1):
        p = parse_call(flat[j][2])
        if isinstance(p, Call) and p.name == "place_order":
            env = env_before(seed, j)
            r = env.call(flat[j][2], flat[j][0])
            a = r.arguments
            if str(a.get("order_type", "")).lower() == "buy":
                buys.append(float(a["price"]) * int(a["amount"]))
    if not buys or "fund_account" not in seed.tools:
        return None
    cost = buys[0]
    inst = effective(seed, "TradingBot")
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
        inst = effective(seed, cls)
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
        env = env_before(seed, j)
        r0 = env.call(flat[j][2], flat[j][0])
        card = r0.arguments.get("card_id")
        travel = env.instances["TravelAPI"]
        if card not in travel.credit_card_list:
            return None
        rec = next((v for v in travel.booking_record.values() if v.get("card_id") == card), None)
        inst = effective(seed, "TravelAPI")
        if rec is None or card not in inst.credit_card_list:
            return None
        cost = float(rec["travel_cost"])
        cards = copy_json(inst.credit_card_list)
        backup = None
        for _ in range(10):
            cand = "".join(str(rng.randint(0, 9)) if ch.isdigit() else ch for ch in card)
            if cand not in cards and cand not in gt_text(seed):
                backup = cand
                break
        if backup is None:
            return None
        cards[backup] = dict(cards[card])
        cards[card]["balance"] = round(cost * rng.uniform(0.1, 0.8), 2)
        config = copy_json(seed.initial_config)
        config.setdefault("TravelAPI", {})["credit_card_list"] = cards
        turns = copy_turns(seed.turns)
        t, i = flat[j][0], flat[j][1]
        p = parse_call(flat[j][2])
        kwargs = dict(p.kwargs)
        if "card_id" in kwargs:
            kwargs["card_id"] = backup
        else:
            return None
        turns[t].ground_truth[i] = Call(p.name, p.args, kwargs).render()
        add_user_text(turns[t], rng.choice(_CARD_TEXT).format(card=card, backup=backup))
        return build(seed, "cascade", target, strength,
                      f"card {card} lowered below the fare; ground truth books with backup card {backup}",
                      turns=turns, config=config,
                      extra={"pattern": "card_declined", "recovery": [turns[t].ground_truth[i]], "user_values": [backup]})
    return None


def _cascade_file(seed, target, k, strength, rng):
    flat = flat_calls(seed)
    config = copy_json(seed.initial_config)
    contents = fs_contents(config)
    if contents is None:
        return None
    cwd = fs_cwd(env_before(seed, k))
    if cwd is None:
        return None
    here = fs_dir(contents, cwd)
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
        turns = copy_turns(seed.turns)
        t, i = flat[j][0], flat[j][1]
        kwargs = {**p.kwargs, "password": new}
        turns[t].ground_truth[i] = Call(p.name, p.args, kwargs).render()
        add_user_text(turns[t], rng.choice(_PASSWORD_TEXT).format(old=old, new=new))
        return build(seed, "cascade", target, strength,
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
        contents = fs_contents(config)
        cwd = fs_cwd(env_before(seed, j))
        here = fs_dir(contents, cwd) if contents is not None and cwd is not None else None
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


def cascade_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    flat = flat_calls(seed)
    classes = list(dict.fromkeys(c for c in (class_of(flat[k][3]), class_of(flat[k + 1][3])) if c))
    patterns = [p for c in classes for p in _CASCADES.get(c, [])]
    rng.shuffle(patterns)
    for pattern in patterns:
        task = pattern(seed, target, k, strength, rng)
        if task is not None:
            return task
    return None


@register("cascade")
def cascade(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    return cascade_at(seed, target, k, strength, rng)
