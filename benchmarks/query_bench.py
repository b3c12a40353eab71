"""Latency of the analyst queries with a large graph stored: p50 / p95 per named query.

Measures ``weak-compositions``, ``frontier`` and ``capability-profile``
(each at tool and at skill level) through the Python driver, exactly as
``GraphStore.run`` runs them (one session and read transaction per call),
``--runs`` times each after ``--warmup`` untimed runs, against one scope of a
database holding ``--rollouts`` rollouts (default 1,000,000) spread over
``--scopes`` scopes (checkpoints), as a training history would be.  It also
PROFILEs each query once and prints its total db hits, and prints the goal
(p95 ≤ 50 ms) beside each result.

Loading: rollouts come from the simulated agent (``ace_env.sim``, a few planted
weaknesses so the queries return rows), are verified and tagged with
``ace_graph.ingest.prepare`` and written with ``GraphStore.ingest_batch`` in
large batches (``--batch-size``), after seeding the taxonomy and tasks once.
Most simulated rollouts repeat an earlier (task, calls) pair exactly, so
verify+tag results are cached by (task, calls) and reused with the new
rollout id: the stored records are the same ``prepare`` would give.  The load
prints progress and stops at ``--max-load-minutes`` (the table then says how
many rollouts were actually stored).  ``--keep`` reuses what an earlier run
loaded (it checks the stored count and loads only what is missing).

Without ``--keep`` it WIPES the configured Neo4j database.  Use a server of its own::

    export ACE_HOME=/tmp/ace-bench ACE_NEO4J_BOLT_PORT=17687 ACE_NEO4J_HTTP_PORT=17474
    .venv/bin/ace db start && .venv/bin/ace init
    .venv/bin/python benchmarks/query_bench.py                # 1M rollouts (long load; printed)
    .venv/bin/python benchmarks/query_bench.py --keep         # rerun on the loaded database
    .venv/bin/python benchmarks/query_bench.py --quick        # 2k rollouts, smoke run

Nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ace_graph.stats import MIN_LIFT, MIN_SUPPORT  # noqa: E402

GOAL_P95_MS = 50.0
EXPERIMENT = "query-bench"

WEAKNESS = {
    "defaults": {"error": 0.02},
    "tool": [{"name": "grep", "error": 0.3}, {"name": "mean", "error": 0.3}, {"name": "send_message", "error": 0.3}],
    "composition": [
        {"from": "get_zipcode_based_on_city", "to": "estimate_distance", "error": 0.3},
        {"from": "place_order", "to": "get_order_details", "error": 0.3},
        {"from": "get_stock_info", "to": "place_order", "error": 0.3},
        {"from": "book_flight", "to": "retrieve_invoice", "error": 0.3},
        {"from": "cd", "to": "mv", "error": 0.3},
    ],
}

#: (label, query name, parameters other than scope)
CASES = [
    ("weak-compositions tool", "weak-compositions", {"level": "tool", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "limit": 50}),
    ("weak-compositions skill", "weak-compositions", {"level": "skill", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "limit": 50}),
    ("frontier tool", "frontier",
     {"level": "tool", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "min_prereq": 0.6, "limit": 50}),
    ("frontier skill", "frontier",
     {"level": "skill", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "min_prereq": 0.6, "limit": 50}),
    ("capability-profile tool", "capability-profile", {"level": "tool"}),
    ("capability-profile skill", "capability-profile", {"level": "skill"}),
]


from _common import machine_facts  # noqa: E402  (benchmarks/ is on sys.path when run as a script)


def scope_of(i: int) -> dict[str, Any]:
    return {"key": f"{EXPERIMENT}/sim/ckpt-{i}", "experiment": EXPERIMENT, "policy": "sim",
            "checkpoint": f"ckpt-{i}", "round": i}


def stored(driver: Any, database: str) -> tuple[int, dict[str, int]]:
    """All Rollout nodes, and this benchmark's rollouts per scope."""
    with driver.session(database=database) as s:
        total = s.run("MATCH (r:Rollout) RETURN count(r) AS n").single()["n"]
        per = {r["key"]: r["n"] for r in s.run(
            "MATCH (sc:Scope) WHERE sc.experiment = $e RETURN sc.key AS key, sc.rollouts AS n", e=EXPERIMENT)}
    return total, per


