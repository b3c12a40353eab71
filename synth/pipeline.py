"""The one synthesis pipeline, for every environment (AReaL-SEA's four stages plus reflection).

:func:`run` takes any environment's seeds and its :class:`~ace_env.synthesis.Synthesis` (from the one registry,
:func:`synth.registry.synthesis_of`): per plan (a frontier edge, a strategy), **task synthesis** (the strategy's
builder on a seed holding the edge) → **task verification** (the generic checks, then exactly the checks the
strategy declares) → **trajectory rollout** by the policy whose frontier is attacked → **trajectory
verification** with attribution → tally, on the schedule the environment declares:

* ``rounds`` (BFCL's, :func:`synthesize`): K rounds; after each, **reflection** updates every plan from its
  statistics (validity, share of tasks in the learnable zone where the policy succeeds sometimes but not always,
  attributions) and retires or adjusts it; retired plans are replaced by untried (target, strategy, style) ones.
  Checks: :func:`synth.taskcheck.check_task`; rollouts verified with every tool call under ``SynthConfig.budget``
  in a watched worker (:mod:`ace_env.worker`).  A policy is a plain callable ``(task, rng) -> turns``
  (:func:`sim_policy`) or a :class:`BatchPolicy` (a model through the rollout engine, which the CLI builds:
  ``synth`` never imports ``train``), which rolls a whole round out at once.  Most candidates are copies; a copy
  is predicted before its ground truth is executed (:func:`synth.strategies.build.deferred_execution`,
  :func:`synth.taskcheck.copy_check`) and what a strategy derives from a seed alone is kept for the run
  (:func:`synth.strategies.build.seed_memo`): the same tasks as the old path (``predict_copies=False``).  A plain
  callable's rollouts can go to a Ray runner (:func:`ace_env.scaleout.runner_for`), seeded by (seed, task id, k).
* ``in_turn`` (τ²'s, the toy's; :func:`synthesize_in_turn`): one round, every plan in turn, each drawing its
  target's seeds without replacement; the environment assembles a task from each draft; no reflection.

The policy's ``name`` is recorded in every task's provenance.  Everything is seeded from one integer: the same
seed gives the same tasks.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from ace_env.bounded import BoundedVerifier, LineError
from ace_env.fields import SEED_MAX
from ace_env.scaleout import LocalRunner, RayRunner
from ace_env.sim import simulate_one
from ace_env.synthesis import Synthesis
from ace_env.tasks import Task
from ace_env.worker import Budget
from ace_graph.errors import ConfigError
from synth.bases import (
    _base_of,
    base_task,
    one_per_base,
    per_base_cap,
    per_base_strategy_cap,
    seeds_by_target,
    target_present_in,
)
from synth.checks.parts import DUPLICATE, Seen
from synth.planner import STYLES, Plan, apply_style, make_plans, reflect
from synth.registry import Candidate, depth_of, run_checks, targeted
from synth.registry import get as get_strategy
from synth.repair import usable_version
from synth.rewriter import rewrite_task
from synth.strategies import synthesize as apply_strategy
from synth.strategies.build import deferred_execution, executes, seed_memo
from synth.taskcheck import TARGET_LOST, check_task, copy_check
from synth.taskfile import write_tasks

#: Rejection reason: the run already holds ``max_per_base`` tasks of this task's base task.
SAME_BASE = "same_base_task"
#: Rejection reason: the strategy made no task from the seed, or its ground truth does not execute cleanly.
SYNTHESIS_FAILED = "synthesis_failed"
#: The ``in_turn`` schedule's attempts per task asked for (rejections: :data:`synth.taskcheck.TARGET_LOST`,
#: :data:`synth.checks.parts.DUPLICATE`, a task with the same content, so the same id, made earlier in the run).
IN_TURN_ATTEMPTS = 8

__all__ = ["BatchPolicy", "SynthConfig", "SynthResult", "base_task", "infeasible", "one_per_base", "per_base_cap",
           "per_base_strategy_cap", "run", "seeds_by_target", "seeds_for", "sim_policy", "synthesize", "write_tasks"]

#: A policy maps (task, rng) to a rollout: one list of calls per user turn.
Policy = Callable[[Task, random.Random], list[list[Any]]]


class BatchPolicy(Protocol):
    """A policy that rolls out many tasks in one run (a model generating for a whole batch)."""

    name: str

    def rollouts(self, tasks: Sequence[Task], n: int, seed: int) -> list[list[list[list[Any]]]]:
        """For each task, ``n`` rollouts, each a list of calls per user turn."""
        ...


def sim_policy(spec: Any, name: str = "sim", turns: Callable[..., tuple[list[Any], Any]] = simulate_one) -> Policy:
    """The simulated agent with planted weaknesses as a policy (``name``: how it is recorded); ``turns``: its
    environment's ``simulate_turns`` (BFCL's by default)."""

    def policy(task: Task, rng: random.Random) -> list[list[Any]]:
        return turns(task, spec, rng)[0]

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
    budget: int = 0
    """Attempts the run was allowed (the ``in_turn`` schedule's; 0: per plan and round, the ``rounds``')."""
    in_turn: bool = False
    """Made by the ``in_turn`` schedule: the summary also counts each strategy by what it did."""

    def summary(self) -> dict[str, Any]:
        out = {
            "policy": self.policy,
            "tasks": len(self.tasks),
            "attempted": self.attempted,
            "plans": len(self.plans),
            "retired": sum(p.status == "retired" for p in self.plans),
            "rejections": dict(self.rejections),
            "by_strategy": dict(Counter(t.provenance.get("strategy") for t in self.tasks)),
            "by_target": dict(Counter(t.provenance.get("target_edge") for t in self.tasks)),
        }
        if self.in_turn:
            out["per_strategy"] = self.per_strategy()
        return out

    def per_strategy(self) -> dict[str, dict[str, Any]]:
        """Each strategy counted by what it did: no draft (the seed cannot carry it), built, rejected by a check."""
        rows: dict[str, dict[str, Any]] = {}
        for p in self.plans:
            row = rows.setdefault(p.strategy, {"attempted": 0, "no_draft": 0, "built": 0, "rejected": 0,
                                               "rejections": Counter()})
            row["attempted"] += p.stats.attempted
            row["no_draft"] += p.stats.attempted - p.stats.synthesized
            row["built"] += p.stats.valid
            row["rejected"] += p.stats.synthesized - p.stats.valid
            row["rejections"].update(p.stats.rejections)
        return {k: {**v, "rejections": dict(v["rejections"])} for k, v in sorted(rows.items())}


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


def seeds_for(synthesis: Synthesis, frontier: list[dict[str, Any]],
              seeds: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """For each frontier edge, the ids of the usable seeds whose gold holds it (the environment's own rule)."""
    if synthesis.schedule == "rounds":
        return seeds_by_target(frontier, seeds)
    return synthesis.seeds_by_target(frontier, synthesis.usable(seeds))


def run(synthesis: Synthesis, task_type: type, frontier: list[dict[str, Any]], seeds: dict[str, Any],
        by_target: dict[tuple[str, str], list[str]] | None, policy: Policy | BatchPolicy | None,
        config: SynthConfig, progress: Callable[[int], None] | None = None,
        runner: LocalRunner | RayRunner | None = None) -> SynthResult:
    """The one pipeline for any environment's seeds: plans on the frontier's edges, each strategy's drafts made
    into tasks, checked (the generic checks, then the ones the strategy declares), rolled out by ``policy`` and
    verified, on the schedule the environment's synthesis declares (``rounds``: :func:`synthesize`, with
    reflection; ``in_turn``: :func:`synthesize_in_turn`).  ``by_target``: :func:`seeds_for`, when known."""
    by_target = seeds_for(synthesis, frontier, seeds) if by_target is None else by_target
    if synthesis.schedule == "rounds":
        return synthesize(frontier, seeds, by_target, policy, config, progress=progress, runner=runner)
    return synthesize_in_turn(synthesis, task_type, seeds, by_target, policy, config, progress)


def synthesize_in_turn(synthesis: Synthesis, task_type: type, seeds: dict[str, Any],
                       by_target: dict[tuple[str, str], list[str]], policy: Policy | None, config: SynthConfig,
                       progress: Callable[[int], None] | None = None) -> SynthResult:
    """Up to ``config.n`` checked tasks on the ``in_turn`` schedule: one round, one plan per (target, strategy),
    plans taking turns; each attempt draws one of the target's seeds not tried yet by the plan, drafts, assembles
    and checks; when every plan has drawn all its seeds short of ``n``, a second pass draws again (another
    generator) the seeds that gave a task, kept only where the task differs (a duplicate is rejected); at most
    :data:`IN_TURN_ATTEMPTS` attempts per task asked for, both passes together.  With a ``policy`` every valid task
    is rolled out ``config.rollouts_per_task`` times and verified, its pass rate in its provenance."""
    result = SynthResult(policy=policy_label(policy) if policy is not None else "", in_turn=True)
    by_target = {t: ids for t, ids in by_target.items() if ids}
    plans = [Plan(id=f"r0-p{i}-{a}-{b}-{s}-plain", round=0, target=(a, b), strategy=s, strength=0.5,
                  depth=depth_of(s, task_type), domain=tuple(sorted({synthesis.domain(seeds[x]) for x in ids})),
                  style="plain", seeds=list(ids), evidence={})
             for i, ((a, b), ids, s) in enumerate((t, ids, s) for t, ids in by_target.items()
                                                  for s in config.strategies)]
    result.plans = plans
    made: set[str] = set()
    result.budget = IN_TURN_ATTEMPTS * config.n
    gave: dict[str, list[str]] = {p.id: [] for p in plans}  # the seeds that gave each plan a task
    for again in (False, True):  # a second draw of a seed that gave a task: kept only where it differs
        tried: dict[str, set[str]] = {p.id: set() for p in plans}
        open_plans = [p for p in plans if not again or gave[p.id]]
        _in_turn_pass(synthesis, task_type, seeds, policy, config, result, open_plans, tried, made, gave, again,
                      progress)
    return result


def _in_turn_pass(synthesis: Synthesis, task_type: type, seeds: dict[str, Any], policy: Policy | None,
                  config: SynthConfig, result: SynthResult, open_plans: list[Plan], tried: dict[str, set[str]],
                  made: set[str], gave: dict[str, list[str]], again: bool,
                  progress: Callable[[int], None] | None) -> None:
    """One pass of the plans in turn, each drawing seeds it has not drawn in this pass (the second pass: only
    the seeds that gave it a task in the first, with other generators)."""
    while open_plans and len(result.tasks) < config.n and result.attempted < result.budget:
        for plan in list(open_plans):
            if len(result.tasks) >= config.n or result.attempted >= result.budget:
                break
            left = [s for s in (gave[plan.id] if again else plan.seeds) if s not in tried[plan.id]]
            if not left:
                open_plans.remove(plan)
                continue
            rng = seeded(config.seed, plan.id, len(tried[plan.id]), *(("again",) if again else ()))
            seed_task = seeds[left[rng.randrange(len(left))]]
            tried[plan.id].add(seed_task.id)
            result.attempted += 1
            plan.stats.attempted += 1
            spec = get_strategy(plan.strategy, task_type)
            draft = spec(seed_task, plan.target, plan.strength, rng)
            if draft is None:
                reject(result, plan, SYNTHESIS_FAILED)
                continue
            plan.stats.synthesized += 1
            task = synthesis.assemble(seed_task, plan.target, plan.strategy, draft)
            reasons = [DUPLICATE] if task.id in made else task_problems(synthesis, spec, task, draft, plan.target)
            if reasons:
                for r in reasons:
                    reject(result, plan, r)
                continue
            made.add(task.id)
            gave[plan.id].append(seed_task.id)
            plan.stats.valid += 1
            if policy is not None:
                task = _rolled_out(synthesis, task, plan, policy, result.policy, config)
            result.tasks.append(task)
            result.lineage.append({"task": task.id, "key": f"{task.source}:{task.id}", "plan": plan.id,
                                   "parents": [seed_task.id], "strategy": plan.strategy,
                                   "target": f"{plan.target[0]}>{plan.target[1]}", "round": 0})
            if progress:
                progress(1)


def task_problems(synthesis: Synthesis, spec: Any, task: Any, draft: Any, target: tuple[str, str]) -> list[str]:
    """Why a drafted task may not be written (empty: it may): the target lost, else the environment's generic
    checks, then exactly the checks the strategy declares, in their declared order."""
    if not synthesis.has_target(task, target):
        return [TARGET_LOST]
    return list(synthesis.check(task)) + [reason for reason, _ in run_checks(spec, Candidate(task, draft=draft))]


def _rolled_out(synthesis: Synthesis, task: Any, plan: Plan, policy: Policy, name: str, config: SynthConfig) -> Any:
    """The task with the attacked policy's pass rate over ``config.rollouts_per_task`` rollouts in its provenance."""
    n = config.rollouts_per_task
    verdicts = [synthesis.verify(task, policy(task, seeded(config.seed, "rollout", task.id, k)), f"{task.id}#{k}")
                for k in range(n)]
    passes, learnable = tally(plan, verdicts, n)
    return synthesis.with_outcome(task, {"policy": name, "pass_rate": passes / n, "learnable": learnable})


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
