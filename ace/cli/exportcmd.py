"""``ace export``: tasks as BFCL evaluation files, a TRL (GRPO) dataset, or OpenAI SFT transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ace.cli import app
from ace.cli.options import config_options, json_option, out_option, tasks_option
from ace.cli.render import console, esc
from ace_env.environments import DEFAULT, ENVIRONMENTS
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set
from ace_env.workspace import check_out
from train.export import MARKER, ExportConfig, export


@app.command("export")
@config_options(ExportConfig, names={"format": ("--format", "-f")}, in_place=True)
def export_cmd(
    tasks: str = tasks_option(),
    config: ExportConfig = None,  # type: ignore[assignment]
    out: Path = out_option(..., "Output folder (written atomically).", refused="Refused if it holds files, unless --force."),
    as_json: bool = json_option("Print the report as JSON."),
) -> None:
    """Export tasks as a dataset: BFCL's multi-turn files, a TRL prompt dataset, oracle chat transcripts, or τ² tasks.

    Tasks a format cannot express are skipped and counted by reason. Example:
    `ace export --tasks bfcl:base --format openai-sft --out runs/sft-base`.
    """
    fmt, force = config.format, config.force
    check_out(out, force, directory=True, marker=MARKER)  # before the tasks load; export() checks it again
    # A format that is an environment's own (τ²'s task schema) takes that environment's tasks: every task its
    # spec names (telecom too: the round trip needs no simulated agent); the others take BFCL's and task files,
    # and another environment's tasks where its entry writes them as rows of the format (its export_rows).
    own = any(env.export_format == fmt and env is not DEFAULT for env in ENVIRONMENTS.values())
    named = environment_of_spec(tasks)
    if own and named is not None and named.export_format == fmt:
        task_set = load_every_task(tasks)
    else:
        task_set = load_task_set(tasks, any_environment=own or (named is not None and fmt in named.export_rows))
    report = export(task_set.values(), fmt, out, force=force)
    d = report.to_dict()
    if as_json:
        print(json.dumps(d))
    else:
        print(f"{fmt}: {d['written']} tasks written to {d['out']} ({', '.join(d['files'])}); {d['skipped']} skipped")
        for reason, n in d["skipped_by_reason"].items():
            console(stderr=True).print(esc(f"  skipped {n}: {reason} (e.g. {', '.join(d['skipped_examples'][reason])})"))
        for note, n in d["notes"].items():
            console(stderr=True).print(esc(f"  note, {n} written: {note}"))
    if report.written == 0:
        raise typer.Exit(1)
