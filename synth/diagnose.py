"""Diagnosis with probes: when the data cannot tell, make the data (``ace diagnose``).

:func:`diagnose` estimates a scope (``ace_graph.estimate``), takes the edges
called ``ambiguous``, synthesizes probe tasks for them (:mod:`synth.strategies.probe`),
rolls them out with a policy, verifies and ingests those rollouts into a
*probe scope* linked to the scope (``(S)-[:PROBED_BY]->(P)``), and estimates
again on the scope's view (the scope plus its probe scopes).  It does so in
rounds (:func:`run_probes`, two by default): each round's budget goes to the
edges that need the fewest probe steps to be decided (:func:`probe_needs`,
:func:`allocate`), and the next round probes only what is still ambiguous; a
``composition`` verdict on fewer than ``min_support`` steps (not reported) is
probed too, to confirm it or take it back (:func:`needs_probes`); the
budget is a maximum, nothing more is spent once nothing is ambiguous.  The stored
verdicts on the scope's edges are then the re-estimated ones, which
``weak-compositions`` and ``frontier`` report (their ``view`` column names the
scopes used).

The policy is a seam: any callable ``task -> turns`` (one list of calls per
user turn).  :func:`sim_policy` is the simulated agent; a real model plugs in
the same way.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from ace_env.environments import environment_of
from ace_env.formats import Rollout
from ace_env.sim import WeaknessSpec, rollout_rng
from ace_env.tasks import Task
from ace_graph.compositions import adjacent_pairs
from ace_graph.errors import ConfigError
from ace_graph.estimate import AMBIGUOUS, COMPOSITION, EdgeEstimate, EstimatorConfig, ScopeEstimate, estimate_scope
from ace_graph.ingest import prepare
from ace_graph.scopes import require_scope
from ace_graph.stats import MIN_SUPPORT, NEAR_SUCCESS, Z95, clopper_pearson
from ace_graph.store import GraphStore
from ace_graph.tagger import tag_task
from synth.strategies.probe import WITH, WITHOUT, probe_with, probe_without

log = logging.getLogger(__name__)

#: A rollout policy: a task in, the calls made in each of its user turns out.
RolloutPolicy = Callable[[Task], list[list[Any]]]

PROBE_SUFFIX = "~probe"


def sim_policy(spec: WeaknessSpec, seed: int = 0, start: int = 0) -> RolloutPolicy:
    """The simulated agent as a rollout policy, in the task's environment; its k-th rollout draws from
    ``rollout_rng(seed, start + k)``."""
    counter = itertools.count(start)

    def policy(task: Task) -> list[list[Any]]:
        return environment_of((task,)).simulate_turns(task, spec, rollout_rng(seed, next(counter)))[0]

    return policy


@dataclass
class EdgeProbes:
    edge: tuple[str, str]
    missing: str
    tasks: dict[str, list[Task]] = field(default_factory=lambda: {WITHOUT: [], WITH: []})
    rollouts: dict[str, int] = field(default_factory=lambda: {WITHOUT: 0, WITH: 0})
    before: str = AMBIGUOUS
    after: str = AMBIGUOUS


@dataclass
class DiagnoseReport:
    scope: str
    probe_scope: str | None
    budget: int
    rollouts: int = 0
    edges: list[EdgeProbes] = field(default_factory=list)
    before: ScopeEstimate | None = None
    after: ScopeEstimate | None = None
    note: str | None = None  # why nothing was probed, when something needed it

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "probe_scope": self.probe_scope,
            "budget": self.budget,
            "probe_rollouts": self.rollouts,
            "view": self.after.view if self.after else (self.before.view if self.before else [self.scope]),
            "verdicts_before": self.before.verdicts if self.before else {},
            "verdicts_after": self.after.verdicts if self.after else {},
            "edges": [
                {"from": e.edge[0], "to": e.edge[1], "before": e.before, "after": e.after, "missing": e.missing,
                 "probe_tasks": {k: len(v) for k, v in e.tasks.items()}, "probe_rollouts": e.rollouts}
                for e in self.edges
            ],
            "note": self.note,
        }


def seeds_with_pair(tasks: dict[str, Task], edge: tuple[str, str]) -> list[Task]:
    """Tasks (sorted by id) whose oracle makes the two calls of ``edge`` adjacently."""
    key = f"{edge[0]}>{edge[1]}"
    return [tasks[i] for i in sorted(tasks) if key in adjacent_pairs(tag_task(tasks[i]))[0]]


def make_probes(edge: tuple[str, str], seeds: list[Task], per_kind: int, seed: int = 0) -> dict[str, list[Task]]:
    """Up to ``per_kind`` distinct, checked probe tasks of each kind for one edge."""
    rng = random.Random(f"{seed}:{edge[0]}>{edge[1]}")
    order = list(seeds)
    rng.shuffle(order)
    out: dict[str, list[Task]] = {WITHOUT: [], WITH: []}
    seen: set[str] = set()
    for kind, fn in ((WITHOUT, probe_without), (WITH, probe_with)):
        for s in order:
            if len(out[kind]) >= per_kind:
                break
            task = fn(s, edge, 0.5, random.Random(rng.random()))
            if task is not None and task.id not in seen:
                seen.add(task.id)
                out[kind].append(task)
    return out


def needs_probes(e: EdgeEstimate, min_support: int = MIN_SUPPORT) -> bool:
    """Whether probes can decide something about this edge.

    An ``ambiguous`` edge, and a ``composition`` seen fewer than ``min_support`` times
    right after ``a`` (no claim is reported on so few steps; ``with`` probes make the
    steps that confirm it or take it back).
    """
    return e.verdict == AMBIGUOUS or (e.verdict == COMPOSITION and e.n < min_support)


def _missing(e: EdgeEstimate, min_support: int) -> str:
    """What an edge to probe lacks: the estimator's words, or for a composition short of support, that."""
    return e.missing or f"`{e.from_}` then `{e.to}` seen only {e.n} times ({min_support} to report it)"


