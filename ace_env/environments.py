"""The tool environments ACE runs agents in, behind one interface.

An environment is a benchmark whose tasks ACE can replay, simulate, verify and describe: BFCL
multi-turn and τ²-bench today.  Everything above ``ace_env`` names tasks by spec (``bfcl:base``,
``tau2:airline``; :mod:`ace_env.tasksets` parses them) and asks :func:`environment_of` what to do with
the tasks it got; it never tests which benchmark a task came from.

A :class:`ToolEnvironment` is a table of functions, one per thing the layers above need:

========================  ==========================================================================
``replay``                every task's gold through the executor and the verifier, counted per group
                          (a BFCL category, a τ² domain): ``ace env replay``
``load_weakness``         a simulated agent's weakness file, checked against the tasks' tools
``simulate``              rollouts of that simulated agent, in ACE's rollout schema: ``ace sim rollouts``
``simulate_turns``        one such rollout's calls per turn and its slips (``ace diagnose``'s probes)
``verifier``              the bounded verifier ``ace ingest`` and ``ace verify`` stream rollouts through
``tool_info``             each tool's class and description, for the graph's Tool nodes
``probes``                whether ``ace diagnose`` can build probe tasks for its edges (BFCL only, today)
``demo_weakness``         the weakness file a simulated agent uses when none is named (BFCL only)
========================  ==========================================================================

Adding a third environment means one new module (its tasks, executor, oracle and verifier) that builds
a :class:`ToolEnvironment`, and one entry in :data:`ENVIRONMENTS`.  Not to be confused with
:class:`ace_env.executor.Environment`, the state of one BFCL rollout.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ace_env import bfcl
from ace_env.bounded import BoundedVerifier
from ace_env.errors import ConfigError
from ace_env.oracle import replay_oracle
from ace_env.scaleout import RayVerifier  # imports Ray, an optional extra, only when it connects
from ace_env.sim import DEMO_WEAKNESS, WeaknessSpec, gold_prefix_step, load_weakness, simulate, simulate_one
from ace_env.tasks import Task
from ace_env.tau2.replay import replay_tasks as replay_tau2
from ace_env.tau2.rollouts import Tau2Verifier, refuse_ray
from ace_env.tau2.sim import check_sim_domains, load_tau2_weakness, simulate_turns
from ace_env.tau2.sim import gold_prefix_step as tau2_gold_prefix_step
from ace_env.tau2.sim import simulate as simulate_tau2
from ace_env.tau2.tasks import Tau2Task, tau2_tool_info
from ace_env.verifier import ground_truth_rollout, verify
from ace_env.worker import Budget

OnTask = Callable[[int], None] | None


@dataclass(frozen=True)
class ToolEnvironment:
    """One benchmark ACE can run: what the layers above call, by name (see the module doc)."""

    name: str  # the spec prefix: bfcl, tau2
    title: str
    task_type: type
    replay: Callable[[Sequence[Any], Budget | None, OnTask], dict[str, dict[str, Any]]]
    load_weakness: Callable[[Any, Sequence[Any]], WeaknessSpec]
    simulate: Callable[[Sequence[Any], int, WeaknessSpec, int, str], Iterator[dict[str, Any]]]
    simulate_turns: Callable[[Any, WeaknessSpec, Any], tuple[list[Any], list[Any]]]  # (task, spec, rng)
    verifier: Callable[..., Any]
    tool_info: Callable[[Sequence[Any]], dict[str, tuple[str, str]]]
    probes: bool  # whether ACE builds probe tasks for its edges (ace diagnose)
    demo_weakness: Path | None  # the simulated agent's weakness file when a command names none
    # Hooks the training layer asks (appended by the training side; None: the environment has none).
    export_format: str | None = None  # `ace export --format` of its own task files
    own_source: str | None = None  # the source its own tasks carry (not a synthesized task)
    #: The simulated agent's answer at one gold-prefix step (task, turn, index, weakness, rng) -> (call, slip):
    #: a call string in BFCL's python-list form, or a tool-call object ({name, arguments}); None: no call.
    gold_prefix_step: Callable[[Any, int, int, WeaknessSpec, Any], tuple[Any, Any]] | None = None
    dialogues: bool = False  # whether a policy's rollout is a dialogue with a simulated user (not the task's own turns)

    def owns(self, task: Any) -> bool:
        return isinstance(task, self.task_type)


# --------------------------------------------------------------------------- BFCL multi-turn

def replay_bfcl(tasks: Sequence[Task], budget: Budget | None = None, on_task: OnTask = None) -> dict[str, dict[str, Any]]:
    """Every task's ground truth through the executor and the verifier, its oracle computed afresh; counts
    per category.

    A task passes when its ground truth executes without an error and the verifier gives it reward 1.
    Per category, in the order first seen: ``{tasks, passed, failed, errors, tasks_per_s, failures}``
    (``errors``: tasks whose oracle raised; ``failures``: one line per failing task).  BFCL's calls run in
    this process (its classes are ACE's executor), so ``budget`` is not used.
    """
    groups: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        groups[task.category].append(task)
    out: dict[str, dict[str, Any]] = {}
    for category, group in groups.items():
        passed = errors = 0
        failures: list[str] = []
        start = time.perf_counter()
        for task in group:
            oracle = replay_oracle(task)
            verdict = verify(task, ground_truth_rollout(task), oracle=oracle)
            if oracle.errors:
                errors += 1
                failures.append(f"{task.id}: {oracle.errors[0]}")
            elif verdict.reward == 1.0:
                passed += 1
            else:
                failures.append(f"{task.id}: {verdict.attribution}: {verdict.detail}")
            if on_task:
                on_task(1)
        seconds = time.perf_counter() - start
        out[category] = {"tasks": len(group), "passed": passed, "failed": len(group) - passed, "errors": errors,
                         "tasks_per_s": round(len(group) / seconds, 1) if seconds > 0 else None,
                         "failures": failures}
    return out


def bfcl_verifier(tasks: Mapping[str, Task], budget: Budget | None = None, address: str | None = None,
                  **kwargs: Any) -> Any:
    """The watched local verifier, or a Ray one when ``address`` is given (:mod:`ace_env.scaleout`).

    ``strict`` (default False here, as the diagnosis judges): ACE's rules stricter than BFCL's checker (no
    call in a turn whose ground truth is empty, no tool that was not offered, no call that does not parse)
    fail rollouts too; without it they are only listed (``stricter_because``)."""
    kwargs.setdefault("strict", False)
    if address is None:
        return BoundedVerifier(tasks, budget, **kwargs)
    if not address.strip():
        raise ConfigError("--ray needs an address (host:port), `auto` or `local`")
    return RayVerifier(tasks, budget, address=address, **kwargs)


def bfcl_tool_info(tasks: Sequence[Any]) -> dict[str, tuple[str, str]]:
    """Every BFCL function's class and description (cut to 300 characters), whatever ``tasks`` hold."""
    return {name: (f.class_name, str(f.doc.get("description", ""))[:300]) for name, f in bfcl.functions().items()}


BFCL = ToolEnvironment(
    name="bfcl", title="BFCL multi-turn", task_type=Task,
    replay=replay_bfcl,
    load_weakness=lambda path, tasks: load_weakness(path),
    simulate=simulate,
    simulate_turns=simulate_one,
    verifier=bfcl_verifier,
    tool_info=bfcl_tool_info,
    probes=True,
    demo_weakness=DEMO_WEAKNESS,
    export_format="bfcl",
    own_source="bfcl",
    gold_prefix_step=gold_prefix_step,
)


# --------------------------------------------------------------------------- τ²-bench

def tau2_verifier(tasks: Mapping[str, Tau2Task], budget: Budget | None = None, address: str | None = None,
                  **kwargs: Any) -> Tau2Verifier:
    """The τ² verifier (local only: Ray is refused in one line)."""
    refuse_ray(address)
    return Tau2Verifier(tasks, budget, **kwargs)


def tau2_weakness(path: Any, tasks: Sequence[Tau2Task]) -> WeaknessSpec:
    """A weakness file naming τ² agent tools (the simulated agent plays airline and retail only)."""
    check_sim_domains(tasks)
    return load_tau2_weakness(path, tasks)


TAU2 = ToolEnvironment(
    name="tau2", title="τ²-bench", task_type=Tau2Task,
    replay=lambda tasks, budget=None, on_task=None: replay_tau2(tasks, budget, on_task=on_task),
    load_weakness=tau2_weakness,
    simulate=simulate_tau2,
    simulate_turns=simulate_turns,
    verifier=tau2_verifier,
    tool_info=lambda tasks: tau2_tool_info([t for t in tasks if isinstance(t, Tau2Task)]),
    probes=False,
    demo_weakness=None,
    export_format="tau2",
    gold_prefix_step=lambda task, turn, index, spec, rng: tau2_gold_prefix_step(task, index, spec, rng),
    dialogues=True,
)


#: Every environment ACE knows, by spec prefix.
ENVIRONMENTS: dict[str, ToolEnvironment] = {env.name: env for env in (BFCL, TAU2)}


def environment_named(name: str) -> ToolEnvironment:
    """The environment a spec prefix names; one line listing the known ones otherwise."""
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise ConfigError(f"unknown environment {name!r}; use one of {', '.join(ENVIRONMENTS)}") from None


def environment_of(tasks: Iterable[Any]) -> ToolEnvironment:
    """The one environment all ``tasks`` belong to (BFCL for an empty set).

    A set mixing environments is refused in one line: a rollout file, a scope's verification and a
    simulated agent each belong to one environment.
    """
    found: dict[str, int] = {}
    for task in tasks:
        env = next((e for e in ENVIRONMENTS.values() if e.owns(task)), None)
        if env is None:
            raise ConfigError(f"{type(task).__name__} {getattr(task, 'id', '?')!r} belongs to no known environment")
        found[env.name] = found.get(env.name, 0) + 1
    if len(found) > 1:
        counts = ", ".join(f"{n} {name}" for name, n in found.items())
        raise ConfigError(f"the task set mixes environments ({counts} tasks); use one environment per command")
    return ENVIRONMENTS[next(iter(found))] if found else BFCL


def verifier_for(tasks: Mapping[str, Any], budget: Budget | None = None, address: str | None = None,
                 **kwargs: Any) -> Any:
    """The verifier of the tasks' environment: for BFCL a local watched one, or a Ray one when ``address``
    is given; for τ² the local τ² one."""
    return environment_of(tasks.values()).verifier(tasks, budget, address, **kwargs)


def tool_info(tasks: Sequence[Any]) -> dict[str, tuple[str, str]]:
    """Class and description of every tool the environments know of for ``tasks`` (BFCL's always; τ²'s
    when ``tasks`` hold τ² tasks).  A name two environments share keeps BFCL's."""
    out: dict[str, tuple[str, str]] = {}
    for env in reversed(tuple(ENVIRONMENTS.values())):
        out.update(env.tool_info(tasks))
    return out
