"""Rollout ingestion into Neo4j with aggregates maintained: ACE's batched path vs one transaction per rollout.

What it measures, in one run, on the same simulated rollouts (BFCL multi-turn,
``ace_env.sim`` with a few planted weaknesses):

1. **Write path.**  The rollouts are verified and tagged (``ace_graph.ingest.prepare``)
   *before* timing; the verify+tag time is reported on its own and an
   end-to-end rate (verify+tag+write) is printed too.  Then

   * **ACE**: ``GraphStore.ingest_batch`` in batches of ``--batch-size``
     rollouts, one transaction per batch (rollout nodes, step nodes, and the
     MEASURED / COMPOSES / Scope aggregates incremented in the same
     transaction);
   * **baseline**: one transaction per rollout, every row its own simple
     Cypher statement with its values as parameters (the rollout node, each
     step and its NEXT link, each MEASURED and COMPOSES increment, the scope
     totals): the Cypher is written out in this file.

   Both write into separate scopes of a freshly wiped database (the baseline
   first, so ACE writes into the larger database).  The baseline is slow, so
   it ingests the first ``--baseline-rollouts`` rollouts; those same rollouts
   are also ingested by ACE into a check scope (untimed) and the two scopes'
   MEASURED / COMPOSES / Scope counts, rollout and step counts are compared:
   the script says whether they are identical (the baseline is then a fair
   equivalent).  Rates are steps/s (reached oracle steps written).

   * **limit**: the write path's limit on this machine, the same Rollout and
     Step nodes and relationships created by a bare ``UNWIND … CREATE`` (no
     aggregates, no MERGE, no idempotency).  ACE and the limit run
     ``--repeat`` times, alternated, each into a fresh scope; medians are
     reported (single runs of either drift by ±25% on 2 cores).

2. **Memory.**  For each of ``--rss-sizes`` rollouts, a JSONL file is written
   to a temporary directory and streamed through ``ace_graph.ingest.ingest_file``
   in a fresh subprocess; the subprocess reports its peak RSS
   (``resource.getrusage``) before and after the ingest.  Flat peak RSS
   across file sizes means memory does not grow with the file.

Goals printed beside the results: ACE ≥ 30× the baseline and ≥ 20,000 steps/s.

It WIPES the configured Neo4j database (every node).  Point it at a server of
its own, e.g. the managed one::

    export ACE_HOME=/tmp/ace-bench ACE_NEO4J_BOLT_PORT=17687 ACE_NEO4J_HTTP_PORT=17474
    .venv/bin/ace db start && .venv/bin/ace init
    .venv/bin/python benchmarks/ingest_bench.py                 # 20k rollouts, baseline 2k, RSS 5k/20k/50k
    .venv/bin/python benchmarks/ingest_bench.py --quick         # smoke run (under a minute)

Nothing is written into the repository; temporary files go to the system temp dir.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GOAL_RATIO = 30.0
GOAL_STEPS_PER_S = 20_000.0
#: Ratios to the write path's limit on the same machine, in the same run (issue 13).
GOAL_OF_LIMIT = 0.60  # ACE's ingest_batch, aggregates and idempotency included
GOAL_CLI_OF_LIMIT = 0.50  # `ace ingest` from the CLI on --cli-rollouts (process start, tasks, verification included)

#: The write path's limit: the same Rollout and Step nodes (with the same properties, the
#: previous oracle call's tool and skills included) and HAS_STEP / NEXT / OF_TASK
#: relationships, created bare: no aggregates, no MERGE, no idempotency check.
LIMIT_QUERY = """
UNWIND $rows AS row
OPTIONAL MATCH (t:Task {key: row.task_key})
CREATE (r:Rollout {id: row.id})
SET r += row.props, r.batch = $batch
FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END | CREATE (r)-[:OF_TASK]->(t))
WITH r, row
CALL (r, row) {
  UNWIND row.steps AS s
  CREATE (r)-[:HAS_STEP]->(st:Step {flat: s.flat, turn: s.turn, index: s.index, tool: s.tool,
                                    skills: s.skills, outcome: s.outcome,
                                    prev_tool: s.prev_tool, prev_skills: s.prev_skills})
  RETURN collect(st) AS chain
}
FOREACH (i IN range(0, size(chain) - 2) |
  FOREACH (a IN [chain[i]] | FOREACH (b IN [chain[i + 1]] | CREATE (a)-[:NEXT]->(b))))
