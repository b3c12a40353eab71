"""``ace synth`` on τ² seed tasks (``--tasks tau2:airline``, ``tau2:retail`` or a τ² task file).

:mod:`ace.cli.synthcmd` hands over here when the seed tasks are τ² tasks: the scope's frontier (tool level,
``composition`` verdicts) is read as for BFCL, :func:`synth.tau2.pipeline.synthesize_tau2` makes verified τ²
tasks aimed at its edges, and they are written (JSONL, atomically; ``--tasks FILE`` reads them back) and
stored with their plans and lineage.  The attacked policy is the simulated agent (``sim`` or
``sim:WEAKNESS`` naming τ² tools); a model policy is refused in one line: on τ² it plays against a user
simulator (``ace eval``), which synthesis does not run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ace.cli.graphcmd import with_store
from ace.cli.options import Progress, console, esc
from ace_env.tau2.sim import load_tau2_weakness, simulate_one
from ace_graph.errors import ConfigError
from ace_graph.frontier import frontier, targeted, why_empty
from ace_graph.scopes import require_scope
from synth.pipeline import write_tasks
from synth.tau2.pipeline import TAU2_STRATEGIES, synthesize_tau2

MODEL_REFUSED = ("τ² synthesis rolls its tasks out with the simulated agent only (--policy sim:WEAKNESS.toml "
                 "naming τ² tools); a model plays τ² against a user simulator (`ace eval`)")


def is_tau2_set(tasks: dict[str, Any]) -> bool:
    return bool(tasks) and all(i.startswith("tau2:") for i in tasks)


def _policy(spec: str | None, weakness: Path | None, seeds: dict[str, Any]) -> tuple[Any, str]:
    kind, _, rest = (spec or "sim").partition(":")
    if kind != "sim":
        raise ConfigError(MODEL_REFUSED)
    if rest and weakness is not None:
        raise ConfigError(f"--policy {spec!r} names a weakness file and so does --weakness: give it once")
    path = Path(rest) if rest else weakness
    spec_ = load_tau2_weakness(path, seeds.values()) if path is not None else load_tau2_weakness(None, seeds.values())

    def policy(task: Any, rng: Any) -> list[dict[str, Any]]:
        return simulate_one(task, spec_, rng)[0]

    return policy, f"sim:{path}" if path is not None else "sim"


def run_tau2_synth(*, experiment: str, scope: str | None, newest_scope: Any, out: Path, policy: str | None,
                   weakness: Path | None, strategies: list[str], seeds: dict[str, Any], n: int, seed: int,
                   rollouts_per_task: int, frontier_config: Any, ray: str | None, as_json: bool,
                   targets: list[str] = ()) -> None:
    """The τ² branch of ``ace synth`` (its options already checked there)."""
    if ray is not None:
        raise ConfigError("--ray: τ² synthesis runs here (its rollouts are the simulated agent's); leave --ray out")
    unknown = [s for s in strategies if s not in TAU2_STRATEGIES]
    if unknown:
        raise ConfigError(f"strategy {unknown[0]!r} has no τ² form; τ² strategies: {', '.join(TAU2_STRATEGIES)}")
    chosen_policy, name = _policy(policy, weakness, seeds)

    def work(store: Any) -> tuple[str, list[dict[str, Any]], Any]:
        key = scope or newest_scope(store, experiment)
        require_scope(store, key, experiment=experiment)
        if targets:
            edges = targeted(store, key, list(targets), frontier_config)
        else:
            edges = [r for r in frontier(store, key, frontier_config, check=False)
                     if r.get("verdict", "composition") == "composition"]
        if not edges:
            raise ConfigError(
                f"The frontier of scope {key!r} is empty ({why_empty(store, key, frontier_config.level, frontier_config.min_support)}): "
                "no composition is significantly weaker than its parts. Ingest more rollouts, or lower --min-support.")
        with Progress("synthesizing τ²", n, disable=as_json) as progress:
            result = synthesize_tau2(edges, seeds, n, tuple(strategies or TAU2_STRATEGIES), seed, chosen_policy, name,
                                     rollouts_per_task, progress=progress.advance)
        if not result.plans:
            raise ConfigError(f"no seed task of --tasks makes the two calls of a frontier edge of {key!r} in a row "
                              "(seeds are τ²'s own tasks whose gold is a valid oracle): give the scope's tasks, "
                              "e.g. --tasks tau2:airline")
        write_tasks(out, result.tasks)
        store.upsert_tasks(result.tasks)
        store.upsert_plans(experiment, result.plans)
        store.upsert_lineage(experiment, result.lineage)
        return key, edges, result

    key, edges, result = with_store(work)
    summary = {"scope": key, "out": str(out), **result.summary(), "policy_source": "--policy" if policy else
               "the simulated agent"}
    if as_json:
        print(json.dumps(summary))
        return
    c = console()
    c.print(esc(f"Rollouts by {summary['policy']}"))
    c.print(esc(f"Frontier of {key}: {len(edges)} edges; {summary['plans']} plans (target × τ² strategy)"))
    c.print(esc(f"Wrote {summary['tasks']} verified τ² tasks to {out} from {summary['attempted']} attempts"))
    for k in ("by_strategy", "by_target", "rejections"):
        c.print(esc(f"  {k}: {summary[k]}"))
