"""The prepared default model, SmolLM2-135M-Instruct, through the real policy path (slow)."""

from __future__ import annotations

import json

import pytest

from ace.cli import main
from ace_env.bfcl import load_tasks
from train.engine import offered_schemas
from train.models import DEFAULT_MODEL, resolve_model
from train.policies import load_policy
from train.policies.base import Conversation

pytestmark = pytest.mark.slow


def test_prepared_smollm2_loads_with_ace_template_and_rolls_out(tmp_path):
    folder = resolve_model(DEFAULT_MODEL)  # fails (never skips) when `ace model prepare` has not run
    config = json.loads((folder / "config.json").read_text())
    assert config["num_hidden_layers"] == 30 and config["model_type"] == "llama"
    policy = load_policy(f"hf:{DEFAULT_MODEL}")
    assert "<tool_call>" in policy.template  # its own template has no tools: ACE's is used
    task = load_tasks("base")[0]
    prompt = policy.render(Conversation([{"role": "user", "content": task.turns[0].user[0]["content"]}],
                                        offered_schemas(task, 0)))
    n_compact = len(policy.tokenizer(prompt).input_ids)
    assert n_compact < 1200  # the compact listing keeps prompts to hundreds of tokens
    policy.close()
    out = tmp_path / "r.jsonl"
    assert main(["rollout", "-p", f"hf:{DEFAULT_MODEL}", "--tasks", "bfcl:base", "--limit", "1",
                 "--max-tokens", "24", "--step-cap", "1", "--out", str(out)]) == 0
    row = json.loads(out.read_text())
    assert row["meta"]["completion_tokens"] > 0 and len(row["turns"]) == len(task.turns)
    assert all(m["content"] for m in row["messages"] if m["role"] == "assistant")  # it says something
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(out)]) == 0
