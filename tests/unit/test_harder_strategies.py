"""Issue 34 item 1 (cascade, distractor, depth) on real BFCL seed tasks: the harder perturbations appear, the
gold executes and verifies, the wrong way is stated, depth chains have 3-5 steps each consuming the last output,
and a synthesized task with a unit mismatch is refused."""

from __future__ import annotations

import json
import random
import re

import pytest

from ace_env import bfcl, twins
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task
from ace_env.values import leaves
from ace_env.verifier import ground_truth_rollout, verify
from synth import strategies
from synth.checks.parts import UNIT_MISMATCH, adjacent_positions, flat_calls, user_text_upto
from synth.checks.seeds import usable_seed
from synth.repair import usable_version
from synth.strategies.build import copy_turns
from synth.strategies.depth import MAX_ADDED, MIN_ADDED, depth_at, last_in_turn, later_references
from synth.strategies.distractor import STATED, stated_problems, stated_reason
from synth.taskcheck import check_task

TARGETS = {
    "cascade": [("get_stock_info", "place_order")],
    "distractor": [("get_zipcode_based_on_city", "estimate_distance"), ("get_stock_info", "place_order"),
                   ("get_flight_cost", "book_flight"), ("message_login", "send_message")],
    "depth": [("get_zipcode_based_on_city", "estimate_distance"), ("book_flight", "retrieve_invoice")],
}


@pytest.fixture(scope="module")
def seeds():
    base = [u for t in bfcl.load_tasks("base") for u in [usable_version(t)] if u is not None]
    out = {}
    for targets in TARGETS.values():
        for target in targets:
            out[target] = [t for t in base if adjacent_positions(t, target) and usable_seed(t)][:6]
            assert out[target], target
    return out


def _made(seeds, name, strength=1.0):
    for target in TARGETS[name]:
        for i, seed in enumerate(seeds[target]):
            task = strategies.STRATEGIES[name](seed, target, strength, random.Random(i))
            if task is not None:
                yield seed, target, task


def _steps(task):
    return [s for turn in replay_oracle(task).turns for s in turn.steps]


def test_cascade_result_is_unflagged_and_caught_by_a_cross_check(seeds):
    made = 0
    for seed, target, task in _made(seeds, "cascade", 0.7):
        made += 1
        assert check_task(task).valid
        view = task.provenance["partial_view"]
        added = [op for op in view["ops"] if op["op"] == "add"][0]["fields"]
        # no announcing flag: nothing says stale, cached, partial or truncated
        assert not re.search(r"stale|cache|partial|truncat|complete|live|warning|fresh|delayed",
                             json.dumps(added), re.I), added
        cross = task.provenance["cross_check"]
        assert cross["kind"] in ("count", "total", "length") and set(cross["fields"]) == set(added)
        steps = _steps(task)
        k = adjacent_positions(task, target)[0]
        if cross["kind"] == "total":
            partial = json.loads(steps[k].output)  # a's partial result, right before b
            a, b = (partial[f] for f in cross["fields"])
            key = cross["key"]
            assert a + b == cross["value"] != partial[key]  # the total does not add up to the value shown
            assert not task.provenance["check"] and len(task.provenance["recovery_paths"]) == 2
        else:
            assert task.provenance["check"] and task.provenance["recovery_paths"]
    assert made >= 3


def test_cascade_both_recovery_paths_verify(seeds):
    """Where the cross-check's total gives the complete value, the gold takes it from there, and the other way
    back, reading ``a`` again before ``b``, passes the verifier too: the two paths are real."""
    checked = 0
    for seed, target, task in _made(seeds, "cascade", 0.7):
        if task.provenance["cross_check"]["kind"] != "total":
            continue
        assert verify(task, ground_truth_rollout(task)).reward == 1.0
        rollout = ground_truth_rollout(task)
        k = adjacent_positions(task, target)[0]
        t, i, raw, _ = flat_calls(task)[k]
        rollout[t].insert(i + 1, raw)  # the retry
        assert verify(task, rollout).reward == 1.0
        checked += 1
    assert checked >= 1