#: The estimator's default: no composition is called on fewer steps of b away from a.
MIN_AWAY = EstimatorConfig.min_away


def probe_needs(e: EdgeEstimate, min_support: int = MIN_SUPPORT, z: float = Z95,
                min_away: int = MIN_AWAY) -> tuple[int, int]:
    """Steps an ambiguous edge lacks before its data can decide it: (``b`` without ``a``, ``a`` then ``b``).

    *Without*: the estimator calls a composition only when ``b``'s failure rate
    away from ``a`` has an exact upper bound under its rate right after ``a``;
    the need is the smallest count of ``b``-without-``a`` steps at which ``b``
    failing at the view's overall step rate would show that, less those already
    seen, and at least ``min_away`` in all (the estimator's ``EstimatorConfig.min_away``:
    no composition is called on fewer).  (``b`` weak on its own shows itself with about as
    many.)  *With*:
    no edge is reported on fewer than ``min_support`` ``a``-then-``b`` steps.
    An edge whose counts already suffice (its bounds are what is short) needs
    ``min_support`` more steps, three quarters of them without ``a``.
    """
    r1 = e.failures / e.n if e.n else 0.0
    need_without = 0
    if r1 > e.base_rate:
        m = 1
        while m < 2000 and clopper_pearson(round(e.base_rate * m), m, z)[1] >= r1:
            m += 1
        need_without = max(0, max(m, min_away) - e.n_without)
    need_with = max(0, min_support - e.n)
    if need_without == 0 and need_with == 0:
        need_with = min_support // 4
        need_without = min_support - need_with
    return need_without, need_with


