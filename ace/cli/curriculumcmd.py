"""``ace curriculum status|step``: the dependency-aware curriculum, stored in the skill graph."""

from __future__ import annotations

import json

import typer

from ace.cli import app
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError
from ace_graph.store import GraphStore
from train.curriculum.core import CurriculumConfig, step
from train.curriculum.store import load_state, observations_from_graph, save, scopes_read

curriculum_app = typer.Typer(
    name="curriculum",
    help="The dependency-aware curriculum: unit states per experiment, advanced one round per step.",
    no_args_is_help=True,
)
app.add_typer(curriculum_app, name="curriculum")


def _with_store(fn):

    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        return fn(GraphStore(driver, settings.database))
    finally:
        driver.close()


def _ema(value) -> str:
    return "" if value is None else f"{value:.3f}"


@curriculum_app.command("status")
def status(
    experiment: str = typer.Option(..., "--experiment", "-e", help="Experiment name."),
    as_json: bool = typer.Option(False, "--json", help="Print the units as JSON."),
) -> None:
    """Show every unit of an experiment's curriculum: kind, key, state, ema, rounds in state, last reason."""
    from rich.console import Console
    from rich.table import Table

    rows = _with_store(lambda store: store.run("curriculum-status", experiment=experiment))
    units = [
        {
            "kind": r["kind"], "key": r["key"], "state": r["state"], "ema": r["ema"],
            "rounds_in_state": r["rounds_in_state"], "last_round": r["last_round"],
            "last_reason": r["last_reason"] or "",
        }
        for r in rows
        if r["key"] is not None
    ]
    current = rows[0]["round"] if rows else 0
    if as_json:
        print(json.dumps({"experiment": experiment, "round": current,
                          "last_scope": rows[0]["last_scope"] if rows else None, "units": units}))
        return
    if not rows:
        Console(stderr=True).print(
            f"No curriculum stored for experiment {experiment!r}; "
            f"start one with `ace curriculum step -e {experiment} --scope E/P/C`.", highlight=False)
        raise typer.Exit(1)
    table = Table(title=f"curriculum {experiment}: round {current}")
    for col in ("kind", "key", "state", "ema", "rounds", "last reason"):
        table.add_column(col)
    for u in units:
        table.add_row(u["kind"], u["key"], u["state"], _ema(u["ema"]), str(u["rounds_in_state"]), u["last_reason"])
    Console().print(table)


@curriculum_app.command("step")
def step_cmd(
    experiment: str = typer.Option(..., "--experiment", "-e", help="Experiment name."),
    scope: str = typer.Option(..., "--scope", help="Scope key experiment/policy/checkpoint whose measurements feed this round."),
    level: str = typer.Option("skill", "--level", help="Unit granularity: skill or tool."),
    theta: float = typer.Option(0.7, "--theta", help="Unlock/mastery threshold on smoothed success."),
    phi: float = typer.Option(0.4, "--phi", help="Fallback threshold on smoothed success."),
    momentum: float = typer.Option(0.5, "--momentum", help="EMA weight of the new observation (1 = no smoothing)."),
    min_rounds: int = typer.Option(2, "--min-rounds", help="Rounds a unit stays in a state before it may leave it."),
    min_attempts: int = typer.Option(1, "--min-attempts", help="Ignore units observed fewer times than this."),
    allow_repeat: bool = typer.Option(False, "--allow-repeat", help="Allow feeding a scope that an earlier round already read."),
    as_json: bool = typer.Option(False, "--json", help="Print the decisions as JSON."),
) -> None:
    """Advance the experiment's curriculum one round from a scope's measurements and store the decisions."""
    from rich.console import Console
    from rich.table import Table


    config = CurriculumConfig(theta=theta, phi=phi, momentum=momentum, min_rounds=min_rounds,
                              min_attempts=min_attempts, level=level)

    def work(store):
        if scope in scopes_read(store, experiment) and not allow_repeat:
            raise ConfigError(
                f"a round of {experiment!r} already read scope {scope!r}; feeding it again would "
                "count the same evidence twice in the moving average. Pass the next checkpoint's scope, "
                "or --allow-repeat."
            )
        state = load_state(store, experiment)
        observations = observations_from_graph(store, scope, level)
        new_state, decisions = step(state, observations, config)
        save(store, experiment, new_state, decisions, config, scope=scope, previous_round=state.round)
        return new_state, decisions

    new_state, decisions = _with_store(work)
    counts = {s: len(new_state.in_state(s)) for s in ("locked", "active", "mastered")}
    if as_json:
        print(json.dumps({"experiment": experiment, "round": new_state.round, "scope": scope,
                          "decisions": [d.to_dict() for d in decisions], "states": counts}))
        return
    table = Table(title=f"curriculum {experiment}: round {new_state.round} from {scope} "
                        f"({counts['active']} active, {counts['mastered']} mastered, {counts['locked']} locked)")
    for col in ("kind", "unit", "from", "to", "reason"):
        table.add_column(col)
    for d in decisions:
        table.add_row(d.kind, d.unit, d.from_state, d.to_state, d.reason)
    Console().print(table)