def test_distractor_wrong_way_is_stated_by_the_text_or_the_docs(seeds):
    made, wheres = 0, set()
    for seed, target, task in _made(seeds, "distractor", 0.7):
        made += 1
        assert check_task(task).valid, check_task(task).reasons
        stated = task.provenance["stated"]
        at = task.provenance["distractor_turn"]
        text = user_text_upto(task, at).lower()
        for name in task.provenance["added_distractors"]:
            s = stated[name]
            wheres.add(s["where"])
            assert s["doc"] in twins.TWINS[name].description  # the twin's doc says what it does not do
            assert s["text"].lower() in text  # and the task asks for it (or states the requirement)
        assert stated_problems(task) == []
    assert made >= 8 and "doc" in wheres


def test_distractor_twins_are_listed_right_before_their_real_tool(seeds):
    """Hardness (issue 34): a twin listed after the right tool repeats its name and parameters right below it and
    made the right call easier to write (a warm-started SmolLM2's NLL fell); each twin comes right before the
    right tool, the twins of one tool together, every other tool where the seed had it."""
    made = 0
    for seed, target, task in _made(seeds, "distractor", 1.0):
        added = task.provenance["added_distractors"]
        real = task.tools.index(target[1])
        block = task.tools[real - len(added):real]
        assert sorted(block) == sorted(added), (task.tools, added)
        assert [t for t in task.tools if t not in added] == [t for t in seed.tools if t not in added]
        made += 1
    assert made >= 8


def test_distractor_unstated_twin_is_refused(seeds):
    seed = seeds[("get_zipcode_based_on_city", "estimate_distance")][0]
    task = strategies.STRATEGIES["distractor"](seed, ("get_zipcode_based_on_city", "estimate_distance"), 1.0,
                                               random.Random(0))
    assert task is not None
    task.provenance = {**task.provenance, "stated": {}}
    assert stated_problems(task)
    # a flight distance beside the road distance needs the driving said: a text without it gets the sentence
    assert STATED["estimate_flight_distance"].say and "driv" in STATED["estimate_flight_distance"].say


def test_depth_chains_have_3_to_5_steps_each_consuming_the_last_output(seeds):
    made, lengths = 0, set()
    for seed, target, task in _made(seeds, "depth"):
        made += 1
        assert check_task(task).valid, check_task(task).reasons
        added = task.provenance["added"]
        assert MIN_ADDED <= len(added) <= MAX_ADDED
        assert 3 <= task.provenance["chain_length"] == 1 + len(added) <= 5
        lengths.add(len(added))
        steps = _steps(task)
        prev = adjacent_positions(task, target)[0] + 1  # b
        for call in added:
            j = next(n for n, s in enumerate(steps) if s.call == call)
            produced = {json.dumps(v) for v in leaves(json.loads(steps[prev].output))}
            assert any(json.dumps(v) in produced for v in leaves(steps[j].arguments)), (call, steps[prev].call)
            prev = j
    assert made >= 4


def test_depth_converts_km_before_the_mileage_check(seeds):
    found = 0
    for seed, target, task in _made(seeds, "depth"):
        names = [c.split("(")[0] for c in task.provenance["added"]]
        if "estimate_drive_feasibility_by_mileage" in names:
            found += 1
            assert names[0] == "imperial_si_conversion" and "unit_in='km', unit_out='miles'" in \
                task.provenance["added"][0]
            assert "MathAPI" in task.involved_classes
    assert found >= 2


