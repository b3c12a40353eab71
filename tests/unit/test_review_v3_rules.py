"""The rules blind review v3 of issue 26 asked for: a cascade damages the value passed on and flags it first,
one definition of a trivial value, seed text that reads as one request, values that must be read first."""

from __future__ import annotations

import json
import random

import pytest

from ace_env import bfcl
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task, Turn
from ace_env.values import is_trivial
from ace_env.views import apply_ops
from synth import strategies
from synth.checks.parts import CASCADE_MISSES_VALUE, adjacent_positions
from synth.checks.text import coherence_problems
from synth.checks.values import computed_from, labelled_otherwise
from synth.repair import usable_version
from synth.strategies import ambiguity
from synth.strategies.cascade import cascade_problems
from synth.taskcheck import check_task


def _task(texts: list[str], gts: list[list[str]], **prov) -> Task:
    return Task("t", "ace", "x", [Turn([{"role": "user", "content": x}], g) for x, g in zip(texts, gts)],
                {}, [], [], False, dict(prov), [], [])


# --------------------------------------------------------------------------- one trivial value


@pytest.mark.parametrize("value", [None, True, False, "", " ", "a", 0, 1, 2, -1, -2, 2.0])
def test_trivial_values(value):
    assert is_trivial(value)


@pytest.mark.parametrize("value", ["CA", "ok", 3, -3, 1.5, 0.5, "USR002", 12446])
def test_not_trivial_values(value):
    # two-character codes and fractional amounts are read from somewhere (the checks used len<3 and [-2, 2])
    assert not is_trivial(value)


def test_every_layer_uses_the_one_definition():
    import inspect

    from synth.checks import values
    from train import users

    assert "is_trivial" in inspect.getsource(ambiguity.fed_values)
    assert not hasattr(ambiguity, "_trivial") and not hasattr(users, "_trivial")
    assert "is_trivial(v)" in inspect.getsource(values._trivial)


# --------------------------------------------------------------------------- cascade at the value passed on


@pytest.fixture(scope="module")
def quote_seeds():
    target = ("get_stock_info", "place_order")
    out = []
    for t in bfcl.load_tasks("base") + bfcl.load_tasks("long_context"):
        u = usable_version(t) if adjacent_positions(t, target) else None
        if u is not None and adjacent_positions(u, target):
            out.append(u)
    return target, out


def test_cascade_hides_the_value_b_takes_and_flags_it_first(quote_seeds):
    target, seeds = quote_seeds
    made = 0
    for i, seed in enumerate(seeds[:30]):
        task = strategies.STRATEGIES["cascade"](seed, target, 0.7, random.Random(i))
        if task is None:
            continue
        made += 1
        k = adjacent_positions(task, target)[0]  # the check; k - 1 the partial call; k + 1 is b
        steps = [s for turn in replay_oracle(task).turns for s in turn.steps]
        if not task.provenance["check"]:  # no check: k is the partial call; the cross-check's total the value
            partial, full = json.loads(steps[k].output), {"value": task.provenance["cross_check"]["value"]}
        else:
            partial, full = json.loads(steps[k - 1].output), json.loads(steps[k].output)
        b_values = [v for v in steps[k + 1].arguments.values() if not is_trivial(v)]
        hidden = [v for v in b_values if json.dumps(v) in json.dumps(full) and json.dumps(v) not in json.dumps(partial)]
        assert hidden, (task.id, partial)  # going on without the check changes b's arguments
        assert next(iter(partial)) not in full  # the cross-check is the first field
        assert not cascade_problems(task) and check_task(task).valid
    assert made >= 3


def test_a_cascade_that_damages_a_field_b_does_not_use_is_rejected(quote_seeds):
    """Review v3 #10/#36: MA(5) cut while the price b uses is intact."""
    target, seeds = quote_seeds
    for i, seed in enumerate(seeds[:30]):
        task = strategies.STRATEGIES["cascade"](seed, target, 0.7, random.Random(i))
        if task is None:
            continue
        view = task.provenance["partial_view"]
        wrong = dict(task.to_dict())
        wrong["output_views"] = [{**view, "ops": [{"op": "truncate", "keys": ["MA(5)"], "keep": 1},
                                                  {"op": "add", "fields": {"partial": True}, "first": True}]}]
        bad = Task.from_dict(wrong)
        assert any("changes nothing" in p for p in cascade_problems(bad)), cascade_problems(bad)
        assert CASCADE_MISSES_VALUE in check_task(bad).reasons
        last = dict(task.to_dict())  # the right damage, the flag appended after the long fields
        last["output_views"] = [{**view, "ops": [o if o["op"] != "add" else {k: v for k, v in o.items() if k != "first"}
                                                 for o in view["ops"]]}]
        assert any("first field" in p for p in cascade_problems(Task.from_dict(last)))
        return
    pytest.fail("no cascade task made")


