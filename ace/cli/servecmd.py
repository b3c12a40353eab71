"""``ace serve vllm``: a local model behind an OpenAI-compatible vLLM server."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import typer

from ace.cli import app
from ace.cli.options import config_options
from train.serve import ServeConfig, command

serve_app = typer.Typer(help="Serve a local model (vLLM).", no_args_is_help=True)
app.add_typer(serve_app, name="serve")


@dataclass(frozen=True)
class ServeRun:
    """How `ace serve vllm` runs the server it builds from :class:`train.serve.ServeConfig`."""

    dry_run: bool = field(default=False, metadata={"help": "Print the command instead of running it.",
                                                   "negatable": False})


@serve_app.command("vllm")
@config_options(ServeConfig, exclude=("extra_args",), names={"model": ("--model", "-m"), "eager": "--eager"})
@config_options(ServeRun, param="run", in_place=True)
def vllm_cmd(
    run: ServeRun = None,  # type: ignore[assignment]  # --dry-run
    config: ServeConfig = None,  # type: ignore[assignment]
) -> None:
    """Run vLLM (from .venv-vllm, made by scripts/setup_vllm.sh) with the hermes tool parser and
    ACE's tool-aware template, in the foreground; roll out against it with the printed
    --policy openai:NAME@URL.
    """
    cmd, env = command(config)
    print(f"policy: {config.policy}")
    if run.dry_run:
        print(" ".join(cmd))
        return
    os.execve(cmd[0], cmd, env)
