"""ACE's main job end to end, as functions that return data (``ace demo`` prints them).

1. :func:`replay`: every scored BFCL multi-turn task's ground truth through the
   executor and the verifier;
2. :func:`simulate_and_ingest`: a simulated agent with planted weaknesses
   (``ace_env/demo_weakness.toml``), its rollouts ingested into the skill graph;
3. :func:`weaknesses`: the weakest compositions and the frontier the graph found,
   against what was planted;
4. :func:`synthesize_round`: verified adversarial tasks aimed at the frontier;
   then :func:`ace.stages.curriculum_round` advances the curriculum;
5. :func:`round_one`: the same simulated policy on the curriculum's mix, ingested
   as round 1, and :func:`frontier_moved`: how the frontier moved.  No training
   happens here, so what moves is the evidence, concentrated by the tasks;
6. :func:`tau2_scope`: the second environment through the same functions: a
   simulated agent on τ²-bench airline with planted weaknesses
   (``ace_env/tau2_airline_weakness.toml``), ingested into a scope of its own
   experiment (``<experiment>-tau2``), and :func:`weaknesses` on it.

Every stage is idempotent: a second run finds the rollouts already stored.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace.stages import RoundReport, curriculum_round, simulate_to_file
from ace.stages import replay as replay_tasks
from ace_env.environments import DEFAULT, environment_of, spec_of_results
from ace_env.fields import SEED_MAX
from ace_env.sim import DEMO_WEAKNESS, load_weakness
from ace_env.tasks import Task
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set
from ace_env.workspace import check_name
from ace_graph.config import ace_home
from ace_graph.errors import ConfigError
from ace_graph.frontier import FrontierConfig, frontier, weak_compositions
from ace_graph.ingest import ingest_file
from ace_graph.stats import MIN_LIFT
from ace_graph.store import GraphStore
from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize, write_tasks
from train.curriculum.core import CurriculumConfig
from train.curriculum.drift import drift
from train.curriculum.mix import mix
from train.curriculum.store import load_state, scopes_read
from train.export import export

CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
#: The planted weaknesses of the demo's τ² part (airline agent tools).
TAU2_WEAKNESS = DEMO_WEAKNESS.parent / "tau2_airline_weakness.toml"
#: The τ² task set the demo simulates.
TAU2_TASKS = "tau2:airline"
#: The second environment's section, keyed by its name in the demo's report.
SECOND = environment_of_spec(TAU2_TASKS)


@dataclass
class DemoConfig:
    """The demo's knobs; the CLI's flags are derived from these fields."""

    n: int = field(default=4000, metadata={"help": "Simulated rollouts per round for the skill graph.", "min": 100,
                                                   "max": 1_000_000})
    seed: int = field(default=1, metadata={"help": "Seed of the simulated agent and of synthesis.", "min": 0,
                                                   "max": SEED_MAX})
    experiment: str = field(default="demo", metadata={"help": "Experiment name in the graph."})
    synth: int = field(default=120, metadata={"help": "Adversarial tasks to synthesize from the frontier.", "min": 1,
                                                       "max": 10_000})
    categories: str = field(default=",".join(CATEGORIES), metadata={"help": "Comma-separated BFCL categories to replay."})
    tau2_n: int = field(default=1500, metadata={
        "help": "Simulated τ²-bench airline rollouts for the τ² section (0: no τ² section).", "min": 0, "max": 1_000_000})
    weakness: Path = field(default=DEMO_WEAKNESS, metadata={"help": "Planted weaknesses (TOML)."})
    tau2_weakness: Path = field(default=TAU2_WEAKNESS, metadata={
        "help": "Planted weaknesses of the τ² section (TOML naming τ² airline tools)."})

    def __post_init__(self) -> None:
        if self.n < 100:
            raise ConfigError(f"--n {self.n}: the demo needs at least 100 rollouts")
        if self.tau2_n != 0 and self.tau2_n < 100:
            raise ConfigError(f"--tau2-n {self.tau2_n}: the τ² section needs at least 100 rollouts (0 leaves it out)")
        if self.synth < 1:
            raise ConfigError(f"--synth {self.synth}: synthesize at least 1 task")
        check_name(self.experiment, "--experiment")


def replay(categories: list[str] | tuple[str, ...] = CATEGORIES) -> list[dict[str, Any]]:
    """Per category: tasks, passed, failed, oracle errors and tasks/s of the ground-truth replay."""
    rows = []
    for category in categories:
        r = replay_tasks(list(load_task_set(f"{DEFAULT.name}:{category}").values()))
        rows.append({"category": category, **{k: r[k] for k in ("tasks", "passed", "failed", "errors", "tasks_per_s")}})
    return rows


def seed_tasks() -> list[Task]:
    """Every task of the default environment (BFCL's): the seeds of the demo's rounds and synthesis."""
    return list(load_task_set(DEFAULT.name).values())


def run_dir(experiment: str) -> Path:
    """Where the demo keeps its files: ``$ACE_HOME/runs/<experiment>``."""
    path = ace_home() / "runs" / experiment
    path.mkdir(parents=True, exist_ok=True)
    return path


def simulate_and_ingest(
    store: GraphStore, tasks: list[Task], experiment: str, checkpoint: str, n: int, seed: int,
    weakness: Path = DEMO_WEAKNESS, prefix: str = "sim", directory: Path | None = None, strict: bool = True,
) -> dict[str, Any]:
    """Simulate ``n`` rollouts of the weak agent on ``tasks`` and ingest them into ``experiment/sim/checkpoint``.

    The file is named by the checkpoint, seed, size and task set, so a rerun
    reuses it only when it would write the same rollouts.  The weakness file is
    read by the tasks' environment (:mod:`ace_env.environments`): τ² tasks take
    one naming τ² agent tools, checked as `ace sim rollouts` checks it.  ``strict`` (default): the simulated
    agent's slips include calls the benchmark's own checker lets pass (a call in a turn that needs none, a
    tool not offered, a call that does not parse), so its rollouts are judged with ACE's stricter rules,
    as ``ace ingest --strict`` judges them.
    """
    directory = directory or run_dir(experiment)
    ids = hashlib.sha256("\n".join(t.id for t in tasks).encode()).hexdigest()[:10]
    path = directory / f"rollouts-{checkpoint}-seed{seed}-n{n}-tasks{ids}.jsonl"
    spec = environment_of(tasks).load_weakness(weakness, tasks)
    sim = simulate_to_file(tasks, n, spec, seed, path, prefix=prefix, reuse=True)
    report = ingest_file(store, path, {t.id: t for t in tasks}, experiment, "sim", checkpoint, batch_size=1000,
                         strict=strict)
    return {"file": str(path), "simulated": sim.to_dict(), "ingest": report.to_dict(), "scope": report.scope,
            "strict": strict}


def planted(weakness: Path = DEMO_WEAKNESS) -> dict[str, Any]:
    """The compositions and tools a weakness file plants."""
    spec = tomllib.loads(Path(weakness).read_text(encoding="utf-8"))
    return {"compositions": sorted((c["from"], c["to"]) for c in spec.get("composition", [])),
            "tools": sorted(t["name"] for t in spec.get("tool", []))}


def weaknesses(store: GraphStore, scope: str, weakness: Path = DEMO_WEAKNESS) -> dict[str, Any]:
    """Weakest tool compositions (with whether each was planted) and the skill-level frontier."""
    truth = planted(weakness)
    planted_pairs = set(map(tuple, truth["compositions"]))
    weak = weak_compositions(store, scope, FrontierConfig(level="tool", limit=15))
    for r in weak:
        r["planted"] = (r["from"], r["to"]) in planted_pairs
    found = {(r["from"], r["to"]) for r in weak if r.get("verdict", "composition") == "composition"}
    return {
        "scope": scope,
        "weak_compositions": weak,
        "recovered": sorted(found & planted_pairs),
        "planted": sorted(planted_pairs),
        "weak_tools": truth["tools"],
        "weak_tools_as_compositions": sum(1 for _, b in found if b in truth["tools"]),
        "frontier": frontier(store, scope, FrontierConfig(level="skill", limit=8)),
    }


def synthesize_round(
    store: GraphStore, seeds: dict[str, Task], experiment: str, scope: str, seed: int, n: int,
    weakness: Path = DEMO_WEAKNESS, directory: Path | None = None,
) -> dict[str, Any]:
    """Synthesize ``n`` verified tasks from the tool-level frontier of ``scope``; write and store them."""
    directory = directory or run_dir(experiment)
    edges = frontier(store, scope, FrontierConfig(level="tool", limit=50))
    edges = [r for r in edges if r.get("verdict", "composition") == "composition"]  # ambiguous: probe first
    config = SynthConfig(n=n, rounds=2, plans=8, rollouts_per_task=4, seed=seed)
    start = time.perf_counter()
    result = synthesize(edges, seeds, seeds_by_target(edges, seeds), sim_policy(load_weakness(weakness)), config)
    seconds = time.perf_counter() - start
    path = directory / f"synth-round-1-seed{seed}-n{n}.jsonl"
    write_tasks(path, result.tasks)
    store.upsert_tasks(result.tasks)
    store.upsert_plans(experiment, result.plans)
    store.upsert_lineage(experiment, result.lineage)
    groups: dict[tuple[str, str], list[Task]] = {}
    for t in result.tasks:
        groups.setdefault((t.provenance["target_edge"], t.provenance["strategy"]), []).append(t)
    by_group = [
        {"target": target, "strategy": strategy, "tasks": len(ts),
         "learnable": sum(bool(t.provenance["learnable"]) for t in ts),
         "mean_pass_rate": sum(t.provenance["pass_rate"] for t in ts) / len(ts)}
        for (target, strategy), ts in sorted(groups.items())
    ]
    exports = {fmt: export(result.tasks, fmt, directory / "export" / fmt, force=True).to_dict()
               for fmt in (environment_of(result.tasks).export_format, "trl", "openai-sft")}
    adjusted = [r for r in result.reflections if r["note"].startswith(("retire", "weaken", "soften", "strengthen"))]
    return {"scope": scope, "file": str(path), "tasks": result.tasks, "attempted": result.attempted,
            "seconds": round(seconds, 2), "frontier_edges": len(edges), "groups": by_group,
            "reflections": len(result.reflections), "plans_adjusted": len(adjusted), "exports": exports, "summary": result.summary()}


def round_one(
    store: GraphStore, seeds: list[Task], synthesized: list[Task], experiment: str, n: int, seed: int,
    weakness: Path = DEMO_WEAKNESS, directory: Path | None = None,
) -> dict[str, Any]:
    """Roll the simulated policy out on the curriculum's mix and ingest it as ``experiment/sim/round-1``.

    Once per experiment: the curriculum advances past round 1 right after it, so a rerun would mix other tasks
    under the same rollout ids (refused by the ingest).  A rerun whose round-1 scope is stored reports the
    first run's round (kept beside its rollouts) as already stored instead of rolling out again.
    """
    directory = directory or run_dir(experiment)
    saved = directory / "round-1.json"
    scope = f"{experiment}/sim/round-1"
    stored = {r["key"]: r for r in store.run("scopes", experiment=experiment)}.get(scope)
    if saved.is_file() and stored is not None and not stored["incomplete"]:
        first = json.loads(saved.read_text())
        done = first["ingest"]["created"] + first["ingest"]["already_stored"]
        return {**first, "ingest": {**first["ingest"], "created": 0, "already_stored": done}, "reused": True}
    if stored is not None and stored["rollouts"] and not saved.is_file():
        raise ConfigError(f"scope {scope} holds a round 1 of an earlier demo run that did not record its mix; "
                          f"delete it (ace scope delete {scope}) or run the demo with another experiment (-e)")
    state = load_state(store, experiment)
    pool = list(synthesized) + list(seeds)
    chosen = mix(state, pool, len(synthesized) * 2, random.Random(seed))
    by_id = {t.id: t for t in pool}
    tasks = [by_id[i] for i in chosen.task_ids if i in by_id]
    report = drift(tasks, seeds)
    result = simulate_and_ingest(store, tasks, experiment, "round-1", n, seed + 1, weakness,
                                 prefix="sim-r1", directory=directory)
    result.update({"mix": len(tasks), "focus": len(chosen.focus), "replay": len(chosen.replay),
                   "drift": report.tvd, "max_drift": report.max_drift})
    tmp = saved.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, default=str))
    tmp.replace(saved)
    return result


def frontier_moved(store: GraphStore, scope0: str, scope1: str) -> list[dict[str, Any]]:
    """Per tool pair on either round's frontier: (n, success, fragility low) in round 0 and round 1."""
    config = FrontierConfig(level="tool", limit=20)
    f0 = {(r["from"], r["to"]): r for r in frontier(store, scope0, config)}
    f1 = {(r["from"], r["to"]): r for r in frontier(store, scope1, config)}

    def cell(r: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if r is None else {k: r[k] for k in ("n", "composition_success", "fragility_low")}

    pairs = sorted(set(f0) | set(f1), key=lambda p: (-(f1.get(p) or f0[p])["fragility_low"], p))
    return [{"from": a, "to": b, "round_0": cell(f0.get((a, b))), "round_1": cell(f1.get((a, b)))} for a, b in pairs]


def check_tau2_weakness(weakness: Path = TAU2_WEAKNESS, tasks: str = TAU2_TASKS) -> None:
    """Refuse a τ² weakness file that is missing or names no τ² tool of ``tasks``, before anything runs."""
    seeds = list(load_task_set(tasks, any_environment=True).values())
    environment_of(seeds).load_weakness(weakness, seeds)


def tau2_scope(
    store: GraphStore, experiment: str, n: int, seed: int, weakness: Path = TAU2_WEAKNESS,
    tasks: str = TAU2_TASKS, directory: Path | None = None,
) -> dict[str, Any]:
    """The τ² section: ``n`` simulated rollouts on ``tasks`` ingested into ``<experiment>-tau2/sim/round-0``,
    and the weak compositions found there against the planted ones (:func:`weaknesses`).

    Its own experiment keeps the BFCL experiment's rounds, history and curriculum apart.  The simulated
    agent's slips are ACE's step errors, and some land on reads (a weak read tool, a read→read composition)
    that leave τ²'s end state as the gold's: τ²'s rules pass those rollouts, so this section is ingested with
    ACE's stricter rules (``strict``, ``ace ingest --strict``), and says so.  Real agents' files are judged by
    τ²'s own rules (:func:`real_agents`).
    """
    start = time.perf_counter()
    seeds = list(load_task_set(tasks, any_environment=True).values())
    tau2_experiment = f"{experiment}-tau2"
    result = simulate_and_ingest(store, seeds, tau2_experiment, "round-0", n, seed, weakness,
                                 directory=directory or run_dir(tau2_experiment), strict=True)
    found = weaknesses(store, result["scope"], weakness)
    return {**result, "tasks": tasks, "task_count": len(seeds), "weaknesses": found,
            "seconds": round(time.perf_counter() - start, 2)}


#: τ²-bench's published result files of real agents (benchmarks/data/tau2-results, MIT, source in its README).
REAL_RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "tau2-results"


def _results_spec(path: Path) -> str:
    """The task spec a shared result file names (``tau2:DOMAIN``)."""
    spec = spec_of_results(path)
    if spec is None:
        raise ConfigError(f"{path} is not a result file of any environment ACE knows")
    return spec


def real_scope_of(path: Path) -> tuple[str, str, int]:
    """(policy, checkpoint, round) of a shared result file named ``MODEL[-sft]_DOMAIN_1trial.json``: the
    fine-tuned model is the second checkpoint of the same policy."""
    model = path.name.split("_", 1)[0]
    return (model[:-4], "sft", 1) if model.endswith("-sft") else (model, "base", 0)


def real_agents(store: GraphStore, experiment: str, directory: Path = REAL_RESULTS,
                limit: int = 3) -> dict[str, Any]:
    """Real agents' τ²-bench result files ingested as they are (judged by τ²'s rules), one scope per model and
    checkpoint in ``<experiment>-real``; per scope, agreement with τ²'s recorded rewards and the weakest
    tool compositions observed at least 3 times (lowest success right after the previous gold call)."""
    files = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if not files:
        return {"experiment": f"{experiment}-real", "scopes": [], "missing": str(directory)}
    real = f"{experiment}-real"
    by_scope: dict[tuple[str, str, int], list[Path]] = {}
    for f in files:
        by_scope.setdefault(real_scope_of(f), []).append(f)
    out = []
    for (policy, checkpoint, round_), paths in sorted(by_scope.items()):
        tasks = {}
        for f in paths:
            tasks.update(load_every_task(_results_spec(f)))
        created = 0
        for f in paths:
            created += ingest_file(store, f, tasks, real, policy, checkpoint, round_=round_, seed_tasks=True).created
        key = f"{real}/{policy}/{checkpoint}"
        rows = store.run("fragile-edges", scope=key, level="tool", min_support=3, min_lift=MIN_LIFT)
        weakest = sorted((r for r in rows if r["failures"]), key=lambda r: (-r["p_fail_after"], -r["n"], r["from"], r["to"]))[:limit]
        [agree] = store.run("scope-agreement", scope=key)
        out.append({"scope": key, "files": [f.name for f in paths], "created": created, **agree,
                    "weakest": [{k: r[k] for k in ("from", "to", "n", "failures", "p_fail_after")} for r in weakest]})
    return {"experiment": real, "scopes": out, "pooled": pooled_agents(store, real, files)}


#: The scope that holds every real agent's conversations at once (policy ``all-agents``, checkpoint ``pooled``).
POOLED = ("all-agents", "pooled")


def pooled_agents(store: GraphStore, experiment: str, files: list[Path], min_support: int = 3) -> dict[str, Any]:
    """Every shared file in one scope, and its weak compositions as the estimator judges them.

    One agent's file holds one trial of 20-50 tasks: too few failures at any composition for the estimator (or
    the interval) to tell a weak composition from a weak tool, so a per-agent scope lists none. Pooled, the
    agents' conversations answer the same question for real agents as a population (which compositions do
    they fail at, beyond the second tool's own failures), with the rows the estimator keeps and its verdict
    (``ambiguous`` where it cannot separate the two) as :file:`cypher/weak-compositions.cypher` returns them.
    """
    policy, checkpoint = POOLED
    tasks = {}
    for f in files:
        tasks.update(load_every_task(_results_spec(f)))
    created = sum(ingest_file(store, f, tasks, experiment, policy, checkpoint, seed_tasks=True).created for f in files)
    key = f"{experiment}/{policy}/{checkpoint}"
    rows = store.run("weak-compositions", scope=key, level="tool", min_support=min_support, min_lift=MIN_LIFT, limit=10)
    [agree] = store.run("scope-agreement", scope=key)
    return {"scope": key, "files": len(files), "created": created, "min_support": min_support, **agree,
            "weak": [{k: r[k] for k in ("from", "to", "n", "failures", "composition_success",
                                         "target_success_elsewhere", "verdict", "missing")} for r in rows]}


def curriculum(store: GraphStore, experiment: str, scope: str) -> RoundReport | None:
    """One curriculum round from ``scope``; ``None`` when an earlier run already read it (never counted twice)."""
    if scope in scopes_read(store, experiment):
        return None
    return curriculum_round(store, experiment, scope, CurriculumConfig(min_rounds=1))
