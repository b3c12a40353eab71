"""`--ray ADDRESS`: verification and ingest spread over a real local Ray cluster give the local results.

CI (.ci/run) starts the cluster (`ray start --head` on 127.0.0.1, 2 CPUs) and
passes its address in ACE_RAY_ADDRESS; without it, this module starts one
itself in a private temp dir and stops it afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.verifier import ground_truth_rollout

RAY = str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory):
    # Loopback clusters run without token authentication (.ci/run starts CI's that way too): a token
    # in the shared ~/.ray/auth_token may have been replaced by any other Ray user of this machine.
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        yield from _cluster(tmp_path_factory)
    finally:
        if saved is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved


def _cluster(tmp_path_factory):
    address = os.environ.get("ACE_RAY_ADDRESS")
    if address:
        yield address
        return
    port = _free_port()
    tmp = tmp_path_factory.mktemp("ray")
    started = subprocess.run(
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--object-store-memory=200000000", f"--temp-dir={tmp}",
         "--disable-usage-stats"],
        capture_output=True, text=True, timeout=300,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def rollout_file(tmp_path_factory):
    from ace_env.sim import parse_weakness, simulate

    tasks = bfcl.load_tasks("base")
    path = tmp_path_factory.mktemp("rollouts") / "r.jsonl"
    rows = list(simulate(tasks, 600, parse_weakness({"defaults": {"error": 0.1}}), 11))
    t15 = next(t for t in tasks if t.id == "multi_turn_base_15")
    rows.insert(100, {"rollout_id": "runaway", "task_id": t15.id, "turns": [["power(base=10, exponent=1000000000)"]]})
    rows.insert(200, {"rollout_id": "gt15", "task_id": t15.id, "turns": ground_truth_rollout(t15)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_verify_on_ray_equals_local(ray_address, rollout_file, capsys):
    argv = ["verify", "--tasks", "bfcl:base", "--rollouts", str(rollout_file), "--json", "--call-timeout", "2"]
    assert main(argv) == 0
    local = capsys.readouterr().out.splitlines()
    assert main(argv + ["--ray", ray_address]) == 0
    remote = capsys.readouterr().out.splitlines()
    assert len(local) == 602
    assert remote == local
    by_id = {json.loads(x)["rollout_id"]: json.loads(x) for x in remote}
    assert by_id["runaway"]["attribution"] == "timeout" and by_id["gt15"]["reward"] == 1.0


def test_ingest_on_ray_equals_local(clean_db, neo4j_database, ray_address, rollout_file, capsys):
    base = ["ingest", str(rollout_file), "-e", "ray", "-p", "p", "--tasks", "bfcl:base", "--json", "--call-timeout", "2"]
    assert main(base + ["-c", "local"]) == 0
    assert main(base + ["-c", "cluster", "--ray", ray_address]) == 0
    capsys.readouterr()

    def aggregates(scope):
        rows, _, _ = clean_db.execute_query(
            "MATCH (:Scope {key: $s})-[m:MEASURED]->(k) RETURN m.level AS l, coalesce(k.id, k.name) AS k, "
            "m.attempts AS a, m.failures AS f ORDER BY l, k", s=scope, database_=neo4j_database)
        rollouts, _, _ = clean_db.execute_query(
            "MATCH (r:Rollout {scope: $s}) RETURN r.rollout_id AS id, r.reward AS w, r.attribution AS a "
            "ORDER BY id", s=scope, database_=neo4j_database)
        return [r.data() for r in rows], [r.data() for r in rollouts]

    local, cluster = aggregates("ray/p/local"), aggregates("ray/p/cluster")
    assert local == cluster and len(local[1]) == 602
