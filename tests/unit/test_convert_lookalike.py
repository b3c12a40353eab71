"""Issue 34 item 1: ambiguity that requires a documented conversion, look-alikes told apart by an attribute."""

from __future__ import annotations

import datetime as _dt
import json
import random
import re

import pytest

from ace_env import bfcl
from ace_env.environments import BFCL
from ace_env.oracle import replay_oracle
from ace_env.values import leaves
from ace_env.verifier import ground_truth_rollout, verify
from synth import strategies
from synth.checks.parts import flat_calls, user_text_upto
from synth.checks.seeds import usable_seed
from synth.checks.values import (
    converted_in_text,
    dates_in,
    relative_dates_in,
    spoken_numbers,
    sums_in,
    value_in_text,
    value_provenance,
    weekday_dates_in,
)
from synth.repair import usable_version
from synth.strategies.ambiguity import _convertibility, fed_values
from synth.strategies.build import target_calls
from synth.strategies.convert import (
    HARDNESS,
    budget_forms,
    conversion_candidates,
    in_words,
    relative_date_forms,
    weekday_date_forms,
    worth_amount,
    written_forms,
)
from synth.strategies.lookalike import _RECENT, close_variants, is_lookup, near_identical, request_sentences
from synth.taskcheck import check_task

#: BFCL's tool catalogue, whose docs the conversions read.
TOOLS = BFCL.tool_catalogue


@pytest.fixture(scope="module")
def made():
    base = [u for t in bfcl.load_tasks("base") for u in [usable_version(t)] if u is not None and usable_seed(u)]
    out = {"ambiguity": [], "lookalike": []}
    for seed in base:
        flat = flat_calls(seed)
        for target in sorted({(flat[i][3], flat[i + 1][3]) for i in range(len(flat) - 1)}):
            for name in out:
                task = strategies.STRATEGIES[name](seed, target, 0.5, random.Random(1))
                if task is not None:
                    out[name].append((seed, target, task))
    return out


def test_number_words_read_back():
    assert in_words(2500) == "two thousand five hundred" and in_words(150) == "one hundred and fifty"
    assert {2500.0, 150.0, 20000.0, 1200000.0} <= spoken_numbers(
        "two and a half thousand, one hundred and fifty, 20 thousand and 1.2 million")
    for n in (11, 99, 120, 1005, 2500, 10000, 45000):
        assert float(n) in spoken_numbers(in_words(n))
    assert sums_in("withdraw 400 plus another 100 dollars") == {500.0}  # still read for tasks made before


def test_no_prose_sums_are_made():
    """Review of issue 34 (tasks 24, 37, 39, 40): '90 plus another 10 shares' reads unnaturally; not made."""
    for tool, param, n in (("withdraw_funds", "amount", 500), ("place_order", "amount", 100),
                           ("place_order", "price", 150)):
        assert "prose_sum" not in dict(written_forms(TOOLS, tool, param, n, random.Random(0)))


def test_forms_only_where_the_doc_states_the_unit_or_format():
    rng = random.Random(0)
    assert {k for k, _ in written_forms(TOOLS, "fillFuelTank", "fuelAmount", 30, rng)} >= {"unit"}  # documented in gallons
    assert all(k == "date_words" for k, _ in written_forms(TOOLS, "book_flight", "travel_date", "2024-03-03", rng))
    assert written_forms(TOOLS, "register_credit_card", "expiration_date", "08/2025", rng) == [("month_year", "August 2025")]
    assert written_forms(TOOLS, "cd", "folder", "2024-03-03", rng) == []  # no documented format
    assert written_forms(TOOLS, "send_message", "receiver_id", "USR005", rng) == []  # an id is written exactly


