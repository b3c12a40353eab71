"""``ace train sft``: supervised warm start of a local model on oracle transcripts (TRL)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app
from ace_env.rollouts import load_task_set
from ace_env.workspace import check_writable_kind
from ace_graph.errors import ConfigError
from train.policies import PolicyError
from train.sft import SFTRunConfig, train_sft

train_app = typer.Typer(help="Train a local model (TRL).", no_args_is_help=True)
app.add_typer(train_app, name="train")


@train_app.command("sft")
def sft_cmd(
    policy: str = typer.Option("hf:smollm2-135m", "--policy", "-p", help="hf:<model folder or name> to start from."),
    tasks: str = typer.Option(..., "--tasks", help="bfcl:CATEGORY, a task JSONL file (e.g. from ace synth), or a folder of BFCL files."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder of the trained model; load it with --policy hf:OUT."),
    force: bool = typer.Option(False, "--force", help="Replace --out if it exists."),
    skip: int = typer.Option(0, "--skip", min=0, help="Leave out the first N tasks (e.g. the ones `ace eval --limit N` uses)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Train on at most N tasks (after --skip)."),
    epochs: float = typer.Option(1.0, "--epochs", min=0.01, help="Passes over the transcripts."),
    lr: float = typer.Option(5e-5, "--lr", min=0.0, help="AdamW learning rate."),
    batch_size: int = typer.Option(1, "--batch-size", min=1, help="Transcripts per step."),
    max_length: int = typer.Option(1024, "--max-length", min=16, help="Tokens kept per transcript."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Fine-tune on oracle transcripts (the ground truth played as a conversation, tool results
    included), loss on assistant tokens only, with TRL's SFTTrainer.

    Example (train on base tasks 10-49, evaluate on 0-9 with `ace eval --limit 10`):
    `ace train sft --tasks bfcl:base --skip 10 --limit 40 --out runs/sft`.
    Torch uses ACE_TORCH_THREADS threads (default 1; faster on a busy 2-core machine).
    """
    kind, _, model = policy.partition(":")
    if kind != "hf" or not model:
        raise ConfigError(f"--policy {policy!r}: SFT trains a local model, give hf:<folder or name>")
    out = check_writable_kind(Path(out))
    if out.exists() and not force:
        raise ConfigError(f"{out} exists; pick another --out or pass --force to replace it")
    task_list = list(load_task_set(tasks).values())[skip:]
    if limit is not None:
        task_list = task_list[:limit]
    if not task_list:
        raise ConfigError(f"no tasks left in {tasks!r} after --skip {skip}")
    logging.getLogger("train").setLevel(logging.INFO)
    try:
        report = train_sft(SFTRunConfig(model=model, out=str(out), epochs=epochs, learning_rate=lr,
                                        batch_size=batch_size, max_length=max_length, seed=seed), task_list)
    except (ValueError, RuntimeError) as e:  # a trainer that refuses its input: one line, not a trace
        raise PolicyError(f"SFT failed: {e}") from e
    if as_json:
        print(json.dumps(report))
    else:
        print(
            f"trained {report['examples']} transcripts ({report['tokens']} tokens, {report['loss_tokens']} with loss) "
            f"in {report['steps']} steps, {report['seconds']} s; loss {report['first_loss']} -> {report['last_loss']}; "
            f"saved to {out} (use --policy hf:{out}); {report['skipped']} tasks skipped"
        )
