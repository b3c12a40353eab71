"""``ace demo``: the main job end to end on whatever Neo4j ACE is configured for.

1. check Neo4j and apply the schema;
2. replay and verify every scored BFCL multi-turn task;
3. simulate an agent with planted weaknesses (``ace_env/demo_weakness.toml``),
   ingest its rollouts into the skill graph and print the weakest
   compositions and the frontier the graph found;
4. synthesize verified adversarial tasks aimed at that frontier, export them
   (BFCL, TRL, OpenAI SFT formats) and advance the curriculum one round;
5. roll the same simulated policy out on the curriculum's mix (synthesized
   tasks plus replayed seeds), ingest it as round 1 and show how the frontier
   moved.  No training happens here: the GRPO trainer is a later stage, so
   what moves is the evidence, concentrated by the targeted tasks.

Every stage is idempotent: a second run finds the rollouts already stored.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from ace.cli import app
from ace_env import bfcl
from ace_env.sim import DEMO_WEAKNESS, load_weakness, simulate
from ace_env.verifier import ground_truth_rollout, replay_oracle, verify
from ace_graph.config import ace_home, neo4j_settings
from ace_graph.db import apply_schema, get_driver
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore
from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize, write_tasks
from train.curriculum.core import CurriculumConfig, drift, mix, step
from train.curriculum.store import load_state, observations_from_graph, save, scopes_read
from train.export import export


@app.command("demo")
def demo(
    categories: str = typer.Option(
        "base,long_context,miss_func,miss_param", "--categories", help="Comma-separated BFCL categories to replay."
    ),
    rollouts: int = typer.Option(4000, "--rollouts", min=100, help="Simulated rollouts for the skill graph."),
    seed: int = typer.Option(1, "--seed", help="Seed of the simulated agent."),
    weakness: Path = typer.Option(DEMO_WEAKNESS, "--weakness", help="Planted weaknesses (TOML)."),
    experiment: str = typer.Option("demo", "--experiment", help="Experiment name in the graph."),
    synth_n: int = typer.Option(120, "--synth", min=1, help="Adversarial tasks to synthesize from the frontier."),
) -> None:
    """Run ACE's main job: replay BFCL, simulate a weak agent, mine its weak compositions in Neo4j.

    Needs a reachable Neo4j (`ace db start`, or NEO4J_URI for an external one).
    """
    from rich.console import Console


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
        synthesized = _synthesize(console, store, run_dir, experiment, scope, seed, weakness, synth_n)
        _curriculum_step(console, store, experiment, scope)
        scope1 = _round_one(console, store, run_dir, experiment, synthesized, rollouts, seed, weakness)
        _curriculum_step(console, store, experiment, scope1)
        _frontier_moved(console, store, scope, scope1)
    finally:
        driver.close()
    if failed:
        raise typer.Exit(1)


def _replay(console, categories: list[str]) -> int:
    from rich.table import Table


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
    for col in ("from → to", "n", "composition success", "to elsewhere", "fragility (95% low)", "verdict", "planted?"):
        table.add_column(col)
    for r in rows:
        pair = (r["from"], r["to"])
        table.add_row(
            f"{r['from']} → {r['to']}", str(r["n"]), f"{r['composition_success']:.2f}",
            f"{r['target_success_elsewhere']:.2f}", f"{r['fragility']:.2f} ({r['fragility_low']:.2f})",
            r.get("verdict", "composition") + (f" ({r['missing']})" if r.get("missing") else ""),
            "yes" if pair in planted_pairs else "no",
        )
    console.print(table)
    found = {(r["from"], r["to"]) for r in rows if r.get("verdict", "composition") == "composition"}
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


def _synthesize(console, store, run_dir: Path, experiment: str, scope: str, seed: int, weakness: Path, n: int):
    from rich.table import Table


    seeds = {t.id: t for t in bfcl.load_tasks("all")}
    frontier = store.run("frontier", scope=scope, level="tool", min_support=20, min_lift=0.05, min_prereq=0.6, limit=50)
    frontier = [r for r in frontier if r.get("verdict", "composition") == "composition"]  # ambiguous: probe first
    by_target = seeds_by_target(frontier, seeds)
    config = SynthConfig(n=n, rounds=2, plans=8, rollouts_per_task=4, seed=seed)
    start = time.perf_counter()
    result = synthesize(frontier, seeds, by_target, sim_policy(load_weakness(weakness)), config)
    seconds = time.perf_counter() - start
    path = run_dir / f"synth-round-1-seed{seed}-n{n}.jsonl"
    write_tasks(path, result.tasks)
    store.upsert_tasks(result.tasks)
    store.upsert_plans(experiment, result.plans)
    store.upsert_lineage(experiment, result.lineage)
    table = Table(title=f"4. Synthesized from the frontier of {scope}: {len(result.tasks)} verified tasks "
                        f"from {result.attempted} attempts in {seconds:.1f} s")
    for col in ("target", "strategy", "tasks", "learnable (policy sometimes passes)", "mean pass rate"):
        table.add_column(col)
    groups: dict = {}
    for t in result.tasks:
        groups.setdefault((t.provenance["target_edge"], t.provenance["strategy"]), []).append(t)
    for (target, strategy), ts in sorted(groups.items()):
        table.add_row(target.replace(">", " → "), strategy, str(len(ts)),
                      str(sum(t.provenance["learnable"] for t in ts)),
                      f"{sum(t.provenance['pass_rate'] for t in ts) / len(ts):.2f}")
    console.print(table)
    retired = [r for r in result.reflections if r["note"].startswith(("retire", "weaken", "soften", "strengthen"))]
    console.print(f"Reflection: {len(result.reflections)} plan reviews, {len(retired)} plans adjusted or retired.")
    for fmt in ("bfcl", "trl", "openai-sft"):
        report = export(result.tasks, fmt, run_dir / "export" / fmt, force=True)
        console.print(f"  exported {fmt}: {report.to_dict().get('written', report.to_dict())} → {run_dir / 'export' / fmt}")
    console.print(f"  tasks: {path}")
    return result.tasks


def _curriculum_step(console, store, experiment: str, scope: str) -> None:

    if scope in scopes_read(store, experiment):
        console.print(f"Curriculum of {experiment!r} already advanced from {scope}; not counting it twice.")
        return
    config = CurriculumConfig(min_rounds=1)
    state = load_state(store, experiment)
    new_state, decisions = step(state, observations_from_graph(store, scope, config.level), config)
    save(store, experiment, new_state, decisions, config, scope=scope, previous_round=state.round)
    counts = {s: len(new_state.in_state(s)) for s in ("locked", "active", "mastered")}
    console.print(f"Curriculum round {new_state.round} from {scope}: {len(decisions)} decisions; "
                  f"{counts['active']} active, {counts['mastered']} mastered, {counts['locked']} locked "
                  f"(`ace curriculum status -e {experiment}`)")


def _round_one(console, store, run_dir: Path, experiment: str, synthesized, n: int, seed: int, weakness: Path) -> str:
    import random


    seeds = bfcl.load_tasks("all")
    state = load_state(store, experiment)
    chosen = mix(state, list(synthesized) + seeds, len(synthesized) * 2, random.Random(seed))
    by_id = {t.id: t for t in list(synthesized) + seeds}
    tasks = [by_id[i] for i in chosen.task_ids if i in by_id]
    report = drift(tasks, seeds)
    path = run_dir / f"rollouts-round-1-seed{seed}-n{n}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".partial")
        with open(tmp, "w") as f:
            for row in simulate(tasks, n, load_weakness(weakness), seed + 1, prefix="sim-r1"):
                f.write(json.dumps(row) + "\n")
        tmp.rename(path)
    result = ingest_file(store, path, by_id, experiment, "sim", "round-1", batch_size=1000)
    d = result.to_dict()
    console.print(
        f"[bold]5. Round 1[/]: curriculum mix of {len(tasks)} tasks ({len(chosen.focus)} focus, {len(chosen.replay)} replay; "
        f"tool drift from the seeds {report.tvd:.2f}, cap {report.max_drift}); {n} rollouts of the same simulated "
        f"policy → {d['scope']}: {d['created']} stored now, {d['already_stored']} already stored"
    )
    return result.scope


def _frontier_moved(console, store, scope0: str, scope1: str) -> None:
    from rich.table import Table

    def frontier(scope):
        rows = store.run("frontier", scope=scope, level="tool", min_support=20, min_lift=0.05, min_prereq=0.6, limit=20)
        return {(r["from"], r["to"]): r for r in rows}

    f0, f1 = frontier(scope0), frontier(scope1)
    table = Table(title="How the tool-level frontier moved from round 0 to round 1")
    for col in ("from → to", "round 0: n / success / fragility low", "round 1: n / success / fragility low"):
        table.add_column(col)

    def cell(r):
        return "—" if r is None else f"{r['n']} / {r['composition_success']:.2f} / {r['fragility_low']:.2f}"

    for pair in sorted(set(f0) | set(f1), key=lambda p: -(f1.get(p) or f0.get(p))["fragility_low"]):
        table.add_row(f"{pair[0]} → {pair[1]}", cell(f0.get(pair)), cell(f1.get(pair)))
    console.print(table)