def test_conversions_appear_are_verified_and_derivable(made):
    kinds = set()
    for seed, _, task in made["ambiguity"]:
        conv = task.provenance.get("conversion")
        if conv is None:
            assert task.provenance["ambiguity_kind"] == "view"
            continue
        kinds.add(conv["kind"])
        assert task.provenance["ambiguity_kind"].startswith(f"conversion:{conv['kind']}")
        text = user_text_upto(task, len(task.turns) - 1)
        # the value is no longer written literally, its written form is, and the checks' reader reads it back
        assert not value_in_text(conv["value"], text) and conv["written"] in text
        assert converted_in_text(task, conv["tool"], conv["param"], conv["value"], text)
        # the ground truth is the seed's (canonical values) and still verifies by execution
        assert [t.ground_truth for t in task.turns] == [t.ground_truth for t in seed.turns]
        steps = [s for t in replay_oracle(task).turns for s in t.steps]
        assert any(s.name == conv["tool"] and conv["value"] in leaves(s.arguments) for s in steps)
        assert verify(task, ground_truth_rollout(task)).reward == 1.0
        assert not value_provenance(task) and check_task(task).valid
    # a step of reasoning (money into shares at the price, a date against another) where the seed allows it;
    # the reformats (a date in words, a number in words or with a scale) remain the fallback
    assert {"worth", "weekday_date", "number_words", "scale", "unit"} <= kinds and "prose_sum" not in kinds


def test_harder_conversions_come_before_number_words(made):
    """Where a harder kind (a date, a month, a unit, a scale) is possible at the target, number words are not
    used (review of issue 34: 0 of 9 ambiguity tasks adversarial)."""
    checked = 0
    for seed, target, task in made["ambiguity"]:
        conv = task.provenance.get("conversion")
        if conv is None:
            continue
        flat = flat_calls(seed)
        k = next(i for i in range(len(flat) - 1) if (flat[i][3], flat[i + 1][3]) == target)
        ra, rb = target_calls(seed, k)
        outputs = [s.output or "" for t in replay_oracle(seed).turns for s in t.steps]
        cands = conversion_candidates(seed, [(flat[k][3], ra.arguments), (flat[k + 1][3], rb.arguments)],
                                      [outputs[:k], outputs[:k + 1]],
                                      [user_text_upto(seed, flat[k][0]), user_text_upto(seed, flat[k + 1][0])],
                                      random.Random(0))
        if cands and HARDNESS[cands[0]["kind"]] > HARDNESS["number_words"]:
            checked += 1
            assert HARDNESS[conv["kind"]] > HARDNESS["number_words"], (task.provenance["parents"], conv)
    assert checked


def test_a_conversion_without_its_record_is_not_provided(made):
    task = next(t for _, _, t in made["ambiguity"] if (t.provenance.get("conversion") or {}).get("kind") == "scale")
    task.provenance = {k: v for k, v in task.provenance.items() if k != "conversion"}
    assert value_provenance(task)


def steps_seed_output(task, k):
    """Call ``k``'s result as BFCL returns it (no output views)."""
    plain = type(task).from_dict({**task.to_dict(), "output_views": []})
    return [s for t in replay_oracle(plain).turns for s in t.steps][k].output


def test_close_variants_are_close_as_quantities():
    rng = random.Random(0)
    assert all(abs(v - 150) <= 3 and near_identical(v, 150) for v in close_variants(150, rng))
    assert all(abs(v - 45.25) <= 0.01 * 45.25 + 0.031 and near_identical(v, 45.25) for v in close_variants(45.25, rng))


def test_close_variants_take_turns_over_the_digits():
    """Hardness (issue 34): look-alikes of 227.16 that all read 227.1x share every digit but the last with the
    right price, so a model copying it is sure of all but one digit; the first variants differ at distinct
    digits (units, tenths, hundredths), each still one digit off and within 1%."""
    for seed in range(20):
        rng = random.Random(seed)
        for value in (227.16, 2840.34, 150.75):
            got = close_variants(value, rng)
            first = got[:3]
            at = {next(i for i, (x, y) in enumerate(zip(f"{v:.2f}", f"{value:.2f}")) if x != y) for v in first}
            assert len(first) == 3 and len(at) == 3, (value, first)
            assert all(near_identical(v, value) and abs(v - value) <= 0.01 * value for v in got), (value, got)


