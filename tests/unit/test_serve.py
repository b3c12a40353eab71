"""`ace serve vllm`'s command line (train.serve.command), without starting vLLM."""

from __future__ import annotations

import json
import sys

from train.serve import ServeConfig, command


def _folder(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return model


def test_command_serves_with_hermes_and_aces_template(tmp_path, monkeypatch):
    monkeypatch.setenv("ACE_VLLM_PYTHON", sys.executable)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    model = _folder(tmp_path)
    cmd, env = command(ServeConfig(model=str(model), port=8123, kv_cache_gib=2))
    assert cmd[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    template = cmd[cmd.index("--chat-template") + 1]
    assert template == str(model / "ace_chat_template.jinja") and "<tool_call>" in open(template).read()
    assert cmd[cmd.index("--port") + 1] == "8123" and env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert "--enforce-eager" not in cmd  # compiled by default: the faster decoder


def test_eager_skips_compilation(tmp_path, monkeypatch):
    monkeypatch.setenv("ACE_VLLM_PYTHON", sys.executable)
    cmd, _ = command(ServeConfig(model=str(_folder(tmp_path)), eager=True, extra_args=["--seed", "3"]))
    assert cmd[-3:] == ["--enforce-eager", "--seed", "3"]