def allocate(probing: list[EdgeProbes], estimates: dict[tuple[str, str], EdgeEstimate], budget: int,
             min_support: int = MIN_SUPPORT, min_away: int = MIN_AWAY) -> list[Task]:
    """The probe tasks to roll out in one round, one entry per rollout.

    A probe rollout spent on an edge that stays ambiguous decides nothing, so
    the budget goes first to the edges that need the fewest steps to be
    decided (:func:`probe_needs`; ties: the larger composition lower bound),
    each getting all it needs while the budget lasts; what is left is spread
    evenly over the edges served (a quarter of it on ``with`` probes, half while
    ``a`` then ``b`` is short of ``min_support``).  When no
    edge's need fits, the cheapest edge gets the whole budget.  Each kind's
    tasks are used round-robin, continuing from earlier rounds.
    """
    needs: dict[tuple[str, str], list[int]] = {}
    for ep in probing:
        w0, w1 = probe_needs(estimates[ep.edge], min_support, min_away=min_away)
        if not ep.tasks[WITHOUT]:
            w0 = 0
        if not ep.tasks[WITH]:
            w1 = 0
        needs[ep.edge] = [w0, w1] if w0 + w1 else ([1, 0] if ep.tasks[WITHOUT] else [0, 1])
    order = sorted(probing, key=lambda ep: (sum(needs[ep.edge]), -estimates[ep.edge].effect_low, ep.edge))
    grant: dict[tuple[str, str], list[int]] = {}
    left = budget
    for ep in order:
        cost = sum(needs[ep.edge])
        if cost <= left:
            grant[ep.edge] = list(needs[ep.edge])
            left -= cost
    if not grant and order:
        grant[order[0].edge] = [0, 0]
    served = [ep for ep in order if ep.edge in grant]
    for ep, extra in zip(served, [left // len(served) + (1 if i < left % len(served) else 0)
                                  for i in range(len(served))] if served else []):
        # more of both kinds tightens both bounds: a quarter on `with` (half while a then b is thin)
        share = 0.5 if estimates[ep.edge].n + grant[ep.edge][1] < min_support else 0.25
        add_with = round(extra * share) if ep.tasks[WITH] and ep.tasks[WITHOUT] else (extra if ep.tasks[WITH] else 0)
        grant[ep.edge][0] += extra - add_with
        grant[ep.edge][1] += add_with
    jobs: list[Task] = []
    for ep in served:
        for kind, count in ((WITHOUT, grant[ep.edge][0]), (WITH, grant[ep.edge][1])):
            pool = ep.tasks[kind]
            if not pool:
                continue
            start = ep.rollouts[kind]
            for j in range(count):
                jobs.append(pool[(start + j) % len(pool)])
            ep.rollouts[kind] += count
    return jobs


#: Probes one round's tasks: rolls them out, adds them to the evidence, and returns the
#: re-estimated edges and the number of probe rollouts made.
ProbeRound = Callable[[list[Task]], tuple[list[EdgeEstimate], int]]


