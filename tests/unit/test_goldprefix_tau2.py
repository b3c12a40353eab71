"""Gold-prefix scoring on τ² tasks: the prefix is the task's ideal dialogue in the agent's view; teacher
forcing scores every gold agent call; a generated call is verified by running the whole gold with it in
place; the simulated agent slips exactly where its weakness file plants a composition."""

from __future__ import annotations

import json

import pytest
import torch  # the train extra is part of setup: without it these tests fail, never skip

from ace_env.sim import parse_weakness
from ace_env.tau2.goldprefix import judge_tau2
from ace_env.tau2.sim import agent_tools
from ace_env.tau2.tasks import load_tasks
from ace_graph.tagger import tag_task
from train.goldprefix import records, score_tasks, transcript
from train.policies.base import GenerationConfig, Reply
from train.policies.hf import HFPolicy
from train.policies.sim import SimPolicy
from train.tau2_agent import agent_system_prompt

AIRLINE = {t.tau2_id: t for t in load_tasks("airline")}
#: Airline tasks with two or more gold agent calls, and one without any (an abstain step).
MANY = [t for t in load_tasks("airline") if len(t.agent_actions) >= 2][:4]
NONE = next(t for t in load_tasks("airline") if not t.agent_actions)


def test_the_prefix_is_the_ideal_dialogue_with_every_gold_agent_call_in_order():
    for task in MANY + [NONE]:
        tr = transcript(task)
        assert tr.messages[0] == {"role": "system", "content": agent_system_prompt("airline")}
        assert tr.tools == [dict(t) for t in task.tools]
        calls = [s for s in tr.steps if s.tool is not None]
        assert [(s.tool, json.loads(s.call)) for s in calls] == [(a.name, a.arguments) for a in task.agent_actions]
        for s in calls:
            m = tr.messages[s.message]
            assert m["role"] == "assistant" and m["tool_calls"][0]["function"]["name"] == s.tool
            assert tr.messages[s.message + 1]["role"] == "tool"  # its real output follows
            assert s.prev == (s.flat - 1 if s.flat else None)
        # the tagger's flat order is the same: step j is gold agent action j
        assert [t.tool for t in tag_task(task)] == [s.tool for s in tr.steps]
        assert all(m["role"] in ("system", "user", "assistant", "tool") for m in tr.messages)
    (abstain,) = transcript(NONE).steps
    assert abstain.tool is None and transcript(NONE).messages[abstain.message]["role"] == "assistant"


