"""The strategy registry: the one place a strategy is declared (name, definition, needs, builder).

Every strategy module registers itself with :func:`register` (a duplicate name
is refused); the planner reads each strategy's composition depth here, the
pipeline and the CLI read the targeted strategies here, and the random
baseline dispatches its edits through the ``edit`` each strategy registers
(:func:`register_edit`).  Items are seeded per index (:func:`item_rng`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ace_env.errors import ConfigError
from ace_env.tasks import Task

Strategy = Callable[[Task, tuple[str, str], float, random.Random], "Task | None"]
#: The random baseline's edit of a strategy's kind at flat position ``k`` (``a`` = call k, ``b`` = call k + 1).
Edit = Callable[[Task, tuple[str, str], int, float, random.Random], "Task | None"]


@dataclass
class Spec:
    """A registered strategy."""

    name: str
    """Unique name (``--strategy`` and the tasks' ``provenance.strategy``)."""
    definition: str
    """What the strategy does, in one sentence (the CLI's help and the review's definitions)."""
    needs: str
    """What a target must offer for the strategy to make a task on it."""
    build: Strategy
    """``(seed, target, strength, rng) -> Task | None``: None where the seed does not offer what it needs."""
    depth: int = 2
    """Composition depth the strategy aims for (the planner records it on a plan)."""
    targeted: bool = True
    """Planned by default (aimed at the frontier); False: a baseline or a diagnostic."""
    edit: Edit | None = None
    """The random baseline's edit of this kind at a random place (None: the baseline never applies it)."""
    build_last: bool = False
    """Its result is what :func:`synth.strategies.build.build` returns, and nothing it does depends on whether
    that is None: the execution ``build`` ends with may be deferred to the caller
    (:func:`synth.strategies.build.deferred_execution`), which turns copies away before executing them."""

    def __call__(self, seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
        return self.build(seed, target, strength, rng)


STRATEGIES: dict[str, Spec] = {}


def register(name: str, *, definition: str, needs: str, depth: int = 2,
             targeted: bool = True, build_last: bool = False) -> Callable[[Strategy], Strategy]:
    """Register a strategy under ``name`` (names are unique)."""

    def deco(fn: Strategy) -> Strategy:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is already registered")
        STRATEGIES[name] = Spec(name, definition, needs, fn, depth, targeted, build_last=build_last)
        return fn

    return deco


def register_edit(name: str) -> Callable[[Edit], Edit]:
    """Register the random baseline's edit of strategy ``name`` (one per strategy)."""

    def deco(fn: Edit) -> Edit:
        spec = get(name)
        if spec.edit is not None:
            raise ValueError(f"strategy {name!r} already has a random edit")
        spec.edit = fn
        return fn

    return deco


def get(name: str) -> Spec:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; known: {sorted(STRATEGIES)}") from None


def targeted() -> tuple[str, ...]:
    """The strategies planned by default, in registration order."""
    return tuple(n for n, s in STRATEGIES.items() if s.targeted)


def depth_of(name: str) -> int:
    return get(name).depth


def synthesize(name: str, seed: Task, target: tuple[str, str], strength: float = 0.5,
               rng: random.Random | None = None) -> Task | None:
    """Run one registered strategy."""
    return get(name)(seed, tuple(target), max(0.0, min(1.0, strength)), rng or random.Random(0))


def item_rng(seed: int, index: int) -> random.Random:
    """The generator of item ``index`` of a run seeded with ``seed``: ``Random(seed + index)``.

    Any one item can be regenerated alone, without replaying the items before it.
    """
    return random.Random(int(seed) + int(index))


def generate(name: str, seed_task: Task, target: tuple[str, str], strength: float, seed: int,
             index: int) -> Task | None:
    """Item ``index`` of strategy ``name`` on ``seed_task``: the same arguments give the same task.

    >>> from ace_env import bfcl
    >>> from synth import strategies
    >>> s = bfcl.load_tasks("base")[0]
    >>> a = strategies.generate("depth", s, ("cd", "ls"), 0.5, seed=7, index=3)
    >>> b = strategies.generate("depth", s, ("cd", "ls"), 0.5, seed=7, index=3)
    >>> (a is None and b is None) or a.id == b.id
    True
    """
    task = synthesize(name, seed_task, target, strength, item_rng(seed, index))
    if task is not None:
        task.provenance = {**task.provenance, "rng": {"seed": int(seed), "index": int(index)}}
    return task
