"""What it costs to hand every caller its own BFCL tasks (800 of them), per call.

Compares the ways `bfcl.load_tasks` could keep one caller's edits away from
another's: rebuilding from bfcl-eval's files, ``copy.deepcopy``, a JSON round
trip, unpickling a kept pickle (what ACE does), and deep-freezing once
(tuples and read-only mappings; free per call after that, but not a ``Task``
any more: callers that build tasks by editing copies, and pickling, break).

    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/task_copy_bench.py
    .venv/bin/python benchmarks/task_copy_bench.py --quick    # one run of each (CI smoke)
"""

from __future__ import annotations

import argparse
import copy
import json
import pickle
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine_facts  # noqa: E402

from ace_env import bfcl  # noqa: E402
from ace_env.tasks import Task  # noqa: E402


def _freeze(value):
    if isinstance(value, dict):
        return types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _time(fn, runs: int = 5) -> float:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each method; the median is reported")
    ap.add_argument("--quick", action="store_true", help="one run of each method (CI smoke)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs = 1
    tasks = [t for c in bfcl.CATEGORIES for t in bfcl._build_category(c)]
    blob = pickle.dumps(tasks, protocol=pickle.HIGHEST_PROTOCOL)
    lines = [json.dumps(t.to_dict()) for t in tasks]
    rows = [
        ("rebuild from bfcl-eval's files", lambda: [t for c in bfcl.CATEGORIES for t in bfcl._build_category(c)]),
        ("copy.deepcopy", lambda: copy.deepcopy(tasks)),
        ("JSON round trip (Task.from_dict)", lambda: [Task.from_dict(json.loads(s)) for s in lines]),
        ("pickle.loads of a kept pickle (ACE)", lambda: pickle.loads(blob)),
        ("deep-freeze once (then 0 per call)", lambda: [_freeze(t.to_dict()) for t in tasks]),
    ]
    print(machine_facts())
    print(f"{len(tasks)} tasks, pickle {len(blob) / 2**20:.1f} MiB; median of {args.runs} run(s)")
    print(f"{'method':40} {'seconds':>8}")
    seconds = {}
    for name, fn in rows:
        seconds[name] = _time(fn, args.runs)
        print(f"{name:40} {seconds[name]:8.3f}")
    ace = seconds["pickle.loads of a kept pickle (ACE)"]
    print(f"copy.deepcopy / pickle.loads (ACE): {seconds['copy.deepcopy'] / ace:.1f}x the time per call")


if __name__ == "__main__":
    main()
