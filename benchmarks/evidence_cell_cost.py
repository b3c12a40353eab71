"""What one cell of the evidence benchmark costs, before and after issue 32's item 3, measured on the same cell.

A cell is one arm, seed and budget: the SFT steps from the arm's start to the budget, the held-out gold-prefix
scoring of the checkpoint, and the checkpoint saved (what ``evidence_bench.py``'s ``run_arm`` does for a budget).
The same cell runs twice, each in its own process, from the same weights on the same data:

* ``legacy`` (``evidence_bench.py --legacy-cell``): every training transcript through the model up to its token
  window's end, the plain AdamW loop, each held-out task scored from scratch;
* ``fast`` (the default now): the forward pass stops at the last position that predicts a supervised token, the
  fused AdamW, and the token prefixes the held-out tasks share (system prompt and tool listing) computed once
  (``train.goldprefix.teacher_forced_shared``).

Both print CPU seconds (``resource.getrusage`` of the process and its children) and wall seconds per phase, one
torch thread each, the ratio, the load average at start and end, and whether the two cells measured the same
thing: every held-out step's exact match, its NLL, and every step's training loss.  CPU seconds are what to
compare on a shared machine: wall time grows with the other work's load, CPU time much less.  The two processes
run at the same time (so they share whatever load there is) unless ``--sequential``.

The arm is ``more-real`` (its data needs no synthesis and no Neo4j: the pool split's BFCL tasks in the seed's
order, exactly as ``arm_tasks`` builds them); the start is ``--model``: the evidence warm start when it is on this
machine (``benchmarks/out/evidence/warm``), else the bundled SmolLM2-135M-Instruct as a substitute that runs the
same code on the same data sizes.

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 ACE_MODELS=$HOME/.ace/models \\
        .venv/bin/python benchmarks/evidence_cell_cost.py --samples 16 --work /tmp/cell
    .venv/bin/python benchmarks/evidence_cell_cost.py --quick --work /tmp/cell-quick     # smoke (tiny model)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_bench as eb  # noqa: E402
from _common import machine_facts  # noqa: E402

from train.models import resolve_model  # noqa: E402

MODES = ("legacy", "fast")


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Phases:
    """CPU and wall seconds spent inside wrapped functions, by phase."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}

    def wrap(self, phase: str, fn: Any) -> Any:
        def timed(*a: Any, **k: Any) -> Any:
            c, w = _cpu(), time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.cpu[phase] = self.cpu.get(phase, 0.0) + _cpu() - c
                self.wall[phase] = self.wall.get(phase, 0.0) + time.perf_counter() - w
        return timed


def arm_data(arm: str, seed: int) -> tuple[list[Any], str]:
    """The more-real arm's tasks in training order and the sha256 of its task file, as ``arm_tasks`` builds them."""
    if arm != "more-real":
        raise SystemExit("only the more-real arm: the others need the synthesizer and a diagnosis")
    splits = eb.load_splits(eb.SPLITS, False)
    tasks = eb.tasks_of(splits["pool"], eb.CATEGORIES)
    random.Random(f"{arm}:{seed}").shuffle(tasks)
    text = "".join(json.dumps(t.to_dict()) + "\n" for t in tasks)
    return tasks, hashlib.sha256(text.encode()).hexdigest()


