"""Adversarial synthesis: throughput, validity, targeting, and whether it hits the weakness.

Runs the four-stage pipeline (``synth.pipeline.synthesize``) on BFCL seeds
against a fixed frontier of planted weak compositions, with the simulated
agent that has exactly those weaknesses as the policy, and prints in one run:

* throughput: verified tasks per second (synthesis + task verification +
  trajectory rollouts + trajectory verification, all on this machine);
* validity: share of emitted tasks that pass ``check_task`` again after a
  JSONL round trip, and, for the BFCL-exportable ones, share whose ground
  truth BFCL's official checker replays cleanly;
* targeting: share of tasks whose oracle contains the target composition;
* export coverage: share of the mixed synthesized set each export format
  writes (skips by reason, notes), and for the BFCL files, the share of
  exported ground truths BFCL's official checker replays and of empty
  rollouts it rejects;
* hitting the weakness: the simulated agent's pass rate on the targeted tasks
  against (a) the oracle-preserving random augmentation of the *same seeds*
  (the CoVERT-style baseline, strategy ``random``) and (b) random augmentation
  of seeds drawn from all BFCL tasks; plus the share of tasks in the learnable
  zone (the agent passes some but not all of its rollouts).

    .venv/bin/python benchmarks/synth_bench.py [--n 400] [--rollouts 8] [--seed 0]
    .venv/bin/python benchmarks/synth_bench.py --quick      # --n 20 --rollouts 2 (CI smoke)
    .venv/bin/python benchmarks/synth_bench.py --n 100 --phases   # and where the CPU goes
    .venv/bin/python benchmarks/synth_bench.py --n 100 --compare 7  # copy prediction vs the old path
    .venv/bin/python benchmarks/synth_bench.py --hardness [--work DIR] [--quick]  # benchmarks/synth_hardness.py

``--compare K`` runs the targeted synthesis alone in 2K fresh processes, in pairs (one with the copy
prediction, ``SynthConfig.predict_copies``, one on the old path that builds and executes every candidate
before the diversity rules see it; the order alternates), and prints the verified tasks per CPU second of
each, the medians, their ratio, and whether every run made the same tasks.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from ace_env import bfcl
from ace_env.bfcl.export import BFCL_ANSWER_FILE, BFCL_LONG_ANSWER_FILE, BFCL_LONG_QUESTION_FILE, BFCL_QUESTION_FILE
from ace_env.official import official_check, official_check_entry
from ace_env.sim import parse_weakness
from ace_env.tasksets import load_task_set
from ace_env.verifier import ground_truth_rollout, verify
from ace_graph.compositions import adjacent_pairs
from ace_graph.tagger import tag_task
from synth import pipeline
from synth.checks.parts import target_present
from synth.checks.seeds import seed_problems
from synth.checks.values import value_provenance
from synth.pipeline import SynthConfig, sim_policy, synthesize, write_tasks
from synth.repair import usable_version
from synth.strategies import synthesize as apply_strategy
from synth.taskcheck import check_task
from train.export import FORMATS, export

TARGETS = [
    ("get_zipcode_based_on_city", "estimate_distance"),
    ("get_stock_info", "place_order"),
    ("book_flight", "retrieve_invoice"),
    ("cd", "mv"),
    ("place_order", "get_order_details"),
]


def targets_setup(seeds: dict[str, Any], long_context: bool = True) -> tuple[list[dict], dict, Any]:
    """What every synthesis run of these benchmarks is given: a frontier of the TARGETS (all alike), each
    target's seeds among ``seeds`` (in their order; without ``long_context``, no long-context seed) and the
    simulated agent that slips on the targets (and on grep and mean)."""
    by_target: dict[tuple[str, str], list[str]] = {t: [] for t in TARGETS}
    for task in seeds.values():
        if not long_context and task.long_context:
            continue
        pairs = set(adjacent_pairs(tag_task(task))[0])
        for a, b in TARGETS:
            if f"{a}>{b}" in pairs:
                by_target[(a, b)].append(task.id)
    frontier = [{"from": a, "to": b, "n": 100, "fragility": 0.5, "fragility_low": 0.4} for a, b in TARGETS]
    weakness = parse_weakness({
        "defaults": {"error": 0.02},
        "tool": [{"name": "grep", "error": 0.35}, {"name": "mean", "error": 0.3}],
        "composition": [{"from": a, "to": b, "error": 0.5} for a, b in TARGETS],
    })
    return frontier, by_target, sim_policy(weakness)


def _pass_rate(tasks, policy, rollouts: int, seed: int) -> tuple[float, float]:
    passed = total = learnable = 0
    for task in tasks:
        wins = sum(verify(task, policy(task, random.Random(f"{seed}:{task.id}:{k}"))).reward == 1.0
                   for k in range(rollouts))
        passed += wins
        total += rollouts
        learnable += 0 < wins < rollouts
    return (passed / total if total else float("nan"), learnable / len(tasks) if tasks else float("nan"))


@contextlib.contextmanager
def phases(show: bool):
    """With ``show``, print the CPU seconds of one ``synthesize`` call by phase: each strategy
    (a task made or none), the copy check made before a candidate executes, the execution of new
    candidates, the task check, the rollouts; the rest is planning and bookkeeping."""
    if not show:
        yield
        return
    cpu: Counter = Counter()
    calls: Counter = Counter()
    saved = {name: getattr(pipeline, name)
             for name in ("apply_strategy", "copy_check", "executes", "check_task", "_roll_out_and_verify")}

    def timed(name: str, fn):
        def run(*a, **k):
            start, out = time.process_time(), None
            try:
                out = fn(*a, **k)
                return out
            finally:
                label = f"strategy {a[0]} ({'a task' if out is not None else 'none'})" if name == "apply_strategy" else name
                cpu[label] += time.process_time() - start
                calls[label] += 1
        return run

    for name, fn in saved.items():
        setattr(pipeline, name, timed(name, fn))
    start = time.process_time()
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(pipeline, name, fn)
        total = time.process_time() - start
        print(f"CPU seconds by phase (one synthesize call, {total:.2f} s in all):")
        for label, seconds in cpu.most_common():
            print(f"  {seconds:7.3f} s  {seconds / total:5.1%}  {calls[label]:5d} calls  {label}")
        print(f"  {total - sum(cpu.values()):7.3f} s  {(total - sum(cpu.values())) / total:5.1%}              planning, reflection, bookkeeping")


def _print_seed_counts(counts: dict[str, list[int]], why: dict[str, int]) -> None:
    print("seeds failing the provenance/text check, repaired by a lookup, excluded: "
          + ", ".join(f"{c} {f}/{m} failing, {r} repaired, {x} excluded" for c, (f, r, x, m) in sorted(counts.items())))
    print("  values without provenance in excluded seeds, by tool.parameter (tasks): "
          + ", ".join(f"{k} {v}" for k, v in sorted(why.items(), key=lambda x: (-x[1], x[0]))[:10]))


def compare(n: int, seed: int, pairs: int) -> None:
    """``pairs`` pairs of fresh processes, the copy prediction against the old path, in alternating order."""
    runs: dict[bool, list[dict]] = {False: [], True: []}
    load_before = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    print(f"{'pair':>4}  {'path':<16}{'tasks':>6}{'attempts':>9}{'CPU s':>8}{'tasks/CPU-s':>13}")
    for i in range(pairs):
        for old in ((False, True) if i % 2 == 0 else (True, False)):
            cmd = [sys.executable, os.path.abspath(__file__), "--n", str(n), "--seed", str(seed), "--synth-only"]
            out = subprocess.run(cmd + (["--old-path"] if old else []), capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            runs[old].append(row)
            print(f"{i:>4}  {'old path' if old else 'copy prediction':<16}{row['tasks']:>6}{row['attempted']:>9}"
                  f"{row['cpu_s']:>8.2f}{row['per_cpu_s']:>13.1f}")
    load_after = os.getloadavg()
    ours = statistics.median(r["per_cpu_s"] for r in runs[False])
    old = statistics.median(r["per_cpu_s"] for r in runs[True])
    ratios = statistics.median(a["per_cpu_s"] / b["per_cpu_s"] for a, b in zip(runs[False], runs[True]))
    same = len({r["tasks_sha256"] for r in runs[False] + runs[True]}) == 1
    print(f"load average after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"median verified tasks per CPU second: copy prediction {ours:.1f}, old path {old:.1f}; "
          f"ours / old {ours / old:.2f} (median of the pairs' ratios {ratios:.2f})")
    print(f"every run made the same tasks: {'yes' if same else 'NO'}; rejections, copy prediction "
          f"{json.dumps(runs[False][0]['rejections'])}, old path {json.dumps(runs[True][0]['rejections'])}")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--hardness" in argv:  # the warm-started model's NLL at the target steps, synthesized vs seed tasks
        import synth_hardness  # beside this script; it imports this one (targets_setup)

        sys.exit(synth_hardness.main([a for a in argv if a != "--hardness"]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400, help="tasks to synthesize for each arm")
    ap.add_argument("--rollouts", type=int, default=8, help="simulated rollouts per task for pass rates")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="--n 20 --rollouts 2 (CI smoke)")
    ap.add_argument("--phases", action="store_true", help="also print the targeted run's CPU seconds by phase")
    ap.add_argument("--old-path", action="store_true",
                    help="synthesize without the copy prediction (SynthConfig.predict_copies=False): the same tasks")
    ap.add_argument("--synth-only", action="store_true",
                    help="run the targeted synthesis only and print its figures as one JSON line")
    ap.add_argument("--compare", type=int, default=0, metavar="K",
                    help="K pairs of fresh --synth-only processes, copy prediction vs the old path")
    ap.add_argument("--hardness", action="store_true",
                    help="instead: synthesis hardness per strategy (benchmarks/synth_hardness.py; its flags follow)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.rollouts = 20, 2
    if args.compare:
        compare(args.n, args.seed, args.compare)
        return
    if not args.synth_only:
        print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}")

    seeds = {t.id: t for t in bfcl.load_tasks("all")}
    counts: dict[str, list[int]] = {}  # category: [failing, repaired, excluded, all]
    why: dict[str, int] = {}
    for task in seeds.values():
        row = counts.setdefault(task.category, [0, 0, 0, 0])
        row[3] += 1
        if seed_problems(task):
            row[0] += 1
            row[1] += usable_version(task) is not None
            row[2] += usable_version(task) is None
            if usable_version(task) is None:
                for cause in {f"{u.call.split('(')[0]}.{u.param}" for u in value_provenance(task)}:
                    why[cause] = why.get(cause, 0) + 1
    if not args.synth_only:
        _print_seed_counts(counts, why)
    seeds = {i: usable_version(t) for i, t in seeds.items() if usable_version(t) is not None}
    frontier, by_target, policy = targets_setup(seeds)

    config = SynthConfig(n=args.n, rounds=2, plans=12, rollouts_per_task=4, seed=args.seed,
                         predict_copies=not args.old_path)
    start, cpu_start = time.perf_counter(), time.process_time()
    with phases(args.phases):
        targeted = synthesize(frontier, seeds, by_target, policy, config)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    if args.synth_only:
        made = json.dumps([t.to_dict() for t in targeted.tasks], sort_keys=True)
        print(json.dumps({"tasks": len(targeted.tasks), "attempted": targeted.attempted, "cpu_s": cpu_seconds,
                          "wall_s": seconds, "per_cpu_s": len(targeted.tasks) / cpu_seconds,
                          "rejections": dict(targeted.rejections), "old_path": args.old_path,
                          "tasks_sha256": hashlib.sha256(made.encode()).hexdigest()}))
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tasks.jsonl")
        write_tasks(path, targeted.tasks)
        reloaded = list(load_task_set(path).values())
    seen: set[str] = set()
    valid = sum(check_task(t, seen).valid for t in reloaded)
    on_target = sum(target_present(t) for t in reloaded)
    exportable = [t for t in reloaded if set(t.involved_classes) <= set(bfcl.CLASSES)]
    official_ok = sum(official_check(t, ground_truth_rollout(t))["valid"] for t in exportable)
    coverage = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            coverage[fmt] = export(reloaded, fmt, os.path.join(tmp, fmt)).to_dict()
        replayed = rejected_empty = exported = 0
        for qf, af in ((BFCL_QUESTION_FILE, BFCL_ANSWER_FILE), (BFCL_LONG_QUESTION_FILE, BFCL_LONG_ANSWER_FILE)):
            qpath = os.path.join(tmp, "bfcl", qf)
            if not os.path.exists(qpath):
                continue
            answers = {a["id"]: a["ground_truth"] for a in map(json.loads, open(os.path.join(tmp, "bfcl", af)))}
            for q in map(json.loads, open(qpath)):
                gt = answers[q["id"]]
                exported += 1
                replayed += official_check_entry(q, gt, gt)["valid"]
                rejected_empty += not official_check_entry(q, gt, [[] for _ in gt])["valid"]

    same_seed_cfg = SynthConfig(n=args.n, rounds=2, plans=12, rollouts_per_task=1, seed=args.seed,
                                strategies=("random",))
    random_same = synthesize(frontier, seeds, by_target, policy, same_seed_cfg).tasks
    rng = random.Random(args.seed)
    all_ids = sorted(seeds)
    random_any = []
    attempts = 0
    while len(random_any) < args.n and attempts < args.n * 6:
        attempts += 1
        seed_task = seeds[all_ids[rng.randrange(len(all_ids))]]
        pairs = adjacent_pairs(tag_task(seed_task))[0]
        if not pairs:
            continue
        target = tuple(rng.choice(pairs).split(">"))
        task = apply_strategy("random", seed_task, target, 0.5, rng)
        if task is not None and check_task(task, None).valid:
            random_any.append(task)

    p_t, l_t = _pass_rate(targeted.tasks, policy, args.rollouts, args.seed)
    p_s, l_s = _pass_rate(random_same, policy, args.rollouts, args.seed)
    p_a, l_a = _pass_rate(random_any, policy, args.rollouts, args.seed)

    print(f"\nsynthesized {len(targeted.tasks)} tasks from {targeted.attempted} attempts in {seconds:.2f} s")
    print(f"{'throughput':<44}{len(targeted.tasks) / seconds:>10.1f} verified tasks/s   (goal >= 100/s)")
    print(f"{'throughput per CPU second of this process':<44}{len(targeted.tasks) / cpu_seconds:>10.1f} verified tasks/s   "
          f"({cpu_seconds:.2f} s CPU; load-independent, rollout verification in its worker not counted)")
    print(f"{'validity (check_task after JSONL round trip)':<44}{valid / len(reloaded):>10.3f}   (goal >= 0.99)")
    print(f"{'BFCL classes only, official checker replays':<44}{official_ok:>6}/{len(exportable):<4}")
    print(f"{'targeting (oracle contains the target)':<44}{on_target / len(reloaded):>10.3f}   (goal >= 0.90)")
    print(f"rejections: {json.dumps(dict(targeted.rejections))}")
    print(f"by strategy: {json.dumps(targeted.summary()['by_strategy'])}")
    for fmt, d in coverage.items():
        print(f"{'export ' + fmt + ' (share of the set written)':<44}{d['written'] / len(reloaded):>10.3f}   "
              f"skipped {json.dumps(d['skipped_by_reason'])} notes {json.dumps(d['notes'])}")
    print(f"{'BFCL files: official checker replays GT':<44}{replayed:>6}/{exported:<4} "
          f"rejects the empty rollout {rejected_empty}/{exported}")
    print(f"\n{'arm':<46}{'tasks':>6}{'agent pass rate':>17}{'learnable share':>17}")
    print(f"{'targeted synthesis (ACE)':<46}{len(targeted.tasks):>6}{p_t:>17.3f}{l_t:>17.3f}")
    print(f"{'random augmentation, same seeds (CoVERT-style)':<46}{len(random_same):>6}{p_s:>17.3f}{l_s:>17.3f}")
    print(f"{'random augmentation, any BFCL seed':<46}{len(random_any):>6}{p_a:>17.3f}{l_a:>17.3f}")
    same, any_seed = (p_t / p_s if p_s else float("nan")), (p_t / p_a if p_a else float("nan"))
    print(f"\nweakness hit: pass rate targeted / random-same-seeds = {same:.2f}, "
          f"targeted / random-any-seed = {any_seed:.2f} (lower = the tasks hit the weakness harder)")


if __name__ == "__main__":
    main()
