"""``ace serve vllm``: a local model behind an OpenAI-compatible vLLM server."""

from __future__ import annotations

import os

import typer

from ace.cli import app
from train.serve import ServeConfig, command

serve_app = typer.Typer(help="Serve a local model (vLLM).", no_args_is_help=True)
app.add_typer(serve_app, name="serve")


@serve_app.command("vllm")
def vllm_cmd(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Model folder or embedded name."),
    name: str = typer.Option("smollm2", "--name", help="Served model name."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    kv_cache_gib: int = typer.Option(1, "--kv-cache-gib", min=1, help="VLLM_CPU_KVCACHE_SPACE (CPU builds)."),
    max_model_len: int = typer.Option(8192, "--max-model-len", min=256, help="Longest prompt plus answer."),
    eager: bool = typer.Option(False, "--eager", help="No torch.compile: skips the minutes of compiling at start (decoding speed not measured)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the command instead of running it."),
) -> None:
    """Run vLLM (from .venv-vllm, made by scripts/setup_vllm.sh) with the hermes tool parser and
    ACE's tool-aware template, in the foreground; roll out against it with the printed
    --policy openai:NAME@URL.
    """
    config = ServeConfig(model=model, name=name, host=host, port=port, kv_cache_gib=kv_cache_gib,
                         max_model_len=max_model_len, eager=eager)
    cmd, env = command(config)
    print(f"policy: {config.policy}")
    if dry_run:
        print(" ".join(cmd))
        return
    os.execve(cmd[0], cmd, env)
