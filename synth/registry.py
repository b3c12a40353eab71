"""The strategy registry: the one place a strategy is declared, for every environment.

A strategy is declared once: its name, the kind of task it applies to (the task class of an environment, asked
of a seed with :func:`strategies_for`, never of an environment's name), its builder, and the checks that belong
to it (:class:`ace_env.synthesis.Check`).  An environment declares its strategies on its entry
(``ToolEnvironment.synthesis``, an :class:`ace_env.synthesis.Synthesis`: τ²'s in :mod:`ace_env.tau2.synthesis`);
they are registered here under its task type the first time they are asked for (:func:`synthesis_of`,
:func:`table_for`).  BFCL's strategies live in :mod:`synth.strategies` and register themselves with
:func:`register`; its :class:`~ace_env.synthesis.Synthesis` is :mod:`synth.pipeline`'s (:func:`register_synthesis`).
One name may be declared for several task kinds (τ²'s four strategies bear the names of their BFCL
counterparts); a duplicate (name, kind) is refused.

Every builder has one signature, ``(seed, target, strength, rng) -> draft | None``: None where the seed does
not offer what the strategy needs.  A BFCL draft is the new task itself; another environment's draft is what
changes, which its ``assemble`` turns into a task.  Every check has one signature too,
``find(candidate) -> details`` (empty: it passes), reading the :class:`Candidate` (the task, its replayed
ground truth where the environment replays one, the builder's draft); the pipeline (and
:func:`synth.taskcheck.check_task`) runs the generic checks and then exactly the checks the task's strategy
declares here, in the order declared (:func:`run_checks`).

The planner reads each strategy's composition depth here, the pipeline and the CLI the targeted
strategies, and the random baseline dispatches its edits through the ``edit`` each strategy registers
(:func:`register_edit`).  Items are seeded per index (:func:`item_rng`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from ace_env.environments import ENVIRONMENTS, ToolEnvironment
from ace_env.errors import ConfigError
from ace_env.synthesis import Candidate, Check, Synthesis
from ace_env.tasks import Task

__all__ = ["Candidate", "Check", "Spec", "Synthesis", "get", "register", "run_checks", "synthesis_of", "table_for"]

Strategy = Callable[[Any, tuple[str, str], float, random.Random], Any]
#: The random baseline's edit of a strategy's kind at flat position ``k`` (``a`` = call k, ``b`` = call k + 1).
Edit = Callable[[Task, tuple[str, str], int, float, random.Random], "Task | None"]


@dataclass
class Spec:
    """A registered strategy."""

    name: str
    """Unique name per task kind (``--strategy`` and the tasks' ``provenance.strategy``)."""
    definition: str
    """What the strategy does, in one sentence (the CLI's help and the review's definitions)."""
    needs: str
    """What a target must offer for the strategy to make a task on it."""
    build: Strategy
    """``(seed, target, strength, rng) -> draft | None``: None where the seed does not offer what it needs."""
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
    checks: tuple[Check, ...] = ()
    """The checks that belong to this strategy, run after the generic ones, in this order."""
    task_type: type = Task
    """The kind of task (an environment's task class) the strategy's seeds and tasks are."""

    def __call__(self, seed: Any, target: tuple[str, str], strength: float, rng: random.Random) -> Any:
        return self.build(seed, target, strength, rng)


#: The one registry: for each task kind, its strategies by name, in registration order.
REGISTRY: dict[type, dict[str, Spec]] = {}
#: BFCL's strategies (tasks of :class:`ace_env.tasks.Task`): the same dict as ``REGISTRY[Task]``.
STRATEGIES: dict[str, Spec] = REGISTRY.setdefault(Task, {})


def register(name: str, *, definition: str, needs: str, depth: int = 2, targeted: bool = True,
             build_last: bool = False, checks: tuple[Check, ...] = (),
             task_type: type = Task) -> Callable[[Strategy], Strategy]:
    """Register a strategy under ``name`` for tasks of ``task_type`` (a name is unique per task kind)."""

    def deco(fn: Strategy) -> Strategy:
        table = REGISTRY.setdefault(task_type, {})
        if name in table:
            raise ValueError(f"strategy {name!r} is already registered for {task_type.__name__}")
        table[name] = Spec(name, definition, needs, fn, depth, targeted, build_last=build_last,
                           checks=tuple(checks), task_type=task_type)
        return fn

    return deco


def register_edit(name: str) -> Callable[[Edit], Edit]:
    """Register the random baseline's edit of BFCL strategy ``name`` (one per strategy)."""

    def deco(fn: Edit) -> Edit:
        spec = get(name)
        if spec.edit is not None:
            raise ValueError(f"strategy {name!r} already has a random edit")
        spec.edit = fn
        return fn

    return deco


#: Each task kind's synthesis (what the pipeline calls on its tasks), by task type.
SYNTHESES: dict[type, Synthesis] = {}


def register_synthesis(task_type: type, synthesis: Synthesis) -> Synthesis:
    """Register an environment's synthesis for tasks of ``task_type``: its declared strategies (in their order)
    and the functions the pipeline calls (one per task kind)."""
    if task_type in SYNTHESES:
        raise ValueError(f"a synthesis is already registered for {task_type.__name__}")
    for d in synthesis.strategies:
        register(d.name, definition=d.definition, needs=d.needs, depth=d.depth, targeted=d.targeted,
                 checks=d.checks, task_type=task_type)(d.build)
    SYNTHESES[task_type] = synthesis
    return synthesis


def _declared(task_type: type) -> Synthesis | None:
    """The synthesis an environment's entry declares for ``task_type`` (or a base class), registered now."""
    for env in ENVIRONMENTS.values():
        if env.synthesis is not None and issubclass(task_type, env.task_type):
            return SYNTHESES.get(env.task_type) or register_synthesis(env.task_type, env.synthesis)
    return None


def synthesis_of(env: ToolEnvironment) -> Synthesis:
    """The synthesis of an environment (its entry's, registered on first use); one line when it has none."""
    for kind in env.task_type.__mro__:
        if kind in SYNTHESES:
            return SYNTHESES[kind]
    found = _declared(env.task_type)
    if found is None:
        raise ConfigError(f"{env.title} ({env.name}) declares no synthesis strategies: `ace synth` cannot make its "
                          "tasks (its entry's `synthesis`, see docs/environments.md)")
    return found


def table_for(task_type: type) -> dict[str, Spec]:
    """The strategies that apply to tasks of ``task_type`` (its class or the nearest registered base class;
    an environment's declared ones are registered on first use)."""
    for kind in task_type.__mro__:
        if kind in REGISTRY:
            return REGISTRY[kind]
    _declared(task_type)
    for kind in task_type.__mro__:
        if kind in REGISTRY:
            return REGISTRY[kind]
    return {}


def strategies_for(task: Any) -> dict[str, Spec]:
    """The strategies that apply to ``task`` (asked of its kind), by name."""
    return table_for(type(task))


def spec_of(task: Any) -> Spec | None:
    """The registered strategy that made ``task`` (its provenance's ``strategy``), or None (a seed, or a name
    no strategy of its kind bears)."""
    provenance = getattr(task, "provenance", None) or {}
    return strategies_for(task).get(str(provenance.get("strategy")))


def get(name: str, task_type: type = Task) -> Spec:
    table = table_for(task_type)
    try:
        return table[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; known: {sorted(table)}") from None


def targeted(task_type: type = Task) -> tuple[str, ...]:
    """The strategies planned by default, in registration order."""
    return tuple(n for n, s in table_for(task_type).items() if s.targeted)


def depth_of(name: str, task_type: type = Task) -> int:
    return get(name, task_type).depth


def run_checks(spec: Spec | None, candidate: Candidate, clean: bool = True) -> list[tuple[str, list[str]]]:
    """(reason, details) of every declared check of ``spec`` that finds something, in declared order; a check
    that reads the ground truth's outputs is skipped unless it ran ``clean``."""
    out = []
    for check in spec.checks if spec is not None else ():
        if check.needs_clean_run and not clean:
            continue
        details = check.find(candidate)
        if details:
            out.append((check.reason, list(details)))
    return out


def synthesize(name: str, seed: Task, target: tuple[str, str], strength: float = 0.5,
               rng: random.Random | None = None) -> Task | None:
    """Run one registered BFCL strategy."""
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