def test_telecom_users_own_calls_are_not_in_the_agents_view():
    task = next(t for t in load_tasks("telecom") if any(a.requestor == "user" for a in t.gold_actions))
    tr = transcript(task)
    user_tools = {a.name for a in task.gold_actions if a.requestor == "user"}
    shown = {c["function"]["name"] for m in tr.messages for c in m.get("tool_calls") or []}
    assert shown == {a.name for a in task.agent_actions} and not (user_tools - {a.name for a in task.agent_actions}) & shown
    assert len(tr.steps) == max(len(task.agent_actions), 1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    path = build_tiny_model(tmp_path_factory.mktemp("gp2") / "tiny", seed=5)
    return HFPolicy(f"hf:{path}", str(path), cache_tokens=0)


def test_teacher_forcing_scores_every_gold_agent_call_and_stores_the_gold_predecessor(tiny):
    tasks = MANY[:2]
    run = score_tasks(tiny, tasks)
    assert not run.skipped
    for task in tasks:
        mine = sorted((s for s in run.scores if s.task_id == task.id), key=lambda s: s.flat)
        assert [s.tool for s in mine] == [a.name for a in task.agent_actions]
        assert all(s.nll is not None and s.nll > 0 and s.tokens > 0 for s in mine)
        assert [s.prev_tool for s in mine] == [None] + [a.name for a in task.agent_actions[:-1]]
    (rec, _), *_ = records(run.scores, {t.id: t for t in tasks}, "E/x/c0")
    assert rec.task_key == f"tau2:{tasks[0].id}" and len(rec.steps) == len(tasks[0].agent_actions)
    assert rec.pairs == [(j - 1, j) for j in range(1, len(tasks[0].agent_actions))]


def _reply(name, arguments):
    return Reply({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})


def test_a_generated_call_passes_when_it_has_the_gold_calls_effect_and_output():
    from ace_env.tau2.bounded import Tau2Runner

    task = MANY[0]
    tr = transcript(task)
    with Tau2Runner({task.id: task}) as runner:
        for s in tr.steps:
            a = task.agent_actions[s.index]
            good = judge_tau2(runner, tr, s, _reply(a.name, a.arguments))
            assert good.passed and good.exact and good.tool_right, (s, good)
        s = tr.steps[0]
        a = task.agent_actions[0]
        wrong_value = {k: (v + "X" if isinstance(v, str) else v) for k, v in a.arguments.items()}
        bad = judge_tau2(runner, tr, s, _reply(a.name, wrong_value))
        assert not bad.passed and bad.tool_right and bad.attribution == "wrong_argument"
        other = next(n for n in task.tool_names if n != a.name)
        assert judge_tau2(runner, tr, s, _reply(other, a.arguments)).attribution == "wrong_tool"
        silent = judge_tau2(runner, tr, s, Reply({"role": "assistant", "content": "Let me check."}))
        assert not silent.passed and silent.attribution == "stopped_early"
        broken = Reply({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": a.name, "arguments": json.dumps(a.arguments)[:-1]}}]})
        assert judge_tau2(runner, tr, s, broken).attribution == "malformed_call"


def test_telecom_steps_are_judged_where_they_sit_among_the_users_own_calls():
    from ace_env.tau2.bounded import Tau2Runner

    task = next(t for t in load_tasks("telecom") if t.gold_actions and t.gold_actions[0].requestor == "user"
                and len(t.agent_actions) >= 2)
    tr = transcript(task)
    with Tau2Runner({task.id: task}) as runner:
        for s in tr.steps:
            a = task.agent_actions[s.index]
            assert judge_tau2(runner, tr, s, _reply(a.name, a.arguments)).passed, s
        # the first agent call made at the second one's place: right tool or not, it fails there
        s, a = tr.steps[1], task.agent_actions[0]
        if (a.name, a.arguments) != (task.agent_actions[1].name, task.agent_actions[1].arguments):
            assert not judge_tau2(runner, tr, s, _reply(a.name, a.arguments)).passed


def test_the_simulated_agent_slips_at_its_planted_composition_and_nowhere_else():
    tasks = list(load_tasks("airline"))
    pair = next((a.name, b.name) for t in tasks for a, b in zip(t.agent_actions, t.agent_actions[1:])
                if a.name != b.name)
    spec = parse_weakness({"defaults": {"error": 0.0},
                           "composition": [{"from": pair[0], "to": pair[1], "error": 1.0, "kind": "argument"}]},
                          "planted", agent_tools(tasks), "a τ² agent tool")
    with_pair = [t for t in tasks if any((a.name, b.name) == pair for a, b in zip(t.agent_actions, t.agent_actions[1:]))][:2]
    run = score_tasks(SimPolicy("sim:planted", spec), with_pair, generate=True, config=GenerationConfig(seed=0))
    assert run.scores and not run.skipped
    for s in run.scores:
        planted = (s.prev_tool, s.tool) == pair
        assert s.passed is (not planted), s


def test_teacher_forced_nll_is_the_nll_after_the_prompt_the_agent_is_asked(tiny):
    from train.goldprefix import teacher_forced

    tr = transcript(MANY[0])
    by_flat, _, skipped = teacher_forced(tiny, tr)
    assert not skipped
    for step in tr.steps[:3]:
        conv = tr.conversation(step)
        prompt = tiny.tokenizer(tiny.render(conv), add_special_tokens=False)["input_ids"]
        full = list(tiny.tokenizer.apply_chat_template(
            tr.messages[: step.message + 1], tools=conv.tools, chat_template=tiny.template, tokenize=True,
            return_dict=True, compact_tools=True)["input_ids"])
        assert full[: len(prompt)] == prompt, "the gold transcript must extend the prompt the agent is asked"
        target = full[len(prompt):]
        if target[-1] != tiny.tokenizer.convert_tokens_to_ids("<|im_end|>"):
            target = target[:-1]
        with torch.no_grad():
            logp = torch.log_softmax(tiny.model(input_ids=torch.tensor([prompt + target])).logits[0].float(), -1)
        nll = [-logp[len(prompt) - 1 + k, tok].item() for k, tok in enumerate(target)]
        assert by_flat[step.flat].tokens == len(target)
        assert by_flat[step.flat].nll == pytest.approx(sum(nll) / len(nll), rel=1e-4, abs=1e-4)
