"""The seed errors blind reviewers caught (issue 34 item 2), on BFCL's own seed tasks: a km value passed to a
parameter documented in miles, a message sent to another person or id than the text names, a date whose weekday
contradicts the text; each flagged, repaired where the repair is safe, otherwise not used."""

from __future__ import annotations

import copy
from collections import Counter

from bfcltasks import tasks_fixture

from synth.checks.seeds import seed_problems
from synth.repair import text_repaired, usable_version
from synth.seedfix import (
    UNIT_MISMATCH,
    WEEKDAY_CONTRADICTED,
    WRONG_ADDRESSEE,
    addressee_problems,
    param_units,
    repair_weekdays,
    result_units,
    seedfix_problems,
    unit_in,
    unit_problems,
    weekday_problems,
)

tasks = tasks_fixture("all")


def _text(task, turn):
    return " ".join(m["content"] for m in task.turns[turn].user if m["role"] == "user")


def _with_text(task, turn, old, new):
    out = copy.deepcopy(task)
    for m in out.turns[turn].user:
        assert old in m["content"]
        m["content"] = m["content"].replace(old, new)
    return out


def test_units_are_read_from_the_function_docs():
    assert param_units("estimate_drive_feasibility_by_mileage") == {"distance": "miles"}
    assert result_units("estimate_distance") == {"distance": "km"}
    assert param_units("fillFuelTank") == {"fuelAmount": "gallons"}
    assert result_units("liter_to_gallon") == {"gallon": "gallons"}
    assert param_units("setCruiseControl")["speed"] == "mph"  # "in m/h", not meters
    assert unit_in("The distance in km or miles.") is None and unit_in("Second number.") is None


def test_km_passed_to_a_parameter_documented_in_miles_is_flagged_and_the_seed_not_used(tasks):
    seed = tasks["multi_turn_base_89"]  # estimate_distance -> 750.0 km -> estimate_drive_feasibility_by_mileage
    problems = unit_problems(seed)
    assert len(problems) == 1 and "distance=750.0 is documented in miles" in problems[0] and "(km)" in problems[0]
    assert any(p.startswith(UNIT_MISMATCH) for p in seed_problems(seed))
    assert usable_version(seed) is None
    # a message that writes estimate_distance's km as miles ("... is 980 miles.")
    assert any("'980 miles'" in p for p in unit_problems(tasks["multi_turn_base_95"]))


def test_values_in_their_documented_unit_are_not_flagged(tasks):
    # base 62 writes estimate_distance's value as km; base 66 passes the user's "450 miles" as miles; base 69
    # converts 40 liters to gallons before filling the tank
    for i in ("multi_turn_base_62", "multi_turn_base_66", "multi_turn_base_69"):
        assert unit_problems(tasks[i]) == [], i
    # the user's own number, written in km, passed as miles
    km = _with_text(tasks["multi_turn_base_66"], 0, "450 miles", "450 km")
    assert unit_problems(km) == ["turn 0: estimate_drive_feasibility_by_mileage(distance=450.0): distance=450.0 is "
                                 "documented in miles; the value is the user's '450 km'"]


def test_a_message_to_another_id_than_the_text_gives_is_flagged_and_not_repaired(tasks):
    # 'a note to customer service ... Reference id 'USR002' ... and send to Jane. She is the one.': the
    # provenance repair looks Jane up (USR002), which left the garbled turn in; now the seed is not used
    seed = tasks["multi_turn_base_103"]
    problems = addressee_problems(seed)
    assert problems and "'USR002' only as another kind of id" in problems[0]
    assert any(p.startswith(WRONG_ADDRESSEE) for p in seed_problems(seed))
    assert usable_version(seed) is None and usable_version(tasks["multi_turn_long_context_103"]) is None


def test_a_message_to_another_person_than_the_text_names_is_flagged(tasks):
    seed = tasks["multi_turn_base_91"]  # "I am Kelly ... update Michael": Michael is USR006, the receiver
    assert addressee_problems(seed) == [] and usable_version(seed) is not None
    sarah = _with_text(seed, 0, "update Michael", "update Sarah")  # Sarah is USR007
    problems = addressee_problems(sarah)
    assert len(problems) == 1 and "Sarah (USR007)" in problems[0] and "'USR006'" in problems[0]
    desk = _with_text(seed, 0, "update Michael on today's outdoor temperature with message",
                      "send a note to customer service with message")
    assert any("'customer service'" in p for p in addressee_problems(desk))


def test_a_weekday_the_date_contradicts_is_flagged_and_repaired(tasks):
    seed = tasks["multi_turn_base_168"]
    assert weekday_problems(seed) == ["turn 1: 'this weekend' beside 2026-07-01, a Wednesday"]
    assert any(p.startswith(WEEKDAY_CONTRADICTED) for p in seed_problems(seed))
    used = usable_version(seed)
    assert used is not None and not weekday_problems(used) and not seed_problems(used)
    assert "a flight on July 1st 2026 from San Francisco" in _text(used, 1)
    assert _text(seed, 1).count("this weekend") == 1  # the seed itself is not changed
    # a seed whose only problem is the weekday: repaired by the text alone
    base = tasks["multi_turn_base_182"]
    fixed = text_repaired(base)
    assert "traveling on July 14th, 2026 with" in _text(fixed, 0)
    assert usable_version(base) is not None and not seed_problems(fixed)
    # 'next Friday 19th Sept 2026' (a Saturday), 'next Friday, November 10th, 2026' (a Tuesday)
    assert "a Saturday" in weekday_problems(tasks["multi_turn_base_188"])[0]
    assert "a Tuesday" in weekday_problems(tasks["multi_turn_long_context_151"])[0]


def test_weekdays_the_calendar_confirms_are_not_flagged(tasks):
    # 'next Tuesday, November 10th, 2026', 'this upcoming Thursday October 15th 2026', 'next Tuesday 2026-11-10'
    for i in ("multi_turn_base_151", "multi_turn_base_158", "multi_turn_base_169"):
        assert weekday_problems(tasks[i]) == [] and repair_weekdays(copy.deepcopy(tasks[i])) == 0, i


def test_counts_on_the_corpus(tasks):
    """Every flag on BFCL's 800 multi-turn tasks, read by hand (see CHANGELOG): 10 base tasks pass
    estimate_distance's km on as miles, 1 sends its note to a reference id, 4 write a weekday the date
    contradicts (each in its category variants); no usable seed keeps a problem."""
    counts = Counter(reason for t in tasks.values() for reason in {r for r, _ in seedfix_problems(t)})
    assert counts == {UNIT_MISMATCH: 40, WRONG_ADDRESSEE: 4, WEEKDAY_CONTRADICTED: 13}
    for t in tasks.values():
        used = usable_version(t)
        assert used is None or not seedfix_problems(used), t.id
