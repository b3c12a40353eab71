"""GRPO: rewards are the verifier's, zero-variance groups are dropped and refilled,
only the policy's tokens carry loss, and two real TRL steps run on a tiny model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from bfcltasks import tasks_fixture

from ace_env import bfcl
from ace_env.errors import ConfigError
from ace_env.sim import parse_weakness
from ace_env.verifier import verify
from train.grpo import ACERollout, GRPORunConfig, ace_reward, episode_tokens, reward_of, train_grpo, vllm_settings
from train.policies.base import Conversation, GenerationConfig, PolicyError
from train.policies.hf import HFPolicy
from train.policies.sim import SimPolicy
from train.policies.template import ACE_CHAT_TEMPLATE
from train.policies.trainer_vllm import TrainerVLLMPolicy

# echo always slips, sort half the time, everything else never: tasks without
# either always pass, tasks with echo always fail, tasks with sort are mixed.
WEAK = parse_weakness({"defaults": {"error": 0.0}, "tool": [
    {"name": "echo", "error": 1.0, "kind": "argument"},
    {"name": "sort", "error": 0.5, "kind": "argument"},
]})
ALL_PASS = ["multi_turn_base_1", "multi_turn_base_3"]
ALL_FAIL = ["multi_turn_base_2", "multi_turn_base_6"]
MIXED = ["multi_turn_base_0", "multi_turn_base_5"]


tasks = tasks_fixture("base", ALL_PASS + ALL_FAIL + MIXED)


def _rollout(tasks, tiny_and_tokenizer, filtering=True, G=4, cap=8):
    config = GRPORunConfig(prompts_per_step=2, generations=G, dynamic_filtering=filtering, max_groups_sampled=cap)
    rollout = ACERollout(tasks, config, ACE_CHAT_TEMPLATE, policy_factory=lambda trainer: SimPolicy("sim:test", WEAK))
    rollout._refill = iter(MIXED + ALL_PASS)  # the prompts a refill draws, in order
    trainer = SimpleNamespace(processing_class=tiny_and_tokenizer[1])
    return rollout, trainer


def test_zero_variance_groups_are_replaced_by_groups_with_signal(tasks, tiny_and_tokenizer):
    rollout, trainer = _rollout(tasks, tiny_and_tokenizer)
    G = 4
    prompts = [ALL_PASS[0]] * G + [ALL_FAIL[0]] * G
    out = rollout(prompts, trainer)
    fill = rollout.records[-1].fill
    assert fill.by_outcome["all_pass"] >= 1 and fill.by_outcome["all_fail"] >= 1
    assert fill.groups_kept == 2 and fill.groups_sampled > 2
    kept_tasks = out["ace_task_id"][::G]
    assert all(t in MIXED for t in kept_tasks), kept_tasks
    for k in range(2):  # every kept group has signal
        rewards = out["ace_reward"][k * G : (k + 1) * G]
        assert max(rewards) > min(rewards)
    assert len(out["prompt_ids"]) == len(out["completion_ids"]) == len(out["env_mask"]) == 2 * G


def test_rewards_equal_the_verifiers_verdicts(tasks, tiny_and_tokenizer):
    rollout, trainer = _rollout(tasks, tiny_and_tokenizer, filtering=False)
    prompts = [ALL_PASS[0]] * 4 + [ALL_FAIL[0]] * 4
    out = rollout(prompts, trainer)
    assert len(rollout.last_rows) == len(out["ace_reward"]) == 8
    for row, reward in zip(rollout.last_rows, out["ace_reward"]):
        verdict = verify(tasks[row["task_id"]], row["turns"])
        assert reward == reward_of(verdict, 0.0) == verdict.reward
    assert ace_reward(prompts, ["x"] * 8, ace_reward=out["ace_reward"]) == out["ace_reward"]
    assert out["ace_reward"] == [1.0] * 4 + [0.0] * 4  # no filtering: both zero-variance groups stay


def test_partial_credit_and_timeouts_shape_the_reward(tasks):
    task = tasks[MIXED[0]]
    empty = verify(task, [[] for _ in task.turns])
    assert reward_of(empty, 0.5) == 0.5 * empty.partial_credit
    timed_out = SimpleNamespace(reward=0.0, partial_credit=0.9, attribution="timeout")
    assert reward_of(timed_out, 1.0) == 0.0


def test_a_capped_step_pads_with_masked_groups(tasks, tiny_and_tokenizer):
    rollout, trainer = _rollout(tasks, tiny_and_tokenizer, cap=2)  # no room to refill
    out = rollout([ALL_PASS[0]] * 4 + [ALL_FAIL[0]] * 4, trainer)
    assert rollout.records[-1].fill.capped
    assert all(sum(m) == 0 for m in out["env_mask"]) and set(out["ace_reward"]) == {0.0}
    # padding costs no forward pass over the episode: one prompt and one completion token a row
    assert all(len(p) == 1 for p in out["prompt_ids"]) and all(len(c) == 1 for c in out["completion_ids"])


def test_a_step_with_only_padding_changes_no_weight(tasks, tiny_and_tokenizer, tmp_path):
    import torch
    from safetensors.torch import load_file

    # the tiny random model fails every task: every group is all-fail, the step is all padding
    config = GRPORunConfig(steps=1, prompts_per_step=1, generations=2, max_tokens=4, step_cap=1, max_groups_sampled=1)
    lines = train_grpo(tiny_and_tokenizer[0], {t: tasks[t] for t in ALL_FAIL}, tmp_path / "ckpt", config)
    assert lines[0]["groups_kept"] == 0 and lines[0]["capped"] and lines[0]["loss"] == 0.0
    before, after = load_file(str(tiny_and_tokenizer[0] / "model.safetensors")), load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_only_the_policys_tokens_are_unmasked(tasks, tiny_and_tokenizer):
    tokenizer = tiny_and_tokenizer[1]
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": "[ls()]"},
        {"role": "tool", "tool_call_id": "c", "name": "ls", "content": "{'current_directory_content': ['a']}"},
        {"role": "assistant", "content": "Done."},
    ]
    prompt, completion, mask = episode_tokens(tokenizer, ACE_CHAT_TEMPLATE, messages, [bfcl.tool_schema("ls")])
    text = tokenizer.decode(prompt)
    assert text.endswith("<|im_start|>assistant\n") and "list files" in text
    policy_text = tokenizer.decode([t for t, m in zip(completion, mask) if m])
    other_text = tokenizer.decode([t for t, m in zip(completion, mask) if not m])
    assert "[ls()]" in policy_text and "Done." in policy_text
    assert "current_directory_content" in other_text and "current_directory_content" not in policy_text


def test_two_grpo_steps_on_a_tiny_model(tasks, tiny_and_tokenizer, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    out = tmp_path / "ckpt"
    seen = []
    config = GRPORunConfig(steps=2, prompts_per_step=2, generations=2, max_tokens=8, step_cap=1)
    lines = train_grpo(tiny_and_tokenizer[0], dict(list(tasks.items())[:3]), out, config, metrics_out=metrics,
                       on_checkpoint=lambda step, folder: seen.append(step))
    written = [json.loads(x) for x in metrics.read_text().splitlines()]
    assert written == lines and [x["step"] for x in written] == [1, 2]
    for key in ("reward_mean", "reward_std", "groups_sampled", "groups_kept", "loss",
                "seconds_generate", "seconds_verify", "seconds_train"):
        assert all(key in x for x in written), key
    assert all(x["groups_sampled"] >= 2 for x in written)
    assert seen == [2]
    policy = HFPolicy("hf:" + str(out), str(out))  # the result loads as a policy
    assert policy.model.config.num_hidden_layers == 2



def test_a_rollout_cut_by_the_tool_budget_scores_zero_without_running_the_call_again():
    """A sample whose tool call hangs is ended by the engine's budget; GRPO scores it 0 and moves on
    (before, its reward was computed by re-running the same call in-process, unbounded)."""
    import time

    math_task = "multi_turn_base_15"  # offers MathAPI's power() in every turn
    tasks = {t.id: t for t in bfcl.load_tasks("base") if t.id == math_task}

    class Runaway(SimPolicy):
        def generate(self, conversations, config):
            out = super().generate(conversations, config)
            for conv, reply in zip(conversations, out):
                if conv.key.endswith("#0") and conv.turn == 0 and conv.messages[-1]["role"] == "user":
                    reply.message["content"] = "[power(base=10, exponent=1000000000)]"  # one C-level op: never returns
                    reply.message.pop("tool_calls", None)
            return out

    perfect = parse_weakness({"defaults": {"error": 0.0}})
    config = GRPORunConfig(prompts_per_step=1, generations=2, dynamic_filtering=False, call_timeout=1.0)
    rollout = ACERollout(tasks, config, ACE_CHAT_TEMPLATE, policy_factory=lambda trainer: Runaway("sim:perfect", perfect))
    start = time.monotonic()
    [group] = rollout._sample(rollout.policy_factory(None), {"generate": 0.0, "verify": 0.0})([math_task])
    assert time.monotonic() - start < 60
    by_sample = {row["meta"]["sample"]: (row, reward) for row, reward in zip(group.samples, group.rewards)}
    cut, cut_reward = by_sample[0]
    assert cut["meta"]["ended"] == "timeout" and cut["verdict"]["attribution"] == "timeout" and cut_reward == 0.0
    whole, whole_reward = by_sample[1]
    assert "ended" not in whole["meta"] and whole_reward == verify(tasks[math_task], whole["turns"]).reward == 1.0


# --------------------------------------------------------------------------- --vllm (TRL's vLLM integration)


def test_vllm_flags_are_checked_where_they_are_given():
    with pytest.raises(ConfigError, match="vllm must be one of"):
        GRPORunConfig(vllm="gpu")
    with pytest.raises(ConfigError, match="needs --vllm-server-url"):
        GRPORunConfig(vllm="server")
    with pytest.raises(ConfigError, match="only with --vllm server"):
        GRPORunConfig(vllm_server_url="http://127.0.0.1:8000")
    with pytest.raises(ConfigError, match="temperature must be above 0"):
        GRPORunConfig(temperature=0.0)
    assert vllm_settings(GRPORunConfig(), have_gpu=False, have_vllm=False) == {}
    with pytest.raises(ConfigError, match="needs a CUDA GPU"):
        vllm_settings(GRPORunConfig(vllm="colocate"), have_gpu=False, have_vllm=True)
    with pytest.raises(ConfigError, match="needs vLLM"):
        vllm_settings(GRPORunConfig(vllm="colocate"), have_gpu=True, have_vllm=False)


def test_vllm_server_mode_is_refused_up_front_under_several_processes(monkeypatch):
    server = GRPORunConfig(vllm="server", vllm_server_url="http://127.0.0.1:8000")
    monkeypatch.setenv("WORLD_SIZE", "2")  # as `accelerate launch --num_processes 2` sets it
    with pytest.raises(ConfigError, match="use --vllm colocate"):
        vllm_settings(server, have_gpu=True, have_vllm=True)
    assert vllm_settings(GRPORunConfig(vllm="colocate"), have_gpu=True, have_vllm=True)["vllm_mode"] == "colocate"
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert vllm_settings(server, have_gpu=True, have_vllm=True)["vllm_mode"] == "server"


def test_vllm_settings_are_arguments_trls_grpo_config_takes(tmp_path):
    """The names ACE passes exist in the installed TRL and mean what ACE wants (checked on CPU; no vLLM needed)."""
    from trl import GRPOConfig

    config = GRPORunConfig(vllm="server", vllm_server_url="http://127.0.0.1:8000", max_tokens=33)
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, num_generations=2, per_device_train_batch_size=2,
                      **vllm_settings(config, have_gpu=True, have_vllm=True))
    assert args.use_vllm and args.vllm_mode == "server"
    assert args.vllm_server_base_url == "http://127.0.0.1:8000"
    assert args.max_completion_length == 33
    assert args.vllm_importance_sampling_correction is False


def test_the_trainer_vllm_policy_renders_like_hf_and_cuts_at_the_stop_token(tiny_and_tokenizer):
    """TrainerVLLMPolicy's own logic, with a recorder standing in for TRL's engine object (no GPU here):
    prompts are the chat template's tokens, answers end at the first stop token, and a lone-process
    rule guards server mode."""
    tokenizer = tiny_and_tokenizer[1]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    answer = tokenizer("[ls(a=True)]", add_special_tokens=False)["input_ids"]
    seen = {}

    class Recorder:
        mode = "colocate"
        generation_kwargs = {}

        def generate(self, prompts, images, num_generations):
            seen["prompts"] = prompts
            return prompts, [answer + [end] + answer, answer], None, None

    recorder = Recorder()
    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=4096))
    trainer = SimpleNamespace(vllm_generation=recorder, processing_class=tokenizer, model=model,
                              accelerator=SimpleNamespace(num_processes=2))
    policy = TrainerVLLMPolicy(trainer, ACE_CHAT_TEMPLATE)
    assert end in recorder.generation_kwargs["stop_token_ids"]  # vLLM is told to stop where a turn ends
    convs = [Conversation([{"role": "user", "content": f"list {i}"}], [bfcl.tool_schema("ls")]) for i in range(2)]
    long = Conversation([{"role": "user", "content": "word " * 5000}], [])
    replies = policy.generate([convs[0], long, convs[1]], GenerationConfig())
    assert replies[1].finish_reason == "error" and "no room" in replies[1].error  # not sent to vLLM
    assert len(seen["prompts"]) == 2
    replies = [replies[0], replies[2]]
    hf_text = tokenizer.apply_chat_template(convs[0].messages, tools=convs[0].tools, chat_template=ACE_CHAT_TEMPLATE,
                                            add_generation_prompt=True, tokenize=False, compact_tools=True)
    assert seen["prompts"][0] == tokenizer(hf_text, add_special_tokens=False)["input_ids"]
    assert [r.finish_reason for r in replies] == ["stop", "length"]
    assert replies[0].message["content"] == tokenizer.decode(answer, skip_special_tokens=True).strip()
    assert replies[0].completion_tokens == len(answer) + 1 and replies[1].completion_tokens == len(answer)
    Recorder.mode = "server"
    with pytest.raises(PolicyError, match="use --vllm colocate"):
        TrainerVLLMPolicy(trainer, ACE_CHAT_TEMPLATE)