def child(args: argparse.Namespace) -> int:
    """One cell, in this process, on one path; its figures to --out."""
    c0, w0 = _cpu(), time.perf_counter()
    eb.LEGACY = args.child == "legacy"
    phases = Phases()
    losses: list[float] = []
    scored: list[int] = []
    step = eb.Trainer.step

    def step_and_keep(self: Any, example: Any) -> float:
        losses.append(step(self, example))
        return losses[-1]

    score_tasks = eb.score_tasks

    def score_and_count(*a: Any, **k: Any) -> Any:
        run = score_tasks(*a, **k)
        scored.append(run.forward_tokens)
        return run

    eb.Trainer.__init__ = phases.wrap("setup", eb.Trainer.__init__)
    examples = eb.Trainer.examples
    kept: list[Any] = []

    def examples_and_keep(self: Any, *a: Any, **k: Any) -> Any:
        kept[:] = examples(self, *a, **k)
        return kept

    eb.Trainer.examples = phases.wrap("setup", examples_and_keep)
    eb.Trainer.step = phases.wrap("train", step_and_keep)
    eb.Trainer.save = phases.wrap("save", eb.Trainer.save)
    eb.evaluate = phases.wrap("score", eb.evaluate)
    eb.score_tasks = score_and_count

    committed = json.loads(eb.STATE.read_text())
    targets = {tuple(t) for t in committed["phases"]["diagnosis"]["targets"]}
    splits = eb.load_splits(eb.SPLITS, False)
    held = eb.tasks_of(splits["held_out"])
    steps = eb.held_out_steps(held)
    tasks, sha = arm_data(args.arm, args.seed)
    work = args.work / args.child
    run_args = argparse.Namespace(budgets=[args.samples], lr=args.lr, arm_max_length=args.arm_max_length, work=work,
                                  state=work / "state.json")
    state: dict[str, Any] = {"records": [], "phases": {}}
    warm = Path(resolve_model(args.model))
    eb.run_arm(run_args, state, warm, args.arm, args.seed, tasks, held, steps, targets)
    record = next(r for r in state["records"] if r["samples"] == args.samples)
    trained = [kept[k % len(kept)] for k in range(args.samples)]  # run_arm cycles the examples in order
    out = {"mode": args.child, "cpu": phases.cpu, "wall": phases.wall, "process_cpu": _cpu() - c0,
           "process_wall": time.perf_counter() - w0, "losses": losses, "scored_tokens": scored[-1],
           "window_tokens": sum(len(e["input_ids"]) for e in trained), "step_exact": record["step_exact"], "step_nll": record["step_nll"],
           "primary_exact": record["primary_exact"], "other_exact": record["other_exact"],
           "primary_nll": record["primary_nll"], "data_sha256": sha,
           "recorded_sha256": committed["phases"].get("data", {}).get(f"{args.arm}-{args.seed}", {}).get("sha256"),
           "loss_tokens": record["loss_tokens"], "tokens": record["tokens"], "model": str(warm)}
    # the fast path's forward stops at the last supervised token's predictor (Trainer.loss)
    out["trained_tokens"] = out["window_tokens"] if eb.LEGACY else sum(
        max(i for i, m in enumerate(e["assistant_masks"]) if m) for e in trained)
    args.out.write_text(json.dumps(out))
    return 0


