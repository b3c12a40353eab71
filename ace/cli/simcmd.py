"""``ace sim``: rollouts from a simulated agent with planted weaknesses."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app, progress_bar
from ace_env.rollouts import load_task_set
from ace_env.sim import load_weakness, simulate
from ace_graph.errors import ConfigError

sim_app = typer.Typer(
    help=(
        "A simulated agent with planted weaknesses.\n\n"
        "It walks each task's ground truth call by call and slips where a weakness "
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


@sim_app.command("rollouts")
def rollouts_cmd(
    tasks: str = typer.Option(..., "--tasks", help="bfcl:CATEGORY or a task JSONL file."),
    n: int = typer.Option(..., "--n", min=0, help="Number of rollouts to write."),
    out: Path = typer.Option(..., "--out", help="Rollout JSONL to write (replaced atomically)."),
    weakness: Optional[Path] = typer.Option(
        None, "--weakness", help="Weakness file (TOML). Without one: every call slips with probability 0.02."
    ),
    seed: int = typer.Option(0, "--seed", help="Same seed, same file (byte for byte)."),
) -> None:
    """Write N simulated rollouts {rollout_id, task_id, turns, meta} to --out.

    Rollout k draws its task and its slips from its own generator
    (seed * 1000003 + k), so any rollout can be regenerated alone.  The file is
    written to a temporary file next to --out and renamed at the end.
    """

    spec = load_weakness(weakness)
    task_list = list(load_task_set(tasks).values())
    if not task_list:
        raise ConfigError(f"task set {tasks!r} is empty")
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is a directory; give a file name such as rollouts.jsonl")
    if not out.parent.exists():
        raise ConfigError(f"the folder of --out ({str(out.parent)!r}) does not exist")
    slips: Counter[str] = Counter()
    failing = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f, progress_bar() as progress:
            bar = progress.add_task(f"simulating {tasks}", total=n)
            for r in simulate(task_list, n, spec, seed):
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                planted = r["meta"]["slips"]
                failing += bool(planted)
                slips.update(s["kind"] for s in planted)
                progress.advance(bar)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, 0o666 & ~umask)
        os.replace(tmp_name, out)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    kinds = ", ".join(f"{k} {c}" for k, c in sorted(slips.items())) or "none"
    print(
        f"wrote {n} rollouts to {out} ({len(task_list)} tasks, seed {seed}); "
        f"{failing} with planted slips ({kinds})"
    )
