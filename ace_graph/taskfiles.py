"""What a user's task file may do to the Task nodes already stored.

A task file (``--tasks FILE`` or a BFCL folder) may add tasks and may restate
stored ones unchanged.  It may not change a stored task: the Task node keyed
``source:id`` may have been written by another experiment's ``ace synth``
(whose ids are hashes of the content, so other content under the same id is
not that task) or by another user's file, and rollouts already stored were
verified against it.  BFCL's own tasks are guarded at load time
(:func:`ace_env.tasksets.check_against_bfcl`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ace_env.environments import environment_of
from ace_env.tasks import Task
from ace_graph.errors import ConfigError
from ace_graph.store import task_key


def refuse_changes_to_stored_tasks(store: Any, tasks: Mapping[str, Task], spec: str) -> None:
    """One-line error when a task of the file ``spec`` differs from the stored Task with its key."""
    # an environment's own tasks (BFCL's, source "bfcl") are checked unchanged when they are loaded
    mine = {task_key(t): t for t in tasks.values() if t.source != environment_of((t,)).own_source}
    if not mine:
        return
    rows = store.run("task-fingerprints", keys=list(mine))
    if not rows:
        return
    for key, stored in zip(rows[0]["keys"], rows[0]["fingerprints"]):
        task = mine[key]
        if stored is not None and stored.split(":", 1)[0] != task.fingerprint():
            raise ConfigError(
                f"{spec}: task {task.id!r} (source {task.source!r}) differs from the task {key!r} already stored "
                "(written by `ace synth` or another task file); a task file cannot change a stored task: "
                "give your task another id"
            )
