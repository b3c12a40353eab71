"""Diagnosis with probes: when the data cannot tell, make the data (``ace diagnose``).

:func:`diagnose` estimates a scope (``ace_graph.estimate``), takes the edges
called ``ambiguous``, synthesizes probe tasks for them (:mod:`synth.strategies.probe`),
rolls them out with a policy, verifies and ingests those rollouts into a
*probe scope* linked to the scope (``(S)-[:PROBED_BY]->(P)``), and estimates
again on the scope's view (the scope plus its probe scopes).  The stored
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

from ace_env.rollouts import Rollout
from ace_env.sim import WeaknessSpec, rollout_rng, simulate_one
from ace_env.tasks import Task
from ace_graph.compositions import adjacent_pairs
from ace_graph.errors import ConfigError
from ace_graph.estimate import AMBIGUOUS, EstimatorConfig, ScopeEstimate, estimate_scope
from ace_graph.ingest import prepare
from ace_graph.store import GraphStore
from ace_graph.tagger import tag_task
from synth.strategies.probe import WITH, WITHOUT, probe_with, probe_without

log = logging.getLogger(__name__)

#: A rollout policy: a task in, the calls made in each of its user turns out.
RolloutPolicy = Callable[[Task], list[list[Any]]]

PROBE_SUFFIX = "~probe"


def sim_policy(spec: WeaknessSpec, seed: int = 0, start: int = 0) -> RolloutPolicy:
    """The simulated agent as a rollout policy; its k-th rollout draws from ``rollout_rng(seed, start + k)``."""
    counter = itertools.count(start)

    def policy(task: Task) -> list[list[Any]]:
        return simulate_one(task, spec, rollout_rng(seed, next(counter)))[0]

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


def _split(budget: int, parts: int) -> list[int]:
    return [budget // parts + (1 if i < budget % parts else 0) for i in range(parts)] if parts else []


def allocate(probing: list[EdgeProbes], n_after: dict[tuple[str, str], int], budget: int) -> list[Task]:
    """The probe tasks to roll out, one entry per rollout: the budget split evenly over the edges,
    a quarter of an edge's share on ``with`` probes (half when a then b was seen < 20 times), the
    rest on ``without`` probes, round-robin over each kind's tasks."""
    jobs: list[Task] = []
    for ep, share in zip(probing, _split(budget, len(probing))):
        with_share = 0.5 if n_after.get(ep.edge, 0) < 20 else 0.25
        n_with = round(share * with_share) if ep.tasks[WITHOUT] else share
        if not ep.tasks[WITH]:
            n_with = 0
        for kind, count in ((WITH, n_with), (WITHOUT, share - n_with)):
            pool = ep.tasks[kind]
            for j in range(count if pool else 0):
                jobs.append(pool[j % len(pool)])
                ep.rollouts[kind] += 1
    return jobs


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
) -> DiagnoseReport:
    """Probe the ambiguous tool-level edges of ``scope`` with ``budget`` rollouts and re-estimate."""
    if budget < 0:
        raise ConfigError(f"the probe budget must be >= 0 rollouts, not {budget}")
    view = store.run("scope-view", scope=scope)
    if not view:
        raise ConfigError(f"scope {scope!r} is not in the graph; ingest rollouts into it first")
    sc = view[0]
    before = estimate_scope(store, scope, "tool", config)
    ambiguous = [e for e in before.estimates if e.verdict == AMBIGUOUS]
    report = DiagnoseReport(scope, None, budget, before=before)
    if not ambiguous or budget == 0:
        report.after = before
        for e in ambiguous:
            report.edges.append(EdgeProbes((e.from_, e.to), e.missing))
        return report
    probe_key = scope + PROBE_SUFFIX
    report.probe_scope = probe_key
    plans: list[EdgeProbes] = []
    for e in sorted(ambiguous, key=lambda e: (-e.combined_low, e.from_, e.to)):
        ep = EdgeProbes((e.from_, e.to), e.missing)
        ep.tasks = make_probes(ep.edge, seeds_with_pair(tasks, ep.edge), per_kind, seed)
        if not ep.tasks[WITHOUT] and not ep.tasks[WITH]:
            ep.missing += "; no probe task could be synthesized"
        plans.append(ep)
        report.edges.append(ep)
    probing = [ep for ep in plans if ep.tasks[WITHOUT] or ep.tasks[WITH]]
    jobs = allocate(probing, {e: est.n for e, est in before.by_edge().items()}, budget)
    probe_tasks = {t.id: t for ep in probing for kind in (WITHOUT, WITH) for t in ep.tasks[kind]}
    store.upsert_tasks(probe_tasks.values())
    offset = next((int(r["probe_rollouts"] or 0) for r in view if r["probe"] == probe_key), 0)
    raw = [Rollout(f"probe-{offset + k}", t.id, policy(t), k + 1, {"policy": "probe", "index": offset + k})
           for k, t in enumerate(jobs)]
    records = list(prepare(probe_tasks, iter(raw), probe_key, 0.7, False, [], "probe"))
    scope_row = {"key": probe_key, "experiment": f"{sc['experiment']}{PROBE_SUFFIX}", "policy": sc["policy"],
                 "checkpoint": sc["checkpoint"], "round": sc["round"]}
    for i in range(0, len(records), batch_size):
        store.ingest_batch(scope_row, records[i: i + batch_size])
    store.write("link-probe-scope", scope=scope, probe=probe_key)
    report.rollouts = len(records)
    after = estimate_scope(store, scope, "tool", config)
    estimate_scope(store, scope, "skill", config)
    report.after = after
    now = after.by_edge()
    for ep in report.edges:
        ep.after = now[ep.edge].verdict if ep.edge in now else "gone"
    counts: dict[str, int] = defaultdict(int)
    for ep in report.edges:
        counts[ep.after] += 1
    log.info("diagnose %s: %d probe rollouts; ambiguous edges now %s", scope, report.rollouts, dict(counts))
    return report


__all__ = ["allocate", "DiagnoseReport", "EdgeProbes", "RolloutPolicy", "diagnose", "make_probes", "seeds_with_pair",
           "sim_policy"]
