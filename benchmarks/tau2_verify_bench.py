"""ACE's τ² verifier beside τ²'s own evaluator, on the same rollouts: agreement and time.

Rollouts: each task's gold actions, and three perturbations of them (as a faulty agent would make):
drop the last write, change one argument of the first write, drop the first read.  Each rollout runs
once on a copy-on-write environment (ace_env.tau2.env); then

* ACE: ace_env.tau2.verify.verify (per-step checks, the final state diffed on touched records only
  against the gold final state, cached per task, whose replay is counted in ACE's time), and
* τ²: EnvironmentEvaluator.calculate_reward (it rebuilds two environments, replays the trajectory and the
  gold, and hashes both databases twice), times ActionEvaluator where the basis has ACTION.  It is
  given ACE's copy-on-write constructor, its cheapest; with its stock constructor (a 7 MB reload per
  environment) it is slower still.

Agreement is on the reward of the basis checks (DB, ENV_ASSERTION, ACTION); "strict" also needs every
step to pass (ACE only).  Prints the table, the time ratio τ²/ACE (goal >= 5x), and the machine load.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/tau2_verify_bench.py
    .venv/bin/python benchmarks/tau2_verify_bench.py --quick     # 3 tasks a domain (CI smoke)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_env.tau2 import DOMAINS  # noqa: E402
from ace_env.tau2.env import (  # noqa: E402
    Tau2Call,
    environment_constructor,
    pristine_hash,
    raw_task,
    run_calls,
    tool_kinds,
)
from ace_env.tau2.package import tau2_modules  # noqa: E402
from ace_env.tau2.synthtasks import trajectory  # noqa: E402
from ace_env.tau2.tasks import Tau2Task, load_tasks  # noqa: E402
from ace_env.tau2.verify import gold, gold_calls, verify  # noqa: E402

KINDS = ("gold", "drop_last_write", "change_arg", "drop_first_read")


def _changed(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, list) and v:
        return v[:-1]
    if v in ("economy", "business"):
        return "business" if v == "economy" else "economy"
    if isinstance(v, str):
        return v + "_x"
    return v


def variants(task: Tau2Task) -> list[tuple[str, list[Tau2Call]]]:
    calls = gold_calls(task)
    kinds = tool_kinds(task.domain)
    kind = [kinds.get((c.requestor, c.name), "") for c in calls]
    writes = [i for i, k in enumerate(kind) if k == "write"]
    reads = [i for i, k in enumerate(kind) if k == "read"]
    out = [("gold", calls)]
    if writes:
        i = writes[-1]
        out.append(("drop_last_write", calls[:i] + calls[i + 1:]))
        i = writes[0]
        c = calls[i]
        # non-id arguments first, then ids; the first one the change affects
        for key in sorted(c.arguments, key=lambda k: ("id" in k and not isinstance(c.arguments[k], list), k)):
            new = _changed(c.arguments[key])
            if new != c.arguments[key]:
                out.append(("change_arg", calls[:i] + [Tau2Call(c.name, {**c.arguments, key: new}, c.requestor)]
                            + calls[i + 1:]))
                break
    if reads:
        i = reads[0]
        out.append(("drop_first_read", calls[:i] + calls[i + 1:]))
    return out


def tau2_reward(task: Tau2Task, msgs: list, ctor) -> float:
    m = tau2_modules()
    raw = raw_task(task.domain, task.tau2_id)
    reward = m.evaluator_env.EnvironmentEvaluator.calculate_reward(
        environment_constructor=ctor, task=raw, full_trajectory=msgs).reward
    if "ACTION" in task.reward_basis:
        reward *= m.evaluator_action.ActionEvaluator.calculate_reward(task=raw, full_trajectory=msgs).reward
    return reward


def run_domain(domain: str, limit: int | None) -> dict:
    tasks = load_tasks(domain)[:limit]
    before = pristine_hash(domain)
    ctor = environment_constructor(domain)
    rows = {k: dict(n=0, tau2=0, ace=0, strict=0, agree=0) for k in KINDS}
    t_ace = t_tau2 = t_gold = 0.0
    disagree = []
    for task in tasks:
        t = time.perf_counter()
        gold(task)
        t_gold += time.perf_counter() - t
        for kind, calls in variants(task):
            steps, env = run_calls(domain, task.tau2_id, calls)
            t = time.perf_counter()
            v = verify(task, steps, env)
            t_ace += time.perf_counter() - t
            msgs = trajectory(steps)
            t = time.perf_counter()
            r = tau2_reward(task, msgs, ctor)
            t_tau2 += time.perf_counter() - t
            row = rows[kind]
            row["n"] += 1
            row["tau2"] += r == 1.0
            row["ace"] += v.reward == 1.0
            row["strict"] += v.strict
            row["agree"] += (r == 1.0) == (v.reward == 1.0)
            if (r == 1.0) != (v.reward == 1.0):
                disagree.append((task.id, kind, r, v.reward, v.detail[:2]))
    return dict(domain=domain, tasks=len(tasks), rows=rows, t_ace=t_ace + t_gold, t_verify=t_ace, t_gold=t_gold,
                t_tau2=t_tau2, disagree=disagree, pristine_unchanged=pristine_hash(domain) == before)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 tasks a domain (CI smoke)")
    ap.add_argument("--domains", default=",".join(DOMAINS), help="comma-separated τ² domains")
    ap.add_argument("--limit", type=int, default=None, help="tasks per domain (default: all of the base split)")
    args = ap.parse_args(argv)
    limit = 3 if args.quick else args.limit
    t0 = time.perf_counter()
    results = []
    for d in [d.strip() for d in args.domains.split(",") if d.strip()]:
        load_tasks(d)  # load and warm outside the timed part: both sides share the environment
        results.append(run_domain(d, limit))
    print(f"τ² verification: ACE vs τ²'s EnvironmentEvaluator (+ActionEvaluator on ACTION tasks); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"{'domain':<8} {'rollout':<16} {'runs':>5} {'τ² pass':>8} {'ACE pass':>9} {'agree':>6} {'ACE strict':>11}")
    total_runs = total_agree = 0
    for res in results:
        for kind, row in res["rows"].items():
            if row["n"]:
                print(f"{res['domain']:<8} {kind:<16} {row['n']:>5} {row['tau2']:>8} {row['ace']:>9} "
                      f"{row['agree']:>6} {row['strict']:>11}")
                total_runs += row["n"]
                total_agree += row["agree"]
    print()
    print(f"{'domain':<8} {'tasks':>5} {'ACE s':>8} {'(gold replay)':>13} {'τ² s':>8} {'τ²/ACE':>8} {'pristine same':>14}")
    t_ace = t_tau2 = 0.0
    for res in results:
        ratio = res["t_tau2"] / res["t_ace"] if res["t_ace"] else float("inf")
        print(f"{res['domain']:<8} {res['tasks']:>5} {res['t_ace']:>8.3f} {res['t_gold']:>13.3f} {res['t_tau2']:>8.3f} "
              f"{ratio:>7.1f}x {str(res['pristine_unchanged']):>14}")
        t_ace += res["t_ace"]
        t_tau2 += res["t_tau2"]
    for res in results:
        for d in res["disagree"][:5]:
            print("disagreement:", d)
    ratio = t_tau2 / t_ace if t_ace else float("inf")
    print(f"agreement: {total_agree}/{total_runs} rollouts")
    print(f"verification speed τ²/ACE: {ratio:.1f}x (goal >= 5x: {'MET' if ratio >= 5 else 'NOT MET'}); "
          f"wall {time.perf_counter() - t0:.1f} s")
    return 0 if all(r["pristine_unchanged"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