def run_probes(first: list[EdgeEstimate], tasks_for: Callable[[tuple[str, str]], dict[str, list[Task]]],
               probe_round: ProbeRound, budget: int, rounds: int = 2,
               min_support: int = MIN_SUPPORT,
               min_away: int = MIN_AWAY) -> tuple[list[EdgeProbes], int, list[EdgeEstimate]]:
    """Spend up to ``budget`` probe rollouts over ``rounds`` rounds on the edges still ``ambiguous``
    (and the compositions still short of ``min_support`` steps: :func:`needs_probes`).

    Round ``r`` spends the budget left divided by the rounds left (two rounds: half, then
    the rest), re-estimates, and the next round probes only what still needs probes, so an
    edge the first round decided takes no more.  Stops early when nothing needs probes
    (the rest of the budget is not spent).  A composition short of ``min_support`` is
    probed only when ``with`` probes exist for it (only they add a-then-b steps).  Returns
    the edges probed or found to need probes (with their verdict before and after), the
    probe rollouts made and the last estimates.  ``min_away``: the estimator's
    (:func:`probe_needs`).
    """
    if rounds < 1:
        raise ConfigError(f"probe rounds must be >= 1, not {rounds}")
    initial = {(e.from_, e.to): e.verdict for e in first}
    plans: dict[tuple[str, str], EdgeProbes] = {}
    current, used = first, 0
    for r in range(rounds):
        by_edge = {(e.from_, e.to): e for e in current}
        to_probe = [e for e in current if needs_probes(e, min_support)]
        for e in to_probe:
            edge = (e.from_, e.to)
            if edge not in plans:
                ep = plans[edge] = EdgeProbes(edge, _missing(e, min_support), before=initial.get(edge, "absent"))
                ep.tasks = tasks_for(edge)
                if not ep.tasks[WITHOUT] and not ep.tasks[WITH]:
                    ep.missing += "; no probe task could be synthesized"
        left = budget - used
        # only `with` probes can confirm a composition short of min_support (they add a-then-b steps)
        probing = []
        for e in to_probe:
            ep = plans[(e.from_, e.to)]
            if ep.tasks[WITH] or (e.verdict == AMBIGUOUS and ep.tasks[WITHOUT]):
                probing.append(ep)
        if not probing or left <= 0:
            break
        jobs = allocate(probing, by_edge, left // (rounds - r), min_support, min_away)
        if not jobs:
            break
        current, made = probe_round(jobs)
        used += made
        log.info("probe round %d: %d rollouts on %d edge(s)", r + 1, made, len(probing))
    now = {(e.from_, e.to): e.verdict for e in current}
    for ep in plans.values():
        ep.after = now.get(ep.edge, "gone")
    return list(plans.values()), used, current


def diagnose(
    store: GraphStore,
    scope: str,
    tasks: dict[str, Task],
    policy: RolloutPolicy,
    budget: int,
    *,
    seed: int = 0,
    per_kind: int = 6,
    config: EstimatorConfig | None = None,
    batch_size: int = 500,
    rounds: int = 2,
    min_support: int = MIN_SUPPORT,
) -> DiagnoseReport:
    """Probe the ambiguous tool-level edges of ``scope`` with up to ``budget`` rollouts, re-estimating after
    each of ``rounds`` rounds (:func:`run_probes`)."""
    if budget < 0:
        raise ConfigError(f"the probe budget must be >= 0 rollouts, not {budget}")
    require_scope(store, scope)  # unknown, being deleted, or incomplete (half-fitted): a one-line error
    view = store.run("scope-view", scope=scope)
    sc = view[0]
    before = estimate_scope(store, scope, "tool", config)
    to_probe = [e for e in before.estimates if needs_probes(e, min_support)]
    report = DiagnoseReport(scope, None, budget, before=before)
    env = environment_of(tasks.values())
    if to_probe and budget and not env.probes:
        report.note = (f"ACE builds no probe tasks for {env.title} edges yet: the estimator's verdicts stand "
                       "(ace query weak-compositions)")
    if not to_probe or budget == 0 or not env.probes:
        report.after = before
        for e in to_probe:
            report.edges.append(EdgeProbes((e.from_, e.to), _missing(e, min_support), before=e.verdict,
                                           after=e.verdict))
        return report
    probe_key = scope + PROBE_SUFFIX
    report.probe_scope = probe_key
    offset = next((int(r["probe_rollouts"] or 0) for r in view if r["probe"] == probe_key), 0)
    scope_row = {"key": probe_key, "experiment": f"{sc['experiment']}{PROBE_SUFFIX}", "policy": sc["policy"],
                 "checkpoint": sc["checkpoint"], "round": sc["round"]}
    made = 0

    def probe_round(jobs: list[Task]) -> tuple[list[EdgeEstimate], int]:
        nonlocal made
        probe_tasks = {t.id: t for t in jobs}
        store.upsert_tasks(probe_tasks.values())
        raw = [Rollout(f"probe-{offset + made + k}", t.id, policy(t), offset + made + k + 1,
                       {"policy": "probe", "index": offset + made + k}) for k, t in enumerate(jobs)]
        records = list(prepare(probe_tasks, iter(raw), probe_key, NEAR_SUCCESS, False, [], "probe"))
        for i in range(0, len(records), batch_size):
            store.ingest_batch(scope_row, records[i: i + batch_size])
        store.write("link-probe-scope", scope=scope, probe=probe_key)
        store.complete_scope(probe_key)  # its batches marked it incomplete (see ace_graph.ingest)
        made += len(raw)
        report.after = estimate_scope(store, scope, "tool", config)
        return report.after.estimates, len(records)

    def tasks_for(edge: tuple[str, str]) -> dict[str, list[Task]]:
        return make_probes(edge, seeds_with_pair(tasks, edge), per_kind, seed)

    report.edges, report.rollouts, _ = run_probes(before.estimates, tasks_for, probe_round, budget, rounds,
                                                  min_support, (config or EstimatorConfig()).min_away)
    if report.after is None:
        report.after = before
    else:
        estimate_scope(store, scope, "skill", config)
    counts: dict[str, int] = defaultdict(int)
    for ep in report.edges:
        counts[ep.after] += 1
    log.info("diagnose %s: %d probe rollouts; the probed edges' verdicts now %s", scope, report.rollouts,
             dict(counts))
    return report


__all__ = ["allocate", "DiagnoseReport", "EdgeProbes", "ProbeRound", "RolloutPolicy", "diagnose", "make_probes",
           "needs_probes", "probe_needs", "run_probes", "seeds_with_pair", "sim_policy"]