def test_depth_leaves_the_km_to_miles_step_for_the_agent_to_see_always(seeds):
    """Blind reviews s6, s7b: depth was a trap only where the km-to-miles step was not said.  It is never said
    where the chain allows it: the text asks whether the car can make the trip (or for the mileage rounded), the
    docs say the distance is in km and the check takes miles, and passing the km straight on fails."""
    unsaid, said = 0, 0
    for strength in (0.0, 0.5, 1.0):
        for seed, target, task in _made(seeds, "depth", strength):
            if not any(c.startswith("estimate_drive_feasibility_by_mileage") for c in task.provenance["added"]):
                continue
            t = flat_calls(task)[adjacent_positions(task, target)[0] + 1][0]
            added_text = task.turns[t].user[-1]["content"][len(seed.turns[t].user[-1]["content"].strip()):]
            assert check_task(task).valid, check_task(task).reasons
            if not task.provenance["unsaid"]:
                said += 1
                continue
            unsaid += 1
            assert task.provenance["unsaid"][0].startswith("imperial_si_conversion(")
            assert "km" not in added_text.lower() and "convert" not in added_text.lower()
            if not any(c.startswith("round_number") for c in task.provenance["added"]):
                assert "miles" not in added_text.lower()
            # the km passed straight to the mileage check fails: the conversion is still the ground truth's
            rollout = ground_truth_rollout(task)
            k = rollout[t].index(task.provenance["unsaid"][0])
            km = json.loads(_steps(task)[sum(len(x) for x in rollout[:t]) + k - 1].output)["distance"]
            wrong = [c for c in rollout[t] if c != task.provenance["unsaid"][0]]
            wrong = [f"estimate_drive_feasibility_by_mileage(distance={km})"
                     if c.startswith("estimate_drive_feasibility_by_mileage") else c for c in wrong]
            assert verify(task, rollout[:t] + [wrong] + rollout[t + 1:]).reward == 0.0
            assert verify(task, rollout).reward == 1.0
    assert unsaid >= 2 and said == 0, (unsaid, said)


def test_taskcheck_refuses_a_synthesized_unit_mismatch(seeds):
    """km passed straight to a parameter documented in miles (what depth built before issue 34) is refused."""
    target = ("get_zipcode_based_on_city", "estimate_distance")
    for seed in seeds[target]:
        task = strategies.STRATEGIES["depth"](seed, target, 1.0, random.Random(0))
        if task is None or "estimate_drive_feasibility_by_mileage" not in json.dumps(task.provenance["added"]):
            continue
        steps = _steps(task)
        km = next(json.loads(s.output)["distance"] for s in steps if s.name == "estimate_distance")
        turns = copy_turns(task.turns)
        for turn in turns:
            turn.ground_truth = [c for c in turn.ground_truth if not c.startswith(("imperial_si", "round_number"))]
            turn.ground_truth = [f"estimate_drive_feasibility_by_mileage(distance={km})"
                                 if c.startswith("estimate_drive_feasibility") else c for c in turn.ground_truth]
        bad = Task(task.id + "-km", "ace", "depth", turns, task.initial_config, task.involved_classes, task.tools,
                   task.long_context, dict(task.provenance), task.distractors, task.output_views)
        check = check_task(bad)
        assert UNIT_MISMATCH in check.reasons, check.reasons
        return
    pytest.fail("no depth task with the mileage check")


# --------------------------------------------------------------------------- the blind review (issue 34)


def test_distractor_reason_comes_from_the_request_sentence_not_a_stray_word():
    # "Today" in a sentence about the day asks for nothing about the order: the twin's sentence is added
    said = stated_reason("get_order_status_cached", "Today feels like the right day. What is the status of order 5?")
    assert said is not None and said["where"] == "text" and said["text"] == STATED["get_order_status_cached"].say
    said = stated_reason("get_order_status_cached", "Could you check the current status of my order?")
    assert said == {"where": "doc", "doc": STATED["get_order_status_cached"].doc, "text": "current"}
    # "latest" names which order, not how fresh its state must be
    assert stated_reason("get_order_summary", "Could you tell me the details of my latest order?")["where"] == "text"
    # a quoted message's words ask for nothing either
    assert stated_reason("get_stock_info_delayed", "Send 'the latest news' to Bob. What is NVDA's price?")["where"] \
        == "text"


