"""One rollout as every reader of rollout files hands it on (:mod:`ace_env.formats`, :mod:`ace_env.tau2.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Rollout:
    """One rollout: the calls made in each user turn of a task."""

    rollout_id: str
    task_id: str
    turns: list[list[Any]]
    line: int = 0
    meta: dict[str, Any] | None = None
