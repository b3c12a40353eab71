"""``ace synth``: adversarial tasks aimed at the frontier; ``ace synth check``: re-verify them."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ace.cli import app, progress_bar
from ace_env.rollouts import load_task_set
from ace_env.sim import load_weakness
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError
from ace_graph.store import GraphStore
from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize, write_tasks
from synth.rewriter import Rewriter
from synth.strategies import STRATEGIES
from synth.taskcheck import check_task

synth_app = typer.Typer(
    help=(
        "Synthesize verified adversarial tasks aimed at the weak compositions of the skill graph's frontier.\n\n"
        "Run `ace synth --experiment E --n N --seed S --out FILE.jsonl` to synthesize, "
        "`ace synth check FILE.jsonl` to re-run task verification."
    ),
    invoke_without_command=True,
)
app.add_typer(synth_app, name="synth")


@synth_app.callback()
def synth(
    ctx: typer.Context,
    experiment: str = typer.Option(None, "--experiment", "-e", help="Experiment whose frontier to attack."),
    n: int = typer.Option(100, "--n", min=1, help="Valid tasks to emit."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed gives the same tasks."),
    strategy: list[str] = typer.Option(
        [], "--strategy", help="Strategies to use (repeatable): ambiguity, distractor, cascade, depth, random (the untargeted baseline). Default: the four targeted ones."
    ),
    plans: int = typer.Option(8, "--plans", min=1, help="Plans per round (distinct target/strategy/style)."),
    rounds: int = typer.Option(2, "--rounds", min=1, help="Rounds of synthesis and reflection."),
    out: Path = typer.Option(None, "--out", help="Where to write the tasks (JSONL)."),
    scope: str = typer.Option(None, "--scope", help="Scope to read the frontier from (default: the experiment's newest)."),
    weakness: Path = typer.Option(None, "--weakness", help="Planted weaknesses of the simulated policy used for trajectory rollouts."),
    seeds: str = typer.Option("bfcl:all", "--seeds", help="Seed tasks: bfcl:CATEGORY or a task JSONL file."),
    min_support: int = typer.Option(20, "--min-support", help="Frontier: minimum support of an edge."),
    rollouts_per_task: int = typer.Option(4, "--rollouts-per-task", min=1, help="Trajectory rollouts per valid task."),
    rewriter_url: str = typer.Option(
        None, "--rewriter-url", help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1) to paraphrase user turns; off by default."
    ),
    rewriter_model: str = typer.Option("default", "--rewriter-model", help="Model name sent to the rewriter."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Pull the frontier from Neo4j, plan, synthesize, verify, roll out, reflect; write the valid tasks."""
    if ctx.invoked_subcommand is not None:
        return

    if not experiment or out is None:
        raise ConfigError("`ace synth` needs --experiment and --out (or use `ace synth check FILE`).")
    from rich.console import Console


    config = SynthConfig(n=n, rounds=rounds, plans=plans, rollouts_per_task=rollouts_per_task,
                         strategies=tuple(strategy) or SynthConfig().strategies, seed=seed)
    if rewriter_url:
        import os


        config.rewriter = Rewriter(rewriter_url, rewriter_model, api_key=os.environ.get("OPENAI_API_KEY"))
    _check_strategies(config.strategies)
    seed_tasks = load_task_set(seeds)
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        store = GraphStore(driver, settings.database)
        scope = scope or _newest_scope(store, experiment)
        frontier = store.run("frontier", scope=scope, level="tool", min_support=min_support, min_lift=0.05,
                             min_prereq=0.6, limit=50)
        # `ambiguous` edges (composition or weak tool: the data cannot tell) are probed by
        # `ace diagnose`, not trained on
        frontier = [r for r in frontier if r.get("verdict", "composition") == "composition"]
        if not frontier:
            raise ConfigError(
                f"The frontier of scope {scope!r} is empty: no composition is significantly weaker than its parts. "
                "Ingest more rollouts, or lower --min-support."
            )
        by_target = seeds_by_target(frontier, seed_tasks)
        with progress_bar(disable=as_json) as progress:
            bar = progress.add_task("synthesizing", total=config.n)
            result = synthesize(frontier, seed_tasks, by_target, sim_policy(load_weakness(weakness)), config,
                                progress=lambda k: progress.advance(bar, k))
        write_tasks(out, result.tasks)
        store.upsert_tasks(result.tasks)
        store.upsert_plans(experiment, result.plans)
        store.upsert_lineage(experiment, result.lineage)
    finally:
        driver.close()
    summary = {"scope": scope, "out": str(out), **result.summary()}
    if config.rewriter is not None:
        summary["paraphrases"] = {"accepted": config.rewriter.accepted, "rejected": config.rewriter.rejected}
    if as_json:
        print(json.dumps(summary))
        return
    console = Console()
    console.print(f"Frontier of {scope}: {len(frontier)} edges; {summary['plans']} plans "
                  f"({summary['retired']} retired by reflection)")
    console.print(f"Wrote {summary['tasks']} verified tasks to {out} from {summary['attempted']} attempts")
    for key in ("by_strategy", "by_target", "rejections"):
        console.print(f"  {key}: {summary[key]}")


def _check_strategies(names) -> None:

    unknown = [s for s in names if s not in STRATEGIES]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r}; known: {', '.join(sorted(STRATEGIES))}")


def _newest_scope(store, experiment: str) -> str:

    rows = store.run("scopes", experiment=experiment)
    if not rows:
        raise ConfigError(f"No scope of experiment {experiment!r} in the graph: ingest rollouts first (`ace ingest`).")
    return rows[0]["key"]


@synth_app.command("check")
def check(
    file: Path = typer.Argument(..., help="Synthesized tasks (JSONL)."),
    as_json: bool = typer.Option(False, "--json", help="Print {tasks, valid, invalid, reasons} as JSON."),
) -> None:
    """Re-run task verification on every task of a file (execution, verifier, rejection tests, duplicates, text)."""
    from collections import Counter


    tasks = load_task_set(str(file))
    seen: set[str] = set()
    reasons: Counter[str] = Counter()
    valid = 0
    for task in tasks.values():
        result = check_task(task, seen)
        valid += result.valid
        reasons.update(result.reasons)
    summary = {"tasks": len(tasks), "valid": valid, "invalid": len(tasks) - valid, "reasons": dict(reasons)}
    if as_json:
        print(json.dumps(summary))
    else:
        print(f"{summary['tasks']} tasks: {valid} valid, {summary['invalid']} invalid")
        for reason, count in reasons.most_common():
            print(f"  {reason:28s} {count}")
    if summary["invalid"]:
        raise typer.Exit(1)
