"""The strategy registry: strategies registered by name (duplicates refused), seeded per item."""

from __future__ import annotations

import random
from typing import Callable

from ace_env.tasks import Task

Strategy = Callable[[Task, tuple[str, str], float, random.Random], "Task | None"]

STRATEGIES: dict[str, Strategy] = {}


def register(name: str) -> Callable[[Strategy], Strategy]:
    """Register a strategy under ``name`` (names are unique)."""

    def deco(fn: Strategy) -> Strategy:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} is already registered")
        STRATEGIES[name] = fn
        return fn

    return deco


def get(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; known: {sorted(STRATEGIES)}") from None


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
