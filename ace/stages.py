"""Stages the CLI and the demo share, each written once: simulate-and-write, one curriculum round.

They need several layers at once (the simulated agent, the graph, the
curriculum), so they live in the composition root.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ace_env.environments import DEFAULT, environment_of
from ace_env.jsonable import jsonable
from ace_env.sim import WeaknessSpec
from ace_env.tasks import Task
from ace_env.workspace import check_writable_kind
from ace_graph.errors import ConfigError
from ace_graph.scopes import require_scope
from ace_graph.server import pid_alive
from train.curriculum.core import CurriculumConfig, CurriculumState, Decision, step
from train.curriculum.store import load_state, observations_from_graph, save, scopes_read


def replay(tasks: Sequence[Task], on_task: Callable[[int], None] | None = None) -> dict[str, Any]:
    """The gold replay of one BFCL category's tasks (:func:`ace_env.bfcl.environment.replay_bfcl`): its counts,
    tasks/s and one line per failing task."""
    per_category = DEFAULT.replay(tasks, None, on_task)
    if len(per_category) != 1:
        raise ConfigError(f"replay takes one BFCL category's tasks, not {len(per_category)} categories")
    return next(iter(per_category.values()))


@dataclass
class SimReport:
    """What :func:`simulate_to_file` wrote."""

    out: str
    rollouts: int
    tasks: int
    seed: int
    with_slips: int = 0
    slips: dict[str, int] = field(default_factory=dict)
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


#: The most rollouts one `ace sim rollouts` writes (about 5 GB of JSONL); larger --n is refused.
MAX_SIM_ROLLOUTS = 10_000_000


def remove_stale_temp_files(out: Path) -> list[Path]:
    """Remove the temporary files an earlier writer of ``out`` left when it was killed (kill -9).

    They are named ``.{out.name}.{pid}.XXXX.tmp``; one whose process no longer
    exists is removed, one of a living process (a concurrent writer) is kept.
    """
    removed = []
    for tmp in out.parent.glob(f".{glob.escape(out.name)}.*.tmp"):
        pid = tmp.name[len(out.name) + 2:].partition(".")[0]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        try:
            tmp.unlink()
            removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


def simulate_to_file(
    tasks: Sequence[Task],
    n: int,
    spec: WeaknessSpec,
    seed: int,
    out: str | Path,
    prefix: str = "sim",
    reuse: bool = False,
    on_row: Callable[[int], None] | None = None,
) -> SimReport:
    """Write ``n`` simulated rollouts to ``out`` atomically (a temp file beside it, then a rename).

    With ``reuse`` an existing ``out`` is kept as it is (same name, same
    content: the simulation is deterministic in its seed).  On any failure
    nothing is left behind (SIGTERM and SIGHUP count as failures where the
    command installs :func:`ace.cli.options.signals_interrupt`); a temporary file
    that a kill -9 left is removed by the next run.  ``n`` is at most
    :data:`MAX_SIM_ROLLOUTS`.  The tasks' environment (:mod:`ace_env.environments`) simulates them, in
    ACE's rollout schema.
    """
    out = Path(out)
    tasks = list(tasks)
    if not tasks:
        raise ConfigError("the task set is empty: nothing to simulate")
    if reuse and out.is_file():
        return SimReport(str(out), sum(1 for line in open(out, encoding="utf-8") if line.strip()),
                         len(tasks), seed, reused=True)
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_SIM_ROLLOUTS:
        raise ConfigError(f"--n {n!r}: simulate between 0 and {MAX_SIM_ROLLOUTS:,} rollouts (about 500 bytes each); "
                          "for more, write several files and ingest them into one scope")
    remove_stale_temp_files(out)
    slips: Counter[str] = Counter()
    failing = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.{os.getpid()}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for r in environment_of(tasks).simulate(tasks, n, spec, seed, prefix):
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                planted = r["meta"]["slips"]
                failing += bool(planted)
                slips.update(s["kind"] for s in planted)
                if on_row:
                    on_row(1)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, 0o666 & ~umask)
        check_writable_kind(out)  # again: something may have appeared there meanwhile
        os.replace(tmp_name, out)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return SimReport(str(out), n, len(tasks), seed, failing, dict(sorted(slips.items())))


@dataclass
class RoundReport:
    """One stored curriculum round."""

    experiment: str
    round: int
    scope: str
    decisions: list[Decision]
    state: CurriculumState = field(metadata={"json": False})
    states: dict[str, int]

    def to_dict(self, decisions: bool = True) -> dict[str, Any]:
        """The round as JSON: its fields, then ``changes``, then (unless ``decisions`` is False) the decisions."""
        return jsonable(self, exclude=("decisions",),
                        extra={"changes": self.changes(), **({"decisions": self.decisions} if decisions else {})})

    def changes(self) -> dict[str, int]:
        """How many units moved ``from→to`` (``active→active`` counts units that stayed)."""
        return dict(sorted(Counter(f"{d.from_state}→{d.to_state}" for d in self.decisions).items()))


def curriculum_round(
    store: Any, experiment: str, scope: str, config: CurriculumConfig | None = None, allow_repeat: bool = False
) -> RoundReport:
    """Advance ``experiment``'s curriculum one round from ``scope``'s evidence and store it.

    The scope must exist and belong to the experiment; a scope an earlier
    round already read is refused unless ``allow_repeat`` (it would count the
    same evidence twice in the moving average).
    """
    config = config or CurriculumConfig()
    require_scope(store, scope, experiment=experiment)
    if scope in scopes_read(store, experiment) and not allow_repeat:
        raise ConfigError(
            f"a round of {experiment!r} already read scope {scope!r}; feeding it again would "
            "count the same evidence twice in the moving average. Pass the next checkpoint's scope, "
            "or --allow-repeat."
        )
    state = load_state(store, experiment)
    observations = observations_from_graph(store, scope, config.level)
    new_state, decisions = step(state, observations, config)
    save(store, experiment, new_state, decisions, config, scope=scope, previous_round=state.round)
    states = {s: len(new_state.in_state(s)) for s in ("locked", "active", "mastered")}
    return RoundReport(experiment, new_state.round, scope, list(decisions), new_state, states)
