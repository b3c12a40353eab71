"""``ace demo``: the main job end to end on whatever Neo4j ACE is configured for.

1. check Neo4j and apply the schema;
2. replay and verify every scored BFCL multi-turn task;
3. simulate an agent with planted weaknesses (``synth/demo_weakness.toml``),
   ingest its rollouts into the skill graph and print the weakest
   compositions and the frontier the graph found.

Every stage is idempotent: a second run finds the rollouts already stored.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from ace_graph.cli import app

DEMO_WEAKNESS = Path(__file__).resolve().parents[2] / "synth" / "demo_weakness.toml"


@app.command("demo")
def demo(
    categories: str = typer.Option(
        "base,long_context,miss_func,miss_param", "--categories", help="Comma-separated BFCL categories to replay."
    ),
    rollouts: int = typer.Option(4000, "--rollouts", min=100, help="Simulated rollouts for the skill graph."),
    seed: int = typer.Option(1, "--seed", help="Seed of the simulated agent."),
    weakness: Path = typer.Option(DEMO_WEAKNESS, "--weakness", help="Planted weaknesses (TOML)."),
    experiment: str = typer.Option("demo", "--experiment", help="Experiment name in the graph."),
) -> None:
    """Run ACE's main job: replay BFCL, simulate a weak agent, mine its weak compositions in Neo4j.

    Needs a reachable Neo4j (`ace db start`, or NEO4J_URI for an external one).
    """
    from rich.console import Console

    from ace_graph.config import ace_home, neo4j_settings
    from ace_graph.db import apply_schema, get_driver
    from ace_graph.store import GraphStore

    console = Console()
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        applied = apply_schema(driver, settings.database)
        console.print(
            f"[bold]1. Neo4j[/] {driver.get_server_info().agent} at {settings.uri}: schema applied ({len(applied)} statements)"
        )
        failed = _replay(console, [c.strip() for c in categories.split(",") if c.strip()])
        store = GraphStore(driver, settings.database)
        run_dir = ace_home() / "runs" / experiment
        run_dir.mkdir(parents=True, exist_ok=True)
        scope = _simulate_and_ingest(console, store, run_dir, experiment, rollouts, seed, weakness)
        _show_weaknesses(console, store, scope, weakness)
    finally:
        driver.close()
    if failed:
        raise typer.Exit(1)


def _replay(console, categories: list[str]) -> int:
    from rich.table import Table

    from synth import bfcl
    from synth.verifier import ground_truth_rollout, replay_oracle, verify

    table = Table(title="2. BFCL multi-turn: ground truth replayed through ACE's executor and verifier")
    for col in ("category", "tasks", "passed", "failed", "errors", "tasks/s"):
        table.add_column(col, justify="right" if col != "category" else "left")
    total_failed = 0
    for category in categories:
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
    return total_failed


def _simulate_and_ingest(console, store, run_dir: Path, experiment: str, n: int, seed: int, weakness: Path) -> str:
    from ace_graph.ingest import ingest_file
    from synth import bfcl
    from synth.sim import load_weakness, simulate

    tasks = bfcl.load_tasks("all")
    spec = load_weakness(weakness)
    path = run_dir / f"rollouts-round-0-seed{seed}-n{n}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".partial")
        with open(tmp, "w") as f:
            for row in simulate(tasks, n, spec, seed):
                f.write(json.dumps(row) + "\n")
        tmp.rename(path)
    report = ingest_file(store, path, {t.id: t for t in tasks}, experiment, "sim", "round-0", batch_size=1000)
    d = report.to_dict()
    console.print(
        f"[bold]3. Skill graph[/]: {n} simulated rollouts ({weakness.name}) → scope {d['scope']}: "
        f"{d['created']} stored now, {d['already_stored']} already stored, {d['steps']} steps, {d['seconds']} s"
    )
    return report.scope


def _show_weaknesses(console, store, scope: str, weakness: Path) -> None:
    import tomllib

    from rich.table import Table

    planted = tomllib.loads(weakness.read_text())
    planted_pairs = {(c["from"], c["to"]) for c in planted.get("composition", [])}
    weak_tools = {t["name"] for t in planted.get("tool", [])}
    rows = store.run("weak-compositions", scope=scope, level="tool", min_support=20, min_lift=0.05, limit=15)
    table = Table(title="Weakest tool compositions found (b fails more often right after a than elsewhere)")
    for col in ("from → to", "n", "composition success", "to elsewhere", "fragility (95% low)", "planted?"):
        table.add_column(col)
    for r in rows:
        pair = (r["from"], r["to"])
        table.add_row(
            f"{r['from']} → {r['to']}", str(r["n"]), f"{r['composition_success']:.2f}",
            f"{r['target_success_elsewhere']:.2f}", f"{r['fragility']:.2f} ({r['fragility_low']:.2f})",
            "yes" if pair in planted_pairs else "no",
        )
    console.print(table)
    found = {(r["from"], r["to"]) for r in rows}
    console.print(
        f"Planted compositions recovered: {len(found & planted_pairs)}/{len(planted_pairs)}; "
        f"tool-wide weaknesses ({', '.join(sorted(weak_tools))}) reported as compositions: "
        f"{sum(1 for _, b in found if b in weak_tools)}"
    )
    skill_rows = store.run("frontier", scope=scope, level="skill", min_support=20, min_lift=0.05, min_prereq=0.6, limit=8)
    table = Table(title="Frontier (skill level): strong prerequisites, weak composition")
    for col in ("from → to", "n", "from success", "composition success", "fragility low", "seed tasks"):
        table.add_column(col)
    for r in skill_rows:
        table.add_row(
            f"{r['from']} → {r['to']}", str(r["n"]), f"{r['from_success']:.2f}", f"{r['composition_success']:.2f}",
            f"{r['fragility_low']:.2f}", str(len(r["seed_tasks"])),
        )
    console.print(table)
