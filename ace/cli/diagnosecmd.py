"""``ace diagnose``: tell weak compositions from weak tools, probing where the data cannot tell."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ace.cli import app
from ace.cli.options import config_options, json_option, scope_option
from ace_env.environments import environment_of
from ace_env.fields import SEED_MAX
from ace_env.tasksets import load_task_set
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError
from ace_graph.scopes import require_scope
from ace_graph.store import GraphStore
from synth.diagnose import diagnose, sim_policy


def _policy(spec: Optional[str], scope_policy: str | None, tasks: list[Any], seed: int, start: int):
    """A rollout policy from --policy (sim or sim:FILE.toml), else from the scope's policy name; the weakness
    file is read by the tasks' environment (plain `sim`: its demo weaknesses, BFCL only)."""
    env = environment_of(tasks)
    if spec is None and scope_policy != "sim":
        raise ConfigError(
            f"the scope's policy {scope_policy!r} cannot be run from here yet; pass --policy sim:WEAKNESS.toml "
            "(the simulated agent) until the real-model policies (train/policies) are wired in")
    kind, _, arg = (spec or "sim").partition(":")
    if kind != "sim":
        raise ConfigError(f"--policy {spec!r}: unknown policy; use sim or sim:WEAKNESS.toml")
    path = Path(arg) if arg else env.demo_weakness
    if path is None:
        raise ConfigError(f"{env.title} tasks have no default weakness file: pass --policy sim:WEAKNESS.toml")
    described = f"sim:{path.name} (the scope's policy)" if spec is None else f"sim:{path}"
    return sim_policy(env.load_weakness(path, tasks), seed, start), described


@dataclass(frozen=True)
class DiagnoseConfig:
    """What `ace diagnose` may spend on probes, who rolls them out, from which tasks, with which seed."""

    probe_budget: int = field(default=200, metadata={
        "help": "Probe rollouts to spend at most, over the ambiguous edges (and compositions short of min_support).",
        "min": 0, "max": 100_000})
    rounds: int = field(default=2, metadata={
        "help": "Probe rounds: each spends its share of what is left on the edges still ambiguous (those cheapest "
                "to decide first) and re-estimates; stops early when nothing is ambiguous.", "min": 1, "max": 100})
    policy: Optional[str] = field(default=None, metadata={
        "help": "Who rolls the probes out: sim (the simulated agent, demo weaknesses) or sim:WEAKNESS.toml. "
                "Default: the scope's own policy, when it is the simulated agent."})
    tasks: str = field(default="bfcl:all", metadata={
        "help": "Seed tasks for the probes; tau2:airline or tau2:retail for a τ² scope (no probes are built for "
                "τ² edges yet)."})
    seed: int = field(default=0, metadata={"help": "Seed of probe synthesis and of the simulated rollouts.",
                                           "min": 0, "max": SEED_MAX})


@app.command("diagnose")
@config_options(DiagnoseConfig, names={"probe_budget": ("--probe-budget", "-n"), "policy": ("--policy", "-p")},
                in_place=True)
def diagnose_cmd(
    scope: str = scope_option(..., "Scope key (experiment/policy/checkpoint) to diagnose."),
    config: DiagnoseConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print the report as JSON."),
) -> None:
    """Estimate which weak edges of a scope are weak compositions and which are weak tools; probe the rest.

    The estimator (ace_graph.estimate) fits every step's failure with separate
    effects for its tool, the pair it completes and its task.  Edges whose
    evidence cannot separate composition from tool are `ambiguous`; for those
    ACE synthesizes probe tasks (b reached without a; a then b with the link
    kept), rolls them out with the policy, ingests them into the probe scope
    SCOPE~probe linked to SCOPE, and estimates again.  Afterwards
    `ace query weak-compositions -P scope=SCOPE` reports the new verdicts (its
    `view` column lists the probe scope).
    """
    from rich.console import Console
    from rich.table import Table

    probe_budget, rounds, policy, tasks, seed = (config.probe_budget, config.rounds, config.policy, config.tasks,
                                                 config.seed)
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        store = GraphStore(driver, settings.database)
        require_scope(store, scope)  # unknown, being deleted or incomplete: refused before any work
        view = store.run("scope-view", scope=scope)
        done = sum(int(r["probe_rollouts"] or 0) for r in view)  # a rerun draws new rollouts, not the same ones
        task_set = load_task_set(tasks, any_environment=True)
        run, described = _policy(policy, view[0]["policy"], list(task_set.values()), seed, done)
        report = diagnose(store, scope, task_set, run, probe_budget, seed=seed, rounds=rounds)
    finally:
        driver.close()
    if as_json:
        print(json.dumps(dict(report.to_dict(), policy=described)))
        return
    console = Console()
    d = report.to_dict()
    console.print(f"{scope}: {len(report.edges)} edge(s) to probe (ambiguous, or a composition short of "
                  f"min_support); {report.rollouts} probe rollouts by {described}"
                  + (f" into {report.probe_scope}" if report.probe_scope else ""), highlight=False)
    if report.edges:
        table = Table(title="edges to probe, before and after probing")
        for col in ("from", "to", "before", "after", "probe tasks (without/with)", "probe rollouts", "missing before"):
            table.add_column(col)
        for e in d["edges"]:
            table.add_row(e["from"], e["to"], e["before"], e["after"],
                          f"{e['probe_tasks']['without']}/{e['probe_tasks']['with']}",
                          f"{e['probe_rollouts']['without']}/{e['probe_rollouts']['with']}", e["missing"])
        console.print(table)
    console.print(f"verdicts now (view {', '.join(d['view'])}): {d['verdicts_after']}", highlight=False)
    if report.note:
        console.print(f"note: {report.note}", highlight=False)
