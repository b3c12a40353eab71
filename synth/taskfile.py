"""Synthesized tasks written as JSONL, atomically (:func:`write_tasks`; re-exported by :mod:`synth.pipeline`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ace_env.tasks import Task
from ace_env.workspace import check_writable_kind


def write_tasks(path: Any, tasks: Iterable[Task]) -> int:
    """Write tasks as JSONL atomically (temp file, then rename); never over a device, FIFO or socket."""
    path = check_writable_kind(Path(path))
    tmp = path.with_name(path.name + ".partial")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for t in tasks:
                f.write(json.dumps(t.to_dict()) + "\n")  # key order matters: BFCL configs are ordered
                n += 1
        check_writable_kind(path)  # again right before the rename: it may have changed meanwhile
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n