def _row(name: str, a: float, b: float, wa: float, wb: float) -> str:
    ratio = a / b if b else float("nan")
    return f"{name:34s}{a:>11.1f}{b:>11.1f}{ratio:>8.2f}x{wa:>12.1f}{wb:>11.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m",
                    help="The cell's start (the evidence warm start when on this machine; else the bundled model).")
    ap.add_argument("--arm", default="more-real", choices=["more-real"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=16, help="The cell's budget (SFT samples from its start).")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--arm-max-length", type=int, default=2048)
    ap.add_argument("--work", type=Path, default=Path("/tmp/evidence-cell"))
    ap.add_argument("--sequential", action="store_true", help="Run legacy then fast instead of both at once.")
    ap.add_argument("--quick", action="store_true",
                    help="A smoke run: a tiny model built offline under --work, 2 samples, a 4,096-token window.")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if os.environ.get("ACE_TORCH_THREADS", "1") != "1" or os.environ.get("OMP_NUM_THREADS") != "1":
        raise SystemExit("run with OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1: the figures are for one torch thread")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.quick:
        from train.tiny import build_tiny_model

        args.model = str(build_tiny_model(args.work / "tiny", seed=0))
        args.samples, args.arm_max_length = 2, 4096
    print(machine_facts())
    load0 = os.getloadavg()
    print(f"start {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average {load0[0]:.2f} "
          f"{load0[1]:.2f} {load0[2]:.2f}; cell: arm {args.arm}, seed {args.seed}, {args.samples} samples from "
          f"{args.model}; {'one after the other' if args.sequential else 'both at once'}", flush=True)
    procs = {}
    for mode in MODES:
        cmd = [sys.executable, __file__, "--child", mode, "--out", str(args.work / f"{mode}.json"),
               "--model", args.model, "--arm", args.arm, "--seed", str(args.seed), "--samples", str(args.samples),
               "--lr", str(args.lr), "--arm-max-length", str(args.arm_max_length), "--work", str(args.work)]
        log = open(args.work / f"{mode}.log", "w")
        procs[mode] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log)
        if args.sequential:
            procs[mode][0].wait()
    for mode, (proc, log) in procs.items():
        if proc.wait() != 0:
            raise SystemExit(f"the {mode} cell failed: see {args.work / f'{mode}.log'}")
        log.close()
    load1 = os.getloadavg()
    got = {m: json.loads((args.work / f"{m}.json").read_text()) for m in MODES}
    a, b = got["legacy"], got["fast"]
    print(f"end {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load average {load1[0]:.2f} "
          f"{load1[1]:.2f} {load1[2]:.2f}")
    print(f"start weights {a['model']}; data sha256 {a['data_sha256'][:16]} (the state records "
          f"{(a['recorded_sha256'] or 'none')[:16]} for {args.arm} seed {args.seed})")
    print(f"{'':34s}{'legacy CPU s':>11s}{'fast CPU s':>11s}{'ratio':>9s}{'legacy wall':>12s}{'fast wall':>11s}")
    for phase, name in (("train", f"train ({args.samples} SFT steps)"), ("score", "score (held-out, gold prefix)"),
                        ("save", "save checkpoint")):
        print(_row(name, a["cpu"].get(phase, 0), b["cpu"].get(phase, 0), a["wall"].get(phase, 0),
                   b["wall"].get(phase, 0)))
    cell = {m: sum(got[m]["cpu"].get(p, 0) for p in ("train", "score", "save")) for m in MODES}
    wall = {m: sum(got[m]["wall"].get(p, 0) for p in ("train", "score", "save")) for m in MODES}
    print(_row("cell (train + score + save)", cell["legacy"], cell["fast"], wall["legacy"], wall["fast"]))
    print(_row("setup (load model, tokenize data)", a["cpu"].get("setup", 0), b["cpu"].get("setup", 0),
               a["wall"].get("setup", 0), b["wall"].get("setup", 0)))
    print(_row("whole process", a["process_cpu"], b["process_cpu"], a["process_wall"], b["process_wall"]))
    print(f"tokens through the model: training {a['trained_tokens']:,} vs {b['trained_tokens']:,} "
          f"(window {a['window_tokens']:,}); scoring {a['scored_tokens']:,} vs {b['scored_tokens']:,}")
    same = sum(x == y for x, y in zip(a["step_exact"], b["step_exact"]))
    dnll = max(abs(x - y) for x, y in zip(a["step_nll"], b["step_nll"]) if x is not None and y is not None)
    dloss = max(abs(x - y) for x, y in zip(a["losses"], b["losses"]))
    print(f"same measurement: held-out steps with the same exact match {same}/{len(a['step_exact'])}; "
          f"max |NLL difference| {dnll:.4f} (NLL recorded to 4 decimals); max |training loss difference| "
          f"{dloss:.2e} over {len(a['losses'])} steps; primary exact {a['primary_exact']} vs {b['primary_exact']}, "
          f"other {a['other_exact']} vs {b['other_exact']}, primary NLL {a['primary_nll']} vs {b['primary_nll']}")
    print("CPU seconds: getrusage of each cell's process (user + system, its children included); wall seconds grow "
          "with the machine's other load, CPU seconds much less")
    return 0


if __name__ == "__main__":
    sys.exit(main())
