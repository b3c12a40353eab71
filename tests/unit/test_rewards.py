"""ACE's TRL-native reward, and two GRPO steps through TRL with only the export and that reward."""

from __future__ import annotations

import json

import torch  # noqa: F401  (the train extra is part of setup: without it these tests fail, never skip)

from ace_env.bfcl import load_tasks
from ace_env.verifier import verify
from train.export import export
from train.rewards import verifier_reward


def _block(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_reward_grades_the_first_turn_and_never_crashes():
    task = load_tasks("base")[1]
    verify(task, [])  # the full task's oracle is cached first: the first-turn grading must not reuse it
    assert task.turns[0].ground_truth == ["ls(a=True)"]
    col = [json.dumps(task.to_dict())] * 6
    completions = [
        _block("ls", {"a": True}),                                               # right
        [{"role": "assistant", "content": None,
          "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": '{"a": true}'}}]}],
        _block("pwd", {}),                                                       # the wrong tool
        '<tool_call>{"name": "ls", "arguments": {"a": true}} trailing</tool_call>',  # malformed
        "x" * (1 << 20),                                                         # a megabyte of text
        [{"role": "assistant", "content": "[ls(a=True)]"}],                      # BFCL python list
    ]
    assert verifier_reward([None] * 6, completions, task=col) == [1.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def _assistant(*calls: str) -> dict:
    return {"role": "assistant", "content": "[" + ", ".join(calls) + "]"}


def test_reward_grades_every_turn_a_multi_turn_completion_reaches():
    task = load_tasks("base")[1]
    gt = [t.ground_truth for t in task.turns]
    col = [json.dumps(task.to_dict())]
    user = [{"role": "user", "content": t.user[0]["content"]} for t in task.turns]
    two_right = [_assistant(*gt[0]), {"role": "tool", "content": "..."}, user[1], _assistant(*gt[1])]
    second_wrong = [_assistant(*gt[0]), user[1], _assistant("pwd()")]
    first_wrong = [_assistant("pwd()"), user[1], _assistant(*gt[1])]
    all_right = [m for i, g in enumerate(gt) for m in ([user[i]] if i else []) + [_assistant(*g)]]
    too_many = all_right + [user[0], _assistant(*gt[0])]
    got = [verifier_reward([None], [c], task=col) for c in (two_right, second_wrong, first_wrong, all_right, too_many)]
    assert got == [[1.0], [0.0], [0.0], [1.0], [0.0]]
    # turn 1's calls are graded in turn 1, after turn 0's state: the same calls in one turn fail
    assert verifier_reward([None], [[_assistant(*gt[0], *gt[1])]], task=col) == [0.0]
    assert verifier_reward([None], [second_wrong], task=col, partial=True) == [0.5]


def test_two_grpo_steps_through_trl_with_the_export_and_ace_reward(tmp_path):
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    model_dir = build_tiny_model(tmp_path / "tiny")
    report = export(load_tasks("base")[:4], "trl", tmp_path / "trl")
    assert report.written == 4
    data = load_dataset("json", data_files=str(tmp_path / "trl" / "train.jsonl"), split="train")
    data = data.remove_columns(["tools"])  # the prompts alone; the reward reads the `task` column
    calls: list[list[float]] = []

    def reward(prompts, completions, **kwargs):
        out = verifier_reward(prompts, completions, **kwargs)
        calls.append(out)
        return out

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    before = [p.detach().clone() for p in model.parameters()]
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=8, learning_rate=1e-2, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, seed=0, disable_tqdm=True, beta=0.0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                          processing_class=tokenizer)
    trainer.train()
    assert trainer.state.global_step == 2
    assert len(calls) >= 2 and all(len(c) == 2 and set(c) <= {0.0, 1.0} for c in calls)
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    assert all(torch.isfinite(p).all() for p in model.parameters()) and len(before) == len(list(model.parameters()))
