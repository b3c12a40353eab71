"""``ace serve vllm``: a local model behind an OpenAI-compatible vLLM server."""

from __future__ import annotations

import os

import typer

from ace.cli import app
from ace.cli.options import config_options
from train.serve import ServeConfig, command

serve_app = typer.Typer(help="Serve a local model (vLLM).", no_args_is_help=True)
app.add_typer(serve_app, name="serve")


@serve_app.command("vllm")
@config_options(ServeConfig, exclude=("extra_args",), names={"model": ("--model", "-m"), "eager": "--eager"})
def vllm_cmd(
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the command instead of running it."),
    config: ServeConfig = None,  # type: ignore[assignment]
) -> None:
    """Run vLLM (from .venv-vllm, made by scripts/setup_vllm.sh) with the hermes tool parser and
    ACE's tool-aware template, in the foreground; roll out against it with the printed
    --policy openai:NAME@URL.
    """
    cmd, env = command(config)
    print(f"policy: {config.policy}")
    if dry_run:
        print(" ".join(cmd))
        return
    os.execve(cmd[0], cmd, env)