RETURN count(r) AS n
"""


def limit_rows(records: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    """The same parameter rows ACE's ``ingest_batch`` sends (``GraphStore``'s ``rollout_row``)."""
    from ace_graph.store import rollout_row

    return [rollout_row(rec, tags) for rec, tags in records]

#: Planted weaknesses, so rollouts fail at various steps as real ones do.
WEAKNESS = {
    "defaults": {"error": 0.02},
    "tool": [{"name": "grep", "error": 0.3}, {"name": "mean", "error": 0.3}],
    "composition": [
        {"from": "get_zipcode_based_on_city", "to": "estimate_distance", "error": 0.3},
        {"from": "place_order", "to": "get_order_details", "error": 0.3},
    ],
}

EXPERIMENT = "ingest-bench"

# --------------------------------------------------------------------------- baseline Cypher
# One statement per row; values only as parameters.

BASE_SCOPE = """
MERGE (sc:Scope {key: $key})
ON CREATE SET sc.experiment = $experiment, sc.policy = $policy, sc.checkpoint = $checkpoint,
    sc.round = $round, sc.created = datetime(), sc.rollouts = 0, sc.rewarded = 0,
    sc.near_success = 0, sc.steps = 0, sc.pairs_skill = 0, sc.pairs_tool = 0
SET sc.updated = datetime()
"""

BASE_ROLLOUT = """
MERGE (r:Rollout {id: $id})
ON CREATE SET r += $props, r.batch = $batch
RETURN r.batch = $batch AS created
"""

BASE_OF_TASK = """
MATCH (r:Rollout {id: $id}), (t:Task {id: $task_id})
CREATE (r)-[:OF_TASK]->(t)
"""

BASE_STEP = """
MATCH (r:Rollout {id: $rollout})
CREATE (st:Step)
SET st = $props
CREATE (r)-[:HAS_STEP]->(st)
"""

BASE_NEXT = """
MATCH (a:Step {id: $a}), (b:Step {id: $b})
CREATE (a)-[:NEXT]->(b)
"""

BASE_MEASURED = {
    "skill": "MATCH (sc:Scope {key: $scope}), (k:Skill {id: $key})",
    "tool": "MATCH (sc:Scope {key: $scope}), (k:Tool {name: $key})",
}
BASE_MEASURED_SET = """
MERGE (sc)-[m:MEASURED]->(k)
ON CREATE SET m.level = $level, m.attempts = 0, m.failures = 0, m.as_pred = 0, m.as_succ = 0
SET m.attempts = m.attempts + $attempts, m.failures = m.failures + $failures,
    m.as_pred = m.as_pred + $as_pred, m.as_succ = m.as_succ + $as_succ
"""

BASE_COMPOSES = {
    "skill": "MATCH (a:Skill {id: $from}), (b:Skill {id: $to})",
    "tool": "MATCH (a:Tool {name: $from}), (b:Tool {name: $to})",
}
BASE_COMPOSES_SET = """
MERGE (a)-[c:COMPOSES {scope: $scope}]->(b)
ON CREATE SET c.n = 0, c.failures = 0, c.cooc = 0, c.examples = []
SET c.n = c.n + $n, c.failures = c.failures + $failures, c.cooc = c.cooc + $cooc,
    c.examples = (c.examples + $examples)[0..5]
