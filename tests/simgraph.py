"""What integration tests that need a graph of simulated rollouts share: an empty database, BFCL base's
tasks, and a rollout file of the simulated agent (written once, then ingested or read by the test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ace_env import bfcl
from ace_env.sim import WeaknessSpec, simulate


def wipe(driver: Any, database: str) -> None:
    """Delete every node and relationship of ``database`` (the test server's: CI's own)."""
    with driver.session(database=database) as s:
        s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def base_tasks() -> dict[str, Any]:
    """BFCL multi-turn base's tasks by id."""
    return {t.id: t for t in bfcl.load_tasks("base")}


def simulated_file(path: Path, tasks: dict[str, Any], n: int, spec: WeaknessSpec, seed: int) -> list[dict]:
    """``n`` rollouts of the simulated agent with weakness ``spec`` on ``tasks`` (seed ``seed``), written to
    ``path`` as JSONL; the rows, in order."""
    rows = list(simulate(list(tasks.values()), n, spec, seed))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows
