"""The τ² user simulator for real (ace_env/tau2/users.py, the ideal dialogue in ace_env/tau2/ideal.py): SFT rows from each task's ideal dialogue, the LLM user
as run_dialogue's user, and `ace train user-sim --tasks tau2:airline`."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from ace.cli import main
from ace_env.tau2.ideal import (
    ANYTHING_ELSE,
    IDENTIFYING,
    ask_text,
    asked_params,
    asks_anything_else,
    first_person,
    ideal_dialogue,
    known_text,
    norm,
)
from ace_env.tau2.orchestrate import GREETING, run_dialogue, user_view
from ace_env.tau2.tasks import GoldAction, load_tasks
from ace_env.tau2.user import check_fidelity, parse_user_turn, scenario_fields, tokens
from ace_env.tau2.users import ScriptedTau2User, Tau2LLMUser, tau2_user_rows
from train.policies.base import GenerationConfig, Reply
from train.tau2_eval import PolicyGenerate

AIRLINE = load_tasks("airline")


def _target(row):
    return row["messages"][-1]


def _by_task(rows):
    out = {}
    for r in rows:
        out.setdefault(r["task_id"].partition("#")[0], []).append(r)
    return out


@pytest.fixture(scope="module")
def airline_rows():
    dropped = []
    rows = tau2_user_rows(AIRLINE, dropped)
    return rows, dropped


def test_airline_rows_are_the_ideal_dialogues_user_messages(airline_rows):
    rows, dropped = airline_rows
    assert dropped == [] and len(_by_task(rows)) == len(AIRLINE)
    for task in AIRLINE:
        task_rows = _by_task(rows)[task.id]
        d = ideal_dialogue(task)
        users = [d.messages[i] for i in d.user_indices]
        assert [_target(r)["content"] for r in task_rows] == [m["content"] for m in users]
        for n, (r, i) in enumerate(zip(task_rows, d.user_indices)):
            # the input is exactly the user's view of the dialogue before that message, the target its message
            assert r["messages"][:-1] == user_view(task, d.messages[:i]) and r["tools"] == []
            assert r["task_id"] == f"{task.id}#user{n}" and _target(r)["role"] == "assistant"
            assert "tool_calls" not in _target(r)  # an airline user never calls a tool
        assert check_fidelity(task, d.messages).faithful
        last = _target(task_rows[-1])["content"]
        assert last.endswith("###STOP###") and parse_user_turn(last).signal == "stop"
        assert all(parse_user_turn(_target(r)["content"]).signal is None for r in task_rows[:-1])


def test_the_user_gives_the_known_identifiers_the_gold_needs_and_only_when_asked(airline_rows):
    rows, _ = airline_rows
    grouped = _by_task(rows)
    asked_some = 0
    for task in AIRLINE:
        known = norm(known_text(task))
        said = [_target(r)["content"] for r in grouped[task.id]]
        d = ideal_dialogue(task)
        # each identifying value of a gold call the user knows is said by the user, unless the agent saw it
        # in an earlier call's result first (then it need not be asked)
        shown = norm(said[0])
        for i, m in enumerate(d.messages):
            if m["role"] == "assistant" and m.get("tool_calls"):
                args = json.loads(m["tool_calls"][0]["function"]["arguments"])
                for k, v in args.items():
                    if k in IDENTIFYING and isinstance(v, str) and norm(v) in known:
                        assert norm(v) in shown, (task.id, k, v)
            if m["role"] == "tool" or m["role"] == "user":
                shown += norm(m["content"] or "")
        # the opening holds none of the values asked for later; every answer follows a request for it
        for v in d.needed:
            assert norm(v) not in norm(d.opening), (task.id, v)
        assert not re.search(r"\(\s*\)|\band\)|\band\.|  ", d.opening), (task.id, d.opening)  # no leftovers
        for i in d.user_indices[1:-1]:
            params = asked_params(d.messages[i - 1]["content"])
            assert params, (task.id, d.messages[i - 1]["content"])
            asked_some += 1
    assert asked_some >= 30  # most airline tasks need the user id or a reservation id from the user


def test_the_user_never_says_unknown_info(airline_rows):
    rows, _ = airline_rows
    with_unknown = [t for t in AIRLINE if scenario_fields(t.user_scenario).get("unknown_info")]
    assert with_unknown
    for task in AIRLINE:
        unknown = scenario_fields(task.user_scenario).get("unknown_info", "")
        seen = norm(known_text(task))
        for r in _by_task(rows)[task.id]:
            for _, tok in tokens(_target(r)["content"]):
                assert norm(tok) in seen, (task.id, tok)
                assert not unknown or norm(tok) not in norm(unknown) or norm(tok) in seen


def test_a_dialogue_the_checker_flags_is_dropped():
    task = next(t for t in AIRLINE if t.gold_actions)
    # a gold call made by the user: in airline the user has no tools, so the ideal dialogue is not faithful
    bad = dataclasses.replace(task, gold_actions=(GoldAction("get_user_details", {"user_id": "x_1"}, "user"),))
    dropped = []
    rows = tau2_user_rows([bad, AIRLINE[1]], dropped)
    assert len(dropped) == 1 and dropped[0].startswith(task.id) and "user_tool" in dropped[0]
    assert {r["task_id"].partition("#")[0] for r in rows} == {AIRLINE[1].id}


def test_first_person_and_the_agent_template():
    assert first_person("You want to cancel your reservation.") == "I want to cancel my reservation."
    assert first_person("The agent told you that you can get a refund.") == \
        "The agent told me that I can get a refund."
    assert first_person("You're pretty sure you are Gold.") == "I'm pretty sure I am Gold."
    assert asked_params(ask_text(["user_id", "reservation_id"])) == ["user_id", "reservation_id"]
    assert asked_params("What is the weather?") == []
    assert asked_params("Thanks. What is your Reservation ID, please?") == ["reservation_id"]
    assert asked_params("I found your user id. What now?") == []  # a label outside the question is no request
    assert asks_anything_else(ANYTHING_ELSE) and asks_anything_else("Do you need help with anything more today?")
    assert not asks_anything_else("Anything more and I would have missed it.")


def test_the_scripted_user_plays_the_ideal_dialogue_with_the_template_agent():
    task = next(t for t in AIRLINE if t.gold_actions and ideal_dialogue(t).needed)
    d = ideal_dialogue(task)
    agent_texts = iter(m for m in d.messages[1:] if m["role"] == "assistant")

    def agent(view):  # replays the ideal dialogue's agent side, calls and texts
        return next(agent_texts)

    out = run_dialogue(task, agent, ScriptedTau2User(task), max_turns=60)
    assert out.termination == "user_stop"
    assert [m["content"] for m in out.messages if m["role"] == "user"] == \
        [d.messages[i]["content"] for i in d.user_indices]
    assert out.verdict(task).reward == 1.0 and check_fidelity(task, out).faithful


# ----------------------------------------------------------------------------- the LLM user


class _Canned:
    """A policy that answers every conversation with a fixed message and records what it was shown."""

    spec = "canned"

    def __init__(self, message):
        self.message, self.seen = message, []

    def generate(self, conversations, config):
        self.seen.extend(conversations)
        return [Reply(dict(self.message)) for _ in conversations]

    def close(self):
        pass


def test_llm_user_answers_from_the_users_view_and_drops_calls_in_airline():
    task = AIRLINE[1]
    call = '<tool_call>{"name": "get_user_details", "arguments": {"user_id": "x"}}</tool_call>'
    policy = _Canned({"role": "assistant", "content": f"Hello there. {call}"})
    user = Tau2LLMUser(PolicyGenerate(policy, GenerationConfig(max_tokens=8)))
    view = user_view(task, [{"role": "assistant", "content": GREETING}])
    msg = user(view)
    assert msg == {"role": "user", "content": "Hello there."}
    conv = policy.seen[0]
    assert conv.messages == view and conv.tools == []
    # an OpenAI-style tool call is dropped too; bound to its task, the user takes the dialogue itself
    policy.message = {"role": "assistant", "content": "Fine.", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "get_user_details", "arguments": "{}"}}]}
    bound = user.for_task(task)
    assert bound([{"role": "assistant", "content": GREETING}]) == {"role": "user", "content": "Fine."}
    assert policy.seen[-1].messages == view


def test_llm_user_keeps_a_telecom_user_tool_call_but_not_an_agent_tool():
    task = next(t for t in load_tasks("telecom") if t.user_tools)
    user_tool = task.user_tools[0]["function"]["name"]
    agent_tool = task.tools[0]["function"]["name"]
    view = user_view(task, [{"role": "assistant", "content": GREETING}])
    for name, kept in ((user_tool, True), (agent_tool, False)):
        policy = _Canned({"role": "assistant", "content": f'<tool_call>{{"name": "{name}", "arguments": {{}}}}'
                                                          "</tool_call>"})
        msg = Tau2LLMUser(PolicyGenerate(policy, GenerationConfig(max_tokens=8)))(view)
        assert policy.seen[0].tools == list(task.user_tools)
        if kept:
            assert [c["function"]["name"] for c in msg["tool_calls"]] == [name]
        else:
            assert "tool_calls" not in msg and msg["content"] == ""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tau2-user") / "tiny", seed=5)


def test_llm_user_with_a_tiny_model_runs_a_dialogue_and_never_calls_a_tool_in_airline(tiny):
    from train.policies import load_policy

    task = AIRLINE[1]
    user = Tau2LLMUser(PolicyGenerate(load_policy(f"hf:{tiny}"),
                                      GenerationConfig(temperature=1.0, max_tokens=12, seed=1)))
    d = run_dialogue(task, lambda view: "Could you please tell me your user id?", user, max_turns=5)
    users = [m for m in d.messages if m["role"] == "user"]
    assert users and all(set(m) <= {"role", "content"} and isinstance(m["content"], str) for m in users)
    assert len(user.replies) == len(users)
    report = check_fidelity(task, d)
    assert report.counts["user_tool"] == 0


def test_ace_train_user_sim_on_tau2_airline(tiny, tmp_path, capsys):
    out = tmp_path / "user-sim"
    rc = main(["train", "user-sim", "-p", f"hf:{tiny}", "--tasks", "tau2:airline", "--limit", "3",
               "--max-length", "2048", "--json", "--out", str(out)])
    assert rc == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    want = len(tau2_user_rows(AIRLINE[:3]))
    assert report["examples"] == want > 0 and report["tasks"] == 3 and report["dialogs_dropped"] == 0
    assert (out / "config.json").is_file()


def test_the_scripted_user_gives_each_value_of_a_param_in_turn():
    task = next(t for t in AIRLINE if any(len(v) > 1 for v in ideal_dialogue(t).answers.values()))
    param, values = next((p, v) for p, v in ideal_dialogue(task).answers.items() if len(v) > 1)
    user = ScriptedTau2User(task)
    dialogue = [{"role": "assistant", "content": GREETING}]
    dialogue.append(user(user_view(task, dialogue)))
    for value in values:
        dialogue.append({"role": "assistant", "content": ask_text([param])})
        answer = user(user_view(task, dialogue))
        assert norm(value) in norm(answer["content"]), (value, answer)
        dialogue.append(answer)
    dialogue.append({"role": "assistant", "content": "Done. Is there anything else I can help you with?"})
    assert parse_user_turn(user(user_view(task, dialogue))["content"]).signal == "stop"