"""

BASE_TOTALS = """
MATCH (sc:Scope {key: $scope})
SET sc.rollouts = sc.rollouts + $rollouts, sc.rewarded = sc.rewarded + $rewarded,
    sc.near_success = sc.near_success + $near_success, sc.steps = sc.steps + $steps,
    sc.pairs_skill = sc.pairs_skill + $pairs_skill, sc.pairs_tool = sc.pairs_tool + $pairs_tool
"""


def baseline_ingest_one(session: Any, scope: dict[str, Any], rec: Any, tags: tuple[Any, ...]) -> tuple[int, int]:
    """One rollout in one transaction, one statement per row. Returns (statements, steps)."""
    from ace_graph.outcomes import aggregate

    def work(tx: Any) -> tuple[int, int]:
        n = 0
        tx.run(BASE_SCOPE, **scope).consume()
        n += 1
        created = tx.run(BASE_ROLLOUT, id=rec.id, props=rec.props(), batch=uuid.uuid4().hex).single()["created"]
        n += 1
        if not created:
            return n, 0
        tx.run(BASE_OF_TASK, id=rec.id, task_id=rec.task_id).consume()
        n += 1
        prev_id = None
        for s in rec.steps:
            sid = f"{rec.id}#{s.flat}"
            props = {"id": sid, "flat": s.flat, "turn": s.turn, "index": s.index, "tool": s.tool,
                     "skills": list(s.skills), "outcome": s.outcome}
            tx.run(BASE_STEP, rollout=rec.id, props=props).consume()
            n += 1
            if prev_id is not None:
                tx.run(BASE_NEXT, a=prev_id, b=sid).consume()
                n += 1
            prev_id = sid
        agg = aggregate([(rec, tags)])
        for level in ("skill", "tool"):
            for row in agg.node_rows(level):
                tx.run(BASE_MEASURED[level] + BASE_MEASURED_SET, scope=scope["key"], level=level, **row).consume()
                n += 1
            for row in agg.edge_rows(level):
                tx.run(BASE_COMPOSES[level] + BASE_COMPOSES_SET, scope=scope["key"], **row).consume()
                n += 1
        tx.run(BASE_TOTALS, scope=scope["key"], **agg.totals()).consume()
        n += 1
        return n, agg.steps

    return session.execute_write(work)


# --------------------------------------------------------------------------- helpers

from _common import machine_facts  # noqa: E402  (benchmarks/ is on sys.path when run as a script)


def wipe(driver: Any, database: str) -> None:
    """Delete every node, in chunks so a large database does not exhaust the heap."""
    with driver.session(database=database) as s:
        s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()


def scope_of(policy: str, checkpoint: str = "c0") -> dict[str, Any]:
    return {"key": f"{EXPERIMENT}/{policy}/{checkpoint}", "experiment": EXPERIMENT, "policy": policy,
            "checkpoint": checkpoint, "round": 0}


def rescope(records: list[tuple[Any, Any]], scope_key: str) -> list[tuple[Any, Any]]:
    """The same records as ``prepare`` would give for another scope (only id and scope differ)."""
    return [(dataclasses.replace(rec, id=f"{scope_key}/{rec.rollout_id}", scope=scope_key), tags)
            for rec, tags in records]


def snapshot(driver: Any, database: str, key: str) -> dict[str, Any]:
    """Everything an ingest leaves in one scope, in comparable form."""
    with driver.session(database=database) as s:
        measured = sorted(
            (r["level"], r["k"], r["a"], r["f"], r["p"], r["s"]) for r in s.run(
                "MATCH (:Scope {key: $key})-[m:MEASURED]->(k) "
                "RETURN m.level AS level, coalesce(k.id, k.name) AS k, m.attempts AS a, m.failures AS f, "
                "m.as_pred AS p, m.as_succ AS s", key=key))
        composes = sorted(
            (r["a"], r["b"], r["n"], r["f"], r["c"], tuple(x.split("/")[-1] for x in r["ex"])) for r in s.run(
                "MATCH (a)-[c:COMPOSES {scope: $key}]->(b) "
                "RETURN coalesce(a.id, a.name) AS a, coalesce(b.id, b.name) AS b, c.n AS n, "
                "c.failures AS f, c.cooc AS c, c.examples AS ex", key=key))
        totals = s.run("MATCH (sc:Scope {key: $key}) RETURN sc.rollouts AS rollouts, sc.rewarded AS rewarded, "
                       "sc.near_success AS near_success, sc.steps AS steps, sc.pairs_skill AS pairs_skill, "
                       "sc.pairs_tool AS pairs_tool", key=key).single().data()
        counts = s.run("MATCH (r:Rollout {scope: $key}) "
                       "RETURN count(r) AS rollouts, sum(COUNT { (r)-[:HAS_STEP]->() }) AS steps, "
                       "sum(COUNT { (r)-[:HAS_STEP]->()-[:NEXT]->() }) AS next_links", key=key).single().data()
    return {"measured": measured, "composes": composes, "totals": totals, "stored": counts}


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


# --------------------------------------------------------------------------- memory child


def rss_child(path: str, checkpoint: str, batch_size: int) -> None:
    """Run in a fresh process: stream one file through ingest_file, print peak RSS as JSON."""
    from ace_env import bfcl
    from ace_graph.config import neo4j_settings
    from ace_graph.db import get_driver
    from ace_graph.ingest import ingest_file
    from ace_graph.store import GraphStore

    tasks = {t.id: t for t in bfcl.load_tasks("all")}
    driver = get_driver()
    store = GraphStore(driver, neo4j_settings().database)
    before = rss_mb()
    report = ingest_file(store, path, tasks, EXPERIMENT, "rss", checkpoint, batch_size=batch_size, seed_tasks=False,
                         estimate=False)
    after = rss_mb()
    driver.close()
    print(json.dumps({"rss_before_mb": before, "rss_peak_mb": after, "report": report.to_dict()}))


def write_jsonl(path: Path, tasks: list[Any], n: int, spec: Any, seed: int) -> None:
    from ace_env.sim import simulate

    with open(path, "w", encoding="utf-8") as f:
        for r in simulate(tasks, n, spec, seed, prefix="rss"):
            f.write(json.dumps(r) + "\n")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=20_000, help="rollouts ingested by ACE in the timed run")
    ap.add_argument("--baseline-rollouts", type=int, default=2_000,
                    help="the first this-many rollouts go through the one-transaction-per-rollout baseline")
    ap.add_argument("--batch-size", type=int, default=1000, help="ACE's rollouts per transaction")
    ap.add_argument("--workers", type=int, default=2, help="ACE's concurrent write transactions (as `ace ingest`)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs of ACE's write path and of the limit, alternated; medians reported")
    ap.add_argument("--warmup", type=int, default=200, help="rollouts ingested by each method before timing")
    ap.add_argument("--rss-sizes", default="5000,20000,50000",
                    help="comma-separated file sizes (rollouts) for the peak-RSS runs; '' skips them")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 300 rollouts, baseline 30, CLI 300, RSS sizes 100,300, one repeat")
    ap.add_argument("--cli-rollouts", type=int, default=4000,
                    help="rollouts for the timed `ace ingest` run from the CLI (0 skips it)")
    ap.add_argument("--cli-fresh-db", action="store_true",
                    help="also time the CLI run again on a wiped database (a first ingest, seeding every task); "
                         "the database is left holding only that run")
    ap.add_argument("--rss-child", nargs=2, metavar=("PATH", "CHECKPOINT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        rss_child(args.rss_child[0], args.rss_child[1], args.batch_size)
        return 0
    if args.quick:
        args.rollouts, args.baseline_rollouts, args.rss_sizes, args.warmup, args.repeat = 300, 30, "100,300", 10, 1
        args.cli_rollouts = min(args.cli_rollouts, 300)
    args.baseline_rollouts = min(args.baseline_rollouts, args.rollouts)

    from ace_env import bfcl
    from ace_env.formats import Rollout
    from ace_env.sim import parse_weakness, simulate
    from ace_graph.config import neo4j_settings
    from ace_graph.db import apply_schema, get_driver
    from ace_graph.ingest import prepare
    from ace_graph.store import GraphStore

    database = neo4j_settings().database
    driver = get_driver()
    print(machine_facts(driver, database))
    print(f"rollouts {args.rollouts:,} (ACE), baseline {args.baseline_rollouts:,}, batch size {args.batch_size}, "
          f"warm-up {args.warmup}, seed {args.seed}", flush=True)

    tasks = bfcl.load_tasks("all")
    by_id = {t.id: t for t in tasks}
    spec = parse_weakness(WEAKNESS, "ingest_bench")

    # -- prepare (verify + tag), outside the timed write path
    total = args.rollouts + args.warmup
    t0 = time.perf_counter()
    raw = [Rollout(r["rollout_id"], r["task_id"], r["turns"], k + 1, r["meta"])
           for k, r in enumerate(simulate(tasks, total, spec, args.seed))]
    sim_s = time.perf_counter() - t0
    ace_scope = scope_of("ace")
    errors: list[str] = []
    t0 = time.perf_counter()
    records = list(prepare(by_id, iter(raw), ace_scope["key"], 0.7, False, errors, "simulated"))
    prep_s = time.perf_counter() - t0
    del raw
    warm, timed = records[: args.warmup], records[args.warmup:]
    steps_all = sum(len(r.steps) for r, _ in timed)
    print(f"simulated {total:,} rollouts in {sim_s:.1f} s; verify+tag {total:,} in {prep_s:.1f} s "
          f"({total / prep_s:,.0f} rollouts/s); timed set: {len(timed):,} rollouts, {steps_all:,} steps", flush=True)
    prep_per_rollout = prep_s / total

    # -- fresh database
    t0 = time.perf_counter()
    wipe(driver, database)
    apply_schema(driver, database)
    store = GraphStore(driver, database)
    store.ensure_taxonomy()
    store.upsert_tasks(tasks)
    print(f"wiped database, seeded taxonomy and {len(tasks)} tasks in {time.perf_counter() - t0:.1f} s", flush=True)

    # -- warm-up (both methods, own scopes)
    if warm:
        ws = scope_of("ace-warmup")
        store.ingest_batch(ws, rescope(warm, ws["key"]))
        bs = scope_of("row-warmup")
        with driver.session(database=database) as session:
            for item in rescope(warm, bs["key"]):
                baseline_ingest_one(session, bs, *item)

    # -- baseline: one transaction per rollout (runs first, into the smaller database)
    row_scope = scope_of("row")
    base_set = rescope(timed[: args.baseline_rollouts], row_scope["key"])
    statements = base_steps = 0
    t0 = time.perf_counter()
    last = t0
    with driver.session(database=database) as session:
        for i, (rec, tags) in enumerate(base_set, 1):
            n, st = baseline_ingest_one(session, row_scope, rec, tags)
            statements += n
            base_steps += st
            if time.perf_counter() - last > 15:
                last = time.perf_counter()
                print(f"  baseline: {i:,}/{len(base_set):,} rollouts, {base_steps / (last - t0):,.0f} steps/s",
                      flush=True)
    base_s = time.perf_counter() - t0
    print(f"baseline done: {len(base_set):,} rollouts in {base_s:.1f} s", flush=True)

    # -- ACE (batched, --workers transactions at once, as `ace ingest` writes) and the write path's
    #    limit (the same nodes and relationships, bare CREATE, same batches and writers), alternated
    #    --repeat times, each run into a scope of its own; the medians are reported.
    from concurrent.futures import ThreadPoolExecutor

    def write_limit(chunk: list[dict[str, Any]]) -> int:
        with driver.session(database=database) as session:
            return session.execute_write(
                lambda tx: tx.run(LIMIT_QUERY, rows=chunk, batch=uuid.uuid4().hex).single()["n"])

    if args.repeat < 1:
        sys.exit("--repeat must be at least 1")
    if warm:  # the limit's query planned and run once, as ACE's and the baseline's were above
        write_limit(limit_rows(rescope(warm, scope_of("limit-warmup")["key"])))

    ace_set = timed
    ace_runs: list[float] = []
    limit_runs: list[float] = []
    for rep in range(args.repeat):
        scope = ace_scope if rep == 0 else scope_of(f"ace-r{rep}")
        ace_steps = created = 0
        t0 = time.perf_counter()
        last = t0
        chunks = [ace_set[i: i + args.batch_size] for i in range(0, len(ace_set), args.batch_size)]
        if rep:
            chunks = [rescope(c, scope["key"]) for c in chunks]
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            for res in pool.map(lambda chunk: store.ingest_batch(scope, chunk), chunks):
                ace_steps += res.steps
                created += res.created
                if time.perf_counter() - last > 15:
                    last = time.perf_counter()
                    print(f"  ACE: {created:,}/{len(ace_set):,} rollouts, {ace_steps / (last - t0):,.0f} steps/s",
                          flush=True)
        ace_runs.append(time.perf_counter() - t0)
        print(f"ACE run {rep + 1}/{args.repeat} done: {created:,} rollouts in {ace_runs[-1]:.1f} s", flush=True)

        limit_set = limit_rows(rescope(timed, scope_of(f"limit-r{rep}")["key"]))
        limit_chunks = [limit_set[i: i + args.batch_size] for i in range(0, len(limit_set), args.batch_size)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            limit_n = sum(pool.map(write_limit, limit_chunks))
        limit_runs.append(time.perf_counter() - t0)
        print(f"limit run {rep + 1}/{args.repeat} done: {limit_n:,} rollouts in {limit_runs[-1]:.1f} s", flush=True)
    ace_s, limit_s = statistics.median(ace_runs), statistics.median(limit_runs)
    limit_steps = sum(len(r["steps"]) for r in limit_set)
    if args.repeat > 1:
        print("ACE runs: " + ", ".join(f"{x:.1f} s" for x in ace_runs) + f"; median {ace_s:.1f} s. "
              "limit runs: " + ", ".join(f"{x:.1f} s" for x in limit_runs) + f"; median {limit_s:.1f} s", flush=True)

    # -- the CLI end to end: a fresh `ace ingest` process on a JSONL file (the tasks are seeded
    #    already, by the setup above: the common case, a user's second ingest)
    def run_cli(path: Path, checkpoint: str) -> tuple[dict[str, Any], float] | None:
        ace = str(Path(sys.executable).parent / "ace")
        t0 = time.perf_counter()
        proc = subprocess.run([ace, "ingest", str(path), "-e", "bench", "-p", "cli", "-c", checkpoint, "--tasks",
                               "bfcl:all", "--batch-size", str(args.batch_size), "--workers", str(args.workers),
                               "--json"], capture_output=True, text=True, cwd=str(ROOT))
        cli_s = time.perf_counter() - t0
        if proc.returncode != 0:
            print(f"CLI ingest failed:\n{proc.stderr[-2000:]}")
            return None
        rep = json.loads(proc.stdout.strip().splitlines()[-1])
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in rep.get("phase_seconds", {}).items())
        print(f"CLI done: {rep['created']:,} rollouts in {cli_s:.1f} s wall (process start and task loading "
              f"{cli_s - rep['seconds']:.1f} s; {phases})", flush=True)
        return rep, cli_s

    cli = cli_fresh = None
    tmpdir = tempfile.TemporaryDirectory(prefix="ace-ingest-cli-")
    cli_path = Path(tmpdir.name) / "cli.jsonl"
    if args.cli_rollouts:
        write_jsonl(cli_path, tasks, args.cli_rollouts, spec, args.seed + 7)
        cli = run_cli(cli_path, "c0")
        if cli is None:
            return 1

    # -- equivalence: ACE on the baseline's rollouts (untimed) vs the baseline
    if args.baseline_rollouts == len(timed):
        check_key = ace_scope["key"]
    else:
        check_scope = scope_of("ace-check")
        check_key = check_scope["key"]
        check_set = rescope(timed[: args.baseline_rollouts], check_key)
        for i in range(0, len(check_set), args.batch_size):
            store.ingest_batch(check_scope, check_set[i: i + args.batch_size])
    a, b = snapshot(driver, database, check_key), snapshot(driver, database, row_scope["key"])
    same = {k: a[k] == b[k] for k in a}

    # -- the CLI again on a wiped database: a first ingest, which seeds the taxonomy and every task
    if args.cli_rollouts and args.cli_fresh_db:
        wipe(driver, database)
        apply_schema(driver, database)
        cli_fresh = run_cli(cli_path, "c0")
        if cli_fresh is None:
            return 1
    tmpdir.cleanup()

    ace_rate, base_rate = ace_steps / ace_s, base_steps / base_s
    e2e_s = ace_s + prep_per_rollout * len(ace_set)
    ratio = ace_rate / base_rate
    print()
    print("== write path (verify+tag done before timing) ==")
    print(f"{'method':<44}{'rollouts':>10}{'steps':>10}{'seconds':>9}{'rollouts/s':>12}{'steps/s':>10}")
    print(f"{'baseline: 1 tx per rollout, 1 stmt per row':<44}{len(base_set):>10,}{base_steps:>10,}{base_s:>9.1f}"
          f"{len(base_set) / base_s:>12,.0f}{base_rate:>10,.0f}")
    print(f"{f'ACE ingest_batch (batch {args.batch_size}, {args.workers} writers)':<44}{len(ace_set):>10,}{ace_steps:>10,}{ace_s:>9.1f}"
          f"{len(ace_set) / ace_s:>12,.0f}{ace_rate:>10,.0f}")
    print(f"{'ACE end to end (verify+tag+write)':<44}{len(ace_set):>10,}{ace_steps:>10,}{e2e_s:>9.1f}"
          f"{len(ace_set) / e2e_s:>12,.0f}{ace_steps / e2e_s:>10,.0f}")
    limit_rate = limit_steps / limit_s
    print(f"{'limit: bare UNWIND..CREATE, no aggregates':<44}{len(limit_set):>10,}{limit_steps:>10,}{limit_s:>9.1f}"
          f"{len(limit_set) / limit_s:>12,.0f}{limit_rate:>10,.0f}")
    for label, run in ((f"ace ingest (CLI, wall, {args.cli_rollouts:,} rollouts)", cli),
                       ("  same, first ingest (seeds all tasks)", cli_fresh)):
        if run is not None:
            rep, cli_s = run
            print(f"{label:<44}{rep['read']:>10,}{rep['steps']:>10,}"
                  f"{cli_s:>9.1f}{rep['read'] / cli_s:>12,.0f}{rep['steps'] / cli_s:>10,.0f}")
    print(f"ACE ingest_batch / limit (steps/s): {ace_rate / limit_rate:.1%}   goal >= {GOAL_OF_LIMIT:.0%}: "
          f"{'MET' if ace_rate / limit_rate >= GOAL_OF_LIMIT else 'NOT MET'}")
    if cli is not None:
        cli_rate = cli[0]["steps"] / cli[1]
        print(f"ace ingest CLI / limit (steps/s): {cli_rate / limit_rate:.1%}   goal >= {GOAL_CLI_OF_LIMIT:.0%}: "
              f"{'MET' if cli_rate / limit_rate >= GOAL_CLI_OF_LIMIT else 'NOT MET'}  (tasks already seeded)")
        print(f"ace ingest CLI / ACE ingest_batch (steps/s): {cli_rate / ace_rate:.1%}   "
              f"(the same goal read against ACE's own write path: "
              f"{'MET' if cli_rate / ace_rate >= GOAL_CLI_OF_LIMIT else 'NOT MET'})")
    if cli_fresh is not None:
        fresh_rate = cli_fresh[0]["steps"] / cli_fresh[1]
        print(f"ace ingest CLI / limit, first ingest into an empty database: {fresh_rate / limit_rate:.1%}")
    print(f"baseline statements per rollout: {statements / max(len(base_set), 1):.1f}")
    print(f"ratio ACE/baseline (steps/s): {ratio:.1f}x   goal >= {GOAL_RATIO:.0f}x: "
          f"{'MET' if ratio >= GOAL_RATIO else 'NOT MET'}")
    print(f"ACE write rate: {ace_rate:,.0f} steps/s   goal >= {GOAL_STEPS_PER_S:,.0f} steps/s: "
          f"{'MET' if ace_rate >= GOAL_STEPS_PER_S else 'NOT MET'}")
    print(f"same aggregates as ACE on the baseline's {len(base_set):,} rollouts: "
          + ", ".join(f"{k} {'identical' if v else 'DIFFERENT'}" for k, v in same.items())
          + f" ({len(a['measured'])} MEASURED, {len(a['composes'])} COMPOSES edges)")
    if not all(same.values()):
        for k, v in same.items():
            if not v and not isinstance(a[k], list):
                print(f"  {k}: ACE {a[k]} vs baseline {b[k]}")
    driver.close()

    # -- memory: peak RSS of ingest_file over file sizes, each in a fresh process
    sizes = [int(x) for x in args.rss_sizes.split(",") if x.strip()]
    if sizes:
        print()
        print("== memory: ingest_file streaming a JSONL file, fresh process per size ==", flush=True)
        rows = []
        with tempfile.TemporaryDirectory(prefix="ace-ingest-bench-") as tmp:
            for n in sizes:
                path = Path(tmp) / f"rollouts-{n}.jsonl"
                write_jsonl(path, tasks, n, spec, args.seed + 1000 + n)
                mb = path.stat().st_size / 2**20
                path_size = f"{mb:,.1f} MiB"
                proc = subprocess.run(
                    [sys.executable, __file__, "--rss-child", str(path), f"n{n}", "--batch-size", str(args.batch_size)],
                    capture_output=True, text=True, cwd=str(ROOT))
                if proc.returncode != 0:
                    print(f"  size {n}: child failed:\n{proc.stderr[-2000:]}")
                    return 1
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                path.unlink()
                rows.append((n, path_size, out))
                rep = out["report"]
                print(f"  {n:,} rollouts: peak RSS {out['rss_peak_mb']:.0f} MiB, "
                      f"{rep['steps_per_s']:,.0f} steps/s end to end", flush=True)
        print(f"{'rollouts':>10}{'file':>12}{'RSS after setup MiB':>21}{'peak RSS MiB':>14}{'growth MiB':>12}"
              f"{'e2e rollouts/s':>16}{'e2e steps/s':>13}")
        for n, size, out in rows:
            rep = out["report"]
            print(f"{n:>10,}{size:>12}{out['rss_before_mb']:>21.0f}{out['rss_peak_mb']:>14.0f}"
                  f"{out['rss_peak_mb'] - out['rss_before_mb']:>12.0f}{rep['rollouts_per_s']:>16,.0f}"
                  f"{rep['steps_per_s']:>13,.0f}")
        peaks = [out["rss_peak_mb"] for _, _, out in rows]
        print(f"peak RSS spread across sizes: {max(peaks) - min(peaks):.0f} MiB "
              f"({sizes[0]:,} -> {sizes[-1]:,} rollouts, {sizes[-1] / sizes[0]:.0f}x the file)")
        print("(ingest_file's end-to-end rate includes JSON parsing, verify+tag and the writes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
