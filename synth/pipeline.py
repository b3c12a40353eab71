"""The self-evolving synthesis pipeline (AReaL-SEA's four stages plus reflection).

Per plan and round: **task synthesis** (a strategy applied to a seed that
contains the target composition) → **task verification**
(:func:`synth.taskcheck.check_task`) → **trajectory rollout** by the policy
whose frontier is attacked → **trajectory verification** with attribution
(:func:`ace_env.verifier.verify`, every tool call under
``SynthConfig.budget`` in a watched worker, :mod:`ace_env.worker`: a real
model's rollout may ask for a call that never returns).  After each round a
**reflection** step updates every plan from its statistics (validity, share
of tasks in the learnable zone where the policy succeeds sometimes but not
always, attributions) and retires or adjusts it; retired plans are replaced
by plans on untried (target, strategy, style) combinations.

A policy is either a plain callable ``(task, rng) -> turns`` (one rollout;
:func:`sim_policy`, the simulated agent) or a :class:`BatchPolicy`, whose
``rollouts(tasks, n, seed)`` rolls out all the valid tasks of a round at once,
``n`` times each — a language model through the rollout engine, which the CLI
builds (``synth`` never imports ``train``).  Its ``name`` is recorded in every
task's provenance (``policy``) and in every plan's history.

Everything is seeded from one integer: the same seed gives the same tasks.

Most candidates of a run are copies (the same seed drawn again gives the same task, or one the
near-duplicate rule turns away).  A copy is predicted before it costs anything to verify: the targeted
strategies leave the execution of a candidate's ground truth to this module
(:func:`synth.strategies.build.deferred_execution`), which asks the diversity rules first
(:func:`synth.taskcheck.copy_check` reads the task's parts and text, never executes them), and what a
strategy derives from a seed alone is computed once per run (:func:`synth.strategies.build.seed_memo`).
Every decision is the one the old path (``SynthConfig.predict_copies=False``) makes: the same tasks.

The trajectory rollouts and their verification, the per-candidate work that
does not steer the round (a valid task counts as made whatever its pass rate),
run once the round's valid tasks are known, before its reflection.  A plain
callable's rollouts can go to a Ray runner (:func:`ace_env.scaleout.runner_for`),
a task per job, collected in order; each is seeded by (seed, task id, k), so
the tasks are the same locally and on Ray.  A model (a :class:`BatchPolicy`)
rolls out here, batched; ``ace synth --ray`` refuses it.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from ace_env.bounded import BoundedVerifier, LineError
from ace_env.fields import SEED_MAX
from ace_env.scaleout import LocalRunner, RayRunner
from ace_env.sim import simulate_one
from ace_env.tasks import Task
from ace_env.worker import Budget
from ace_env.workspace import check_writable_kind
from ace_graph.compositions import adjacent_pairs
from ace_graph.errors import ConfigError
from ace_graph.tagger import tag_task
from synth.checks.parts import Seen, adjacent_positions
from synth.planner import STYLES, Plan, apply_style, make_plans, reflect
from synth.registry import get as get_strategy
from synth.registry import targeted
from synth.repair import usable_version
from synth.rewriter import rewrite_task
from synth.strategies import synthesize as apply_strategy
from synth.strategies.build import deferred_execution, executes, seed_memo
from synth.taskcheck import check_task, copy_check

#: Rejection reason: the run already holds ``max_per_base`` tasks of this task's base task.
SAME_BASE = "same_base_task"
#: Rejection reason: the strategy made no task from the seed, or its ground truth does not execute cleanly.
SYNTHESIS_FAILED = "synthesis_failed"

#: A policy maps (task, rng) to a rollout: one list of calls per user turn.
Policy = Callable[[Task, random.Random], list[list[Any]]]


class BatchPolicy(Protocol):
    """A policy that rolls out many tasks in one run (a model generating for a whole batch)."""

    name: str

    def rollouts(self, tasks: Sequence[Task], n: int, seed: int) -> list[list[list[list[Any]]]]:
        """For each task, ``n`` rollouts, each a list of calls per user turn."""
        ...


def sim_policy(spec: Any, name: str = "sim") -> Policy:
    """The simulated agent with planted weaknesses as a policy (``name``: how it is recorded)."""

    def policy(task: Task, rng: random.Random) -> list[list[Any]]:
        return simulate_one(task, spec, rng)[0]

    policy.name = name  # type: ignore[attr-defined]
    return policy


def policy_label(policy: Policy | BatchPolicy) -> str:
    """How a policy is named in the tasks' provenance and the plans' history."""
    name = getattr(policy, "name", "")
    if name:
        return str(name)
    where = getattr(policy, "__qualname__", None) or type(policy).__qualname__  # unnamed: say where it is defined
    return f"{getattr(policy, '__module__', None) or type(policy).__module__}.{where}"


def _rollouts(policy: Policy | BatchPolicy, tasks: list[Task], n: int, seed: int) -> list[list[list[list[Any]]]]:
    """``n`` rollouts of each task: in one batched run, or one by one for a plain callable."""
    if not tasks:
        return []
    batched = getattr(policy, "rollouts", None)
    if callable(batched):
        out = batched(tasks, n, seeded(seed, "rollouts", *[t.id for t in tasks]).randrange(2**31))
        if len(out) != len(tasks) or any(len(r) != n for r in out):
            raise ConfigError(f"policy {policy_label(policy)} returned rollouts that do not match the {len(tasks)} tasks x {n}")
        return out
    return [[policy(t, seeded(seed, "rollout", t.id, k)) for k in range(n)] for t in tasks]  # type: ignore[operator]


@dataclass
class SynthConfig:
    n: int = field(default=100, metadata={"min": 1, "max": 100_000})
    """Valid tasks to emit in total."""
    rounds: int = field(default=2, metadata={"min": 1, "max": 100})
    """Rounds of synthesis and reflection (K)."""
    plans: int = field(default=8, metadata={"min": 1, "max": 1000})
    """Plans per round (N); each is a distinct (target, strategy, style)."""
    rollouts_per_task: int = field(default=4, metadata={"min": 1, "max": 64})
    """Trajectory rollouts per valid task, to place it in or out of the learnable zone."""
    strategies: tuple[str, ...] = field(default_factory=targeted)
    """Strategies the planner may use (default: the registry's targeted ones)."""
    seed: int = field(default=0, metadata={"min": 0, "max": SEED_MAX})
    """Seed of everything random."""
    max_attempts_factor: int = 4
    """A plan gets at most this many attempts per task it is asked for in a round."""
    rewriter: Any = None
    """Optional ``synth.rewriter.Rewriter`` that paraphrases user turns (off by default)."""
    budget: Any = None
    """Time and memory budget (``ace_env.worker.Budget``) of each tool call when rollouts are verified; None: its defaults."""
    max_per_base: int = 0
    """At most this many tasks of a run from one base task (BFCL's base, long-context, miss_func and miss_param
    variants of task N are one base task); 0: max(2, ceil(2 n / base tasks the plans can draw on))."""
    max_per_base_strategy: int = 0
    """At most this many tasks of a run from one base task by one strategy (near-copies of one base task made
    by one strategy differ only cosmetically); 0: max(2, ceil(n / (strategies x base tasks))), so a run still
    reaches n (at the demo's scale 1 leaves it at 91 of 120); a review sample keeps one (:func:`one_per_base`)."""
    predict_copies: bool = True
    """Turn a copy away before its ground truth is executed, and keep what the strategies derive from a seed
    alone for the run; False: build and execute every candidate before the diversity rules see it (the path
    before issue 26's throughput work, kept for ``benchmarks/synth_bench.py --compare``).  The tasks are the
    same either way.  With a ``rewriter`` a candidate is executed before it is paraphrased, as before."""

    def __post_init__(self) -> None:

        if self.max_per_base < 0 or self.max_per_base_strategy < 0:
            raise ConfigError("max_per_base and max_per_base_strategy must be 0 (automatic) or more")
        if self.n < 1 or self.rounds < 1 or self.plans < 1 or self.rollouts_per_task < 1:
            raise ConfigError("n, rounds, plans and rollouts_per_task must all be at least 1")
        if not self.strategies:
            raise ConfigError("at least one strategy is needed")


@dataclass
class SynthResult:
    policy: str = ""
    tasks: list[Task] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    lineage: list[dict[str, Any]] = field(default_factory=list)
    reflections: list[dict[str, Any]] = field(default_factory=list)
    rejections: Counter = field(default_factory=Counter)
    attempted: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "tasks": len(self.tasks),
            "attempted": self.attempted,
            "plans": len(self.plans),
            "retired": sum(p.status == "retired" for p in self.plans),
            "rejections": dict(self.rejections),
            "by_strategy": dict(Counter(t.provenance.get("strategy") for t in self.tasks)),
            "by_target": dict(Counter(t.provenance.get("target_edge") for t in self.tasks)),
        }


