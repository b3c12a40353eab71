"""A second `ace ingest` of a 20-rollout file, end to end from the CLI (fresh process each time).

Writes 20 simulated rollouts over all 800 BFCL tasks, runs `ace ingest` once to
store the tasks and fill the caches, then times ``--runs`` more ingests of the
same file into new checkpoints: wall time of the whole process, and its CPU time
(user + sys, less sensitive to a loaded machine).  With ``--before DIR`` (a
source tree of an earlier commit, e.g. from ``git archive``) each measured run
is paired with one of that tree, run the same way, alternating.

    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/reingest_bench.py [--before /tmp/ace-before]

``--quick`` (CI smoke): one measured run.

Needs the Neo4j that `ace` connects to (ACE_HOME / ACE_NEO4J_BOLT_PORT).
"""

from __future__ import annotations

import argparse
import atexit
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_facts  # noqa: E402

_MAIN = "import sys; from ace.cli import main; sys.exit(main(sys.argv[1:]))"


def _run(tree: Path, args: list[str], cwd: Path) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MAIN, *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ace {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="measured ingests per tree")
    ap.add_argument("--before", type=Path, help="source tree of an earlier commit to time the same way")
    ap.add_argument("--seed", type=int, default=1, help="simulator seed of the 20 rollouts")
    ap.add_argument("--quick", action="store_true", help="one measured run (CI smoke)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs = 1

    work = Path(tempfile.mkdtemp(prefix="ace-reingest-"))
    atexit.register(shutil.rmtree, work, True)
    rollouts = work / "r20.jsonl"
    _run(ROOT, ["sim", "rollouts", "--tasks", "bfcl:all", "--n", "20", "--seed", str(args.seed),
                "--out", str(rollouts)], work)
    tag = f"{os.getpid()}"
    trees = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    first = {}
    for name, tree in trees.items():  # store the tasks (and, after, fill the disk caches)
        first[name] = _run(tree, ["ingest", str(rollouts), "-e", "reingest", "-p", name, "-c", f"warm-{tag}"], work)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for i in range(args.runs):
        for name, tree in trees.items():
            times[name].append(_run(tree, ["ingest", str(rollouts), "-e", "reingest", "-p", name,
                                           "-c", f"run-{tag}-{i}"], work))
    print(machine_facts())
    print(f"20 rollouts over bfcl:all, {args.runs} runs each, fresh process per run (cwd {work})")
    print(f"{'tree':8} {'first ingest s':>15} {'median wall s':>14} {'min wall s':>11} {'median cpu s':>13}")
    for name, rows in times.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(f"{name:8} {first[name][0]:15.2f} {statistics.median(walls):14.2f} {min(walls):11.2f} "
              f"{statistics.median(cpus):13.2f}")
    after = statistics.median([w for w, _ in times["after"]])
    print(f"re-ingest / first ingest (after): {after / first['after'][0]:.2f}x the wall time")
    if "before" in times:
        before = statistics.median([w for w, _ in times["before"]])
        print(f"re-ingest wall time after / before: {after / before:.2f}x")


if __name__ == "__main__":
    main()
