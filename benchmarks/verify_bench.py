"""ACE's verifier vs BFCL's official multi-turn checker, side by side.

Both judge the same rollouts: every scored task's ground truth plus
``--per-task`` perturbed rollouts per task (drop / insert / swap / alter /
act early / call a withheld tool).  "cold" includes building every
task's oracle once in the timed run; "warm" has the oracles cached already,
as in a training loop that verifies the same tasks round after round.  BFCL's
checker re-executes the ground truth for every rollout, as it always does.
"bounded" is what `ace verify` and `ace ingest` run: the cold verifier in a
forked, watched worker process with every tool call under the default budget
(ace_env.bounded), worker start and result transfer included.  The disk
cache of oracles is off (``ACE_CACHE=off``): "cold" builds every oracle in the
timed run, none is read back from ``$ACE_HOME/cache``.

    .venv/bin/python benchmarks/verify_bench.py [--category all] [--per-task 3] [--repeat 3]
    .venv/bin/python benchmarks/verify_bench.py --quick     # base tasks, 1 perturbed each, one run (CI smoke)
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections import Counter

from ace_env import bfcl
from ace_env.bounded import BoundedVerifier
from ace_env.official import official_check
from ace_env.oracle import clear_oracle_cache, oracle_for
from ace_env.perturb import perturbed_set
from ace_env.verifier import ground_truth_rollout, verify


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--category", default="all")
    ap.add_argument("--per-task", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each checker; the median is reported")
    ap.add_argument("--quick", action="store_true", help="--category base --per-task 1 --repeat 1 (CI smoke)")
    args = ap.parse_args(argv)
    if args.quick:
        args.category, args.per_task, args.repeat = "base", 1, 1
    # Cold means built: an oracle read back from the disk cache (written by an earlier repeat
    # or run) would make the cold rows warm.  The forked worker inherits this.
    os.environ["ACE_CACHE"] = "off"

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

    def run_bounded():
        clear_oracle_cache()
        with BoundedVerifier(by_id) as bv:
            verdicts = bv.verify_many([(t.id, r, None) for t, r in work])
        return [v.reward == 1.0 for v in verdicts]

    def run_official():
        return [official_check(t, r)["valid"] for t, r in work]

    times: dict[str, list[float]] = {"ace": [], "bfcl": [], "ace_warm": [], "ace_bounded": []}
    results: dict[str, list[bool]] = {}
    for _ in range(args.repeat):
        for name, fn in (("bfcl", run_official), ("ace", run_ace), ("ace_bounded", run_bounded),
                         ("ace_warm", run_ace_warm)):
            if name == "ace_warm":
                run_ace_warm()  # fill the oracle cache outside the timed region
            gc.collect()
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)

    ace_t, off_t = statistics.median(times["ace"]), statistics.median(times["bfcl"])
    warm_t = statistics.median(times["ace_warm"])
    bounded_t = statistics.median(times["ace_bounded"])
    if results["ace_bounded"] != results["ace"]:
        raise SystemExit("bounded verdicts differ from in-process verdicts")
    ace_acc, off_acc = sum(results["ace"]), sum(results["bfcl"])
    looser = sum(1 for a, b in zip(results["ace"], results["bfcl"]) if a and not b)
    stricter = sum(1 for a, b in zip(results["ace"], results["bfcl"]) if b and not a)
    print()
    print(f"{'checker':<24}{'rollouts/s':>12}{'median s':>10}{'accepted':>10}{'rejected':>10}")
    print(f"{'BFCL multi_turn_checker':<24}{len(work) / off_t:>12.0f}{off_t:>10.2f}{off_acc:>10}{len(work) - off_acc:>10}")
    print(f"{'ACE verifier (cold)':<24}{len(work) / ace_t:>12.0f}{ace_t:>10.2f}{ace_acc:>10}{len(work) - ace_acc:>10}")
    print(f"{'ACE verifier (bounded)':<24}{len(work) / bounded_t:>12.0f}{bounded_t:>10.2f}{sum(results['ace_bounded']):>10}{len(work) - sum(results['ace_bounded']):>10}")
    print(f"{'ACE verifier (warm)':<24}{len(work) / warm_t:>12.0f}{warm_t:>10.2f}{sum(results['ace_warm']):>10}{len(work) - sum(results['ace_warm']):>10}")
    print()
    print(f"speed ratio ACE/BFCL: cold {off_t / ace_t:.2f}x, cold bounded {off_t / bounded_t:.2f}x, "
          f"warm {off_t / warm_t:.2f}x")
    print(f"bounded overhead over cold in-process: {bounded_t / ace_t - 1:+.1%}")
    print(f"ACE rejects what BFCL accepts: {stricter}; ACE accepts what BFCL rejects: {looser}")
    # The diagnosis's default (`ace verify` / `ace ingest` without --strict): ACE's stricter rules only listed.
    strict_v = [verify(t, r) for t, r in work]
    reference = [verify(t, r, strict=False).reward == 1.0 for t, r in work]
    ref_stricter = sum(1 for a, b in zip(reference, results["bfcl"]) if b and not a)
    ref_looser = sum(1 for a, b in zip(reference, results["bfcl"]) if a and not b)
    labels = Counter(", ".join(v.stricter_because) or "(none)" for v, b in zip(strict_v, results["bfcl"])
                     if b and v.reward != 1.0)
    print(f"without --strict (untimed): ACE rejects what BFCL accepts: {ref_stricter}; "
          f"ACE accepts what BFCL rejects: {ref_looser}")
    print(f"the strict verdicts' disagreements by stricter_because: {dict(labels.most_common())}")


if __name__ == "__main__":
    main()
