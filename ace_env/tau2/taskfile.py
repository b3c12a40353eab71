"""τ² task files: the synthesized τ² tasks ``ace synth`` writes (``--out``), read back for ``--tasks FILE``.

Every line must be a :class:`~ace_env.tau2.synthtasks.SynthTau2Task` whose τ² form gives it back unchanged,
ids must not repeat, the file and its lines within the task-file size caps (:mod:`ace_env.taskfile`), and
every task's gold must pass :func:`~ace_env.tau2.synthtasks.check_gold`.  That check replays the gold (a
task file is user input: its gold may hold ``calculate(expression="9**9**9**9")``), so it runs in the
watched worker (:class:`ace_env.tau2.bounded.GoldCheck`) under the call budget (:class:`ace_env.worker.Budget`,
``ACE_CALL_TIMEOUT`` / ``ACE_MEMORY_LIMIT_MB``): a gold call over budget refuses the file in one line.
"""

from __future__ import annotations

import json
from typing import Any

from ace_env.errors import TaskLoadError
from ace_env.taskfile import task_file_lines
from ace_env.tau2.bounded import GoldCheck
from ace_env.tau2.synthtasks import SynthTau2Task, is_synth_row
from ace_env.worker import Budget


def is_tau2_task_file(path: Any) -> bool:
    """Whether a task JSONL file holds synthesized τ² tasks (its first line tells; a BFCL file's never does)."""
    try:
        for _, line in task_file_lines(path):
            return is_synth_row(json.loads(line))
    except (OSError, TaskLoadError, ValueError, RecursionError):
        return False  # the BFCL reader says what is wrong with it
    return False


def load_tau2_task_file(path: Any, budget: Budget | None = None) -> dict[str, SynthTau2Task]:
    """The synthesized τ² tasks of a JSONL file (``ace synth``'s ``--out``) by ACE id; a file that fails says
    where, in one line.  ``budget``: each gold call's, in the check (default: :meth:`Budget.from_env`)."""
    tasks: dict[str, SynthTau2Task] = {}
    lines: dict[str, int] = {}
    for n, line in task_file_lines(path):
        try:
            d = json.loads(line)
        except (ValueError, RecursionError) as e:
            raise TaskLoadError(f"{path}:{n}: not valid JSON ({type(e).__name__})") from e
        if not is_synth_row(d):
            raise TaskLoadError(f"{path}:{n}: not a synthesized τ² task (a τ² task file holds only those; "
                                "name τ²'s own tasks as tau2:DOMAIN)")
        try:
            task = SynthTau2Task.from_dict(d)
        except TaskLoadError as e:
            raise TaskLoadError(f"{path}:{n}: {e}") from e
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TaskLoadError(f"{path}:{n}: not a synthesized τ² task ({type(e).__name__}: {e})") from e
        if task.id in tasks:
            raise TaskLoadError(f"{path}:{n}: task id {task.id!r} repeats an earlier line")
        tasks[task.id] = task
        lines[task.id] = n
    if not tasks:
        raise TaskLoadError(f"{path} holds no tasks")
    with GoldCheck(tasks, budget or Budget.from_env()) as check:  # forked now: it inherits the registered tasks
        for task_id, n in lines.items():
            reasons = check.reasons(task_id)
            if reasons:
                raise TaskLoadError(f"{path}:{n}: the gold of {task_id!r} does not verify ({', '.join(reasons)})")
    return tasks
