"""Synthesis hardness (issue 34, item 4): does each strategy make the composition it aims at harder for a model?

For each targeted strategy (:func:`synth.registry.targeted`: ambiguity, cascade, depth, distractor, lookalike)
a sample of tasks is synthesized with today's pipeline on ``synth_bench.py``'s fixed frontier (its five planted
target compositions, its simulated agent, BFCL seeds repaired as synthesis uses them), one
``synthesize`` call per strategy.  A warm-started SmolLM2-135M-Instruct (SFT of the bundled model, one epoch on
``--warm-tasks`` BFCL base tasks none of the sample's seeds shares a base number with, ``train.sft.train_sft``)
then scores, teacher forced with the gold prefix (:func:`train.goldprefix.teacher_forced`), the **target steps**
of every synthesized task and of its own seed task.

* **Target step.**  A task records its target composition (``provenance.target_edge``, ``A>B``) and its seed
  (``provenance.parents[0]``), not a step: the target steps of a task are derived here as every call to ``B``
  that directly follows a call to ``A`` in the flat list of ground-truth calls (the adjacency the synthesizer
  checks, :func:`synth.checks.parts.adjacent_positions`).  The seed's are found the same way, on the seed as
  synthesis used it (:func:`synth.repair.usable_version`).  A task's NLL is the mean per-token NLL of the gold
  message over its target steps, its exact match the share of those steps whose every gold token is the
  model's top choice.
* **Pairing.**  One pair per synthesized task: (its value, its seed's value).  The difference synth - seed is
  averaged over the pairs of a strategy; the 95% interval is the percentile interval of ``--boot`` bootstrap
  resamples of the pairs.  A hard strategy raises the NLL (interval above zero) while its tasks stay solvable
  (``check_task`` passes again after the JSONL round trip: the gold executes and reaches the target).

Everything lands under ``--work`` and a rerun resumes: the sample (``tasks.jsonl``), the warm start (``warm/``,
reused while no seed of the sample shares a base number with its tasks), and the scores (``scores.jsonl``, one
line per task scored at the target steps of one composition, written as it is scored); the report goes to ``report.json``.

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 .venv/bin/python benchmarks/synth_bench.py --hardness   # work: benchmarks/out/synth-hardness
    .venv/bin/python benchmarks/synth_hardness.py --quick      # a tiny random model built offline, 2 tasks each
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_workspace  # noqa: E402
from synth_bench import targets_setup  # noqa: E402

from ace_env import bfcl  # noqa: E402
from ace_env.tasks import Task  # noqa: E402
from ace_env.tasksets import load_task_set  # noqa: E402
from synth.checks.parts import adjacent_positions, flat_calls, parse_edge  # noqa: E402
from synth.pipeline import SynthConfig, synthesize, write_tasks  # noqa: E402
from synth.registry import targeted  # noqa: E402
from synth.repair import usable_version  # noqa: E402
from synth.taskcheck import check_task  # noqa: E402
from train.errors import ExportError  # noqa: E402
from train.goldprefix import Transcript, teacher_forced, teacher_forced_shared, transcript  # noqa: E402
from train.policies.base import PolicyError  # noqa: E402
from train.policies.hf import HFPolicy, load_model  # noqa: E402
from train.sft import SFTRunConfig, train_sft  # noqa: E402

ROOT = Path(__file__).resolve().parent
_BASE_NUMBER = re.compile(r"^multi_turn_(?:base|long_context|miss_func|miss_param|composite)_(\d+)$")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------- target steps and pairs (pure)


def target_keys(task: Task, edge: tuple[str, str]) -> list[tuple[int, int]]:
    """(turn, index) of every call to ``edge[1]`` that directly follows a call to ``edge[0]`` (flat order)."""
    flat = flat_calls(task)
    return [(flat[k + 1][0], flat[k + 1][1]) for k in adjacent_positions(task, edge)]


def target_transcript(task: Task, keys: list[tuple[int, int]]) -> Transcript:
    """The task's gold transcript with only its target steps left to score (teacher forcing then stops at the
    last of them).  Raises ExportError when the ground truth does not execute cleanly."""
    tr = transcript(task)
    wanted = set(keys)
    return dataclasses.replace(tr, steps=[s for s in tr.steps if s.tool and (s.turn, s.index) in wanted])


def task_value(steps: list[dict[str, Any]]) -> tuple[float, float] | None:
    """(mean NLL, exact share) over a task's scored target steps; None when none was scored."""
    scored = [s for s in steps if s.get("nll") is not None]
    if not scored:
        return None
    return (sum(s["nll"] for s in scored) / len(scored), sum(bool(s["exact"]) for s in scored) / len(scored))