def test_attribute_lookalikes_share_the_entity_and_differ_by_the_attribute(made):
    kinds = set()
    for _, target, task in made["lookalike"]:
        prov = task.provenance
        if not prov["lookalike_kind"].startswith("attribute:"):
            continue
        kinds.add(prov["lookalike_kind"])
        assert check_task(task).valid and verify(task, ground_truth_rollout(task)).reward == 1.0
        k = next(i for i, f in enumerate(flat_calls(task)[:-1]) if (f[3], flat_calls(task)[i + 1][3]) == target)
        shown = json.loads([s for t in replay_oracle(task).turns for s in t.steps][k].output)
        records = list(next(iter(shown.values())).values())
        attr = prov["distinguished_by"]["attribute"]
        right = [r for r in records if r[prov["lookalike_key"]] == prov["target_id"]]
        assert len(right) == 1 and right[0][attr] == prov["distinguished_by"]["right"]
        for r in records:
            # every record is about the same entity: the same strings outside ids and the attribute
            same = {k2: v for k2, v in r.items() if isinstance(v, str) and k2 not in (attr, prov["lookalike_key"])
                    and not k2.lower().endswith("id")}
            assert same == {k2: right[0][k2] for k2 in same}
            # a value the request gave a (the price and amount of the order placed) matches every record
            plain = json.loads(steps_seed_output(task, k))
            args = [s for t in replay_oracle(task).turns for s in t.steps][k].arguments
            assert all(r.get(k2) == v for k2, v in plain.items() if k2 != prov["lookalike_key"]
                       and not isinstance(v, (dict, list)) and v in leaves(args))
            if r is not right[0] and isinstance(prov["target_id"], (int, float)):
                assert abs(r[prov["lookalike_key"]] - prov["target_id"]) <= max(3, 0.01 * prov["target_id"])
        # the attribute is added beside a's own fields, never written over one of them
        assert all(r2.get(k2) == v for r2 in right for k2, v in json.loads(steps_seed_output(task, k)).items())
        if attr.endswith("updated_at"):
            assert right[0][attr] == max(r[attr] for r in records)
    assert kinds == {"attribute:recency", "attribute:status"}
    assert any(p["distinguished_by"]["attribute"] == "record_status" for p in (t.provenance for _, _, t in made["lookalike"]) if "distinguished_by" in p)


# --------------------------------------------------------------------------- the blind review (issue 34)


def _shown_records(task, target):
    k = next(i for i, f in enumerate(flat_calls(task)[:-1]) if (f[3], flat_calls(task)[i + 1][3]) == target)
    shown = json.loads([s for t in replay_oracle(task).turns for s in t.steps][k].output)
    return next(iter(shown.values()))


def test_lookalike_only_on_a_lookup_never_on_a_booking_or_an_order_placed(made):
    assert made["lookalike"]
    assert all(is_lookup(target[0]) for _, target, _ in made["lookalike"])
    # one book_flight or place_order call returns the one booking or order it made, never three of them
    for target in [("book_flight", "retrieve_invoice"), ("place_order", "get_order_details")]:
        seeds = [s for s, _, _ in made["ambiguity"] if any((f[3], g[3]) == target for f, g in
                                                           zip(flat_calls(s), flat_calls(s)[1:]))][:3]
        assert seeds, target
        for seed in seeds:
            assert all(strategies.STRATEGIES["lookalike"](seed, target, 0.5, random.Random(i)) is None
                       for i in range(6))


def test_lookalike_right_record_is_never_first_and_keys_say_nothing(made):
    positions, lasts, total, dated, in_order, many = set(), 0, 0, 0, 0, 0
    for _, target, task in made["lookalike"]:
        prov = task.provenance
        records = _shown_records(task, target)
        keys = list(records)
        assert all(re.fullmatch(r"record_\d+", key) for key in keys), keys  # no key spells out a route or a value
        right = [key for key, r in records.items() if r[prov["lookalike_key"]] == prov["target_id"]]
        assert right == [prov["right_record"]]
        # taking the first record is always wrong (blind review s6: 3 of 9 tasks passed with "take record_1")
        assert keys.index(right[0]) > 0, (keys, right)
        positions.add(keys.index(right[0]))
        total += 1
        lasts += keys.index(right[0]) == len(keys) - 1
        # with three records or more the right one is strictly inside (blind review s7b: "take the last" passed)
        assert len(keys) < 3 or 0 < keys.index(right[0]) < len(keys) - 1, (keys, right)
        many += len(keys) >= 4
        attr = (prov.get("distinguished_by") or {}).get("attribute", "")
        if attr.endswith("updated_at"):
            stamps = [records[key][attr] for key in keys]
            dated += 1
            in_order += stamps == sorted(stamps)  # oldest first: the newest (right) one always last
    # the right record's position varies ("take the last" is no rule either), and the dates are in no fixed order
    assert total >= 5 and len(positions) >= 2 and lasts == 0, (positions, lasts, total)
    assert many >= total * 2 // 3, (many, total)  # four records where the value has three variants
    assert dated and in_order < dated, (in_order, dated)


