"""BFCL multi-turn as a :class:`~ace_env.environments.ToolEnvironment`: the functions its entry names.

Its gold replay counted per category, its verifier (local and watched, or on Ray), its tools' classes and
descriptions, what the rollout engine plays of its tasks (:data:`BFCL_TURNS`: the task's own user turns,
the tools each offers, the executor's state of one rollout) and its tool catalogue (:data:`BFCL_CATALOGUE`: its
functions, their classes and fresh instances of them, for synthesis); the tasks themselves come from
:mod:`ace_env.bfcl`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

from ace_env import bfcl
from ace_env.bfcl.goldprefix import offered_schemas, user_message
from ace_env.bounded import BoundedVerifier
from ace_env.errors import ConfigError
from ace_env.executor import RolloutState
from ace_env.oracle import replay_oracle
from ace_env.scaleout import RayVerifier  # imports Ray, an optional extra, only when it connects
from ace_env.tasks import Task
from ace_env.taskturns import TaskTurns
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.verifier import ground_truth_rollout, verify
from ace_env.worker import Budget

OnTask = Callable[[int], None] | None


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


#: What the rollout engine plays of a BFCL task (its entry's ``task_turns``): each of the task's own user turns
#: as one message (BFCL's sentence for a tools-only turn), the tools offered in it, and the executor's
#: instances of the task's classes as one rollout's state.
BFCL_TURNS = TaskTurns(user_message=user_message, tools=offered_schemas, state=RolloutState)


def bfcl_instance(class_name: str, config: Mapping[str, Any]) -> Any:
    """A fresh instance of a BFCL class loaded from ``config`` (short context); a stateless class (MathAPI)
    loads nothing.  Raises :class:`~ace_env.errors.TaskLoadError` for an unknown class."""
    instance = bfcl.api_class(class_name)()
    if not bfcl.is_stateless(class_name):
        instance._load_scenario(config, long_context=False)
    return instance


#: BFCL's tool catalogue (its entry's ``tool_catalogue``): its multi-turn functions by name (class and doc) and
#: fresh instances of their classes, what its synthesis strategies read of the tools.
BFCL_CATALOGUE = ToolCatalogue(functions=bfcl.functions, instance=bfcl_instance)
