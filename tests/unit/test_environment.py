"""ACE's TRL environment: driven by the export's rows, tools from BFCL, verdicts from ACE's verifier, in GRPO."""

from __future__ import annotations

import doctest
import json

import pytest
import torch  # noqa: F401  (the train extra is part of setup: without it these tests fail, never skip)

import train.trlenv as environment
from ace_env import bfcl
from ace_env.bfcl import load_tasks
from ace_env.verifier import verify
from train.errors import EnvironmentUseError
from train.export import export, to_trl
from train.rewards import verifier_reward
from train.trlenv import environment_class, environment_factories, prepare_tokenizer


def test_the_docstring_example_runs():
    result = doctest.testmod(environment, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


def test_tools_are_the_turn_0_tools_with_their_bfcl_schemas():
    from transformers.utils import get_json_schema

    task = next(t for t in load_tasks("miss_func") if any(turn.tools_added for turn in t.turns[1:]))
    row = to_trl(task)
    classes = environment_factories([row])
    assert list(classes) == [row["environment"]]
    env_cls = classes[row["environment"]]
    exposed = [n for n in dir(env_cls) if callable(getattr(env_cls, n)) and not n.startswith("_")
               and n not in ("reset", "get_reward")]
    assert set(exposed) == set(task.offered_tools(0))  # what TRL turns into tools: held-back ones are not there
    held_back = {n for turn in task.turns[1:] for n in turn.tools_added}
    assert held_back and not held_back & set(exposed)
    env = env_cls()
    for name in exposed:
        schema = get_json_schema(getattr(env, name))["function"]
        own = bfcl.tool_schema(name)["function"]
        assert schema["name"] == name
        assert set(schema["parameters"]["properties"]) == set(own["parameters"]["properties"])
        assert set(schema["parameters"].get("required", [])) == set(own["parameters"].get("required", []))
        for pname, p in own["parameters"]["properties"].items():
            assert schema["parameters"]["properties"][pname]["type"] == p["type"], (name, pname)
    assert environment_class(list(env_cls.tool_names)) is env_cls  # one class per tool list


def test_reset_tool_calls_and_the_verdict():
    task = load_tasks("base")[0]
    row = to_trl(task)
    env = environment_factories([row])[row["environment"]]()
    with pytest.raises(EnvironmentUseError, match="reset"):
        env.ls()
    with pytest.raises(EnvironmentUseError, match="'task' column"):
        env.reset(prompt=row["prompt"])
    env.reset(**row)
    assert env.task == task and env.calls == [[]]
    assert env.get_reward() == 0.0 and env.verdict.attribution is not None  # turn 0 needs calls
    outputs = []
    for raw in task.turns[0].ground_truth:
        call = bfcl_call(raw)
        outputs.append(getattr(env, call["name"])(**call["arguments"]))
    assert env.get_reward() == 1.0 and env.verdict.turns_total == 1  # graded on the turn TRL plays
    assert [c["name"] for c in env.calls[0]] == [bfcl_call(r)["name"] for r in task.turns[0].ground_truth]
    # the outputs are the executor's: the same as the oracle's
    oracle = verify(task, [task.turns[0].ground_truth])
    assert [s.output for s in oracle.steps[0]] == outputs
    # a call that does not bind is an error output, as in BFCL; a call that changes the state fails the turn
    assert env.rm(no_such_argument=1).startswith("Error during execution")
    assert env.get_reward() == 1.0
    env.mkdir(dir_name="extra")
    assert env.get_reward() == 0.0 and env.verdict.attribution == "state_diverged"
    assert [c["name"] for c in env.calls[0][-2:]] == ["rm", "mkdir"]
    # a fresh rollout starts from the initial state
    env.reset(**row)
    assert env.calls == [[]] and env.get_reward() == 0.0
    # a row routed to the wrong tool set is refused, not silently played
    other = to_trl(load_tasks("base")[1])
    assert other["environment"] != row["environment"]
    with pytest.raises(EnvironmentUseError, match="environment"):
        env.reset(**other)


def bfcl_call(raw: str) -> dict:
    from ace_env.calls import parse_call
    from ace_env.executor import canonical_arguments

    call = parse_call(raw)
    return {"name": call.name, "arguments": canonical_arguments(call.name, call)}


def _teach_the_first_call(model, tokenizer, row, env_cls) -> None:
    """A few optimiser steps so the tiny model answers the row's prompt with its first turn's call, then 'Done.'."""
    env = env_cls()
    env.reset(**row)
    tools = [getattr(env, n) for n in env_cls.tool_names]
    call = bfcl_call(json.loads(row["task"])["turns"][0]["ground_truth"][0])
    output = getattr(env, call["name"])(**call["arguments"])
    asked = tokenizer.apply_chat_template(row["prompt"], tools=tools, add_generation_prompt=True, return_dict=False)
    answered = tokenizer.apply_chat_template(
        row["prompt"] + [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
                         {"role": "tool", "name": call["name"], "content": output}],
        tools=tools, add_generation_prompt=True, return_dict=False)
    block = f'<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>'
    examples = []
    for prefix, target in ((asked, block), (answered, "Done.<|im_end|>")):
        ids = torch.tensor([prefix + tokenizer(target, add_special_tokens=False)["input_ids"]])
        labels = ids.clone()
        labels[:, :len(prefix)] = -100
        examples.append((ids, labels))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        loss = sum(model(input_ids=ids, labels=labels).loss for ids, labels in examples)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.05:
            break
    assert loss.item() < 0.2


def test_two_grpo_steps_through_trl_with_the_environment_factory_and_ace_reward(tmp_path):
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    tasks = load_tasks("base")[:2]  # two tool sets: two environment classes in one run
    assert tasks[1].turns[0].ground_truth == ["ls(a=True)"]
    report = export(tasks, "trl", tmp_path / "trl")
    assert report.written == 2
    data = load_dataset("json", data_files=str(tmp_path / "trl" / "train.jsonl"), split="train")
    data = data.remove_columns(["tools"])  # the tools come from the environment's methods
    factories = environment_factories(data)
    assert len(factories) == 2

    model_dir = build_tiny_model(tmp_path / "tiny")
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(str(model_dir)))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    ls_row = next(r for r in data if r["task_id"] == tasks[1].id)
    _teach_the_first_call(model, tokenizer, ls_row, factories[ls_row["environment"]])

    seen: list[dict] = []

    def reward(prompts, completions, environments=None, task_id=None, **kwargs):
        out = verifier_reward(prompts, completions, **kwargs)
        seen.append({"reward": out, "env": [e.get_reward() for e in environments], "task_id": task_id,
                     "played": [e.task.id for e in environments], "calls": [e.calls for e in environments],
                     "completions": completions})
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=160, learning_rate=1e-4, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, beta=0.0, temperature=0.1, max_tool_calling_iterations=3,
        shuffle_dataset=False,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                          processing_class=tokenizer, environment_factory=factories)
    trainer.train()
    assert trainer.state.global_step == 2
    assert {t for s in seen for t in s["task_id"]} == {t.id for t in tasks}
    for s in seen:
        assert s["played"] == s["task_id"]  # each rollout's environment was reset with its own row
    ls_batches = [s for s in seen if s["task_id"][0] == tasks[1].id]
    assert ls_batches
    for s in ls_batches:
        # TRL parsed the model's <tool_call>, called the environment's `ls`, and fed its output back
        assert all(c == [[{"name": "ls", "arguments": {"a": True}}]] for c in s["calls"]), (s["calls"], s["completions"])
        for completion in s["completions"]:
            tool = next(m for m in completion if m["role"] == "tool")
            assert tool["name"] == "ls" and "current_directory_content" in tool["content"]
        assert s["env"] == s["reward"] == [1.0, 1.0]
    for s in seen:
        assert s["env"] == s["reward"]  # the environment's verdict and the completion's agree
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2 and all(h["tools/call_frequency"] > 0 for h in logged
                                    if h.get("rewards/reward/mean") == 1.0)


