"""``ace eval`` on τ² (train/tau2_eval.py; τ²'s side in ace_env/tau2/dialogue.py): τ²'s agent prompt, the
agent's answers read as data, the exact COMMUNICATE check, verdict labels (exact apart from judged), the rows
ingest reads, and the CLI's refusals.

The agent here is an in-process policy that answers with the gold calls in the forms models write them
(``<tool_call>`` JSON, a python-list call, a broken block), so the dialogue, the row and ACE's verifier
are the real ones; the end-to-end run with a model and Neo4j is tests/integration/test_tau2_eval_cli.py.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import tau2

from ace.cli import main
from ace_env.errors import ConfigError
from ace_env.tau2.agent import AGENT_INSTRUCTION, MALFORMED_NAME, SYSTEM_PROMPT, agent_message, agent_system_prompt
from ace_env.tau2.dialogue import communicate_check, tau2_reward
from ace_env.tau2.env import new_environment
from ace_env.tau2.ideal import ANYTHING_ELSE
from ace_env.tau2.orchestrate import run_dialogue
from ace_env.tau2.rollouts import calls_of, verify_calls
from ace_env.tau2.tasks import load_tasks
from ace_env.tau2.users import ScriptedTau2User
from ace_env.verifier import MALFORMED_CALL
from train.engine import RolloutConfig
from train.judge import EXACT, JUDGED, NO, PASS, UNPARSEABLE, YES, Judge
from train.policies.base import GenerationConfig, Reply
from train.tau2_eval import (
    SCRIPTED,
    PolicyAgent,
    add_checks,
    check_tau2_options,
    graph_rows,
    rollout_row,
    summarize,
    user_factory,
)

AIRLINE = {t.tau2_id: t for t in load_tasks("airline")}


def _string_constant(source: str, name: str) -> str:
    """The text of ``NAME = \"\"\"...\"\"\".strip()`` in a module's source, read with ast."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value.func.value.value.strip()
    raise AssertionError(f"{name} not found")


def test_the_agent_prompt_is_tau2s_own():
    src = (Path(tau2.__file__).parent / "agent" / "llm_agent.py").read_text()
    assert AGENT_INSTRUCTION == _string_constant(src, "AGENT_INSTRUCTION")
    assert SYSTEM_PROMPT == _string_constant(src, "SYSTEM_PROMPT")
    prompt = agent_system_prompt("airline")
    policy = new_environment("airline").policy
    assert prompt == SYSTEM_PROMPT.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=policy)
    assert "# Airline Agent Policy" in prompt and prompt.startswith("<instructions>\nYou are a customer service agent")


# ----------------------------------------------------------------------------- the agent's answers, as data