def test_distractor_twin_is_offered_only_where_it_tempts():
    # a status-only cache beside a request for the order's details is plainly wrong, not a trap
    assert stated_reason("get_order_status_cached", "Show me the details of my most recent order.") is None
    assert stated_reason("get_order_summary", "Show me the details of my most recent order.") is not None
    # asked for the invoice by name, a payment receipt tempts nobody; asked about the payment, it does
    assert stated_reason("retrieve_payment_receipt", "Please fetch the invoice for my recent booking.") is None
    said = stated_reason("retrieve_payment_receipt", "I need the invoice of what I paid for that flight.")
    assert said is not None and said["text"].lower() == "invoice"
    for name in STATED:
        assert name in twins.TWINS and STATED[name].tempt, name  # every twin says what request it seems to answer


def test_distractor_twins_are_tempting_and_spread_on_real_seeds():
    base = [u for t in bfcl.load_tasks("base") for u in [usable_version(t)] if u is not None and usable_seed(u)]
    target = ("place_order", "get_order_details")
    chosen = []
    for seed in [t for t in base if adjacent_positions(t, target)]:
        task = strategies.STRATEGIES["distractor"](seed, target, 1.0, random.Random(0))
        if task is None:
            continue
        assert check_task(task).valid and verify(task, ground_truth_rollout(task)).reward == 1.0
        at = task.provenance["distractor_turn"]
        turn = " ".join(m["content"] for m in seed.turns[at].user if m.get("role") == "user")
        said = " ".join(m["content"] for m in task.turns[at].user if m.get("role") == "user")
        assert sum(s.say in said for s in STATED.values() if s.say) <= 1, said  # one added sentence, not two
        for name in task.provenance["added_distractors"]:
            assert re.search(STATED[name].tempt, turn, re.I), (name, turn)  # the request is one it seems to answer
            chosen.append(name)
    assert len(chosen) >= 4
    counts = {n: chosen.count(n) for n in set(chosen)}
    assert len(counts) >= 2, counts  # not the one status-only twin wherever the order's details are asked


def _seed(task_id):
    return usable_version(next(t for t in bfcl.load_tasks("base") if t.id == task_id))


def test_depth_refuses_a_chain_that_restates_a_value_a_later_turn_takes_back():
    """Review of issue 34, task 9 (multi_turn_base_57): turn 2 asks for the log of 'the distance you've just told
    me about' (630 km); km -> miles -> rounded steps after estimate_distance would make it 391.5 miles."""
    seed = _seed("multi_turn_base_57")
    target = ("get_zipcode_based_on_city", "estimate_distance")
    k = adjacent_positions(seed, target)[0]
    assert last_in_turn(seed, k)
    turn = flat_calls(seed)[k + 1][0]
    assert "n:630.0" in later_references(seed, turn, {"distance": 630.0})
    for i in range(6):
        task = depth_at(seed, target, k, 1.0, random.Random(i))
        assert task is None or not any(a.startswith("imperial_si_conversion") for a in task.provenance["added"])


def test_depth_chain_follows_b_directly():
    """Review of issue 34, task 36 (multi_turn_base_69): b (estimate_distance) is followed in its turn by
    liter_to_gallon and fillFuelTank; a chain added after those would not start from b's output: refused."""
    seed = _seed("multi_turn_base_69")
    target = ("get_zipcode_based_on_city", "estimate_distance")
    k = adjacent_positions(seed, target)[0]
    assert not last_in_turn(seed, k)
    assert all(depth_at(seed, target, k, 1.0, random.Random(i)) is None for i in range(6))


def test_depth_first_added_call_takes_b_output_right_after_b(seeds):
    made = 0
    for seed, target, task in _made(seeds, "depth"):
        flat, steps = flat_calls(seed), _steps(task)
        k = next(i for i in range(len(flat) - 1) if (flat[i][3], flat[i + 1][3]) == target
                 and task.provenance["added"][0] in task.turns[flat[i + 1][0]].ground_truth)
        t = flat[k + 1][0]
        gt = task.turns[t].ground_truth
        added = task.provenance["added"]
        assert gt[len(gt) - len(added):] == added and gt[len(gt) - len(added) - 1] == flat[k + 1][2]
        b_out = json.loads(steps[k + 1].output)
        first = next(s for s in steps[k + 2:] if s.name == added[0].partition("(")[0])
        assert set(leaves(b_out)) & set(leaves(first.arguments)), (added, b_out)
        made += 1
    assert made


