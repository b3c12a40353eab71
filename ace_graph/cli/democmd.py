"""``ace demo``: the main job end to end on whatever Neo4j ACE is configured for."""

from __future__ import annotations

import time

import typer

from ace_graph.cli import app


@app.command("demo")
def demo(
    categories: str = typer.Option(
        "base,long_context,miss_func,miss_param",
        "--categories",
        help="Comma-separated BFCL multi-turn categories to replay.",
    ),
) -> None:
    """Run ACE's main job: check Neo4j and its schema, then replay and verify every scored BFCL task.

    Needs a reachable Neo4j (`ace db start`, or NEO4J_URI for an external one).
    """
    from rich.console import Console
    from rich.table import Table

    from ace_graph.db import apply_schema, get_driver
    from ace_graph.config import neo4j_settings
    from synth import bfcl
    from synth.verifier import ground_truth_rollout, replay_oracle, verify

    console = Console()
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        applied = apply_schema(driver, settings.database)
        agent = driver.get_server_info().agent
    finally:
        driver.close()
    console.print(f"[bold]Neo4j[/] {agent} at {settings.uri}: schema applied ({len(applied)} statements)")

    table = Table(title="BFCL multi-turn: ground truth replayed through ACE's executor and verifier")
    for col in ("category", "tasks", "passed", "failed", "errors", "tasks/s"):
        table.add_column(col, justify="right" if col != "category" else "left")
    total_failed = 0
    for category in [c.strip() for c in categories.split(",") if c.strip()]:
        tasks = bfcl.load_tasks(category)
        start = time.perf_counter()
        passed = errors = 0
        for task in tasks:
            oracle = replay_oracle(task)
            errors += bool(oracle.errors)
            passed += verify(task, ground_truth_rollout(task), oracle=oracle).reward == 1.0 and not oracle.errors
        rate = len(tasks) / (time.perf_counter() - start)
        total_failed += len(tasks) - passed
        table.add_row(category, str(len(tasks)), str(passed), str(len(tasks) - passed), str(errors), f"{rate:.0f}")
    console.print(table)
    if total_failed:
        raise typer.Exit(1)