_BFCL_ID = re.compile(r"^multi_turn_(?:base|long_context|miss_func|miss_param|composite)_(\d+)$")


def base_task(task: Task) -> str:
    """The base task a synthesized task comes from: its first parent, with BFCL's category variants of one
    task (``multi_turn_base_62``, ``multi_turn_long_context_62``, ...) counted as one."""
    parents = task.provenance.get("parents") or [task.id]
    return _base_of(str(parents[0]))


def _base_of(seed_id: str) -> str:
    m = _BFCL_ID.match(seed_id)
    return f"bfcl:{m.group(1)}" if m else seed_id


def per_base_cap(config: "SynthConfig", seeds: dict[str, Task], by_target: dict[tuple[str, str], list[str]]) -> int:
    """How many tasks one base task may give a run (:attr:`SynthConfig.max_per_base`)."""
    if config.max_per_base:
        return config.max_per_base
    bases = {_base_of(i) for ids in by_target.values() for i in ids if i in seeds}
    return max(2, -(-2 * config.n // max(1, len(bases))))


def per_base_strategy_cap(config: "SynthConfig", seeds: dict[str, Task],
                          by_target: dict[tuple[str, str], list[str]]) -> int:
    """How many tasks one base task may give a run by one strategy (:attr:`SynthConfig.max_per_base_strategy`)."""
    if config.max_per_base_strategy:
        return config.max_per_base_strategy
    bases = {_base_of(i) for ids in by_target.values() for i in ids if i in seeds}
    return max(2, -(-config.n // max(1, len(bases) * len(config.strategies))))


def one_per_base(tasks: list[Task], n: int, rng: random.Random) -> list[Task]:
    """Up to ``n`` tasks drawn evenly across strategies, at most one per base task and strategy (a base task's
    BFCL variants counted as one), a base task not drawn yet by any strategy preferred; a strategy without
    another base task drops out."""
    by_strategy: dict[str, list[Task]] = {}
    for t in tasks:
        by_strategy.setdefault(str(t.provenance.get("strategy")), []).append(t)
    pools = {k: rng.sample(v, len(v)) for k, v in sorted(by_strategy.items())}
    used: dict[str, set[str]] = {k: set() for k in pools}
    every: set[str] = set()
    picked: list[Task] = []
    while len(picked) < n and any(pools.values()):
        for k in sorted(pools):
            if len(picked) >= n:
                break
            pools[k] = [t for t in pools[k] if base_task(t) not in used[k]]
            if not pools[k]:
                continue
            fresh = [t for t in pools[k] if base_task(t) not in every]
            task = (fresh or pools[k])[-1]
            pools[k].remove(task)
            picked.append(task)
            used[k].add(base_task(task))
            every.add(base_task(task))
    return picked


#: Seeds of a target tried per strategy before a plan on it is made.
FEASIBILITY_TRIES = 3


def infeasible(seeds: dict[str, Task], by_target: dict[tuple[str, str], list[str]],
               config: "SynthConfig") -> list[tuple[tuple[str, str], str]]:
    """(target, strategy) pairs where the strategy makes nothing on the target's first few seeds (a cascade
    needs a read-only ``a`` called once, a distractor a wrong-way twin of ``b``, ...)."""
    out = []
    for target, ids in by_target.items():
        for strategy in config.strategies:
            tries = [seeds[i] for i in ids[:FEASIBILITY_TRIES] if i in seeds]
            if not any(apply_strategy(strategy, s, target, 0.5, seeded(config.seed, "feasible", s.id, strategy))
                       is not None for s in tries):
                out.append((target, strategy))
    return out


def target_present_in(task: Task, target: tuple[str, str]) -> bool:
    return bool(adjacent_positions(task, tuple(target)))


def seeded(seed: int, *parts: Any) -> random.Random:
    """The generator of one decision of a run seeded with ``seed`` (both environments' pipelines)."""
    # String seeds are hashed with SHA-512 by `random`: stable across processes and hash seeds.
    return random.Random(":".join(map(str, (seed,) + parts)))


def reject(result: "SynthResult", plan: Plan, reason: str) -> None:
    """A rejection counted by reason in the run's and the plan's statistics (both environments' pipelines)."""
    result.rejections[reason] += 1
    plan.stats.rejections[reason] = plan.stats.rejections.get(reason, 0) + 1


def tally(plan: Plan, verdicts: list[tuple[float, str | None]], n: int) -> tuple[int, bool]:
    """A valid task's ``n`` rollout verdicts (reward, attribution) into its plan's statistics: (passes, whether
    the task is in the learnable zone, passed sometimes but not always); both environments' pipelines."""
    passes = 0
    for reward, attribution in verdicts:
        passes += reward == 1.0
        if attribution:
            plan.stats.attributions[attribution] = plan.stats.attributions.get(attribution, 0) + 1
    plan.stats.rollouts += n
    plan.stats.passed += passes
    learnable = 0 < passes < n
    plan.stats.learnable += learnable
    return passes, learnable


def _styled(task: Task, style: str, rng: random.Random | None = None) -> Task:
    if style == "plain" or not task.turns or not task.turns[0].user:
        return task
    d = task.to_dict()
    first = d["turns"][0]["user"]
    for m in first:
        if m.get("role") == "user":
            m["content"] = apply_style(m["content"], style, rng)
            break
    d["id"] = f"{task.id}-{style}"
    d["provenance"] = {**d["provenance"], "style": style}
    return Task.from_dict(d)


def synthesize(
    frontier: list[dict[str, Any]],
    seeds: dict[str, Task],
    seeds_by_target: dict[tuple[str, str], list[str]],
    policy: Policy | BatchPolicy,
    config: SynthConfig,
    round_offset: int = 0,
    progress: Callable[[int], None] | None = None,
    runner: LocalRunner | RayRunner | None = None,
) -> SynthResult:
    """Run K rounds of plan → synthesize → check → roll out → verify → reflect.

    The rollouts of a round are made once its valid tasks are known: all of
    them in one call of a :class:`BatchPolicy`; a plain callable's on
    ``runner`` (default: this process; Ray tasks with ``--ray``), a task per
    job.  Reflection reads them after.

    With ``config.predict_copies`` (the default) a candidate is checked against the diversity rules before
    its ground truth is executed, and what the strategies derive from a seed alone is kept for the run
    (:func:`synth.strategies.build.seed_memo`): the same tasks, with less work on the copies.
    """
    with seed_memo() if config.predict_copies else contextlib.nullcontext():
        return _synthesize(frontier, seeds, seeds_by_target, policy, config, round_offset, progress, runner)


def _synthesize(
    frontier: list[dict[str, Any]],
    seeds: dict[str, Task],
    seeds_by_target: dict[tuple[str, str], list[str]],
    policy: Policy | BatchPolicy,
    config: SynthConfig,
    round_offset: int,
    progress: Callable[[int], None] | None,
    runner: LocalRunner | RayRunner | None,
) -> SynthResult:
    runner = runner or LocalRunner()
    result = SynthResult(policy=policy_label(policy))
    # a seed whose ground truth uses a value nothing provides (or whose text breaks a rule) is repaired
    # (the lookup that provides the value added) or never copied
    usable = {i: usable_version(seeds[i]) for ids in seeds_by_target.values() for i in ids if i in seeds}
    seeds = {**seeds, **{i: t for i, t in usable.items() if t is not None}}
    seeds_by_target = {target: [i for i in ids if usable.get(i) is not None and target_present_in(usable[i], target)]
                       for target, ids in seeds_by_target.items()}
    domains = {
        target: tuple(sorted({c for sid in ids if sid in seeds for c in seeds[sid].involved_classes}))
        for target, ids in seeds_by_target.items()
    }
    plan_rng = seeded(config.seed, "plans")
    # (target, strategy) pairs no seed of the target supports are never planned (all their styles are taken)
    never = {(a, b, strategy, style) for (a, b), strategy in infeasible(seeds, seeds_by_target, config)
             for style in STYLES}
    plans = make_plans(frontier, seeds_by_target, domains, config.plans, list(config.strategies), plan_rng,
                       round_=round_offset, taken=never)
    result.plans.extend(plans)
    taken = {p.key for p in plans} | never
    fingerprints = Seen()  # exact and near duplicates within the run
    base_cap = per_base_cap(config, seeds, seeds_by_target)
    per_base: Counter = Counter()  # tasks accepted per base task: cosmetic variants of one task never fill a run
    strategy_cap = per_base_strategy_cap(config, seeds, seeds_by_target)
    per_base_strategy: Counter = Counter()  # (base task, strategy): no near-copies of one base by one strategy
    per_round = [config.n // config.rounds + (1 if r < config.n % config.rounds else 0) for r in range(config.rounds)]
    for r, quota in enumerate(per_round):
        round_no = round_offset + r
        active = [p for p in plans if p.status == "active"]
        if not active:
            break
        for p in active:
            p.next_round()
        asked = {p.id: quota // len(active) + (1 if i < quota % len(active) else 0) for i, p in enumerate(active)}
        budget = {p.id: max(1, asked[p.id]) * config.max_attempts_factor for p in active}
        made = {p.id: 0 for p in active}
        attempts = {p.id: 0 for p in active}
        made_now: list[tuple[Plan, Task]] = []  # this round's valid tasks, rolled out together below

        def run_plan(plan: Plan, want: int) -> None:
            while made[plan.id] < want and attempts[plan.id] < budget[plan.id]:
                attempt = attempts[plan.id]
                attempts[plan.id] += 1
                if _attempt(plan, round_no, attempt):
                    made[plan.id] += 1

        def _failed(plan: Plan) -> bool:
            reject(result, plan, SYNTHESIS_FAILED)
            return False

        def _attempt(plan: Plan, round_no: int, attempt: int) -> bool:
            rng = seeded(config.seed, round_no, plan.id, attempt)
            open_seeds = [i for i in plan.seeds if per_base[_base_of(i)] < base_cap
                          and per_base_strategy[(_base_of(i), plan.strategy)] < strategy_cap]
            plan.stats.attempted += 1
            result.attempted += 1
            if not open_seeds:
                reject(result, plan, SAME_BASE)
                return False
            seed_task = seeds[open_seeds[rng.randrange(len(open_seeds))]]
            # copy prediction: a strategy whose build comes last leaves the execution of the ground truth to
            # this function, which first asks the diversity rules (they read the task, never execute it)
            deferred = config.predict_copies and get_strategy(plan.strategy).build_last and config.rewriter is None
            with deferred_execution() if deferred else contextlib.nullcontext():
                task = apply_strategy(plan.strategy, seed_task, plan.target, plan.strength, rng)
            if task is None:
                return _failed(plan)
            task = _styled(task, plan.style, rng)
            if config.rewriter is not None:

                task = rewrite_task(task, config.rewriter)
            task.provenance = {**task.provenance, "plan": plan.id, "round": round_no}
            copy = copy_check(task, fingerprints) if deferred else None
            if copy is None and deferred and not executes(task):
                return _failed(plan)  # what build would have said, had it executed the task
            plan.stats.synthesized += 1
            check = copy or check_task(task, fingerprints)
            if not check.valid:
                for reason in check.reasons:
                    reject(result, plan, reason)
                return False
            plan.stats.valid += 1
            per_base[base_task(task)] += 1
            per_base_strategy[(base_task(task), plan.strategy)] += 1
            task.provenance = {**task.provenance, "policy": result.policy}
            made_now.append((plan, task))
            result.tasks.append(task)
            result.lineage.append({
                "task": task.id, "plan": plan.id, "parents": list(task.provenance.get("parents", [])),
                "strategy": plan.strategy, "target": f"{plan.target[0]}>{plan.target[1]}", "round": round_no,
            })
            return True

        for plan in active:
            run_plan(plan, asked[plan.id])
        # Plans that fell short leave a deficit; the others, in turn, make it up,
        # each within a hard cap of twice its own attempt budget.
        cap = {p.id: 2 * budget[p.id] for p in active}
        deficit = quota - sum(made.values())
        while deficit > 0:
            open_plans = [p for p in active if attempts[p.id] < cap[p.id]]
            if not open_plans:
                break
            for plan in open_plans:
                if deficit <= 0:
                    break
                budget[plan.id] = attempts[plan.id] + 1
                before = made[plan.id]
                run_plan(plan, made[plan.id] + 1)
                deficit -= made[plan.id] - before
        _roll_out_and_verify(made_now, policy, config, result.policy, runner)
        if progress and made_now:
            progress(len(made_now))
        for plan in active:
            note = reflect(plan)
            result.reflections.append({"round": round_no, "plan": plan.id, "note": note,
                                       "validity": plan.stats.validity, "pass_rate": plan.stats.pass_rate,
                                       "learnable_share": plan.stats.learnable_share})
        retired = sum(p.status == "retired" for p in active)
        if retired and r + 1 < config.rounds:
            fresh = make_plans(frontier, seeds_by_target, domains, retired, list(config.strategies), plan_rng,
                               round_=round_no + 1, taken=taken)
            taken |= {p.key for p in fresh}
            plans.extend(fresh)
            result.plans.extend(fresh)
    return result


def _verdicts(tasks: list[Task], turns: list[list[list[list[Any]]]], n: int,
              budget: Budget | None) -> list[list[tuple[float, str | None]]]:
    """(reward, attribution) of every rollout, verified with every tool call under the budget."""
    items = [(t.id, turns[i][k], f"{t.id}#{k}") for i, t in enumerate(tasks) for k in range(n)]
    with BoundedVerifier({t.id: t for t in tasks}, budget or Budget()) as verifier:
        verdicts = verifier.verify_many(items)
    flat = []
    for (task_id, _, rollout_id), v in zip(items, verdicts):
        if isinstance(v, LineError):  # our own policy on our own task: a defect, not a failure of the policy
            raise ConfigError(f"synthesis could not verify rollout {rollout_id} of task {task_id}: {v}")
        flat.append((v.reward, v.attribution))
    return [flat[i * n:(i + 1) * n] for i in range(len(tasks))]


def rollout_verdicts(task: Task, policy: Policy, seed: int, n: int,
                     budget: Budget | None = None) -> list[tuple[float, str | None]]:
    """(reward, attribution) of ``n`` seeded rollouts of ``policy`` on ``task`` (runs on a Ray worker too)."""
    return _verdicts([task], _rollouts(policy, [task], n, seed), n, budget)[0]


def _roll_out_and_verify(made: list[tuple[Plan, Task]], policy: Policy | BatchPolicy, config: SynthConfig,
                         name: str, runner: LocalRunner | RayRunner) -> None:
    """Roll out a round's valid tasks, verify every rollout (bounded), and record the statistics.

    A :class:`BatchPolicy` (a model) rolls the whole round out in one batched run
    here, seeded by the round (its sampling is the policy's); a plain callable
    makes each rollout from a generator seeded by (seed, task id, k): in this
    process, verified in one watched worker for the round, or on a Ray runner
    a task per job, in the order the tasks were made, with the same verdicts.
    """
    if not made:
        return
    n = config.rollouts_per_task
    tasks = [t for _, t in made]
    if isinstance(runner, RayRunner) and not callable(getattr(policy, "rollouts", None)):
        handles = [runner.submit(rollout_verdicts, t, policy, config.seed, n, config.budget) for t in tasks]
        verdicts = [runner.get(h) for h in handles]
    else:  # here: the whole round in one batched run (a model) or one call per rollout, one verifier
        verdicts = _verdicts(tasks, _rollouts(policy, tasks, n, config.seed), n, config.budget)
    for (plan, task), task_verdicts in zip(made, verdicts):
        _score(plan, task, task_verdicts, n)
        note = f"rollouts by {name}"
        if note not in plan.history:
            plan.history.append(note)


def _score(plan: Plan, task: Task, verdicts: list[tuple[float, str | None]], n: int) -> None:
    """A valid task's rollout verdicts into its plan's statistics and its provenance."""
    passes, learnable = tally(plan, verdicts, n)
    task.provenance = {**task.provenance, "pass_rate": passes / n, "learnable": learnable}


def seeds_by_target(frontier: list[dict[str, Any]], seeds: dict[str, Task]) -> dict[tuple[str, str], list[str]]:
    """For each frontier edge, the usable seed tasks whose oracle makes the two calls adjacently (sorted ids).

    A seed that fails :func:`synth.taskcheck.seed_problems` (a ground-truth value
    nothing provides, a text that breaks a text rule) is used in its repaired
    version (:func:`synth.repair.usable_version`) or not at all.

    Computed from the seeds themselves, not from the graph, so tasks synthesized
    earlier and stored there never change which seeds a run uses.
    """

    wanted = {f"{r['from']}>{r['to']}": (r["from"], r["to"]) for r in frontier}
    out: dict[tuple[str, str], list[str]] = {pair: [] for pair in wanted.values()}
    for task_id in sorted(seeds):
        seed = usable_version(seeds[task_id])
        if seed is None:
            continue  # a value of its ground truth comes from nowhere and no lookup provides it: not copied
        for pair in adjacent_pairs(tag_task(seed))[0]:
            if pair in wanted:
                out[wanted[pair]].append(task_id)
    return out


def write_tasks(path: Any, tasks: Iterable[Task]) -> int:
    """Write tasks as JSONL atomically (temp file, then rename); never over a device, FIFO or socket."""
    path = check_writable_kind(Path(path))
    tmp = path.with_name(path.name + ".partial")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for t in tasks:
                f.write(json.dumps(t.to_dict()) + "\n")  # key order matters: BFCL configs are ordered
                n += 1
        check_writable_kind(path)  # again right before the rename: it may have changed meanwhile
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n
