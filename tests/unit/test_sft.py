"""SFT on oracle transcripts: assistant-only loss, a checkpoint that loads as a policy."""

from __future__ import annotations

import json

import pytest
import torch  # noqa: E402  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_env.bfcl import load_tasks
from train.policies import GenerationConfig, load_policy
from train.policies.base import Conversation
from train.policies.hf import load_model
from train.sft import oracle_transcripts, tokenize


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-sft") / "model")


def test_transcripts_carry_every_turn_and_the_loss_falls_on_assistant_tokens_only(tiny_model):
    task = load_tasks("base")[0]
    rows, skipped = oracle_transcripts([task])
    assert not skipped and rows[0]["task_id"] == task.id
    messages = rows[0]["messages"]
    assert sum(m["role"] == "user" for m in messages) == len(task.turns)
    assert sum(len(m.get("tool_calls") or []) for m in messages) == task.n_steps
    tokenizer, _, template = load_model(str(tiny_model))
    (example,) = tokenize(tokenizer, template, rows, max_length=100_000)
    ids, mask = example["input_ids"], example["assistant_masks"]
    learned = tokenizer.decode([i for i, m in zip(ids, mask) if m])
    ignored = tokenizer.decode([i for i, m in zip(ids, mask) if not m])
    assert learned.startswith("<tool_call>") and learned.count("<tool_call>") == task.n_steps
    assert task.turns[0].user[0]["content"] in ignored and task.turns[0].user[0]["content"] not in learned
    assert "<tool_response>" in ignored and "<tool_response>" not in learned
    short = tokenize(tokenizer, template, rows, max_length=len(ids) - 10)[0]
    assert len(short["input_ids"]) == len(short["assistant_masks"]) == len(ids) - 10


def test_sft_lowers_the_loss_and_saves_a_loadable_checkpoint(tiny_model, tmp_path, capsys):
    out = tmp_path / "sft"
    code = main(["train", "sft", "-p", f"hf:{tiny_model}", "--tasks", "bfcl:base", "--limit", "1",
                 "--epochs", "8", "--lr", "0.01", "--max-length", "4096", "--out", str(out), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # 8 steps: each turn's closing answer is its tool results (train.export.closing_text), ~270 of the 662 loss
    # tokens, so the one transcript takes more than 4 steps at this rate to show a lower loss
    assert report["examples"] == 1 and report["steps"] == 8
    assert report["last_loss"] < report["first_loss"]
    assert 0 < report["loss_tokens"] < report["tokens"]
    # TRL's SFTConfig defaults to bf16 autocast, on CPU too, where it is emulated (13x slower, measured).
    gpu_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    assert report["precision"] == ("bf16 mixed" if gpu_bf16 else "fp32")
    policy = load_policy(f"hf:{out}")
    reply = policy.generate([Conversation([{"role": "user", "content": "hi"}], [])], GenerationConfig(max_tokens=4))
    assert reply[0].completion_tokens >= 1
    assert "<tool_call>" in policy.template  # ACE's template travels with the checkpoint
    assert main(["train", "sft", "-p", f"hf:{tiny_model}", "--tasks", "bfcl:base", "--out", str(out)]) == 1
