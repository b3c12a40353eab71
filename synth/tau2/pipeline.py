"""τ² synthesis: frontier edges → plans → strategy drafts → verified τ² tasks (what ``ace synth`` runs on τ² seeds).

The one pipeline (:mod:`synth.pipeline`: its seeded generators, rejection counts, rollout tally and result)
with τ²'s own task form and schedule: one round, every (target, strategy) plan in turn, no reflection.  A plan is a
frontier edge ``A>B`` (tool names) and a strategy (:class:`synth.planner.Plan`, style ``plain``: a τ² scenario
is instructions to the user simulator, which speaks in its own words).  Plans take turns; each attempt draws
one of the target's seeds (τ² tasks whose gold holds A then B, and whose own gold passes
:func:`ace_env.tau2.synthtasks.check_gold`), applies the strategy (:mod:`synth.tau2.strategies`) and
assembles a new τ² task (:func:`assemble`).  :func:`check` then decides; a task that fails is counted by
reason and never written:

* ``target_lost``: A>B no longer adjacent in the new gold;
* the oracle (:func:`~ace_env.tau2.synthtasks.check_gold`): ACE's verifier strict on the gold replay (on a
  copy-on-write view of the domain database), no gold call erroring, τ²'s own ``EnvironmentEvaluator``
  reward 1 on its τ² JSON, every identifier grounded;
* the checks the strategy declares in the registry (:mod:`synth.registry`, :mod:`synth.tau2.strategies`):
  ``trap_not_live`` (distractor: the gold never writes the look-alike, and the
  look-alike taken instead must run and leave another database), ``still_named`` (ambiguity: the scenario no longer says the id), ``answer_in_scenario``
  (depth: the new step's argument is not in the scenario);
* ``duplicate``: a task with the same content (so the same id) made earlier in the run.

With a simulated policy (``sim:WEAKNESS``) every valid task is also rolled out ``rollouts_per_task`` times
and verified step by step, so its provenance says how often the attacked agent passes it, as for BFCL.
Everything is seeded from one integer.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Callable

from ace_env.tau2.env import raw_task
from ace_env.tau2.rollouts import calls_of, verify_calls
from ace_env.tau2.synthtasks import SynthTau2Task, build_task, check_gold
from ace_env.tau2.tasks import Tau2Task
from synth.pipeline import SYNTHESIS_FAILED, SynthResult, reject, seeded, tally
from synth.planner import Plan
from synth.registry import Candidate, depth_of, get, run_checks
from synth.tau2.strategies import (
    STRATEGIES,
    Draft,
    target_positions,
)

TARGET_LOST = "target_lost"
DUPLICATE = "duplicate"
TAU2_STRATEGIES = tuple(STRATEGIES)


class Tau2SynthResult(SynthResult):
    """The one pipeline's result (:class:`synth.pipeline.SynthResult`) with τ²'s summary: the strategies counted by
    what they did (no draft, built, rejected by a check), and no reflection (one round)."""

    def summary(self) -> dict[str, Any]:
        by_strategy: dict[str, dict[str, Any]] = {}
        for p in self.plans:
            row = by_strategy.setdefault(p.strategy, {"attempted": 0, "no_draft": 0, "built": 0, "rejected": 0,
                                                      "rejections": Counter()})
            row["attempted"] += p.stats.attempted
            row["no_draft"] += p.stats.attempted - p.stats.synthesized  # the seed cannot carry the strategy
            row["built"] += p.stats.valid
            row["rejected"] += p.stats.synthesized - p.stats.valid  # drafted, then refused by a check
            row["rejections"].update(p.stats.rejections)
        return {
            "policy": self.policy,
            "tasks": len(self.tasks),
            "attempted": self.attempted,
            "plans": len(self.plans),
            "retired": 0,
            "rejections": dict(self.rejections),
            "by_strategy": dict(Counter(t.origin["strategy"] for t in self.tasks)),
            "by_target": dict(Counter(t.origin["target"] for t in self.tasks)),
            "per_strategy": {k: {**v, "rejections": dict(v["rejections"])} for k, v in sorted(by_strategy.items())},
        }


_SEED_OK: dict[str, bool] = {}  # base tasks never change within a process


def usable_seeds(seeds: dict[str, Tau2Task]) -> dict[str, Tau2Task]:
    """The base tasks whose own gold is a valid oracle (τ²'s gold sometimes acts on an id it never read)."""
    out = {}
    for i, t in seeds.items():
        if isinstance(t, SynthTau2Task):
            continue
        if t.id not in _SEED_OK:
            _SEED_OK[t.id] = not check_gold(t)
        if _SEED_OK[t.id]:
            out[i] = t
    return out


def seeds_by_target(edges: list[dict[str, Any]], seeds: dict[str, Tau2Task]) -> dict[tuple[str, str], list[str]]:
    """For each frontier edge, the seeds (sorted ids) whose gold agent actions make A then B."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in edges:
        pair = (r["from"], r["to"])
        out[pair] = sorted(i for i, t in seeds.items() if target_positions(t.agent_actions, pair))
    return out


def assemble(seed: Tau2Task, target: tuple[str, str], strategy: str, draft: Draft) -> SynthTau2Task:
    """The new task: the seed's τ² form with the draft's gold, scenario and facts to communicate."""
    raw = raw_task(seed.domain, seed.tau2_id)
    crit = raw.evaluation_criteria
    basis = [r.value for r in crit.reward_basis]
    nl = [] if draft.drop_nl_assertions else list(crit.nl_assertions or [])
    if not nl and "NL_ASSERTION" in basis:
        basis.remove("NL_ASSERTION")
    communicate = list(crit.communicate_info or []) + draft.communicate_info
    if draft.communicate_info and "COMMUNICATE" not in basis:
        basis.append("COMMUNICATE")
    edge = f"{target[0]}>{target[1]}"
    tau2 = {
        "description": {"purpose": f"ACE {strategy} synthesis aimed at {edge}, from τ² {seed.domain} task "
                                   f"{seed.tau2_id}: {draft.what}.", "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": raw.user_scenario.persona, "instructions": draft.instructions},
        "ticket": None,
        "initial_state": None if draft.agent_data is None else {
            "initialization_data": {"agent_data": draft.agent_data, "user_data": None},
            "initialization_actions": None, "message_history": None},
        "evaluation_criteria": {
            "actions": [{"action_id": f"{i}", "requestor": a.requestor, "name": a.name, "arguments": a.arguments,
                         "info": None, "compare_args": list(a.compare_args) if a.compare_args is not None else None}
                        for i, a in enumerate(draft.actions)],
            "env_assertions": None, "communicate_info": communicate, "nl_assertions": nl, "reward_basis": basis,
        },
    }
    origin = {"seed": seed.id, "strategy": strategy, "target": edge, "what": draft.what, **draft.details}
    return build_task(seed.domain, tau2, origin)


def check(task: SynthTau2Task, draft: Draft, target: tuple[str, str], strategy: str) -> list[str]:
    """Why the task may not be written (empty: it may): the generic checks, then the checks ``strategy`` declares
    in the registry (:mod:`synth.registry`), in their declared order; see the module's docstring."""
    if not target_positions(task.agent_actions, target):
        return [TARGET_LOST]
    reasons = check_gold(task)
    for reason, _ in run_checks(get(strategy, Tau2Task), Candidate(task, draft=draft)):
        reasons.append(reason)
    return reasons


def synthesize_tau2(
    edges: list[dict[str, Any]],
    seeds: dict[str, Tau2Task],
    n: int,
    strategies: tuple[str, ...] = TAU2_STRATEGIES,
    seed: int = 0,
    policy: Callable[[Tau2Task, random.Random], list[dict[str, Any]]] | None = None,
    policy_name: str = "",
    rollouts_per_task: int = 4,
    max_attempts: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Tau2SynthResult:
    """Up to ``n`` verified τ² tasks aimed at the frontier ``edges`` (tool-level rows with ``from``, ``to``).

    ``policy``: the simulated agent ``(task, rng) -> calls`` whose pass rate on each task goes into its
    provenance (None: no rollouts).  ``max_attempts``: 0 means ``8 n``."""
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown τ² strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    result = Tau2SynthResult(policy=policy_name)
    usable = usable_seeds(seeds)
    by_target = {t: ids for t, ids in seeds_by_target(edges, usable).items() if ids}
    plans = [Plan(id=f"r0-p{i}-{a}-{b}-{s}-plain", round=0, target=(a, b), strategy=s, strength=0.5,
                  depth=depth_of(s, Tau2Task), domain=tuple(sorted({usable[x].domain for x in ids})), style="plain",
                  seeds=list(ids), evidence={})
             for i, ((a, b), ids, s) in enumerate((t, ids, s) for t, ids in by_target.items() for s in strategies)]
    result.plans = plans
    tried: dict[str, set[str]] = {p.id: set() for p in plans}
    seen: set[str] = set()
    budget = max_attempts or 8 * n
    open_plans = list(plans)
    while open_plans and len(result.tasks) < n and result.attempted < budget:
        for plan in list(open_plans):
            if len(result.tasks) >= n or result.attempted >= budget:
                break
            left = [s for s in plan.seeds if s not in tried[plan.id]]
            if not left:
                open_plans.remove(plan)
                continue
            rng = seeded(seed, plan.id, len(tried[plan.id]))
            seed_task = usable[left[rng.randrange(len(left))]]
            tried[plan.id].add(seed_task.id)
            result.attempted += 1
            plan.stats.attempted += 1
            draft = STRATEGIES[plan.strategy](seed_task, plan.target, plan.strength, rng)
            if draft is None:
                reject(result, plan, SYNTHESIS_FAILED)
                continue
            plan.stats.synthesized += 1
            task = assemble(seed_task, plan.target, plan.strategy, draft)
            reasons = check(task, draft, plan.target, plan.strategy) if task.id not in seen else [DUPLICATE]
            if reasons:
                for r in reasons:
                    reject(result, plan, r)
                continue
            seen.add(task.id)
            plan.stats.valid += 1
            if policy is not None:
                task = _rolled_out(task, plan, policy, policy_name, seed, rollouts_per_task)
            result.tasks.append(task)
            result.lineage.append({"task": task.id, "key": f"tau2:{task.id}", "plan": plan.id,
                                   "parents": [seed_task.id], "strategy": plan.strategy,
                                   "target": task.origin["target"], "round": 0})
            if progress:
                progress(1)
    return result


def _rolled_out(task: SynthTau2Task, plan: Plan, policy: Callable, name: str, seed: int, n: int) -> SynthTau2Task:
    """The task with the attacked policy's pass rate over ``n`` rollouts in its provenance (origin)."""
    verdicts = []
    for k in range(n):
        v = verify_calls(task, calls_of([policy(task, seeded(seed, "rollout", task.id, k))]), f"{task.id}#{k}")
        verdicts.append((v.reward, v.attribution))
    passes, learnable = tally(plan, verdicts, n)
    return SynthTau2Task(**{**task.__dict__, "origin": {**task.origin, "policy": name, "pass_rate": passes / n,
                                                        "learnable": learnable}})
