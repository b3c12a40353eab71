"""``ace train sft``: supervised warm start of a local model on oracle transcripts (TRL)."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app
from ace.cli.options import (
    POLICY_FLAGS,
    config_options,
    force_option,
    json_option,
    limit_field,
    out_option,
    skip_field,
    tasks_option,
)
from ace_env.tasksets import load_task_set
from ace_env.workspace import check_out
from ace_graph.errors import ConfigError
from train.policies import DEFAULT_POLICY, PolicyError
from train.sft import SFTRunConfig, train_sft

train_app = typer.Typer(help="Train a local model (TRL).", no_args_is_help=True)
app.add_typer(train_app, name="train")


#: The SFT fields ``ace train sft`` sets (the model and --out come from --policy and --out).
SFT_FLAGS = ("epochs", "learning_rate", "batch_size", "max_length", "seed")
LR_FLAGS = {"learning_rate": ("--lr", "--learning-rate")}


@dataclass(frozen=True)
class SftRun:
    """Which model `ace train sft` starts from, and which of the tasks it learns from."""

    policy: str = field(default=DEFAULT_POLICY, metadata={"help": "hf:<model folder or name> to start from."})
    skip: int = skip_field("Leave out the first N tasks (e.g. the ones `ace eval --limit N` uses).")
    limit: Optional[int] = limit_field("Train on at most N tasks (after --skip).")


@train_app.command("sft")
@config_options(SFTRunConfig, include=SFT_FLAGS, names=LR_FLAGS)
@config_options(SftRun, in_place=True, param="run", names=POLICY_FLAGS,
                before={"skip": "as_json", "limit": "as_json"})
def sft_cmd(
    run: SftRun = None,  # type: ignore[assignment]
    tasks: str = tasks_option(note="Tasks whose oracle transcripts it learns from (e.g. a file from ace synth)."),
    out: Path = out_option(help="Folder of the trained model; load it with --policy hf:OUT."),
    force: bool = force_option(),
    as_json: bool = json_option("Print the report as JSON."),
    config: SFTRunConfig = None,  # type: ignore[assignment]
) -> None:
    """Fine-tune on oracle transcripts (the ground truth played as a conversation, tool results
    included), loss on assistant tokens only, with TRL's SFTTrainer.  τ² tasks (tau2:airline, tau2:retail)
    train on their ideal dialogue in the agent's view, as `ace eval --gold-prefix` shows it.

    Example (train on base tasks 10-49, evaluate on 0-9 with `ace eval --limit 10`):
    `ace train sft --tasks bfcl:base --skip 10 --limit 40 --out runs/sft`.
    Torch uses ACE_TORCH_THREADS threads (default 1; faster on a busy 2-core machine).
    """
    policy, skip, limit = run.policy, run.skip, run.limit
    kind, _, model = policy.partition(":")
    if kind != "hf" or not model:
        raise ConfigError(f"--policy {policy!r}: SFT trains a local model, give hf:<folder or name>")
    out = check_out(Path(out), force, directory=True)
    task_list = list(load_task_set(tasks, any_environment=True).values())[skip:]  # every environment's tasks
    if limit is not None:
        task_list = task_list[:limit]
    if not task_list:
        raise ConfigError(f"no tasks left in {tasks!r} after --skip {skip}")
    logging.getLogger("train").setLevel(logging.INFO)
    try:
        report = train_sft(dataclasses.replace(config, model=model, out=str(out)), task_list)
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
