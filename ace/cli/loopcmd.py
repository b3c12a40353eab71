"""``ace loop``: the closed loop, resumable; ``ace loop status``: where it stands."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import typer

from ace.cli import app
from ace.cli.graphcmd import with_store
from ace.cli.options import config_options, experiment_option, json_option
from ace.cli.render import console, esc, table
from ace.loop import STAGES, Loop, LoopConfig, loop_status
from ace_env.workspace import check_name
from ace_graph.errors import ConfigError
from train.policies import DEFAULT_POLICY

loop_app = typer.Typer(
    help="The closed loop: eval (written back) → frontier → synth → curriculum mix → train, per round.",
    invoke_without_command=True,
)
app.add_typer(loop_app, name="loop")


@dataclass(frozen=True)
class LoopStart:
    """The model a loop starts from (kept apart from LoopConfig, whose fields a run folder records)."""

    policy: str = field(default=DEFAULT_POLICY, metadata={"help": "hf:<model> to start from (checkpoint 0)."})


@loop_app.callback()
@config_options(LoopConfig)
@config_options(LoopStart, names={"policy": ("--policy", "-p")}, param="start", in_place=True)
def loop_cmd(
    ctx: typer.Context,
    config: LoopConfig,
    experiment: str = experiment_option(None, "Experiment name (its runs: $ACE_HOME/runs/E)."),
    start: LoopStart = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print the round summaries as JSON."),
) -> None:
    """Run K rounds of the loop (or resume: finished stages are never run again).

    Round k evaluates checkpoint k on held-out tasks and ingests the verdicts as
    scope E/NAME/round-k, pulls the frontier from it, synthesizes tasks aimed there
    (the one synthesis pipeline, on the tasks' environment's schedule; learnability
    measured with this policy where the environment lets a model roll its tasks out),
    advances the curriculum and takes its mix, then trains (SFT warm start in round 0
    with --sft-warm-start; GRPO, on the gold-prefix steps of dialogue environments
    such as τ²) into checkpoint k+1.  Artifacts: $ACE_HOME/runs/E/round-k/.  `ace loop status -e E`
    shows the rounds.
    """
    if ctx.invoked_subcommand is not None:
        return
    policy = start.policy
    if not experiment:
        raise ConfigError("ace loop needs --experiment E (or a subcommand: ace loop status -e E)")
    check_name(experiment, "--experiment")  # its runs go to $ACE_HOME/runs/E
    err = console(stderr=True)

    def run(store):
        loop = Loop(store, experiment, policy, config, say=lambda m: err.print(esc(m)))
        return loop.run()

    summaries = with_store(run)
    if as_json:
        print(json.dumps(summaries, default=str))
        return
    _print_rounds(summaries)


def _print_rounds(rounds) -> None:
    out = console()
    def shown(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    # exact match and NLL: gold-prefix evaluations (every oracle step, the oracle's prefix in context)
    out.print(table("rounds", ("round", "stages done", "scope", "pass rate", "exact match", "mean NLL",
                               "frontier (top 5)"), [
        (r["round"], ",".join(s for s in STAGES if r["stages"][s]) or "-", r["scope"] or "-",
         shown(r["pass_rate"]), shown(r.get("exact_match")), shown(r.get("mean_nll")),
         ", ".join(r["frontier"]) or "-")
        for r in rounds]))


@loop_app.command("status")
def status_cmd(
    experiment: str = experiment_option(..., "Experiment name."),
    as_json: bool = json_option("Print the status as JSON."),
) -> None:
    """The loop's rounds (stages done, scope, pass rate, frontier) and per-skill success per checkpoint."""
    status = with_store(lambda store: loop_status(store, experiment))
    if as_json:
        print(json.dumps(status, default=str))
        return
    _print_rounds(status["rounds"])
    by_key: dict[str, dict[int, float]] = {}
    for row in status["skill_history"]:
        by_key.setdefault(row["key"], {})[row["round"]] = row["success_rate"]
    rounds = sorted({r for v in by_key.values() for r in v})
    console().print(table(f"per-skill success per checkpoint ({status['policy']})", ["skill", *map(str, rounds)], [
        [k, *(f"{v[r]:.2f}" if r in v else "-" for r in rounds)] for k, v in sorted(by_key.items())]))
