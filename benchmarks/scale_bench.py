"""Verification throughput spread over Ray workers: 1 and 2 workers on this machine, or a real cluster.

The same rollouts (every base task's ground truth plus ``--per-task``
perturbed ones, repeated ``--copies`` times) are verified

* locally, by the watched worker of ``ace verify`` (``ace_env.bounded``), and
* on Ray with 1, 2, ... workers (``ace_env.scaleout.RayVerifier``, what
  ``--ray`` uses), every worker with its own watched process and budget;

and every run must give the same verdicts as the local one (checked).  Oracles
are built on each worker as it meets a task (cold), as in a real run.

This machine (a local Ray started by the script with ``num_cpus`` = workers)::

    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/scale_bench.py --workers 1,2

A real cluster (started with ``ray start --head`` / ``ray start --address``;
the tasks travel through Ray's object store, ACE must be installed on every
node)::

    .venv/bin/python benchmarks/scale_bench.py --address HEAD:6379

A smoke run (CI): a local Ray with one worker, base tasks, one copy, one timed run::

    .venv/bin/python benchmarks/scale_bench.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts for a local Ray (ignored with --address)")
    ap.add_argument("--address", default=None, help="a running Ray cluster's address (host:port) instead of a local Ray")
    ap.add_argument("--category", default="base")
    ap.add_argument("--per-task", type=int, default=3)
    ap.add_argument("--copies", type=int, default=2, help="repeat the rollout set (more work per worker)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=2, help="timed runs per setting; the median is reported")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: a local Ray with 1 worker, --per-task 1 --copies 1 --repeat 1")
    args = ap.parse_args(argv)
    if args.quick:
        args.workers, args.address, args.per_task, args.copies, args.repeat = "1", None, 1, 1, 1

    import ray

    from ace_env import bfcl
    from ace_env.bounded import BoundedVerifier
    from ace_env.oracle import clear_oracle_cache
    from ace_env.perturb import perturbed_set
    from ace_env.scaleout import RayVerifier
    from ace_env.verifier import ground_truth_rollout

    tasks = bfcl.load_tasks(args.category)
    by_id = {t.id: t for t in tasks}
    items = [(t.id, ground_truth_rollout(t), f"gt-{t.id}") for t in tasks]
    items += [(p.task_id, p.turns, f"p{k}") for k, p in enumerate(perturbed_set(tasks, args.per_task, 0))]
    items = [(tid, turns, f"{rid}#{c}") for c in range(args.copies) for tid, turns, rid in items]
    print(f"{len(tasks)} tasks, {len(items)} rollouts")

    def key(results):
        return [(r.rollout_id, r.reward, r.attribution, r.failing_turn, r.failing_step) for r in results]

    def timed(fn):
        times, out = [], None
        for _ in range(args.repeat):
            clear_oracle_cache()
            start = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times), out

    def run_local():
        with BoundedVerifier(by_id) as bv:
            return bv.verify_many(items)

    local_s, local = timed(run_local)
    reference = key(local)
    rows = [("local watched worker (ace verify)", 1, local_s, True)]

    settings = [(args.address, None)] if args.address else [(None, int(n)) for n in args.workers.split(",")]
    for address, n in settings:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(address="local", num_cpus=n, include_dashboard=False, log_to_driver=False)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # Start the Ray worker processes outside the timed runs; each timed run then ships the tasks
        # afresh, so every worker starts a new watched process with cold oracles, like a new run.
        RayVerifier(by_id, batch_size=args.batch_size).verify_many(items[: args.batch_size * cpus])
        seconds, results = timed(lambda: RayVerifier(by_id, batch_size=args.batch_size).verify_many(items))
        rows.append((f"Ray, {cpus} worker(s)" + (f" at {address}" if address else ""), cpus, seconds,
                     key(results) == reference))
        ray.shutdown()

    print(f"{'setting':<40}{'workers':>8}{'rollouts/s':>12}{'median s':>10}{'speed-up':>10}{'same verdicts':>15}")
    one = next((s for name, w, s, _ in rows if name.startswith("Ray") and w == 1), local_s)
    for name, w, s, same in rows:
        print(f"{name:<40}{w:>8}{len(items) / s:>12,.0f}{s:>10.2f}{one / s:>9.2f}x{str(same):>15}")
    return 0 if all(same for *_, same in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
