"""Training for every environment: SFT and transition-mode GRPO run on τ² tasks through the same interface as on
BFCL ones (``train_sft``, ``train_grpo``, ``ace train sft``), each environment's part found by its task type."""

from __future__ import annotations

import json

import pytest
import torch  # noqa: F401  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_env.errors import ConfigError
from ace_env.sim import parse_weakness
from ace_env.tau2.sim import agent_tools
from ace_env.tau2.tasks import load_tasks
from ace_env.worker import Budget
from train.grpo import ACERollout, GRPORunConfig, train_grpo
from train.policies.base import GenerationConfig
from train.policies.sim import SimPolicy
from train.policies.template import ACE_CHAT_TEMPLATE
from train.sft import SFTRunConfig, oracle_transcripts, train_sft
from train.tiny import build_tiny_model
from train.transitions import Transitions

TASKS = [t for t in load_tasks("airline") if len(t.agent_actions) >= 2][:2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tau2train") / "tiny", seed=3)


def _calls(messages):
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]) if isinstance(c["function"]["arguments"], str)
             else c["function"]["arguments"])
            for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def test_sft_trains_on_the_ideal_dialogue_with_every_gold_agent_call(tiny, tmp_path):
    rows, skipped = oracle_transcripts(TASKS)
    assert not skipped and [r["task_id"] for r in rows] == [t.id for t in TASKS]
    for row, task in zip(rows, TASKS):
        assert _calls(row["messages"]) == [(a.name, a.arguments) for a in task.agent_actions]
        assert {t["function"]["name"] for t in row["tools"]} >= {a.name for a in task.agent_actions}
    report = train_sft(SFTRunConfig(model=str(tiny), out=str(tmp_path / "sft"), epochs=1, max_length=8192), TASKS)
    assert report["examples"] == 2 and report["skipped"] == 0 and report["loss_tokens"] > 0
    assert report["first_loss"] is not None and (tmp_path / "sft" / "config.json").is_file()


def test_ace_train_sft_takes_a_tau2_spec(tiny, tmp_path, capsys):
    rc = main(["train", "sft", "--tasks", "tau2:airline", "--limit", "1", "--policy", f"hf:{tiny}",
               "--out", str(tmp_path / "m"), "--max-length", "8192", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert json.loads(out.strip().splitlines()[-1])["examples"] == 1 and (tmp_path / "m" / "config.json").is_file()


def test_transition_rewards_on_tau2_are_the_steps_verdicts():
    transitions = Transitions.from_tasks({t.id: t for t in TASKS}, "", ACE_CHAT_TEMPLATE)
    keys = sorted(transitions.steps)
    assert len(keys) == sum(len(t.agent_actions) for t in TASKS)
    right = SimPolicy("sim:right", parse_weakness({"defaults": {"error": 0.0}}))
    wrong = SimPolicy("sim:wrong", parse_weakness({"defaults": {"error": 1.0}}, "always", agent_tools(TASKS),
                                                   "a τ² agent tool"))
    timing = {"generate": 0.0, "verify": 0.0}
    for policy, reward in ((right, 1.0), (wrong, 0.0)):
        groups = transitions.sample(policy, keys[:2], 2, GenerationConfig(seed=0), Budget(), timing)
        assert [g.rewards for g in groups] == [[reward, reward]] * 2
        assert all(row["messages"][-1]["tool_calls"] for g in groups for row in g.samples)  # a τ² call: a tool call


def test_one_tiny_transition_grpo_round_on_tau2(tiny, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    config = GRPORunConfig(steps=1, prompts_per_step=1, generations=2, max_tokens=8, transitions=True,
                           dynamic_filtering=False)
    lines = train_grpo(tiny, {t.id: t for t in TASKS}, tmp_path / "out", config, metrics_out=metrics)
    assert [json.loads(x) for x in metrics.read_text().splitlines()] == lines and len(lines) == 1
    assert lines[0]["groups_kept"] == 1 and (tmp_path / "out" / "config.json").is_file()
    assert json.loads((tmp_path / "out" / "ace_grpo.json").read_text())["config"]["transitions"] is True


def test_whole_episode_grpo_on_tau2_is_refused_in_one_line(tiny, tmp_path, capsys):
    with pytest.raises(ConfigError, match="--transitions"):
        ACERollout({t.id: t for t in TASKS}, GRPORunConfig(), ACE_CHAT_TEMPLATE, policy_factory=lambda trainer: None)
    rc = main(["train", "grpo", "--tasks", "tau2:airline", "--limit", "2", "--policy", f"hf:{tiny}",
               "--out", str(tmp_path / "g")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1 and "--transitions" in err, err
    assert not (tmp_path / "g").exists() or not any((tmp_path / "g").iterdir())
