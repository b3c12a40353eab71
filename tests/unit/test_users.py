"""User profiles and the user-fidelity checker: each planted violation is flagged,
and the task's own (scripted) user turns are clean."""

from __future__ import annotations

import pytest

from ace_env import bfcl
from train.users import (
    INVENTED,
    LEAKED,
    LEFT_ROLE,
    OMITTED,
    TOOL_CALL,
    ScriptedUser,
    check_user_turn,
    fidelity,
    profile_for,
    turn_texts,
)


@pytest.fixture(scope="module")
def base0():
    return next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_0")


def kinds(violations):
    return sorted(v.kind for v in violations)


def test_profile_reveals_each_fact_at_its_first_turn(base0):
    p = profile_for(base0)
    by_value = {f.value: f.turn for f in p.facts}
    texts = turn_texts(base0)
    assert by_value["document"] == 0 and "document" in texts[0].lower()
    assert by_value["budget analysis"] == 1
    assert "budget analysis" not in texts[0].lower()
    assert by_value["previous_report.pdf"] == 3


def test_scripted_user_is_clean_on_the_first_50_base_tasks():
    checked = []
    for task in bfcl.load_tasks("base")[:50]:
        p, user, texts = profile_for(task), ScriptedUser(task), turn_texts(task)
        for k in range(len(task.turns)):
            checked.append(check_user_turn(p, k, user.message(k), texts[:k]))
    f = fidelity(checked)
    assert f.turns > 100
    assert f.rate == 1.0, f.by_kind


def test_leaked_fact_is_flagged(base0):
    p = profile_for(base0)
    text = turn_texts(base0)[0] + " Also look for budget analysis."
    assert LEAKED in kinds(check_user_turn(p, 0, text))
    # the same words in turn 1, where they belong, are fine
    assert LEAKED not in kinds(check_user_turn(p, 1, text, turn_texts(base0)[:1]))


def test_omitted_fact_is_flagged(base0):
    p = profile_for(base0)
    text = turn_texts(base0)[0].replace("temp", "new")
    assert OMITTED in kinds(check_user_turn(p, 0, text))


def test_invented_value_is_flagged(base0):
    p = profile_for(base0)
    text = turn_texts(base0)[0] + " Put it in folder archive_2031."
    v = check_user_turn(p, 0, text)
    assert kinds(v) == [INVENTED]
    assert "archive_2031" in v[0].detail
    # a value the assistant said earlier is not invented
    assert check_user_turn(p, 0, text, ["I found archive_2031 in the listing."]) == []


@pytest.mark.parametrize(
    "extra",
    ['<tool_call>{"name": "ls", "arguments": {}}</tool_call>', "Run cd(folder='document') now."],
)
def test_tool_call_is_flagged(base0, extra):
    p = profile_for(base0)
    assert TOOL_CALL in kinds(check_user_turn(p, 0, turn_texts(base0)[0] + " " + extra))


@pytest.mark.parametrize("extra", ["Assistant: I will do that.", "I have moved the file for you.", "As an AI, I can't."])
def test_leaving_the_role_is_flagged(base0, extra):
    p = profile_for(base0)
    assert LEFT_ROLE in kinds(check_user_turn(p, 0, turn_texts(base0)[0] + "\n" + extra))