def test_cascade_percent_change_agrees_with_the_cross_check(seeds):
    """Review bfcl2: a stale ``price`` beside ``previous_price`` + ``price_change`` left ``percent_change`` at its
    source value, a second contradiction.  It is recomputed from the added fields (the complete value), so the
    shown price is the one figure that disagrees."""
    checked = 0
    for seed, target, task in _made(seeds, "cascade", 0.7):
        cross = task.provenance["cross_check"]
        if cross["kind"] != "total" or cross["key"] != "price":
            continue
        k = adjacent_positions(task, target)[0]
        partial = json.loads(_steps(task)[k].output)
        if "percent_change" not in partial:
            continue
        previous, change = partial["previous_price"], partial["price_change"]
        assert partial["percent_change"] == round(change / previous * 100, 2)  # agrees with the added fields
        assert "percent_change" in cross["recomputed"]
        assert previous + change == cross["value"] != partial["price"]  # the designed cross-check, and only it
        shown_pct = round((partial["price"] - previous) / previous * 100, 2)
        assert shown_pct != partial["percent_change"]
        checked += 1
    assert checked >= 1


#: Words that name the wrong way a stated sentence rules out ("not how it looked when I placed it"): a giveaway.
_CONTRAST = re.compile(r"\bnot\b|n't\b|\bplaced\b|\blooked\b|\bwas\b|\bcache|\bdelay|\bclose\b|\bnext open\b|"
                       r"\bsaved\b|\bdraft\b|\binstead\b|\brather\b", re.I)


def test_distractor_stated_sentences_vary_and_do_not_name_the_contrast():
    """Review bfcl2: one reused sentence naming the contrast gave 7 of 9 traps away.  Each twin has several
    phrasings, each matching its own cue and none naming the wrong way; across seeds more than one is used.  Review
    bfcl3: the summary twin stated by its doc alone was unfair where the user asked for "a summary", so it is
    stated in the text too."""
    for name, s in STATED.items():
        for p in s.phrasings():
            assert not _CONTRAST.search(p), (name, p)
            assert re.search(s.cue, p, re.I), (name, p)  # the sentence states what the twin does not do
        assert not s.say or len(set(s.phrasings())) >= 3, name
        for lure in s.lures:  # a lure uses the twin's own words, never another word of the contrast
            own = re.split(r"_|(?<=[a-z])(?=[A-Z])", name)
            assert not _CONTRAST.search(re.sub(r"\b(?:" + "|".join(own) + r")\b", "", lure, flags=re.I)), (name, lure)
    base = [u for t in bfcl.load_tasks("base") for u in [usable_version(t)] if u is not None and usable_seed(u)]
    target = ("place_order", "get_order_details")
    used = set()
    for seed in [t for t in base if adjacent_positions(t, target)][:8]:
        for i in range(4):
            task = strategies.STRATEGIES["distractor"](seed, target, 1.0, random.Random(i))
            if task is None:
                continue
            assert stated_problems(task) == []
            used |= {s["text"] for s in task.provenance["stated"].values() if s["where"] == "text"}
            used |= {s["lure"] for s in task.provenance["stated"].values() if s["where"] == "lure"}
            summary = task.provenance["stated"].get("get_order_summary")
            # said by the user, not left to its doc: in a sentence of its own, or in the lure that asks for a summary
            assert summary is None or summary["where"] in ("text", "lure")
            assert summary is None or summary["where"] != "lure" or summary["text"] in summary["lure"]
    assert len(used) > 1, used
    assert not any(_CONTRAST.search(u) for u in used), used
