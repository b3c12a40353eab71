"""ACE's verifier vs BFCL's official multi-turn checker, side by side.

Both judge the same rollouts: every scored task's ground truth plus
``--per-task`` perturbed rollouts per task (drop / insert / swap / alter /
act early / call a withheld tool).  "cold" includes building every
task's oracle once in the timed run; "warm" has the oracles cached already,
as in a training loop that verifies the same tasks round after round.  BFCL's
checker re-executes the ground truth for every rollout, as it always does.

    .venv/bin/python benchmarks/verify_bench.py [--category all] [--per-task 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from ace_env import bfcl
from ace_env.official import official_check
from ace_env.perturb import perturbed_set
from ace_env.verifier import clear_oracle_cache, ground_truth_rollout, oracle_for, verify


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--category", default="all")
    ap.add_argument("--per-task", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each checker; the median is reported")
    args = ap.parse_args()

    tasks = bfcl.load_tasks(args.category)
    by_id = {t.id: t for t in tasks}
    work = [(t, ground_truth_rollout(t)) for t in tasks]
    work += [(by_id[p.task_id], p.turns) for p in perturbed_set(tasks, args.per_task, args.seed)]
    print(f"{len(tasks)} tasks, {len(work)} rollouts ({len(work) - len(tasks)} perturbed)")

    def run_ace():
        clear_oracle_cache()
        return [verify(t, r).reward == 1.0 for t, r in work]

    def run_ace_warm():
        for t in tasks:
            oracle_for(t)
        return [verify(t, r).reward == 1.0 for t, r in work]

    def run_official():
        return [official_check(t, r)["valid"] for t, r in work]

    times: dict[str, list[float]] = {"ace": [], "bfcl": [], "ace_warm": []}
    results: dict[str, list[bool]] = {}
    for _ in range(args.repeat):
        for name, fn in (("bfcl", run_official), ("ace", run_ace), ("ace_warm", run_ace_warm)):
            if name == "ace_warm":
                run_ace_warm()  # fill the oracle cache outside the timed region
            gc.collect()
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)

    ace_t, off_t = statistics.median(times["ace"]), statistics.median(times["bfcl"])
    warm_t = statistics.median(times["ace_warm"])
    ace_acc, off_acc = sum(results["ace"]), sum(results["bfcl"])
    looser = sum(1 for a, b in zip(results["ace"], results["bfcl"]) if a and not b)
    stricter = sum(1 for a, b in zip(results["ace"], results["bfcl"]) if b and not a)
    print()
    print(f"{'checker':<24}{'rollouts/s':>12}{'median s':>10}{'accepted':>10}{'rejected':>10}")
    print(f"{'BFCL multi_turn_checker':<24}{len(work) / off_t:>12.0f}{off_t:>10.2f}{off_acc:>10}{len(work) - off_acc:>10}")
    print(f"{'ACE verifier (cold)':<24}{len(work) / ace_t:>12.0f}{ace_t:>10.2f}{ace_acc:>10}{len(work) - ace_acc:>10}")
    print(f"{'ACE verifier (warm)':<24}{len(work) / warm_t:>12.0f}{warm_t:>10.2f}{sum(results['ace_warm']):>10}{len(work) - sum(results['ace_warm']):>10}")
    print()
    print(f"speed ratio ACE/BFCL: cold {off_t / ace_t:.2f}x, warm {off_t / warm_t:.2f}x")
    print(f"ACE rejects what BFCL accepts: {stricter}; ACE accepts what BFCL rejects: {looser}")


if __name__ == "__main__":
    main()
