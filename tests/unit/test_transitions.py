"""GRPO on gold-prefix transitions: prompts are oracle steps, rewards are the step's verdict by execution,
only the sampled answer carries loss, and a real TRL step runs on a tiny model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from bfcltasks import tasks_fixture

from ace_env.errors import ConfigError
from ace_env.sim import parse_weakness
from train.grpo import ACERollout, GRPORunConfig, train_grpo
from train.policies.sim import SimPolicy
from train.policies.template import ACE_CHAT_TEMPLATE
from train.transitions import parse_targets, transition_steps

# place_order right after get_stock_info slips half the time; nothing else ever does
WEAK = parse_weakness({"defaults": {"error": 0.0}, "composition": [
    {"from": "get_stock_info", "to": "place_order", "error": 0.5, "kind": "argument"}]})
TARGET = "get_stock_info>place_order"


tasks = tasks_fixture("base")


def test_targets_pick_exactly_the_steps_of_their_composition(tasks):
    steps = transition_steps(tasks, parse_targets(TARGET))
    assert len(steps) >= 10
    for key, (tr, s) in steps.items():
        assert key == f"{tr.task.id}@{s.turn}.{s.index}" and s.tool == "place_order"
        assert tr.steps[s.prev].tool == "get_stock_info"
    every = transition_steps({k: tasks[k] for k in ("multi_turn_base_0",)})
    assert len(every) == sum(len(t.ground_truth) for t in tasks["multi_turn_base_0"].turns)
    for bad in ("a", "a>", ">b", "a>b>c"):
        with pytest.raises(ConfigError):
            parse_targets(bad)
    with pytest.raises(ConfigError):
        GRPORunConfig(targets=TARGET)  # without --transitions


def test_rewards_are_the_steps_verdicts_and_only_the_answer_is_trained(tasks, tiny_and_tokenizer):
    config = GRPORunConfig(transitions=True, targets=TARGET, prompts_per_step=2, generations=4,
                           dynamic_filtering=False)
    rollout = ACERollout(tasks, config, ACE_CHAT_TEMPLATE, policy_factory=lambda t: SimPolicy("sim:w", WEAK))
    keys = sorted(rollout.tasks)[:2]
    out = rollout([k for k in keys for _ in range(4)], SimpleNamespace(processing_class=tiny_and_tokenizer[1]))
    assert out["ace_task_id"] == [k for k in keys for _ in range(4)]
    for row, reward in zip(rollout.last_rows, out["ace_reward"]):
        answer = row["messages"][-1]["content"]
        gold = rollout.transitions.steps[row["task_id"]][1].call
        # the simulated agent makes the gold call or a slip of it; the reward is whether it was the gold effect
        assert reward == (1.0 if answer == f"[{gold}]" else 0.0) == float(row["step"]["passed"])
    assert 0.0 < sum(out["ace_reward"]) < len(out["ace_reward"])  # half the answers slip
    tokenizer = tiny_and_tokenizer[1]
    for row, prompt, completion, mask in zip(rollout.last_rows, out["prompt_ids"], out["completion_ids"],
                                             out["env_mask"]):
        assert tokenizer.decode(prompt).endswith("<|im_start|>assistant\n")
        assert row["messages"][-2]["role"] == "tool"  # the gold prefix ends with the previous call's output
        trained = tokenizer.decode([t for t, m in zip(completion, mask) if m])
        assert trained.startswith(row["messages"][-1]["content"]) and "<tool_response>" not in trained


def test_a_transition_grpo_step_on_a_tiny_model(tasks, tiny_and_tokenizer, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    config = GRPORunConfig(steps=1, prompts_per_step=2, generations=2, max_tokens=8, transitions=True,
                           targets=TARGET, dynamic_filtering=False)
    lines = train_grpo(tiny_and_tokenizer[0], tasks, tmp_path / "out", config, metrics_out=metrics)
    assert [json.loads(x) for x in metrics.read_text().splitlines()] == lines and len(lines) == 1
    assert (tmp_path / "out" / "config.json").is_file()
