"""``ace export``: tasks as BFCL evaluation files, a TRL (GRPO) dataset, or OpenAI SFT transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ace.cli import app
from ace_env.rollouts import load_task_set
from train.export import export


@app.command("export")
def export_cmd(
    tasks: str = typer.Option(..., "--tasks", help="bfcl:CATEGORY or a task JSONL file."),
    fmt: str = typer.Option(..., "--format", "-f", help="bfcl, trl or openai-sft."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (written atomically)."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty output folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Export tasks as a dataset: BFCL's multi-turn files, a TRL prompt dataset, or oracle chat transcripts.

    Tasks a format cannot express are skipped and counted by reason. Example:
    `ace export --tasks bfcl:base --format openai-sft --out runs/sft-base`.
    """
    from rich.console import Console


    task_set = load_task_set(tasks)
    report = export(task_set.values(), fmt, out, force=force)
    d = report.to_dict()
    if as_json:
        print(json.dumps(d))
    else:
        print(f"{fmt}: {d['written']} tasks written to {d['out']} ({', '.join(d['files'])}); {d['skipped']} skipped")
        for reason, n in d["skipped_by_reason"].items():
            Console(stderr=True).print(f"  skipped {n}: {reason} (e.g. {', '.join(d['skipped_examples'][reason])})",
                                       highlight=False)
        for note, n in d["notes"].items():
            Console(stderr=True).print(f"  note, {n} written: {note}", highlight=False)
    if report.written == 0:
        raise typer.Exit(1)
