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


def test_user_sim_rows_swap_roles_and_target_the_scripted_turns(base0):
    from train.export import to_openai_sft
    from train.users import user_sim_rows

    messages = to_openai_sft(base0)["messages"]
    rows = user_sim_rows([base0], {base0.id: messages})
    texts = turn_texts(base0)
    assert len(rows) == len(base0.turns)
    for k, row in enumerate(rows):
        view = row["messages"]
        assert view[0]["role"] == "system" and "request " + str(k + 1) in view[0]["content"]
        assert view[-1] == {"role": "assistant", "content": texts[k]}
        # later requests are not in the simulator's prompt
        if k + 1 < len(texts):
            assert texts[k + 1] not in view[0]["content"]
        # no tool traffic reaches the user
        assert all(m["role"] in ("system", "user", "assistant") and not m.get("tool_calls") for m in view)
        roles = [m["role"] for m in view[1:]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)


class _Echo:
    """A policy that writes a fixed text (here: what a perfect user would say)."""

    spec = "echo"

    def __init__(self, texts):
        self.texts = list(texts)

    def generate(self, conversations, config):
        from train.policies.base import Reply

        return [Reply({"role": "assistant", "content": self.texts.pop(0)}) for _ in conversations]

    def close(self):
        pass


def test_llm_user_is_checked_on_every_message(base0):
    from train.policies.base import GenerationConfig
    from train.users import LLMUser

    texts = turn_texts(base0)
    good = LLMUser(_Echo(texts), GenerationConfig())
    history = []
    for k in range(len(texts)):
        msg = good.message(base0, k, history)
        history.append(msg)
        history.append({"role": "assistant", "content": "ok"})
    assert fidelity(good.checked).rate == 1.0 and fidelity(good.checked).turns == len(texts)
    bad = LLMUser(_Echo(["Assistant: I have moved final_report.pdf into temp_99."]), GenerationConfig())
    bad.message(base0, 0, [])
    assert {v.kind for v in bad.checked[0]} >= {LEFT_ROLE, INVENTED, OMITTED}