class Loader:
    """Simulate, verify+tag (cached by identical task and calls) and ingest in large batches."""

    def __init__(self, store: Any, tasks: list[Any], seed: int, batch_size: int, deadline: float):
        from ace_env.sim import parse_weakness

        self.store, self.tasks, self.seed, self.batch_size, self.deadline = store, tasks, seed, batch_size, deadline
        self.by_id = {t.id: t for t in tasks}
        self.spec = parse_weakness(WEAKNESS, "query_bench")
        self.cache: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.hits = self.misses = 0
        self.prep_s = self.write_s = self.sim_s = 0.0

    def record(self, r: dict[str, Any], key: str, line: int) -> tuple[Any, Any]:
        from ace_env.formats import Rollout
        from ace_graph.ingest import prepare

        ck = (r["task_id"], json.dumps(r["turns"]))
        hit = self.cache.get(ck)
        if hit is None:
            self.misses += 1
            if len(self.cache) > 300_000:
                self.cache.clear()
            rollout = Rollout(r["rollout_id"], r["task_id"], r["turns"], line, r["meta"])
            hit = self.cache[ck] = next(prepare(self.by_id, iter([rollout]), key, 0.7, False, [], "simulated"))
            return hit
        self.hits += 1
        rec, tags = hit
        return dataclasses.replace(rec, id=f"{key}/{r['rollout_id']}", rollout_id=r["rollout_id"], scope=key), tags

    def load(self, scope: dict[str, Any], index: int, start: int, stop: int, on_batch: Any) -> int:
        """Rollouts start..stop-1 of scope ``index``; returns how many were written (stops at the deadline)."""
        from ace_env.sim import simulate_rollout

        done, k = 0, start
        while k < stop and time.monotonic() < self.deadline:
            hi = min(stop, k + self.batch_size)
            t0 = time.perf_counter()
            raw = [simulate_rollout(self.tasks, j, self.spec, self.seed + index, prefix=f"q{index}") for j in range(k, hi)]
            t1 = time.perf_counter()
            batch = [self.record(r, scope["key"], j + 1) for j, r in zip(range(k, hi), raw)]
            t2 = time.perf_counter()
            self.store.ingest_batch(scope, batch)
            t3 = time.perf_counter()
            self.sim_s += t1 - t0
            self.prep_s += t2 - t1
            self.write_s += t3 - t2
            done += hi - k
            k = hi
            on_batch(len(batch))
        return done


