"""Issue 34, blind review s6: a distractor's request names neither the right tool nor its twin, and the twin's
shortcoming comes into play on the task's state (its executed output is not all the right tool's)."""

from __future__ import annotations

import random
import re

import pytest

from ace_env import bfcl, twins
from synth import strategies
from synth.checks.parts import DISTRACTOR_MOOT, DISTRACTOR_NAMED, flat_calls, target_step
from synth.checks.seeds import usable_seed
from synth.repair import usable_version
from synth.strategies import distractor as distractor_module
from synth.strategies.distractor import (
    _covers,
    decision_text,
    moot_problems,
    named_problems,
    twin_outputs,
)
from synth.strategies.neutral import checked_words, name_words, named_words, neutral_request
from synth.taskcheck import check_task


@pytest.fixture(scope="module")
def made():
    base = [u for t in bfcl.load_tasks("base") for u in [usable_version(t)] if u is not None and usable_seed(u)]
    out = []
    for seed in base:
        flat = flat_calls(seed)
        for target in sorted({(flat[i][3], flat[i + 1][3]) for i in range(len(flat) - 1)}):
            task = strategies.STRATEGIES["distractor"](seed, target, 0.5, random.Random(1))
            if task is not None:
                out.append((seed, task))
    return out


def test_neutral_request_rewrites_name_words_outside_quotes_and_tickers():
    words = name_words("get_order_details", "get_order_summary")
    assert words == ["order", "details", "summary"]
    text = ("I'd like a detailed summary of the order. It's for the TSLA ORDER I placed. "
            "Send 'Order details attached' to Bob. Show me an order's details.")
    new = neutral_request(text, words, random.Random(0))
    assert new is not None and named_words(new, words) == []
    assert "'Order details attached'" in new and "TSLA ORDER" in new and "It's for" in new
    assert "an trade" not in new and "a overview" not in new  # the article follows the new word
    # a form with no neutral rewrite: the draft is not made
    assert neutral_request("I ordered it yesterday.", words, random.Random(0)) is None
    assert named_words("What's the summary?", words) == ["summary"]
    assert named_words("Send 'the summary' now", words) == []
    # only the right tool's distinguishing words count: a shared word favours neither, a twin's word is the lure
    assert checked_words("estimate_distance", "estimate_flight_distance") == []
    assert checked_words("get_order_details", "get_order_summary") == ["details"]
    assert checked_words("get_stock_info", "get_stock_info_delayed", "get_stock_quote_cached") == []
    assert checked_words("get_stock_info", "get_stock_quote_cached") == ["info"]
    assert checked_words("cancel_booking", "request_booking_refund") == ["cancel"]


def test_distractor_requests_name_no_tool_and_checks_pass(made):
    assert len(made) >= 40
    seen, lures = set(), 0
    for seed, task in made:
        prov = task.provenance
        at = prov["distractor_turn"]
        text = decision_text(task, at)
        words = checked_words(prov["twin_of"], *prov["added_distractors"])
        assert named_words(text, words) == [], (text, words)
        assert named_problems(task) == []
        result = check_task(task)
        assert result.valid, result.reasons
        seen.add(prov["twin_of"])
        if prov["twin_of"] == "get_order_details":  # the review's case: never "details" (the right tool's word)
            body = re.sub(r"(?<!\w)'[^'\n]*'(?!\w)", "", text)
            assert not re.search(r"\bdetail", body, re.I), body
        for twin, how in prov["stated"].items():  # a lure is in the twin's words and states the need it misses
            if how["where"] == "lure":
                lures += 1
                assert how["lure"] in text and how["text"].lower() in how["lure"].lower() + " " + text.lower()
                own = set(re.split(r"_|(?<=[a-z])(?=[A-Z])", twin.lower() if "_" in twin else twin))
                own = {w.lower() for w in own} - set(name_words(prov["twin_of"]))
                said = re.findall(r"[a-z]+", how["lure"].lower().replace("summarize", "summary"))
                assert own & {w.rstrip("s") for w in said} | own & set(said), how
    assert {"get_order_details", "place_order", "get_stock_info"} <= seen
    assert lures >= len(made) // 3, (lures, len(made))


def test_named_check_finds_a_request_that_names_the_right_tool(made):
    _, task = next((s, t) for s, t in made if t.provenance["twin_of"] == "get_order_details")
    at = task.provenance["distractor_turn"]
    msg = next(m for m in reversed(task.turns[at].user) if m.get("role") == "user")
    msg["content"] += " Give me the full details of my order."
    assert named_problems(task) and DISTRACTOR_NAMED in check_task(task).reasons


def test_twin_output_differs_from_the_right_tools_on_the_state(made):
    checked = 0
    for _, task in made:
        prov = task.provenance
        reads = [c for c in prov["added_distractors"] if twins.is_twin(c)]
        outs = twin_outputs(task, target_step(task), reads)
        for twin, (got, real) in outs.items():
            assert real is None or not _covers(got, real), (twin, got, real)
        assert moot_problems(task) == []
        checked += 1
    assert checked == len(made)


def test_covers_finds_a_moot_twin():
    real = {"invoice": {"booking_id": "3426812", "travel_cost": 1320.0}}
    assert _covers({"invoice": {"booking_id": "3426812", "travel_cost": 1320.0, "note": "preview"}}, real)
    assert not _covers({"invoice": {"booking_id": "booking_901", "travel_cost": 400.0}}, real)
    assert not _covers({"id": 1, "status": "Pending"}, {"id": 1, "status": "Open"})
    assert not _covers(None, real)


def test_moot_check_rejects_a_twin_whose_output_is_the_right_one(made, monkeypatch):
    _, task = next((s, t) for s, t in made if t.provenance["twin_of"] == "get_order_details")
    assert moot_problems(task) == []
    # a twin that shows on this state all the right tool shows: its shortcoming never comes into play
    monkeypatch.setattr(distractor_module, "twin_outputs", lambda t, k, chosen, oracle=None: {
        c: ({"id": 1, "status": "Open", "extra": 2}, {"id": 1, "status": "Open"}) for c in chosen})
    assert moot_problems(task) and DISTRACTOR_MOOT in check_task(task).reasons
