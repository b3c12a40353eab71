"""What an environment declares for synthesis: its strategies, the checks that belong to each, and what the one
pipeline (:mod:`synth.pipeline`) asks of its tasks.

An environment's entry (:class:`ace_env.environments.ToolEnvironment`) names its :class:`Synthesis`; the one
strategy registry (:mod:`synth.registry`) registers the declared strategies under the entry's task type the
first time a command asks for them, and the pipeline runs every environment through the same stages: plan (a
frontier edge and a strategy), draft (the strategy's builder on a seed holding the edge), assemble (the task the
draft makes), check (the target still there, the environment's generic checks, then exactly the checks the
strategy declares, in their order), roll out and verify (the simulated agent attacked), tally.

These types live here, below ``synth``, so an environment's package declares its synthesis without importing
the layers above it (τ²'s, :mod:`ace_env.tau2.synthesis`; a test's toy, ``tests/toyenv.py``).  BFCL's
strategies predate this and stay in :mod:`synth.strategies`, registered there under BFCL's task type.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

#: ``(seed, target, strength, rng) -> draft | None``: None where the seed does not offer what the strategy needs.
Builder = Callable[[Any, tuple[str, str], float, random.Random], Any]


@dataclass
class Candidate:
    """What a strategy's checks read: the task built, and what its builder and the generic checks know of it."""

    task: Any
    """The candidate task."""
    oracle: Any = None
    """Its replayed ground truth (BFCL: :class:`ace_env.oracle.Oracle`); None where none is replayed."""
    draft: Any = None
    """What the builder returned (τ²: the :class:`ace_env.tau2.strategies.Draft` with its trap and details)."""


@dataclass(frozen=True)
class Check:
    """A check that belongs to a strategy."""

    reason: str
    """The reason code a task that fails it is rejected with (counted once, however many details)."""
    find: Callable[[Candidate], list[str]]
    """``(candidate) -> details``: what is wrong (empty: the check passes)."""
    needs_clean_run: bool = False
    """It reads the ground truth's outputs: run only when the ground truth executes with no error."""


@dataclass(frozen=True)
class Declared:
    """A strategy as an environment declares it (registered by :mod:`synth.registry` under its task type)."""

    name: str
    definition: str
    needs: str
    build: Builder
    depth: int = 2
    targeted: bool = True
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Synthesis:
    """An environment's synthesis: its strategies and the functions the one pipeline calls on its tasks.

    ``schedule`` says how the pipeline spends its attempts: ``in_turn`` (one round, every (target, strategy) plan
    in turn, each drawing the target's seeds without replacement, no reflection) or ``rounds`` (K rounds of
    plan → synthesize → verify → roll out → reflect, BFCL's; its functions are :mod:`synth.pipeline`'s own).
    """

    strategies: tuple[Declared, ...]
    """The strategies, in the order plans are made."""
    usable: Callable[[Mapping[str, Any]], dict[str, Any]]
    """The seeds a strategy may copy (by id), of the seeds given: a seed whose own gold is not a sound oracle
    is left out."""
    seeds_by_target: Callable[[list[dict[str, Any]], Mapping[str, Any]], dict[tuple[str, str], list[str]]]
    """For each frontier edge (rows with ``from``, ``to``), the ids of the seeds (sorted) whose gold holds it."""
    has_target: Callable[[Any, tuple[str, str]], bool]
    """Whether a task's gold still makes the target's two calls in a row (else ``target_lost``)."""
    assemble: Callable[[Any, tuple[str, str], str, Any], Any]
    """``(seed, target, strategy, draft) -> task``: the new task a draft makes."""
    check: Callable[[Any], list[str]]
    """The generic checks of an assembled task: the reasons it may not be written (empty: none)."""
    verify: Callable[[Any, list[Any], str], tuple[float, str | None]]
    """``(task, turns, rollout id) -> (reward, attribution)``: one rollout of the attacked agent judged."""
    with_outcome: Callable[[Any, dict[str, Any]], Any]
    """The task with its rollouts' outcome (``policy``, ``pass_rate``, ``learnable``) in its provenance."""
    domain: Callable[[Any], str]
    """A seed's domain (what a plan records of the seeds it draws on)."""
    schedule: str = "in_turn"
    models: bool = False
    """Whether a model (not only the simulated agent) may roll its tasks out during synthesis."""
    ray: bool = False
    """Whether ``--ray`` may spread its rollouts."""
    notes: dict[str, str] = field(default_factory=dict, hash=False)
    """Free text for the command line (``models``: why a model policy is refused)."""
