"""The τ² user simulator's side (ace_env.tau2.user) and the dialogue orchestrator (ace_env.tau2.orchestrate):
the prompt as τ² builds it, the stop signals, the fidelity checker, a scripted dialogue the verifier passes."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

from ace_env.tau2.env import pristine, raw_task, tool_kinds
from ace_env.tau2.orchestrate import GREETING, agent_view, run_dialogue, user_view
from ace_env.tau2.tasks import load_tasks
from ace_env.tau2.user import check_fidelity, parse_user_turn, scenario_fields, tokens, user_system_prompt

TAU2 = Path(importlib.util.find_spec("tau2").origin).parent
GUIDELINES = TAU2 / "data" / "tau2" / "user_simulator"


def _task(domain, pred=lambda t: True):
    return next(t for t in load_tasks(domain) if pred(t))


def _has_write(t):
    kinds = tool_kinds(t.domain)
    return any(kinds.get((a.requestor, a.name)) == "write" for a in t.gold_actions)


# ----------------------------------------------------------------------------- the prompt


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom"])
def test_prompt_is_the_installed_guidelines_then_the_scenario(domain):
    plain = (GUIDELINES / "simulation_guidelines.md").read_text()
    tools = (GUIDELINES / "simulation_guidelines_tools.md").read_text()
    assert plain.strip() and tools.strip() and plain != tools
    task = load_tasks(domain)[3]
    prompt = user_system_prompt(task)
    if domain == "telecom":
        assert prompt.startswith(tools.strip()) and plain.strip() not in prompt
    else:
        assert prompt.startswith(plain.strip()) and tools.strip() not in prompt
    assert prompt.endswith(f"<scenario>\n{task.user_scenario}\n</scenario>")
    known = raw_task(domain, task.tau2_id).user_scenario.instructions.known_info
    assert all(line.strip() in prompt for line in known.splitlines() if line.strip())
    assert "###STOP###" in prompt  # the guidelines tell the user how to stop


def test_scenario_fields_read_back_taus_own_fields():
    for domain in ("airline", "retail", "telecom"):
        for t in load_tasks(domain):
            sc = raw_task(domain, t.tau2_id).user_scenario
            ins = sc.instructions
            got = scenario_fields(t.user_scenario)
            want = {"persona": sc.persona, "domain": ins.domain, "reason_for_call": ins.reason_for_call,
                    "known_info": ins.known_info, "unknown_info": ins.unknown_info,
                    "task_instructions": ins.task_instructions}
            assert got == {k: v.strip() for k, v in want.items() if v and v.strip()}, t.id


# ----------------------------------------------------------------------------- stop signals


def test_stop_signals_parse():
    assert parse_user_turn("Thanks, that's all. ###STOP###") == parse_user_turn("Thanks, that's all. ###STOP###")
    assert parse_user_turn("Thanks, that's all. ###STOP###").signal == "stop"
    assert parse_user_turn("Thanks, that's all. ###STOP###").text == "Thanks, that's all."
    assert parse_user_turn("###TRANSFER###").signal == "transfer"
    assert parse_user_turn("I can't say. ###OUT-OF-SCOPE###").signal == "out_of_scope"
    assert parse_user_turn("###TRANSFER### ###STOP###").signal == "transfer"  # the first one
    for text in ("Please stop.", "STOP", "## STOP ##", "transfer me", "out of scope", "", None, "###stop###"):
        assert parse_user_turn(text).signal is None, text


# ----------------------------------------------------------------------------- the fidelity checker


def _retail_email_task():
    return _task("retail", lambda t: "email" in scenario_fields(t.user_scenario).get("unknown_info", "")
                 and "zip code" in scenario_fields(t.user_scenario).get("known_info", ""))


def _real_email(task):
    known = scenario_fields(task.user_scenario)["known_info"]
    db, _ = pristine("retail")
    zip_ = next(z for _, z in tokens(known))
    users = [u for u in db.users.values() if u.address.zip == zip_ and f"{u.name.first_name} {u.name.last_name}" in known]
    return users[0].email


def test_checker_flags_a_leaked_email_and_not_one_the_agent_said():
    task = _retail_email_task()
    email = _real_email(task)
    known = scenario_fields(task.user_scenario)["known_info"]
    leak = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": known},
            {"role": "assistant", "content": "What is your email?"},
            {"role": "user", "content": f"It is {email}."}]
    r = check_fidelity(task, leak)
    assert [(f.kind, f.turn) for f in r.flags] == [("leak", 3)] and not r.faithful
    assert r.counts == {"leak": 1, "invented": 0, "premature_stop": 0, "user_tool": 0}
    said = leak[:2] + [{"role": "assistant", "content": f"Is your email {email}?"},
                       {"role": "user", "content": f"Yes, {email}."}]
    assert check_fidelity(task, said).faithful


def test_checker_flags_a_value_found_only_in_unknown_info():
    base = _task("airline", lambda t: "Unknown info" not in t.user_scenario)
    scenario = base.user_scenario.replace("\tTask instructions:", "\tUnknown info:\n\t\tYour travel companion's "
                                          "passport is ZX4471Q but you do not know it.\n\tTask instructions:")
    task = dataclasses.replace(base, user_scenario=scenario)
    d = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": "Passport ZX4471Q."}]
    assert [f.kind for f in check_fidelity(task, d).flags] == ["leak"]
    assert [f.kind for f in check_fidelity(base, d).flags] == ["invented"]  # same words, no unknown info


def test_checker_flags_an_invented_order_id_not_a_scenario_one():
    task = _task("retail", lambda t: any(k == "order_id" for k, _ in tokens(t.user_scenario)))
    real = next(tok for k, tok in tokens(task.user_scenario) if k == "order_id")
    fake = "#W0000001"
    assert fake not in task.user_scenario
    ok = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": f"About order {real}."}]
    assert check_fidelity(task, ok).faithful
    bad = ok + [{"role": "assistant", "content": "Anything else?"},
                {"role": "user", "content": f"Also order {fake}, please."}]
    r = check_fidelity(task, bad)
    assert [(f.kind, f.turn) for f in r.flags] == [("invented", 3)] and fake in r.flags[0].reason
    # the agent's tool results are not shown to the user: a value seen only there is still invented
    hidden = ok + [{"role": "assistant", "content": "", "tool_calls": [
                       {"id": "c1", "type": "function", "function": {"name": "get_order_details",
                                                                   "arguments": json.dumps({"order_id": fake})}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": f"order {fake}"},
                   {"role": "assistant", "content": "Anything else?"},
                   {"role": "user", "content": f"Also order {fake}, please."}]
    assert [f.kind for f in check_fidelity(task, hidden).flags] == ["invented"]
    told = hidden[:5] + [{"role": "assistant", "content": f"You also have order {fake}."}, hidden[-1]]
    assert check_fidelity(task, told).faithful


def test_checker_flags_premature_stops():
    task = _task("airline", _has_write)
    d = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": "###STOP###"}]
    r = check_fidelity(task, d)
    assert [(f.kind, f.turn) for f in r.flags] == [("premature_stop", 1)]
    assert "before any agent turn" in r.flags[0].reason
    known = scenario_fields(task.user_scenario)["known_info"]
    early = [d[0], {"role": "user", "content": known}, {"role": "assistant", "content": "Sure."},
             {"role": "user", "content": "Thanks! ###STOP###"}]
    assert [f.kind for f in check_fidelity(task, early).flags] == ["premature_stop"]
    calls = [{"id": f"g{i}", "type": "function", "function": {"name": a.name, "arguments": json.dumps(a.arguments)}}
             for i, a in enumerate(task.gold_actions)]
    done = early[:3] + [{"role": "assistant", "content": "", "tool_calls": calls},
                        {"role": "assistant", "content": "Done."}, early[3]]
    assert check_fidelity(task, done).faithful
    # a transfer is not a premature stop
    transfer = early[:3] + [{"role": "user", "content": "###TRANSFER###"}]
    assert check_fidelity(task, transfer).faithful


def test_checker_flags_user_tool_calls_outside_the_users_tools():
    airline = load_tasks("airline")[0]
    call = {"id": "u1", "type": "function", "function": {"name": "get_user_details", "arguments": "{}"}}
    d = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": "", "tool_calls": [call]}]
    r = check_fidelity(airline, d)
    assert [(f.kind, f.turn) for f in r.flags] == [("user_tool", 1)] and "no tools" in r.flags[0].reason
    telecom = load_tasks("telecom")[0]
    user_tool = telecom.user_tools[0]["function"]["name"]
    agent_tool = telecom.tools[0]["function"]["name"]
    for name, want in ((user_tool, []), (agent_tool, ["agent-side"]), ("launch_rocket", ["no user tool"])):
        call = {"id": "u1", "type": "function", "function": {"name": name, "arguments": "{}"}}
        d = [{"role": "assistant", "content": GREETING}, {"role": "user", "content": "", "tool_calls": [call]}]
        flags = check_fidelity(telecom, d).flags
        assert [f.kind for f in flags] == ["user_tool"] * len(want), name
        assert all(w in f.reason for w, f in zip(want, flags)), (name, flags)


# ----------------------------------------------------------------------------- the orchestrator


def _scripted(task, stop_text="Great, thank you! ###STOP###"):
    """An agent that makes the task's gold calls in order (asking the user to make the user-side ones) and a
    user that states its reason and known info, makes the calls it is asked for, and stops when told done."""
    fields = scenario_fields(task.user_scenario)
    gold = list(task.gold_actions)
    pos = {"i": 0}

    def agent(messages):
        assert messages[0] == {"role": "assistant", "content": GREETING}
        assert all(m["role"] != "system" for m in messages)
        if pos["i"] >= len(gold):
            return {"role": "assistant", "content": "All done."}
        a = gold[pos["i"]]
        if a.requestor == "user":
            return {"role": "assistant", "content": f"Please run {a.name} on your phone."}
        pos["i"] += 1
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"a{pos['i']}", "type": "function",
             "function": {"name": a.name, "arguments": json.dumps(a.arguments)}}]}

    def user(messages):
        assert messages[0]["role"] == "system" and messages[0]["content"] == user_system_prompt(task)
        last = messages[-1]
        if len(messages) == 2:
            return f"{fields['reason_for_call']}\n{fields.get('known_info', '')}"
        if last["role"] == "tool":
            return "I did that."
        if last["content"].startswith("Please run"):
            a = gold[pos["i"]]
            pos["i"] += 1
            return {"content": None, "tool_calls": [{"function": {"name": a.name,
                                                                 "arguments": json.dumps(a.arguments)}}]}
        if last["content"] == "All done.":
            return stop_text
        return "Could you help?"

    return agent, user


def test_a_scripted_airline_dialogue_ends_by_user_stop_and_passes_the_verifier():
    task = _task("airline", _has_write)
    agent, user = _scripted(task)
    d = run_dialogue(task, agent, user, max_turns=50)
    assert d.termination == "user_stop" and d.tau2_termination == "user_stop"
    assert d.messages[0] == {"role": "assistant", "content": GREETING}
    assert [s.call.requestor for s in d.steps] == ["assistant"] * len(task.gold_actions)
    v = d.verdict(task)
    assert v.reward == 1.0 and v.strict, v.detail
    assert check_fidelity(task, d).faithful, check_fidelity(task, d).flags
    # without the gold calls, the same dialogue fails the verifier and the stop is premature
    lazy = run_dialogue(task, lambda m: "All done.", user, max_turns=50)
    assert lazy.termination == "user_stop" and lazy.verdict(task).reward == 0.0
    assert [f.kind for f in check_fidelity(task, lazy).flags] == ["premature_stop"]


def test_a_scripted_telecom_dialogue_runs_user_calls_on_the_user_side():
    task = _task("telecom", lambda t: any(a.requestor == "user" for a in t.gold_actions))
    agent, user = _scripted(task)
    d = run_dialogue(task, agent, user, max_turns=80)
    assert d.termination == "user_stop"
    assert [s.call.requestor for s in d.steps] == [a.requestor for a in task.gold_actions]
    assert d.verdict(task).reward == 1.0, d.verdict(task).detail
    assert check_fidelity(task, d).faithful, check_fidelity(task, d).flags
    av, uv = agent_view(d.messages), user_view(task, d.messages)
    # the agent sees the user's texts only, never the user's calls; the user sees the agent's texts as "user"
    assert [m["content"] for m in av if m["role"] == "user"] == \
        [m["content"] for m in d.messages if m["role"] == "user" and not m.get("tool_calls")]
    assert uv[1] == {"role": "user", "content": GREETING}
    assert [m.get("tool_calls") is not None for m in uv if m["role"] == "assistant"] == \
        [m.get("tool_calls") is not None for m in d.messages if m["role"] == "user"]
    assert not any(m.get("tool_calls") for m in uv if m["role"] == "user")
    n_user_results = sum(m["role"] == "tool" and m["requestor"] == "user" for m in d.messages)
    assert sum(m["role"] == "tool" for m in uv) == n_user_results > 0
    assert sum(m["role"] == "tool" for m in av) == len(d.steps) - n_user_results


@pytest.mark.parametrize("domain,n", [("airline", 50), ("retail", 40), ("telecom", 20)])
def test_the_checker_passes_faithful_scripted_dialogues(domain, n):
    for task in load_tasks(domain)[:n]:
        agent, user = _scripted(task)
        d = run_dialogue(task, agent, user, max_turns=200, max_errors=100)
        assert d.termination == "user_stop", task.id
        r = check_fidelity(task, d)
        assert r.faithful, (task.id, r.flags)


def test_max_turns_and_the_other_endings():
    task = load_tasks("airline")[0]
    d = run_dialogue(task, lambda m: "How else can I help?", lambda m: "Hmm, let me think.", max_turns=7)
    assert d.termination == "max_turns" and d.turns == 7 and len(d.messages) == 8
    assert [m["role"] for m in d.messages[:4]] == ["assistant", "user", "assistant", "user"]
    for text, want in (("###TRANSFER###", "transfer"), ("###OUT-OF-SCOPE###", "out_of_scope")):
        d = run_dialogue(task, lambda m: "Ok.", lambda m, t=text: t)
        assert d.termination == want and d.tau2_termination == "user_stop" and d.turns == 1
    d = run_dialogue(task, lambda m: "Bye ###STOP###", lambda m: "Hello")
    assert d.termination == "agent_stop" and d.turns == 2
    assert run_dialogue(task, lambda m: "", lambda m: "Hello").termination == "agent_error"
    bad = {"content": "", "tool_calls": [{"function": {"name": "get_user_details", "arguments": "{not json"}}]}
    d = run_dialogue(task, lambda m: bad, lambda m: "Hello", max_errors=3)
    assert d.termination == "too_many_errors" and all(s.error for s in d.steps) and len(d.steps) == 3


def test_greeting_is_taus_first_agent_message():
    src = (TAU2 / "orchestrator" / "orchestrator.py").read_text()
    assert f'content="{GREETING}"' in src