def test_a_runaway_call_ends_the_rollout_in_its_budget_not_the_trainer():
    """Model output asks for one C-level bigint power that never returns: the trainer's process goes on."""
    import time

    from ace_env.worker import Budget

    task = next(t for t in load_tasks("base") if t.id == "multi_turn_base_15")  # offers MathAPI's power()
    row = to_trl(task)
    env_cls = environment_factories([row])[row["environment"]]
    env_cls.budget = Budget(call_seconds=1.0)
    try:
        env = env_cls()
        env.reset(**row)
        start = time.monotonic()
        out = env.power(base=10, exponent=1000000000)
        assert time.monotonic() - start < 30
        assert out.startswith("Error:") and "budget" in out
        assert env.get_reward() == 0.0 and env.verdict.attribution == "timeout"
        assert env.ls().startswith("Error: the rollout has ended")  # nothing runs after it
        env.reset(**row)  # a fresh rollout in a fresh worker
        assert env.ls(a=True) and env.verdict.attribution != "timeout"
    finally:
        env_cls.budget = Budget()


def test_the_reward_runs_model_calls_under_the_budget():
    import time

    from ace_env.worker import Budget

    task = next(t for t in load_tasks("base") if t.id == "multi_turn_base_15")
    col = [json.dumps(task.to_dict())] * 2
    right = "[" + ", ".join(task.turns[0].ground_truth) + "]"
    start = time.monotonic()
    got = verifier_reward([None] * 2, ["[power(base=10, exponent=1000000000)]", right], task=col,
                          budget=Budget(call_seconds=1.0))
    assert time.monotonic() - start < 60
    assert got == [0.0, 1.0]
