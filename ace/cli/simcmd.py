"""``ace sim``: rollouts from a simulated agent with planted weaknesses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app
from ace.cli.options import config_options, force_option, json_option, out_option, signals_interrupt, tasks_option
from ace.cli.render import Progress
from ace.stages import MAX_SIM_ROLLOUTS, simulate_to_file
from ace_env.environments import environment_of
from ace_env.fields import SEED_MAX
from ace_env.tasksets import load_task_set
from ace_env.workspace import check_out

sim_app = typer.Typer(
    help=(
        "A simulated agent with planted weaknesses.\n\n"
        "It walks each task's ground truth call by call (for τ² tasks, tau2:airline or tau2:retail: the "
        "gold agent actions, and the file names τ² tools) and slips where a weakness "
        "file (TOML) says: a default slip rate, weak tools (\\[\\[tool]]) and weak "
        "compositions (\\[\\[composition]]: `to` fails more often right after `from`). "
        "Every planted slip is recorded in the rollout's meta, so mining can be "
        "checked against the truth.  Example weakness file:\n\n"
        "\\[defaults]\n"
        "error = 0.02\n"
        "\\[\\[tool]]\n"
        'name = "grep"\n'
        "error = 0.35\n"
        'kind = "argument"   # argument | wrong_tool | skip | early_stop | malformed\n'
        "\\[\\[composition]]\n"
        'from = "get_zipcode_based_on_city"\n'
        'to = "estimate_distance"\n'
        "error = 0.6"
    ),
    no_args_is_help=True,
)
app.add_typer(sim_app, name="sim")


@dataclass(frozen=True)
class SimConfig:
    """What `ace sim rollouts` simulates: how many rollouts, the weaknesses planted, the seed."""

    n: int = field(metadata={"help": "Number of rollouts to write (the most is about 5 GB).",
                             "min": 0, "max": MAX_SIM_ROLLOUTS})
    weakness: Optional[Path] = field(default=None, metadata={
        "help": "Weakness file (TOML). Without one: every call slips with probability 0.02."})
    seed: int = field(default=0, metadata={"help": "Same seed, same file (byte for byte).", "min": 0,
                                           "max": SEED_MAX})


# --n stands before --out and --force in the help, --weakness and --seed after them: two in-place groups of
# SimConfig's flags (the second's n is a placeholder, replaced by the first's)
@sim_app.command("rollouts")
@config_options(SimConfig, include=["n"], param="count", in_place=True)
@config_options(SimConfig, exclude=["n"], defaults={"n": 0}, in_place=True)
def rollouts_cmd(
    tasks: str = tasks_option(note="Also tau2:airline, tau2:retail or tau2:airline,retail (τ²-bench)."),
    count: SimConfig = None,  # type: ignore[assignment]
    out: Path = out_option(..., "Rollout JSONL to write (atomically: a temp file, then a rename)."),
    force: bool = force_option(),
    config: SimConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print the summary as JSON."),
) -> None:
    """Write N simulated rollouts {rollout_id, task_id, turns, meta} to --out.

    Rollout k draws its task and its slips from its own generator
    (seed * 1000003 + k), so any rollout can be regenerated alone.  The file is
    written to a temporary file next to --out and renamed at the end; a run that
    is stopped (Ctrl-C, SIGTERM, SIGHUP) removes it, and one left by kill -9 is
    removed by the next run to the same --out.
    """
    config = replace(config, n=count.n)
    n, weakness, seed = config.n, config.weakness, config.seed
    check_out(out, force)
    task_list = list(load_task_set(tasks, any_environment=True).values())
    spec = environment_of(task_list).load_weakness(weakness, task_list)
    with signals_interrupt(), Progress(f"simulating {tasks}", n, disable=as_json) as progress:
        report = simulate_to_file(task_list, n, spec, seed, out, on_row=progress.advance)
    if as_json:
        print(json.dumps(report.to_dict()))
        return
    kinds = ", ".join(f"{k} {c}" for k, c in report.slips.items()) or "none"
    print(
        f"wrote {n} rollouts to {out} ({len(task_list)} tasks, seed {seed}); "
        f"{report.with_slips} with planted slips ({kinds})"
    )