@dataclass
class Pair:
    """One synthesized task against its own seed, at their target steps."""

    strategy: str
    task: str
    seed: str
    edge: str
    synth_nll: float
    seed_nll: float
    synth_exact: float
    seed_exact: float

    @property
    def diff(self) -> float:
        return self.synth_nll - self.seed_nll


def score_key(task_id: str, edge: str) -> str:
    """The key of a task's scores at the target steps of ``edge`` (``A>B``): a seed used by strategies aiming at
    different compositions has different target steps, scored once for each."""
    return f"{task_id}@{edge}"


def make_pairs(tasks: list[Task], scores: dict[str, dict[str, Any]]) -> tuple[list[Pair], list[str]]:
    """The pairs of the synthesized ``tasks`` whose task and seed both have a scored target step of the task's
    target composition (``scores``: by :func:`score_key`, the records of ``scores.jsonl``), and why the others
    are left out."""
    pairs, left = [], []
    for t in tasks:
        seed, edge = t.provenance["parents"][0], t.provenance["target_edge"]
        mine, theirs = scores.get(score_key(t.id, edge)), scores.get(score_key(seed, edge))
        if mine is None or theirs is None:
            left.append(f"{t.id}: not scored yet")
            continue
        a, b = task_value(mine["steps"]), task_value(theirs["steps"])
        if a is None or b is None:
            why = (mine.get("skipped") or theirs.get("skipped") or ["no target step"])[0]
            left.append(f"{t.id} ({'task' if a is None else 'seed'}): {why}")
            continue
        pairs.append(Pair(t.provenance["strategy"], t.id, seed, t.provenance["target_edge"], a[0], b[0], a[1], b[1]))
    return pairs, left


