"""What integration tests that need a graph of simulated rollouts share: an empty database, BFCL base's
tasks, a rollout file of the simulated agent (written once, then ingested or read by the test), scopes of
such rollouts stored in one go, and τ² airline rollouts with one planted composition (`ace sim rollouts`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ace.cli import main
from ace_env import bfcl
from ace_env.sim import WeaknessSpec, parse_weakness, simulate
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore


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


def simulated_graph(driver: Any, database: str, folders: Any, weakness: dict[str, Any],
                    scopes: list[tuple[str, int, int]]) -> tuple[GraphStore, dict[str, Any], WeaknessSpec]:
    """An emptied database holding, for each ``(scope, seed, n)`` of ``scopes``, ``n`` rollouts of the simulated
    agent with ``weakness`` on BFCL base (files in folders of ``folders``, pytest's tmp_path_factory); the
    store, the tasks and the parsed weakness."""
    wipe(driver, database)
    tasks = base_tasks()
    spec = parse_weakness(weakness)
    store = GraphStore(driver, database)
    for scope, seed, n in scopes:
        path = folders.mktemp("sim") / "r.jsonl"
        simulated_file(path, tasks, n, spec, seed)
        experiment, policy, checkpoint = scope.split("/")
        ingest_file(store, path, tasks, experiment, policy, checkpoint, batch_size=500)
    return store, tasks, spec


def tau2_planted_rollouts(folder: Path, source: str, target: str, n: int, domain: str = "airline") -> tuple[Path, Path]:
    """`ace sim rollouts` on τ² ``domain``: ``n`` rollouts (seed 0) of the simulated agent that slips on the
    composition ``source`` → ``target`` (error 0.7, 0.02 elsewhere); its weakness file and the rollout file,
    both in ``folder``."""
    weakness = folder / "w.toml"
    weakness.write_text(f'[defaults]\nerror = 0.02\n[[composition]]\nfrom = "{source}"\nto = "{target}"\n'
                        'error = 0.7\n')
    rollouts = folder / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", f"tau2:{domain}", "--weakness", str(weakness), "--n", str(n),
                 "--seed", "0", "--out", str(rollouts)]) == 0
    return weakness, rollouts