def test_calls_in_every_form_a_model_writes_become_tool_calls():
    hermes = agent_message({"content": 'Let me look.\n<tool_call>\n{"name": "get_user_details", '
                                       '"arguments": {"user_id": "mia_li_3668"}}\n</tool_call>'})
    assert hermes["content"] == "Let me look."
    [tc] = hermes["tool_calls"]
    assert tc["function"]["name"] == "get_user_details"
    assert json.loads(tc["function"]["arguments"]) == {"user_id": "mia_li_3668"}
    py = agent_message({"content": "[get_reservation_details(reservation_id='EHGLP3')]"})
    assert json.loads(py["tool_calls"][0]["function"]["arguments"]) == {"reservation_id": "EHGLP3"}
    openai = agent_message({"content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "list_all_airports", "arguments": "{}"}}]})
    assert openai["tool_calls"][0]["function"]["name"] == "list_all_airports"
    assert agent_message({"content": "  Hello there.  "}) == {"role": "assistant", "content": "Hello there."}


def test_a_call_that_cannot_be_read_runs_as_an_error_never_as_code():
    broken = agent_message({"content": '<tool_call>{"name": "cancel_reservation", "arguments": {</tool_call>'})
    [tc] = broken["tool_calls"]
    assert tc["function"]["name"] == MALFORMED_NAME
    args = tc["function"]["arguments"]
    assert isinstance(args, str) and args.startswith("malformed: ")
    with pytest.raises(ValueError):  # not a JSON object: the call errors when it runs
        assert not isinstance(json.loads(args), dict)
    hostile = agent_message({"content": "[__import__('os').system('touch /tmp/ace-pwned')]"})
    assert all(c["function"]["name"] != "__import__" or "malformed" in c["function"]["arguments"]
               for c in hostile.get("tool_calls", []))
    assert not Path("/tmp/ace-pwned").exists()


class GoldAgent:
    """An in-process policy playing the agent: it makes the task's gold agent calls in order, one per
    answer, in the given form, then asks whether there is anything else (the scripted user stops)."""

    def __init__(self, task, form="hermes"):
        self.task, self.form = task, form
        self.spec = f"gold:{form}"
        self.seen = []

    def generate(self, conversations, config):
        [conv] = conversations
        self.seen.append(conv)
        made = sum(1 for m in conv.messages if m["role"] == "assistant" and m.get("tool_calls"))
        gold = self.task.agent_actions
        if made == len(gold):
            return [Reply({"role": "assistant", "content": ANYTHING_ELSE}, 100, 5)]
        a = gold[made]
        if self.form == "broken" and made == 0:
            text = '<tool_call>{"name": "%s", "arguments": {</tool_call>' % a.name
        elif self.form == "python":
            args = ", ".join(f"{k}={v!r}" for k, v in a.arguments.items())
            text = f"[{a.name}({args})]"
        else:
            text = "<tool_call>" + json.dumps({"name": a.name, "arguments": a.arguments}) + "</tool_call>"
        return [Reply({"role": "assistant", "content": text}, 100, 7)]

    def close(self):
        pass


def _dialogue(task, policy, sample=0):
    config = RolloutConfig(generation=GenerationConfig(max_tokens=32))
    agent = PolicyAgent(policy, config.generation, task, f"{task.id}#{sample}")
    d = run_dialogue(task, agent, ScriptedTau2User(task), max_turns=30, budget=None)
    return rollout_row(task, sample, d, agent, policy.spec, SCRIPTED, config, 30), d


@pytest.mark.parametrize("form", ["hermes", "python"])
def test_a_gold_playing_agent_passes_and_its_row_verifies_the_same(form):
    task = AIRLINE["7"]  # five agent calls, two writes, communicate_info 1628
    policy = GoldAgent(task, form)
    row, d = _dialogue(task, policy)
    assert d.termination == "user_stop"
    conv = policy.seen[0]
    assert conv.messages[0] == {"role": "system", "content": agent_system_prompt("airline")}
    assert [t["function"]["name"] for t in conv.tools] == list(task.tool_names)  # the domain's agent tools
    calls = row["turns"][0]
    assert [c["name"] for c in calls] == [a.name for a in task.agent_actions]
    assert all("requestor" not in c for c in calls)  # the agent's calls
    meta = row["meta"]
    assert meta["state_reward"] == 1.0 and meta["termination"] == "user_stop" and meta["user"] == SCRIPTED
    assert (meta["agent_replies"], meta["prompt_tokens"], meta["completion_tokens"]) == (6, 600, 40)
    assert row["rollout_id"] == "tau2:airline:7#0" and row["task_id"] == "tau2:airline:7"
    # what `ace ingest` does with the row: replay its calls, ACE's verifier step by step
    v = verify_calls(task, calls_of(json.loads(json.dumps(row))["turns"]))
    assert v.reward == 1.0 and v.matched_steps == len(task.agent_actions)


def test_a_malformed_call_is_listed_and_fails_only_strict_verification():
    task = AIRLINE["7"]
    row, d = _dialogue(task, GoldAgent(task, "broken"))
    assert row["turns"][0][0]["name"] == MALFORMED_NAME
    assert d.steps[0].error
    # τ² judges the end state: a malformed read the agent then does without costs nothing, and is listed
    v = verify_calls(task, calls_of(row["turns"]))
    assert v.reward == 1.0 and v.stricter_because == ("errored_call", "skipped_read")
    v = verify_calls(task, calls_of(row["turns"]), strict=True)  # ACE's stricter rules, asked for
    assert v.reward == 0.0 and v.failing_oracle_step == 0 and v.attribution == MALFORMED_CALL


def test_a_policy_error_ends_the_dialogue_and_is_recorded():
    class Down:
        spec = "openai:down@http://127.0.0.1:1/v1"

        def generate(self, conversations, config):
            return [Reply({"role": "assistant", "content": ""}, finish_reason="error", error="connection refused")]

    row, d = _dialogue(AIRLINE["7"], Down())
    assert d.termination == "agent_error"
    assert row["meta"]["errors"] == ["connection refused"] and row["meta"]["state_reward"] == 0.0


# ----------------------------------------------------------------------------- COMMUNICATE, exact


def _said(*texts, role="assistant"):
    return [{"role": role, "content": t} for t in texts]


def test_communicate_is_checked_exactly_on_the_agents_words():
    task = AIRLINE["14"]  # communicate_info 327, 1000, 44
    assert communicate_check(task, _said("The refund is $327, then 1,000 and 44 dollars.")) == \
        {"method": EXACT, "ok": True, "missing": []}  # τ² drops commas: "1,000" says 1000
    got = communicate_check(task, _said("The refund is $327 and $44."))
    assert got["ok"] is False and got["missing"] == ["1000"]
    only_user = communicate_check(task, _said("327 1000 44", role="user"))  # the user's words do not count
    assert only_user["ok"] is False and only_user["missing"] == ["327", "1000", "44"]
    assert communicate_check(AIRLINE["0"], _said("anything")) == {"method": EXACT, "ok": None, "missing": []}


def test_tau2_reward_multiplies_communicate_where_the_basis_names_it():
    task = AIRLINE["14"]
    assert "COMMUNICATE" in task.reward_basis
    assert tau2_reward(task, 1.0, True) == 1.0 and tau2_reward(task, 1.0, None) == 1.0
    assert tau2_reward(task, 1.0, False) == 0.0 and tau2_reward(task, 0.0, True) == 0.0


def test_a_gold_agent_that_never_says_the_amount_fails_communicate_only():
    task = AIRLINE["7"]
    row, _ = _dialogue(task, GoldAgent(task))
    add_checks(task, row, None)
    checks = row["meta"]["checks"]
    assert checks["communicate"] == {"method": EXACT, "ok": False, "missing": ["1628"]}
    assert row["meta"]["state_reward"] == 1.0  # ACE's verifier: the database is the gold's
    assert checks["tau2_reward"] == {"method": EXACT, "value": 0.0, "basis": ["DB", "COMMUNICATE"]}
    assert checks["nl_assertions"] == {"method": None, "outcome": None, "note": "not checked (no --judge)"}


# ----------------------------------------------------------------------------- labels: exact apart from judged


class Says:
    spec = "openai:stand-in@http://127.0.0.1:1/v1"

    def __init__(self, answer):
        self.answer = answer

    def generate(self, conversations, config):
        return [Reply({"role": "assistant", "content": self.answer}) for _ in conversations]

    def close(self):
        pass


def test_judged_verdicts_are_labelled_and_never_enter_the_exact_rates():
    task = AIRLINE["7"]
    assert task.nl_assertions
    rows = []
    for sample, answer in enumerate(["YES", "Probably yes", "no"]):
        row, _ = _dialogue(task, GoldAgent(task), sample)
        add_checks(task, row, Judge(Says.spec, policy=Says(answer)))
        rows.append(row)
    nl = [r["meta"]["checks"]["nl_assertions"] for r in rows]
    assert [x["method"] for x in nl] == [JUDGED] * 3 and nl[0]["judge"] == Says.spec
    assert [x["outcome"] for x in nl] == [PASS, UNPARSEABLE, "fail"]
    assert [v["verdict"] for v in nl[1]["verdicts"]] == [UNPARSEABLE] * len(task.nl_assertions)
    assert nl[1]["verdicts"][0]["answer"] == "Probably yes"
    # exact: ACE's verifier passed all three, COMMUNICATE failed all three (1628 never said)
    s = summarize(rows)
    assert s["exact"] == {"method": EXACT, "state_pass_rate": 1.0, "communicate_checked": 3, "communicate_passed": 0,
                          "tau2_reward_pass_rate": 0.0}
    j = s["judged"]
    assert j["method"] == JUDGED and j["rollouts_judged"] == 3 and j["nl_pass_rate"] == round(1 / 3, 4)
    n = len(task.nl_assertions)
    assert j["verdicts"] == {YES: n, NO: n, UNPARSEABLE: n, "error": 0}
    assert j["outcomes"] == {"pass": 1, "fail": 1, "unparseable": 1}
    g = graph_rows("e/p/c", rows)
    assert [x["id"] for x in g] == ["e/p/c/tau2:airline:7#0", "e/p/c/tau2:airline:7#1", "e/p/c/tau2:airline:7#2"]
    assert [x["judged_nl"] for x in g] == [PASS, UNPARSEABLE, "fail"]
    assert all(x["communicate_ok"] is False and x["tau2_reward"] == 0.0 for x in g)
    assert json.loads(g[1]["judged_verdicts"])[0]["verdict"] == UNPARSEABLE
    plain = dict(rows[0], meta=dict(rows[0]["meta"]))
    add_checks(task, plain, None)
    [unjudged] = graph_rows("e/p/c", [plain])
    assert (unjudged["judged_nl"], unjudged["judged_by"], unjudged["judged_verdicts"]) == (None, None, None)


# ----------------------------------------------------------------------------- users and refusals


def test_the_default_user_is_scripted_and_a_policy_user_is_its_own():
    name, make, loaded = user_factory(None, "hf:x", object(), GenerationConfig())
    assert (name, loaded) == (SCRIPTED, None) and isinstance(make(AIRLINE["7"], 0), ScriptedTau2User)
    agent = object()
    name, make, loaded = user_factory("hf:x", "hf:x", agent, GenerationConfig(seed=3))
    user = make(AIRLINE["7"], 2)
    assert name == "hf:x" and loaded is None and user.generate.policy is agent
    assert user.generate.generation.seed == 5


@pytest.mark.parametrize("policy, user", [("sim:ace_env/demo_weakness.toml", None), ("hf:x", "sim:w.toml"),
                                          ("hf:x", "alice")])
def test_tau2_agents_and_users_are_policies(policy, user):
    with pytest.raises(ConfigError):
        check_tau2_options(policy, user)


@pytest.mark.parametrize("argv, says", [
    (["--tasks", "tau2:airline", "--gold-prefix", "--user", "scripted"], "--user is for free-running τ² dialogues"),
    (["--tasks", "bfcl:base", "--judge", "openai:m@http://127.0.0.1:1/v1"], "--judge is for τ² tasks"),
    (["--tasks", "bfcl:base", "--user", "scripted"], "--user is for τ² tasks"),
    (["--tasks", "tau2:airline", "--judge", "hf:smollm2-135m"], "openai:MODEL@"),
    (["--tasks", "tau2:airline", "-p", "sim:ace_env/demo_weakness.toml"], "hf: or openai:"),
    (["--tasks", "tau2:telecom"], "telecom"),
])
def test_the_cli_refuses_in_one_line_before_any_work(argv, says, capsys):
    assert main(["eval", "-e", "x", "-c", "c0", *argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:"), err
    assert says.split(":")[0][:40] in err.replace("\n", " ")
