"""BFCL's seeds and base tasks, and its synthesis as the one registry holds it.

The seeds of each frontier edge (:func:`seeds_by_target`), the category variants of one task counted as one
(:func:`base_task`), the per-base caps of a run (:attr:`synth.pipeline.SynthConfig.max_per_base`,
``max_per_base_strategy``), the review's sample (:func:`one_per_base`), and BFCL's
:class:`~ace_env.synthesis.Synthesis` (schedule ``rounds``), registered for BFCL's tasks when this module is
imported.  The synthesis pipeline (:mod:`synth.pipeline`) reads them; they are re-exported there.
"""

from __future__ import annotations

import random
import re
from typing import Any

from ace_env.synthesis import Synthesis
from ace_env.tasks import Task
from ace_env.verifier import verify
from ace_graph.compositions import adjacent_pairs
from ace_graph.tagger import tag_task
from synth.checks.parts import adjacent_positions
from synth.registry import register_synthesis
from synth.repair import usable_version
from synth.taskcheck import check_task

_BFCL_ID = re.compile(r"^multi_turn_(?:base|long_context|miss_func|miss_param|composite)_(\d+)$")


def base_task(task: Task) -> str:
    """The base task a synthesized task comes from: its first parent, with BFCL's category variants of one
    task (``multi_turn_base_62``, ``multi_turn_long_context_62``, ...) counted as one."""
    parents = task.provenance.get("parents") or [task.id]
    return _base_of(str(parents[0]))


def _base_of(seed_id: str) -> str:
    m = _BFCL_ID.match(seed_id)
    return f"bfcl:{m.group(1)}" if m else seed_id


def per_base_cap(config: Any, seeds: dict[str, Task], by_target: dict[tuple[str, str], list[str]]) -> int:
    """How many tasks one base task may give a run (:attr:`SynthConfig.max_per_base`)."""
    if config.max_per_base:
        return config.max_per_base
    bases = {_base_of(i) for ids in by_target.values() for i in ids if i in seeds}
    return max(2, -(-2 * config.n // max(1, len(bases))))


def per_base_strategy_cap(config: Any, seeds: dict[str, Task],
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


def target_present_in(task: Task, target: tuple[str, str]) -> bool:
    return bool(adjacent_positions(task, tuple(target)))


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


def _usable(seeds: dict[str, Task]) -> dict[str, Task]:
    return {i: v for i, t in seeds.items() if (v := usable_version(t)) is not None}


def _verify_one(task: Task, turns: list[Any], rollout_id: str) -> tuple[float, str | None]:
    v = verify(task, turns, rollout_id)
    return v.reward, v.attribution


def _with_outcome(task: Task, outcome: dict[str, Any]) -> Task:
    task.provenance = {**task.provenance, **outcome}
    return task


#: BFCL's synthesis: its strategies register themselves (:mod:`synth.strategies`); its schedule is ``rounds``
#: (:func:`synthesize`), which a model may roll out and ``--ray`` may spread.
register_synthesis(Task, Synthesis(
    strategies=(), usable=_usable, seeds_by_target=seeds_by_target, has_target=target_present_in,
    assemble=lambda seed, target, strategy, draft: draft, check=lambda task: check_task(task).reasons,
    verify=_verify_one, with_outcome=_with_outcome, domain=lambda task: ",".join(sorted(task.involved_classes)),
    schedule="rounds", models=True, ray=True))
