"""BFCL's tasks as a module's ``tasks`` fixture, written once for the test modules that load them alike.

``tasks = tasks_fixture("all")`` at a test module's top level gives its tests ``tasks``: the category's tasks
by id (with ``ids``, only those), loaded once for the module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from ace_env import bfcl


def tasks_fixture(category: str, ids: Iterable[str] | None = None) -> Any:
    """A module-scoped fixture of BFCL ``category``'s tasks by id (``ids``: only those)."""
    wanted = None if ids is None else set(ids)

    @pytest.fixture(scope="module")
    def tasks() -> dict[str, Any]:
        return {t.id: t for t in bfcl.load_tasks(category) if wanted is None or t.id in wanted}

    return tasks
