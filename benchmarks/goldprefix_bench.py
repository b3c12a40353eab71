"""Composition observations per CPU-second: gold-prefix scoring vs free-running evaluation.

A composition observation is one oracle step b reached right after its predecessor call a,
with a verdict: the unit the skill graph's edges count.  Free-running (what ``ace eval``
does: roll out, verify, build the stored records), a step is observed only when every step
before it passed; through the gold prefix (``ace eval --gold-prefix``) every step of every
task is observed, teacher forced from one forward pass per task.  Same model, same tasks,
one run, the two arms one after the other; CPU seconds are this process's plus its
children's (the bounded tool-call worker) from ``getrusage``.

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 python benchmarks/goldprefix_bench.py --model smollm2-135m --tasks 10
    python benchmarks/goldprefix_bench.py --quick        # a tiny model built offline (smoke)
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_facts, quick_workspace  # noqa: E402

from ace_env.tasksets import load_task_set  # noqa: E402
from ace_env.verifier import verify  # noqa: E402
from ace_graph.outcomes import record  # noqa: E402
from ace_graph.tagger import tag_task  # noqa: E402
from train.engine import RolloutConfig, RolloutEngine  # noqa: E402
from train.goldprefix import score_tasks  # noqa: E402
from train.policies import GenerationConfig, load_policy  # noqa: E402


def cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def free_running(spec: str, tasks: list, max_tokens: int, step_cap: int) -> tuple[int, int, float]:
    """(composition observations, steps observed, CPU seconds) of a free-running evaluation."""
    start = cpu()
    policy = load_policy(spec)
    try:
        config = RolloutConfig(step_cap=step_cap, generation=GenerationConfig(max_tokens=max_tokens))
        rows = list(RolloutEngine(policy, config).run(tasks))
    finally:
        policy.close()
    by_id = {t.id: t for t in tasks}
    comps = steps = 0
    for row in rows:
        task = by_id[row["task_id"]]
        rec = record(task, tag_task(task), verify(task, row["turns"], row["rollout_id"]), "b/f/0", row["rollout_id"],
                     row["turns"])
        steps += len(rec.steps)
        comps += sum(1 for s in rec.steps if s.prev is not None)
    return comps, steps, cpu() - start


def gold_prefix(spec: str, tasks: list) -> tuple[int, int, float]:
    start = cpu()
    policy = load_policy(spec)
    try:
        run = score_tasks(policy, tasks)
    finally:
        policy.close()
    return sum(1 for s in run.scores if s.prev_tool is not None), len(run.scores), cpu() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m", help="hf: model folder or embedded name")
    ap.add_argument("--tasks", type=int, default=10, help="BFCL base tasks (the first N)")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--step-cap", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        _, args.model = quick_workspace("goldprefix")
        args.tasks, args.max_tokens, args.step_cap = 2, 8, 1
    print(machine_facts())
    tasks = list(load_task_set("bfcl:base").values())[: args.tasks]
    spec = f"hf:{args.model}"
    f_comps, f_steps, f_cpu = free_running(spec, tasks, args.max_tokens, args.step_cap)
    g_comps, g_steps, g_cpu = gold_prefix(spec, tasks)
    f_rate, g_rate = f_comps / f_cpu, g_comps / g_cpu
    print(f"{'arm':14s} {'compositions':>12s} {'steps':>6s} {'CPU s':>8s} {'comp/CPU-s':>11s}")
    print(f"{'free-running':14s} {f_comps:12d} {f_steps:6d} {f_cpu:8.1f} {f_rate:11.3f}")
    print(f"{'gold-prefix':14s} {g_comps:12d} {g_steps:6d} {g_cpu:8.1f} {g_rate:11.3f}")
    ratio = g_rate / f_rate if f_rate else float("inf")
    print(f"gold-prefix / free-running: {ratio:.1f}x compositions per CPU-second (goal >= 20x); "
          f"per observation: {g_cpu / max(g_comps, 1):.2f} vs {f_cpu / max(f_comps, 1):.2f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