def test_lookalike_uses_recency_only_where_the_request_asks_for_the_latest(made):
    kinds = 0
    for _, target, task in made["lookalike"]:
        prov = task.provenance
        if not prov["lookalike_kind"].startswith("attribute:"):
            continue
        k = next(i for i, f in enumerate(flat_calls(task)[:-1]) if (f[3], flat_calls(task)[i + 1][3]) == target)
        turn = user_text_upto(task, flat_calls(task)[k][0]).split("\n")[-1]
        asked = " ".join(request_sentences(turn, [str(v) for v in leaves(
            [s for t in replay_oracle(task).turns for s in t.steps][k].arguments)]))
        assert (prov["lookalike_kind"] == "attribute:recency") == bool(_RECENT.search(asked)), (prov, asked)
        kinds += 1
    assert kinds
    # a stray "now" or "today" asks for nothing: "Now that I have the amount" is no request for the latest
    assert not _RECENT.search("Now that I have the converted amount, book it. Today feels like the right day.")
    assert _RECENT.search("buy 100 shares of AAPL at the market's current rate")
    assert _RECENT.search("tell me where Zeta Corp's stock stands right now and buy 50 shares at the ongoing rate")


def test_view_reshapes_the_hardest_fed_value_with_a_conversion(made):
    """Where a's result feeds b an amount or a date, the view reshapes that value (cents, another date format, a
    currency format), not an id's punctuation (review of issue 34: only `order_id` was ever re-formatted)."""
    hard = 0
    for seed, target, task in made["ambiguity"]:
        view = task.provenance.get("view")
        if view is None:
            continue
        flat = flat_calls(seed)
        k = next(i for i in range(len(flat) - 1) if (flat[i][3], flat[i + 1][3]) == target)
        ra, rb = target_calls(seed, k)
        fed = fed_values(json.loads(ra.output), rb.arguments)
        best = max(_convertibility(key, v) for key, v in fed)
        value_op = next((o for o in view["ops"] if "keys" in o), None)
        assert value_op is not None
        key = value_op["keys"][0]
        assert _convertibility(key, dict(fed)[key]) == best, (task.provenance["parents"], view, fed)
        if best >= 2:
            hard += 1
            assert value_op["op"] in ("scale", "date_format", "number_format"), view
    assert hard


def test_a_view_needing_a_conversion_is_kept_beside_a_conversion(made):
    """get_stock_info -> place_order: the quote's price b takes is shown in cents, also where the text already
    has a conversion (a view that needs one is never dropped for it)."""
    both = 0
    for _, target, task in made["ambiguity"]:
        if target != ("get_stock_info", "place_order"):
            continue
        view = task.provenance.get("view")
        if view is None:  # the seed's order takes a price the user states, not the quote's
            assert task.provenance.get("conversion") is not None
            continue
        assert any(o["op"] == "scale" and o["keys"] == ["price"] for o in view["ops"]), view
        both += task.provenance.get("conversion") is not None
    assert both


# --------------------------------------------------------------------------- conversions that take a step of reasoning


