"""Real agents' τ²-bench result files: ACE's verdicts beside τ²'s recorded rewards, per file.

For each result file (default: the seven in benchmarks/data/tau2-results): conversations, τ²'s pass rate
(recorded), ACE's (τ²'s rules, and with ``--strict`` semantics beside it), the agreement matrix (τ² × ACE),
ACE's failures by attribution, passed conversations that break one of ACE's stricter rules, and seconds
per conversation (the calls replayed and judged in the watched worker).  The baseline is τ²'s own verdict.

    .venv/bin/python benchmarks/real_agents.py [FILE.json ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from ace_env.tau2.results import read_results
from ace_env.tau2.rollouts import Tau2Verifier
from ace_env.tau2.tasks import tasks_by_id

DATA = Path(__file__).resolve().parent / "data" / "tau2-results"


def judge(path: Path) -> dict:
    f = read_results(path)
    tasks = tasks_by_id([f.domain])
    start = time.perf_counter()
    with Tau2Verifier(tasks) as loose, Tau2Verifier(tasks, strict=True) as strict:
        verdicts = [v for _, v in loose.verify_stream(f.rollouts)]
        seconds = time.perf_counter() - start
        strict_verdicts = [v for _, v in strict.verify_stream(f.rollouts)]
    matrix = Counter((v.reference_reward, v.reward) for v in verdicts)
    return {"file": path.name, "domain": f.domain, "agent": f.policy, "n": len(verdicts),
            "tau2": sum(v.reference_reward == 1.0 for v in verdicts), "ace": sum(v.reward == 1.0 for v in verdicts),
            "ace_strict": sum(v.reward == 1.0 for v in strict_verdicts),
            "agree": matrix[(1.0, 1.0)] + matrix[(0.0, 0.0)], "looser": matrix[(0.0, 1.0)],
            "stricter": matrix[(1.0, 0.0)],
            "failures": Counter(v.attribution for v in verdicts if v.reward < 1.0),
            "listed": Counter(r for v in verdicts if v.reward == 1.0 for r in v.stricter_because),
            "s_per_conversation": seconds / max(len(verdicts), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="τ² result files (default: benchmarks/data/tau2-results)")
    args = ap.parse_args(argv)
    files = args.files or sorted(DATA.glob("*.json"))
    rows = [judge(p) for p in files]
    head = f"{'file':40s} {'n':>4s} {'τ² pass':>8s} {'ACE pass':>9s} {'strict':>7s} {'agree':>7s} {'looser':>7s} " \
           f"{'stricter':>8s} {'s/conv':>7s}"
    print(head)
    for r in rows:
        print(f"{r['file']:40s} {r['n']:4d} {r['tau2']:8d} {r['ace']:9d} {r['ace_strict']:7d} "
              f"{r['agree'] / r['n']:7.1%} {r['looser']:7d} {r['stricter']:8d} {r['s_per_conversation']:7.3f}")
    n = sum(r["n"] for r in rows)
    agree = sum(r["agree"] for r in rows)
    print(f"{'all':40s} {n:4d} {sum(r['tau2'] for r in rows):8d} {sum(r['ace'] for r in rows):9d} "
          f"{sum(r['ace_strict'] for r in rows):7d} {agree / n:7.1%} {sum(r['looser'] for r in rows):7d} "
          f"{sum(r['stricter'] for r in rows):8d}")
    print("\nACE's failures by attribution (where τ²'s verdict turns):")
    for r in rows:
        print(f"  {r['file']:40s} " + ", ".join(f"{k} {c}" for k, c in r["failures"].most_common()))
    print("\nPassed conversations that break one of ACE's stricter rules (listed, not counted; --strict counts them):")
    for r in rows:
        print(f"  {r['file']:40s} " + (", ".join(f"{k} {c}" for k, c in r["listed"].most_common()) or "none"))
    return 0 if agree == n else 1


if __name__ == "__main__":
    sys.exit(main())
