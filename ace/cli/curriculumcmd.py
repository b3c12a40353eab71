"""``ace curriculum status|step``: the dependency-aware curriculum, stored in the skill graph."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import typer

from ace.cli import app
from ace.cli.graphcmd import with_store
from ace.cli.options import config_options, experiment_option, json_option, scope_option
from ace.cli.render import console, esc, table
from ace.stages import curriculum_round
from ace_graph.errors import ConfigError
from train.curriculum.core import CurriculumConfig

curriculum_app = typer.Typer(
    name="curriculum",
    help="The dependency-aware curriculum: unit states per experiment, advanced one round per step.",
    no_args_is_help=True,
)
app.add_typer(curriculum_app, name="curriculum")


@dataclass(frozen=True)
class StepRun:
    """What `ace curriculum step` feeds to :func:`ace.stages.curriculum_round` besides its config, and prints."""

    allow_repeat: bool = field(default=False, metadata={
        "help": "Allow feeding a scope that an earlier round already read.", "negatable": False})
    details: bool = field(default=False, metadata={
        "help": "Print every decision, not just the changes.", "negatable": False})


def _ema(value) -> str:
    return "" if value is None else f"{value:.3f}"


@curriculum_app.command("status")
def status(
    experiment: str = experiment_option(),
    as_json: bool = json_option("Print the units as JSON."),
) -> None:
    """Show every unit of an experiment's curriculum: kind, key, state, ema, rounds in state, last reason.

    An experiment without a stored curriculum is an error (exit 1), with or without --json.
    """
    rows = with_store(lambda store: store.run("curriculum-status", experiment=experiment))
    if not rows:
        raise ConfigError(f"no curriculum stored for experiment {experiment!r}; "
                          f"start one with `ace curriculum step -e {experiment} --scope {experiment}/P/C`")
    units = [
        {
            "kind": r["kind"], "key": r["key"], "state": r["state"], "ema": r["ema"],
            "rounds_in_state": r["rounds_in_state"], "last_round": r["last_round"],
            "last_reason": r["last_reason"] or "",
        }
        for r in rows
        if r["key"] is not None
    ]
    current = rows[0]["round"]
    if as_json:
        print(json.dumps({"experiment": experiment, "round": current,
                          "last_scope": rows[0]["last_scope"], "units": units}))
        return
    console().print(table(
        f"curriculum {experiment}: round {current}", ("kind", "key", "state", "ema", "rounds", "last reason"),
        [(u["kind"], u["key"], u["state"], _ema(u["ema"]), u["rounds_in_state"], u["last_reason"]) for u in units],
    ))


@curriculum_app.command("step")
@config_options(CurriculumConfig, exclude=("depth_strata", "replay_share", "max_drift"))
@config_options(StepRun, param="run", in_place=True)
def step_cmd(
    experiment: str = experiment_option(),
    scope: str = scope_option(..., "Scope E/P/C of this experiment whose measurements feed this round."),
    run: StepRun = None,  # type: ignore[assignment]  # --allow-repeat, --details
    as_json: bool = json_option("Print the round with every decision as JSON."),
    config: CurriculumConfig = None,  # type: ignore[assignment]  # built from the flags below
) -> None:
    """Advance the experiment's curriculum one round from a scope's measurements and store the decisions.

    The scope must exist and belong to the experiment.  Prints a summary (how
    many units moved between states, and the units that changed state); every
    decision with --details or --json.
    """
    report = with_store(lambda store: curriculum_round(store, experiment, scope, config, run.allow_repeat))
    if as_json:
        print(json.dumps(report.to_dict()))
        return
    counts = report.states
    out = console()
    out.print(esc(f"curriculum {experiment}: round {report.round} from {scope}: {len(report.decisions)} decisions; "
                  f"{counts['active']} active, {counts['mastered']} mastered, {counts['locked']} locked"))
    if report.changes():
        out.print(esc("  " + ", ".join(f"{k} {v}" for k, v in report.changes().items())))
    details = run.details
    shown = report.decisions if details else [d for d in report.decisions if d.from_state != d.to_state]
    if shown:
        out.print(table(
            f"{'decisions' if details else 'units that changed state'} ({len(shown)})",
            ("kind", "unit", "from", "to", "reason"),
            [(d.kind, d.unit, d.from_state, d.to_state, d.reason) for d in shown[: None if details else 30]],
        ))
        if not details and len(shown) > 30:
            out.print(f"  ... {len(shown) - 30} more; all decisions with --details or --json")