def test_worth_amount_floors_to_the_shares_and_rounding_would_be_wrong():
    for n, price in [(100, 700.0), (50, 150.75), (150, 227.16), (7, 2840.34), (10, 3.5)]:
        x = worth_amount(n, price)
        assert x is not None and int(x // price) == n  # floor: the shares that amount covers
        assert round(x / price) == n + 1  # a careless agent that rounds buys one share too many
        assert x % 5 == 0 or price < 10  # a round amount of money
    assert worth_amount(0, 10.0) is None


def test_relative_dates_cross_a_month_and_read_back():
    forms = relative_date_forms("2026-08-08", random.Random(0))
    assert forms and all("2026-08-08" in relative_dates_in(f) for f in forms)
    assert any("July" in f for f in forms)  # the offset crosses the month's end where it can
    assert relative_dates_in("the date ten days after July 29th, 2026") == {"2026-08-08"}
    assert relative_dates_in("two weeks after December 25, 2026") == {"2027-01-08"}
    assert relative_dates_in("ten days after the meeting") == set()


def test_weekday_dates_read_back_and_never_start_on_the_same_weekday():
    for value in ("2026-08-08", "2026-06-26", "2026-07-31", "2026-12-29", "2027-03-01"):
        for i in range(6):
            forms = weekday_date_forms(value, random.Random(i))
            assert len(forms) == 2 and all(weekday_dates_in(f) == {value} for f in forms), forms
            after = next(f for f in forms if " after " in f)
            base = next(iter(dates_in(after)))
            assert _dt.date.fromisoformat(base).weekday() != _dt.date.fromisoformat(value).weekday()
    # June 16th, 2026 is a Tuesday: the first Friday after it is the 19th, the second the 26th
    assert weekday_dates_in("the second Friday after June 16th, 2026") == {"2026-06-26"}
    assert weekday_dates_in("the last Friday of July 2026") == {"2026-07-31"}
    assert weekday_dates_in("the first Monday of March 2027") == {"2027-03-01"}
    assert weekday_dates_in("the fifth Monday of February 2027") == set()  # there is none
    assert weekday_dates_in("the second Friday after the meeting") == set()


def test_budget_forms_state_a_cap_not_a_rule():
    seen = {budget_forms(7650, random.Random(i)) for i in range(40)}
    assert len(seen) >= 4
    for written, cap in seen:
        assert "$7,650 worth" in written and "whole shares" not in (written + cap).lower()
        assert re.search(r"at most|go over|more than|all I have|up to", written + " " + cap)


def test_reasoned_conversions_come_first_and_state_their_rule(made):
    worth = [t for _, _, t in made["ambiguity"] if (t.provenance.get("conversion") or {}).get("kind") == "worth"]
    dated = [t for _, _, t in made["ambiguity"]
             if (t.provenance.get("conversion") or {}).get("kind") == "relative_date"]
    weekday = [t for _, _, t in made["ambiguity"]
               if (t.provenance.get("conversion") or {}).get("kind") == "weekday_date"]
    assert len(worth) >= 5 and len(dated) + len(weekday) >= 5 and weekday
    assert HARDNESS["worth"] > HARDNESS["unit"] and HARDNESS["relative_date"] > HARDNESS["date_words"]
    for task in worth:
        conv = task.provenance["conversion"]
        text = user_text_upto(task, len(task.turns) - 1)
        amount = float(re.search(r"\$([\d,]+) worth", text).group(1).replace(",", ""))
        assert int(amount // conv["by"]) == conv["value"] and "Whole shares only" not in text
        # the budget is a cap in the user's words (so flooring follows from it), not a rounding rule
        assert re.search(r"at most|go over|more than|all I have|up to|no more than", text), text
        # the price is the one the order is placed at (the ground truth's), not a number made up for the text
        steps = [s for t in replay_oracle(task).turns for s in t.steps]
        assert any(s.name == conv["tool"] and s.arguments.get("price") == conv["by"]
                   and s.arguments.get(conv["param"]) == conv["value"] for s in steps)
        # the reader refuses a wrong quantity
        assert not converted_in_text(task, conv["tool"], conv["param"], conv["value"] + 1, text)
    for task in dated:
        conv = task.provenance["conversion"]
        text = user_text_upto(task, len(task.turns) - 1)
        assert conv["value"] in relative_dates_in(text) and conv["value"] not in text
    for task in weekday:
        conv = task.provenance["conversion"]
        text = user_text_upto(task, len(task.turns) - 1)
        assert conv["value"] in weekday_dates_in(text) and conv["value"] not in dates_in(text)


def test_a_reformat_only_draft_is_a_fallback_and_a_reasoned_one_always_kept(made):
    """Blind review s6: 9 of 9 ambiguity tasks were reformats.  A draft with only a reformat to undo is dropped
    about half the time (the planner fills the slot elsewhere), never always; one with a reasoned conversion is
    never dropped for it."""
    trivial = next((s, tg) for s, tg, t in made["ambiguity"] if tg == ("get_zipcode_based_on_city", "estimate_distance"))
    got = [strategies.STRATEGIES["ambiguity"](trivial[0], trivial[1], 0.5, random.Random(i)) for i in range(20)]
    assert 3 <= sum(t is None for t in got) <= 17, [t is None for t in got]
    reasoned = [(s, tg) for s, tg, t in made["ambiguity"]
                if (t.provenance.get("conversion") or {}).get("kind") in ("worth", "relative_date", "weekday_date")][:3]
    assert reasoned
    for seed, target in reasoned:
        for i in range(8):
            task = strategies.STRATEGIES["ambiguity"](seed, target, 0.5, random.Random(i))
            assert task is not None