def db_hits(plan: Any) -> int:
    if plan is None:
        return 0
    own = plan.get("dbHits", 0) if isinstance(plan, dict) else getattr(plan, "db_hits", 0)
    children = plan.get("children", []) if isinstance(plan, dict) else getattr(plan, "children", [])
    return own + sum(db_hits(c) for c in children)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rollouts", type=int, default=1_000_000, help="rollouts stored in all (default 1,000,000)")
    ap.add_argument("--scopes", type=int, default=10, help="scopes (checkpoints) the rollouts are spread over")
    ap.add_argument("--batch-size", type=int, default=5000, help="rollouts per ingest transaction while loading")
    ap.add_argument("--max-load-minutes", type=float, default=90.0, help="stop loading after this long")
    ap.add_argument("--runs", type=int, default=100, help="timed runs per query (at least 50)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs per query first")
    ap.add_argument("--keep", action="store_true", help="reuse the loaded database; load only what is missing")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 rollouts over 2 scopes, 50 runs")
    args = ap.parse_args(argv)
    if args.quick:
        args.rollouts, args.scopes, args.runs, args.warmup, args.batch_size = 2_000, 2, 50, 5, 1000
    if args.runs < 50:
        ap.error("--runs must be at least 50")

    from ace_env import bfcl
    from ace_graph import queries
    from ace_graph.config import neo4j_settings
    from ace_graph.db import apply_schema, get_driver
    from ace_graph.store import GraphStore

    database = neo4j_settings().database
    driver = get_driver()
    store = GraphStore(driver, database)
    print(machine_facts(driver, database))
    per_scope = args.rollouts // args.scopes
    target = {scope_of(i)["key"]: per_scope + (1 if i < args.rollouts % args.scopes else 0) for i in range(args.scopes)}
    print(f"target: {args.rollouts:,} rollouts over {args.scopes} scopes; queries run against "
          f"{scope_of(args.scopes - 1)['key']}", flush=True)

    tasks = bfcl.load_tasks("all")
    total, per = stored(driver, database)
    if not args.keep or not per:
        if args.keep:
            print("--keep: nothing of this benchmark is stored yet; loading")
        t0 = time.perf_counter()
        with driver.session(database=database) as s:
            s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
        print(f"wiped the database in {time.perf_counter() - t0:.1f} s", flush=True)
        apply_schema(driver, database)
        store.ensure_taxonomy()
        store.upsert_tasks(tasks)
        per = {}
    else:
        print(f"--keep: {total:,} Rollout nodes stored, {sum(per.values()):,} in this benchmark's scopes")

    missing = {k: n - per.get(k, 0) for k, n in target.items() if per.get(k, 0) < n}
    load_s = 0.0
    if missing:
        todo = sum(missing.values())
        print(f"loading {todo:,} rollouts (batch {args.batch_size:,}, stop after {args.max_load_minutes:g} min)", flush=True)
        deadline = time.monotonic() + args.max_load_minutes * 60
        loader = Loader(store, tasks, args.seed, args.batch_size, deadline)
        t0 = time.perf_counter()
        state = {"done": 0, "last": t0}

        def on_batch(n: int) -> None:
            state["done"] += n
            now = time.perf_counter()
            if now - state["last"] >= 20 or state["done"] == todo:
                state["last"] = now
                d = state["done"]
                rate = d / (now - t0)
                print(f"  loaded {d:,}/{todo:,} ({rate:,.0f} rollouts/s; simulate {loader.sim_s:.0f} s, "
                      f"verify+tag {loader.prep_s:.0f} s, write {loader.write_s:.0f} s; "
                      f"ETA {(todo - d) / rate / 60:.1f} min)", flush=True)

        for i in range(args.scopes):
            scope = scope_of(i)
            if scope["key"] in missing:
                loader.load(scope, i, per.get(scope["key"], 0), target[scope["key"]], on_batch)
            if time.monotonic() > deadline:
                print(f"  load time limit reached after {state['done']:,} rollouts")
                break
        load_s = time.perf_counter() - t0
        done = state["done"]
        print(f"loaded {done:,} rollouts in {load_s:.0f} s ({done / max(load_s, 1e-9):,.0f} rollouts/s): "
              f"simulate {loader.sim_s:.0f} s, verify+tag {loader.prep_s:.0f} s "
              f"({loader.misses:,} verified, {loader.hits:,} reused), write {loader.write_s:.0f} s", flush=True)
    total, per = stored(driver, database)
    mine = sum(per.values())
    print(f"stored: {total:,} Rollout nodes ({mine:,} in this benchmark's {len(per)} scopes)"
          + ("" if mine >= args.rollouts else f"  -- SHORT of the {args.rollouts:,} target"), flush=True)
    with driver.session(database=database) as s:
        counts = s.run("MATCH (n) RETURN count(n) AS nodes").single()["nodes"], \
            s.run("MATCH ()-[r]->() RETURN count(r) AS rels").single()["rels"]
    print(f"graph: {counts[0]:,} nodes, {counts[1]:,} relationships")

    scope_key = scope_of(args.scopes - 1)["key"]
    # The composition estimator runs on demand (ace diagnose) or after ace ingest, not on the
    # read path: fit it once on the measured scope so the queries below read stored verdicts.
    from ace_graph.estimate import estimate_scope

    for level in ("tool", "skill"):
        est = estimate_scope(store, scope_key, level)
        print(f"estimate {level} (on demand, stored on the edges): {est.steps:,} steps, {est.cells:,} cells, "
              f"{est.edges} edges, {est.seconds:.1f} s; verdicts {est.verdicts}", flush=True)
    rows_out = []
    for label, name, params in CASES:
        q = queries.load(name)
        p = {"scope": scope_key, **params}
        p = {k: v for k, v in p.items() if k in q.params}
        for _ in range(args.warmup):
            store.run(name, **p)
        times = []
        n_rows = 0
        for _ in range(args.runs):
            t0 = time.perf_counter()
            rows = store.run(name, **p)
            times.append((time.perf_counter() - t0) * 1000)
            n_rows = len(rows)
        with driver.session(database=database) as s:
            summary = s.run("PROFILE " + q.text, p).consume()
        hits = db_hits(summary.profile)
        times.sort()
        p50 = statistics.median(times)
        p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
        rows_out.append((label, n_rows, p50, p95, times[-1], hits))
        print(f"  {label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms", flush=True)

    print()
    print(f"== query latency, scope {scope_key}, {args.runs} runs each after {args.warmup} warm-up, "
          f"{mine:,} rollouts stored ==")
    print(f"{'query':<28}{'rows':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'db hits':>10}   goal p95 <= {GOAL_P95_MS:.0f} ms")
    for label, n_rows, p50, p95, mx, hits in rows_out:
        print(f"{label:<28}{n_rows:>6}{p50:>9.1f}{p95:>9.1f}{mx:>9.1f}{hits:>10,}   "
              f"{'MET' if p95 <= GOAL_P95_MS else 'NOT MET'}")
    if load_s:
        print(f"load time: {load_s:.0f} s for {state['done']:,} rollouts")
    driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