def paired_bootstrap(diffs: list[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, 2.5th, 97.5th percentile of the bootstrap means): the pairs resampled with replacement."""
    if not diffs:
        return float("nan"), float("nan"), float("nan")
    rng = random.Random(f"hardness-boot:{seed}")
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(n_boot))
    lo = means[int(0.025 * (n_boot - 1))]
    hi = means[int(round(0.975 * (n_boot - 1)))]
    return sum(diffs) / n, lo, hi


def strategy_rows(pairs: list[Pair], strategies: list[str], valid: dict[str, tuple[int, int]],
                  n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """One row per strategy: n pairs, mean NLL seed and synth, the paired difference and its interval, exact
    match seed and synth, solvable (check_task passes / tasks), and whether the NLL rose (interval above 0)."""
    rows = []
    for s in strategies:
        mine = [p for p in pairs if p.strategy == s]
        mean, lo, hi = paired_bootstrap([p.diff for p in mine], n_boot, seed)
        n = len(mine)
        rows.append({
            "strategy": s, "n": n,
            "seed_nll": sum(p.seed_nll for p in mine) / n if n else None,
            "synth_nll": sum(p.synth_nll for p in mine) / n if n else None,
            "diff": mean if n else None, "lo": lo if n else None, "hi": hi if n else None,
            "seed_exact": sum(p.seed_exact for p in mine) / n if n else None,
            "synth_exact": sum(p.synth_exact for p in mine) / n if n else None,
            "solvable": valid.get(s, (0, 0)),
            "harder": bool(n) and lo > 0,
        })
    return rows


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'strategy':<11}{'n':>3}{'NLL seed':>10}{'NLL synth':>10}{'diff':>8}{'95% interval':>18}"
          f"{'exact seed':>11}{'exact synth':>12}{'solvable':>10}")
    for r in rows:
        ci = f"[{_f(r['lo'])}, {_f(r['hi'])}]" if r["n"] else "-"
        ok, of = r["solvable"]
        print(f"{r['strategy']:<11}{r['n']:>3}{_f(r['seed_nll']):>10}{_f(r['synth_nll']):>10}{_f(r['diff'], '+.3f'):>8}"
              f"{ci:>18}{_f(r['seed_exact'], '.2f'):>11}{_f(r['synth_exact'], '.2f'):>12}{f'{ok}/{of}':>10}")
    harder = [r["strategy"] for r in rows if r["harder"]]
    print(f"strategies whose target-step NLL rose (paired 95% interval above 0): {len(harder)} of {len(rows)}"
          f"{' (' + ', '.join(harder) + ')' if harder else ''}; goal: at least 4 of 5")


# --------------------------------------------------------------------------- the sample


def bfcl_seeds() -> dict[str, Task]:
    """Every BFCL task as synthesis uses it (repaired, or left out when it cannot be)."""
    out = {}
    for t in bfcl.load_tasks("all"):
        fixed = usable_version(t)
        if fixed is not None:
            out[t.id] = fixed
    return out


def synthesize_sample(seeds: dict[str, Task], per_strategy: int, seed: int, strategies: list[str],
                      long_context: bool = False) -> list[Task]:
    """``per_strategy`` tasks of each strategy (fewer where the frontier does not allow it), on synth_bench's
    frontier and simulated agent: one ``synthesize`` call per strategy.  Without ``long_context`` no long-context
    seed is offered: their prefixes (40-70 thousand characters before many target steps) pass SmolLM2's
    8,192-token context, and one forward pass over them costs minutes of a CPU thread."""
    frontier, by_target, policy = targets_setup(seeds, long_context)
    tasks: list[Task] = []
    for s in strategies:
        config = SynthConfig(n=per_strategy, rounds=2, plans=12, rollouts_per_task=2, seed=seed, strategies=(s,))
        made = synthesize(frontier, seeds, by_target, policy, config).tasks
        say(f"synthesized {len(made)} {s} task(s)")
        tasks += made
    return tasks


def load_or_make_sample(work: Path, seeds: dict[str, Task], per_strategy: int, seed: int,
                        strategies: list[str], long_context: bool = False) -> list[Task]:
    path, recipe_path = work / "tasks.jsonl", work / "sample.json"
    recipe = {"per_strategy": per_strategy, "seed": seed, "strategies": strategies, "long_context": long_context}
    if not path.exists():
        write_tasks(path, synthesize_sample(seeds, per_strategy, seed, strategies, long_context))
        recipe_path.write_text(json.dumps(recipe))
    else:
        made = json.loads(recipe_path.read_text()) if recipe_path.exists() else recipe
        if made != recipe:
            raise SystemExit(f"{path} was synthesized with {made}, not {recipe}: give another --work or the same flags")
        say(f"sample: reusing {path}")
    return list(load_task_set(str(path)).values())


def base_number(task_id: str) -> str:
    m = _BASE_NUMBER.match(task_id)
    return m.group(1) if m else task_id


def warm_task_ids(used_seeds: set[str], n: int, seed: int) -> list[str]:
    """``n`` BFCL base tasks in a fixed random order, none sharing a base number with a seed of the sample."""
    taken = {base_number(i) for i in used_seeds}
    ids = sorted(t.id for t in bfcl.load_tasks("base") if base_number(t.id) not in taken)
    random.Random(f"hardness-warm:{seed}").shuffle(ids)
    return ids[:n]


def warm_overlap(work: Path, used_seeds: set[str]) -> set[str]:
    """Base numbers both the warm start under ``work/warm`` trained on and ``used_seeds`` use (none: no warm
    start there yet)."""
    recipe_path = work / "warm" / "hardness_warm.json"
    if not recipe_path.exists():
        return set()
    trained = {base_number(i) for i in json.loads(recipe_path.read_text())["tasks"]}
    return trained & {base_number(i) for i in used_seeds}


def warm_start(work: Path, model: str, used_seeds: set[str], n: int, max_length: int, seed: int) -> Path:
    """The warm start under ``work/warm`` (made once; remade only when a seed of the sample overlaps it)."""
    out = work / "warm"
    recipe_path = out / "hardness_warm.json"
    if recipe_path.exists():
        recipe = json.loads(recipe_path.read_text())
        overlap = {base_number(i) for i in recipe["tasks"]} & {base_number(i) for i in used_seeds}
        if not overlap:
            say(f"warm start: reusing {out} ({len(recipe['tasks'])} tasks, {recipe['report']['seconds']} s)")
            return out
        say(f"warm start: {out} was trained on base numbers the sample's seeds use ({sorted(overlap)[:5]}); remade")
    ids = warm_task_ids(used_seeds, n, seed)
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    say(f"warm start: SFT of {model}, 1 epoch on {len(ids)} BFCL base tasks, max length {max_length}")
    config = SFTRunConfig(model=model, out=str(out), epochs=1.0, max_length=max_length, seed=seed)
    report = train_sft(config, [tasks[i] for i in ids])
    recipe_path.write_text(json.dumps({"model": model, "tasks": ids, "max_length": max_length, "seed": seed,
                                       "report": report}, indent=2))
    say(f"warm start: {report['steps']} steps, loss {report['first_loss']} -> {report['last_loss']}, "
        f"{report['seconds']} s")
    return out


# --------------------------------------------------------------------------- scoring (resumable)


def load_scores(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[score_key(rec["task"], rec.get("edge", "?"))] = rec
    return out


def _record(tr: Transcript | None, scores: dict[int, Any], skipped: list[str]) -> dict[str, Any]:
    steps = []
    if tr is not None:
        for s in tr.steps:
            sc = scores.get(s.flat)
            steps.append({"turn": s.turn, "index": s.index, "tool": s.tool, "nll": sc.nll if sc else None,
                          "exact": sc.exact if sc else None, "tokens": sc.tokens if sc else 0})
    return {"steps": steps, "skipped": skipped}


def interleaved(tasks: list[Task]) -> list[Task]:
    """The tasks taking each strategy in turn (the first of each, then the second of each, ...), so that a run
    stopped early has scored every strategy about equally."""
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(t.provenance["strategy"], []).append(t)
    return [t for k in range(max(map(len, by.values()), default=0)) for ts in by.values() if k < len(ts)
            for t in [ts[k]]]


def score_all(policy: HFPolicy, tasks: list[Task], seeds: dict[str, Task], path: Path) -> dict[str, dict[str, Any]]:
    """Teacher-forced scores of the target steps of every task and of its seed, appended to ``path`` one task at a
    time; what is already there is kept.  A task and its seed not yet scored go through one shared pass."""
    done = load_scores(path)

    def key(task_id: str, t: Task) -> str:
        return score_key(task_id, t.provenance["target_edge"])

    todo = interleaved([t for t in tasks if key(t.id, t) not in done or key(t.provenance["parents"][0], t) not in done])
    say(f"scoring: {len(done)} task(s) already scored, {len(todo)} pair(s) to go")
    start = time.perf_counter()
    with open(path, "a", encoding="utf-8") as f:
        for k, t in enumerate(todo):
            edge = parse_edge(t.provenance["target_edge"])
            seed_id = t.provenance["parents"][0]
            jobs = [(t.id, t)] + ([(seed_id, seeds.get(seed_id))] if key(seed_id, t) not in done else [])
            trs: dict[str, Transcript | None] = {}
            why: dict[str, list[str]] = {}
            for tid, task in jobs:
                trs[tid], why[tid] = None, []
                if task is None:
                    why[tid].append(f"seed {tid} is not usable in this checkout (repair changed)")
                    continue
                keys = target_keys(task, edge)
                if not keys:
                    why[tid].append(f"task {tid}: no call to {edge[1]} directly after {edge[0]}")
                    continue
                try:
                    trs[tid] = target_transcript(task, keys)
                except (ExportError, PolicyError) as e:
                    why[tid].append(str(e))
            ready = [tr for tr in trs.values() if tr is not None]
            by_task: dict[str, dict[int, Any]] = {tid: {} for tid in trs}
            if len(ready) == 2:
                got, _, skipped = teacher_forced_shared(policy, ready)
                for (tid, flat), sc in got.items():
                    by_task[tid][flat] = sc
                for reason in skipped:  # "task ID: step ... lies beyond the model's context"
                    why.get(reason.split(":", 1)[0].removeprefix("task "), why[t.id]).append(reason)
            else:
                for tr in ready:
                    got, _, skipped = teacher_forced(policy, tr)
                    by_task[tr.task.id] = got
                    why[tr.task.id] += skipped
            for tid in trs:
                rec = {"task": tid, "edge": t.provenance["target_edge"], **_record(trs[tid], by_task[tid], why[tid])}
                done[key(tid, t)] = rec
                f.write(json.dumps(rec) + "\n")
            f.flush()
            elapsed = time.perf_counter() - start
            say(f"scored {k + 1}/{len(todo)} ({t.provenance['strategy']} {t.id} vs {seed_id}); "
                f"{elapsed:.0f} s, about {elapsed / (k + 1) * (len(todo) - k - 1):.0f} s to go")
    return done


# --------------------------------------------------------------------------- the run


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=ROOT / "out" / "synth-hardness",
                    help="folder of the sample, the warm start, the scores and the report (a rerun resumes)")
    ap.add_argument("--per-strategy", type=int, default=12, help="tasks to synthesize per strategy")
    ap.add_argument("--seed", type=int, default=0, help="synthesis, warm-start choice and bootstrap seed")
    ap.add_argument("--model", default="smollm2-135m", help="model to warm-start from")
    ap.add_argument("--warm-tasks", type=int, default=40, help="BFCL base tasks of the warm start (1 epoch)")
    ap.add_argument("--max-length", type=int, default=1024, help="tokens per warm-start transcript")
    ap.add_argument("--long-context", action="store_true",
                    help="offer long-context seeds too (most of their target steps lie beyond SmolLM2's context)")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples of the pairs")
    ap.add_argument("--keep-warm", action="store_true",
                    help="reuse the warm start in --work even where seeds of the sample share a base number with "
                         "its training tasks: those tasks are left out of the pairs instead")
    ap.add_argument("--strategies", default="",
                    help="comma-separated targeted strategies to measure (default: all of them)")
    ap.add_argument("--quick", action="store_true",
                    help="a tiny random model built offline, 2 tasks per strategy, 2 warm-start tasks")
    args = ap.parse_args(argv)
    if args.quick:
        work, args.model = quick_workspace("hardness")
        args.work, args.per_strategy, args.warm_tasks, args.max_length, args.boot = work, 2, 2, 4096, 200
    args.work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    say(f"synthesis hardness: commit {_commit()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; work {args.work}")
    strategies = list(targeted())
    if args.strategies:
        wanted = [x.strip() for x in args.strategies.split(",") if x.strip()]
        unknown = [x for x in wanted if x not in strategies]
        if unknown:
            raise SystemExit(f"--strategies: {', '.join(unknown)} not among {', '.join(strategies)}")
        strategies = [x for x in strategies if x in wanted]
    seeds = bfcl_seeds()
    tasks = load_or_make_sample(args.work, seeds, args.per_strategy, args.seed, strategies, args.long_context)
    used = {t.provenance["parents"][0] for t in tasks}
    trained = warm_overlap(args.work, used) if args.keep_warm else set()
    if trained:
        tasks = [t for t in tasks if base_number(t.provenance["parents"][0]) not in trained]
        used = {t.provenance["parents"][0] for t in tasks}
        say(f"--keep-warm: the warm start trained on base numbers {sorted(trained)}; their tasks are left out")
    say(f"sample: {len(tasks)} tasks from {len(used)} seed tasks")
    valid: dict[str, tuple[int, int]] = {}
    for t in tasks:
        ok, of = valid.get(t.provenance["strategy"], (0, 0))
        valid[t.provenance["strategy"]] = (ok + check_task(t, None).valid, of + 1)
    warm = warm_start(args.work, args.model, used, args.warm_tasks, args.max_length, args.seed)
    tokenizer, model, template = load_model(str(warm))
    policy = HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0)
    scores = score_all(policy, tasks, seeds, args.work / "scores.jsonl")
    pairs, left = make_pairs(tasks, scores)
    rows = strategy_rows(pairs, strategies, valid, args.boot, args.seed)
    print()
    print_table(rows)
    if left:
        print(f"left out ({len(left)}): " + "; ".join(left[:5]) + (" ..." if len(left) > 5 else ""))
    load = os.getloadavg()
    (args.work / "report.json").write_text(json.dumps({
        "commit": _commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_after": [round(x, 2) for x in load], "args": {k: str(v) for k, v in vars(args).items()},
        "rows": rows, "pairs": [asdict(p) | {"diff": p.diff} for p in pairs], "left_out": left,
    }, indent=2))
    say(f"report: {args.work / 'report.json'}; load average after {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