def test_add_first_puts_the_flag_before_the_fields():
    shown = apply_ops({"price": 1.0, "MA(5)": [1] * 100}, [{"op": "add", "fields": {"stale": True}, "first": True}])
    assert list(shown) == ["stale", "price", "MA(5)"]
    assert list(apply_ops({"price": 1.0}, [{"op": "add", "fields": {"stale": True}}])) == ["price", "stale"]


# --------------------------------------------------------------------------- text that reads as one request


@pytest.mark.parametrize("text", [
    "Consider this: A patient, a traveler in this context, wants to book a flight.",
    "Having established the market scenario, imagine you're poised to place an order.",
    "Reflect on the importance of verifying information.",
    "After a detailed inspection, a change of heart leads you to rescind the transaction.",
    "Post cancellation, you're driven to survey your financial standing.",
])
def test_narrated_framing_is_rejected(text):
    assert any("framing" in p for p in coherence_problems(_task([text], [["get_account_info()"]])))


def test_self_contradiction_glued_clause_and_unanswered_asks_are_rejected():
    contradiction = "I need the logarithm of the distance to the base the previous fuel value. Use base of 20."
    glued = "Start the engine. I want no mishaps due to an unfilled tank so round it to nearest hundredth and fill that in."
    market = "After confirming the market's operational status, buy 100 Apple shares."
    cost = "How much would a flight from SF to LA even cost? It's probably cheap. Book it."
    assert any("contradicts" in p for p in coherence_problems(_task([contradiction], [["logarithm(value=3)"]])))
    assert any("glued" in p for p in coherence_problems(_task([glued], [["startEngine(ignitionMode='START')"]])))
    assert any("no such call" in p for p in coherence_problems(_task([market], [["place_order(symbol='AAPL')"]])))
    assert any("no such call" in p for p in coherence_problems(_task([cost], [["book_flight(travel_from='SFO')"]])))
    # answered, the same asks are fine
    assert not coherence_problems(_task([cost], [["get_flight_cost(travel_from='SFO')", "book_flight()"]]))
    assert not coherence_problems(_task(["Use a base of 10 for the logarithm."], [["logarithm(value=3)"]]))


def test_incoherent_bfcl_seeds_are_not_used():
    base = {t.id: t for t in bfcl.load_tasks("base")}
    for tid in ("multi_turn_base_130", "multi_turn_base_177", "multi_turn_base_59", "multi_turn_base_63",
                "multi_turn_base_120"):
        assert usable_version(base[tid]) is None, tid


# --------------------------------------------------------------------------- values that must be read first


def test_a_documented_bound_is_no_amount_without_the_level_read():
    """Review v3 #20: fillFuelTank(50) 'fill it up' with the level never read; 50 is the documented capacity."""
    assert not computed_from(50, {30.0}, {50.0, 2.0, 100.0})
    assert not computed_from(50, set(), {100.0, 2.0})  # 100 / 2: two constants make nothing
    assert computed_from(40, {10.0}, {50.0})  # capacity minus the level read
    assert computed_from(15, {30.0}, {2.0})  # half of what the user said


def test_an_id_the_text_labels_as_another_kind_does_not_provide_the_parameter():
    """Review v3 #39: "Reference id 'USR002'. My user id is 'USR001' and send to Jane." gives no receiver id."""
    text = "Reference id 'USR002'. My user id is 'USR001' and send to Jane."
    assert labelled_otherwise("receiver_id", "USR002", text)
    assert not labelled_otherwise("user_id", "USR001", text)
    assert not labelled_otherwise("receiver_id", "USR003", "send it to Bob, user id 'USR003'")
    assert not labelled_otherwise("user_id", "USR100145", "through my account with id 'USR100145' to")
    assert labelled_otherwise("receiver_id", "USR003", "order id 'USR003'")
    assert not labelled_otherwise("receiver_id", "USR003", "send it to USR003")
    task = _task([text], [["send_message(sender_id='USR001', receiver_id='USR002', message='hi')"]])
    from synth.checks.values import value_provenance

    missing = [(u.param, u.value) for u in value_provenance(task)]
    assert ("receiver_id", "USR002") in missing
