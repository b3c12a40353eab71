"""`--ray ADDRESS`: verification and ingest spread over a real local Ray cluster give the local results.

CI (.ci/run) starts the cluster (`ray start --head` on 127.0.0.1, 2 CPUs) and
passes its address in ACE_RAY_ADDRESS; without it, this module starts one
itself in a private temp dir and stops it afterwards (its own processes only,
by pid: `ray stop` would stop every Ray cluster of the machine).  Either way
every listener of the cluster, and of ACE's driver, must be on loopback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.scaleout import SINGLE_MACHINE_ENV, connect
from ace_env.sim import DEMO_WEAKNESS
from ace_env.verifier import ground_truth_rollout

RAY = str(Path(sys.executable).parent / "ray")
LOOPBACK = ("127.", "::1", "::ffff:127.")


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
    started = subprocess.run(  # the same command as .ci/run's
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--object-store-memory=200000000", f"--temp-dir={tmp}",
         "--disable-usage-stats"],
        capture_output=True, text=True, timeout=300, env={**os.environ, SINGLE_MACHINE_ENV: "0"},
    )
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        procs = cluster_processes(f"127.0.0.1:{port}")
        for p in procs:
            p.terminate()
        _, alive = psutil.wait_procs(procs, timeout=30)
        for p in alive:
            p.kill()


def cluster_processes(address: str) -> list[psutil.Process]:
    """The processes of the Ray cluster whose GCS is at ``address`` (GCS, raylet, agents, workers...)."""
    port = address.rpartition(":")[2]
    roots = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if f"--gcs_server_port={port}" in cmd or f"gcs-address={address}" in cmd or f"gcs_address={address}" in cmd:
            roots.append(p)
    procs = {p.pid: p for p in roots}
    for p in roots:
        try:
            procs.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.NoSuchProcess:
            pass
    return list(procs.values())


def listeners(procs: list[psutil.Process]) -> list[tuple[str, str, int]]:
    """(process name, address, port) of every listening TCP socket of ``procs``."""
    out = []
    for p in procs:
        try:
            conns = p.net_connections(kind="tcp")
            name = p.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out += [(name, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return out


def _assert_loopback(found: list[tuple[str, str, int]]) -> None:
    exposed = [x for x in found if not x[1].startswith(LOOPBACK)]
    assert not exposed, f"Ray listeners on a non-loopback address: {exposed}"


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


def test_ray_listens_on_loopback_only(ray_address):
    """Every listener of the test cluster and of ACE's driver connected to it is on 127.0.0.1."""
    ray, owns = connect(ray_address)
    try:
        ray.get(ray.remote(lambda: 1).remote())  # a worker process up, and the driver's own gRPC server
        procs = cluster_processes(ray_address)
        names = {p.name() for p in procs}
        assert {"gcs_server", "raylet"} <= names, names
        found = listeners(procs + [psutil.Process()])
        assert any(n == "gcs_server" for n, _, _ in found) and any(n == "raylet" for n, _, _ in found), found
        assert any(port == int(ray_address.rpartition(":")[2]) for _, _, port in found)
        _assert_loopback(found)
    finally:
        if owns:
            ray.shutdown()


def test_local_ray_listens_on_loopback_only():
    """`--ray local`: the Ray that ACE starts itself keeps every listener on 127.0.0.1 too."""
    ray, owns = connect("local", num_cpus=1)
    assert owns
    try:
        ray.get(ray.remote(lambda: 1).remote())
        procs = [psutil.Process()] + psutil.Process().children(recursive=True)
        assert {"gcs_server", "raylet"} <= {p.name() for p in procs}
        found = listeners(procs)
        assert sum(n in ("gcs_server", "raylet") for n, _, _ in found) >= 2, found
        _assert_loopback(found)
    finally:
        ray.shutdown()


def test_rollout_on_ray_equals_local(ray_address, tmp_path, capsys):
    """`ace rollout --ray` with the (seeded, deterministic) simulated agent writes the local run's file."""
    base = ["rollout", "-p", f"sim:{DEMO_WEAKNESS}", "--tasks", "bfcl:base", "--limit", "12", "-G", "3", "--seed", "5",
            "--batch-size", "4", "--json"]
    local, cluster = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert main(base + ["--out", str(local)]) == 0
    assert main(base + ["--out", str(cluster), "--ray", ray_address, "--ray-workers", "2"]) == 0
    capsys.readouterr()
    rows = [json.loads(x) for x in local.read_text().splitlines()]
    assert len(rows) == 36 and [r["rollout_id"] for r in rows[:3]] == [f"{rows[0]['task_id']}#{g}" for g in range(3)]
    assert any(r["meta"].get("slips") for r in rows)  # the planted slips differ by sample: a real comparison
    assert cluster.read_bytes() == local.read_bytes()


def test_rollout_on_ray_stops_at_an_endpoint_that_is_down(ray_address, tmp_path, capsys):
    """An openai: endpoint that does not answer stops `ace rollout --ray` in one line, as it stops a local run
    (issue 35, defect 3); the workers get the command's --request-retries (0: one attempt each)."""
    out = tmp_path / "r.jsonl"
    rc = main(["rollout", "-p", "openai:m@http://127.0.0.1:1/v1", "--tasks", "bfcl:base", "--limit", "2",
               "--request-retries", "0", "--out", str(out), "--ray", ray_address])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(errors) == 1 and "Traceback" not in err, err
    assert "did not answer after 1 attempt(s)" in errors[0], errors[0]
    assert list(tmp_path.iterdir()) == []


SYNTH_WEAKNESS = (Path(__file__).parent / "synth_weakness.toml").read_text()  # shared by the synthesis tests


def test_synth_on_ray_equals_local(clean_db, neo4j_database, ray_address, tmp_path, capsys):
    """`ace synth --ray` synthesizes the local run's task file (pass rates from the rollouts on Ray included)."""
    from ace_env.sim import load_weakness, simulate
    from ace_graph.ingest import ingest_file
    from ace_graph.store import GraphStore

    weakness = tmp_path / "w.toml"
    weakness.write_text(SYNTH_WEAKNESS)
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in simulate(list(tasks.values()), 1500,
                                                                       load_weakness(weakness), 7)))
    ingest_file(GraphStore(clean_db, neo4j_database), rollouts, tasks, "synray", "sim", "round-0")
    base = ["synth", "--experiment", "synray", "--n", "8", "--seed", "3", "--plans", "3", "--rounds", "2",
            "--weakness", str(weakness), "--tasks", "bfcl:base", "--json"]
    local, cluster = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert main(base + ["--out", str(local)]) == 0
    assert main(base + ["--out", str(cluster), "--ray", ray_address]) == 0
    summaries = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert len(summaries) == 2 and summaries[0]["tasks"] == 8
    assert {k: v for k, v in summaries[0].items() if k != "out"} == {k: v for k, v in summaries[1].items() if k != "out"}
    rows = [json.loads(x) for x in local.read_text().splitlines()]
    assert len(rows) == 8 and all("pass_rate" in r["provenance"] for r in rows)
    assert cluster.read_bytes() == local.read_bytes()
