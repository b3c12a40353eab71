"""A sample of τ² tasks synthesized by ACE, written out for a blind review.

Synthesizes ``--n`` tasks per domain (airline, retail) with all four τ² strategies (distractor, ambiguity,
depth, cascade), aimed at a fixed frontier of compositions per domain, then samples at most
``--per-strategy`` tasks per strategy (both domains alternating where each has some; at most one task per
seed task and strategy), about 20 in all, in a seeded random order.  Writes to ``--out-dir``:

* ``STEM-sample.md``: for the reviewer.  Per task: the domain, strategy and target composition, the seed
  task's scenario and gold (for comparison), the new task's user scenario, the records it adds to the
  database (a distractor's look-alike), its gold agent actions each with the output the agent sees (cut at
  800 characters for reading), and what the agent must communicate.  No provenance notes about what the
  strategy did: the reviewer judges the task alone.
* ``STEM-key.json``: task number -> strategy, target, task id and the full provenance; for whoever
  tallies the review, not for the reviewer.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/review_sample_tau2.py [--n 60] [--seed 1] \\
        [--per-strategy 6] [--out-dir benchmarks/results] [--stem review-tau2-DATE]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from ace_env.tau2.synthesis import SYNTHESIS
from ace_env.tau2.tasks import Tau2Task, load_tasks
from ace_env.tau2.verify import gold
from synth.pipeline import SynthConfig, run
from synth.registry import targeted

TAU2_STRATEGIES = targeted(Tau2Task)

HERE = Path(__file__).resolve().parent
TOTAL = 20  # about this many tasks in all, spread evenly over the strategies
CUT = 800  # characters of a call's output shown (for reading only)
FRONTIER = {
    "airline": ["get_reservation_details>update_reservation_flights", "get_user_details>get_reservation_details",
                "search_direct_flight>update_reservation_flights", "calculate>update_reservation_baggages",
                "get_reservation_details>search_direct_flight"],
    "retail": ["get_order_details>modify_pending_order_address", "get_user_details>get_order_details",
               "get_product_details>exchange_delivered_order_items", "get_order_details>cancel_pending_order",
               "get_order_details>return_delivered_order_items"],
}


def build(n: int, seed: int) -> tuple[list, dict]:
    """All synthesized tasks of both domains, and every seed task by id."""
    tasks, seeds = [], {}
    for domain, edges in FRONTIER.items():
        base = {t.id: t for t in load_tasks(domain)}
        seeds.update(base)
        rows = [dict(zip(("from", "to"), e.split(">"))) for e in edges]
        tasks += run(SYNTHESIS, Tau2Task, rows, base, None, None,
                     SynthConfig(n=n, strategies=TAU2_STRATEGIES, seed=seed)).tasks
    return tasks, seeds


def queue(tasks: list, rng: random.Random) -> list:
    """One strategy's tasks in the order they are taken: the domains in turn; at most one task per seed task."""
    tasks = list(tasks)
    rng.shuffle(tasks)
    by_domain = {d: [t for t in tasks if t.domain == d] for d in FRONTIER}
    turns = [by_domain[d][i] for i in range(max(map(len, by_domain.values()), default=0))
             for d in FRONTIER if i < len(by_domain[d])]
    out, seen = [], set()
    for t in turns:
        if t.origin["seed"] not in seen:
            seen.add(t.origin["seed"])
            out.append(t)
    return out


def sample(tasks: list, per_strategy: int, seed: int) -> list:
    """Evenly across strategies (one from each in turn) up to ``TOTAL``, at most ``per_strategy`` each; then
    shuffled."""
    rng = random.Random(seed)
    queues = {s: queue([t for t in tasks if t.origin["strategy"] == s], rng) for s in TAU2_STRATEGIES}
    picked: dict[str, list] = {s: [] for s in TAU2_STRATEGIES}
    while sum(map(len, picked.values())) < TOTAL:
        open_ = [s for s in TAU2_STRATEGIES if queues[s] and len(picked[s]) < per_strategy]
        if not open_:
            break
        s = min(open_, key=lambda s: len(picked[s]))
        picked[s].append(queues[s].pop(0))
    out = [t for s in TAU2_STRATEGIES for t in picked[s]]
    rng.shuffle(out)
    return out


def _call(a) -> str:
    who = "" if a.requestor == "assistant" else f"[{a.requestor}] "
    return f"{who}{a.name}({json.dumps(a.arguments)})"


def render(rows: list, seeds: dict) -> str:
    out = ["# τ² synthesized tasks for blind review", "",
           "Each task: the strategy and target composition (A>B) it was generated for, the seed τ² task's "
           "scenario, the new task's user scenario (instructions to a simulated customer), and the gold agent "
           f"actions with the outputs the agent sees. Outputs longer than {CUT} characters are cut here for "
           "reading only.", ""]
    for k, t in enumerate(rows, 1):
        seed = seeds[t.origin["seed"]]
        out += [f"## Task {k} — domain {t.domain}; strategy: {t.origin['strategy']}; target composition: "
                f"{t.origin['target']}", "", "### Seed task's scenario (for comparison)", "```", seed.user_scenario,
                "```", "Seed gold: " + "; ".join(_call(a) for a in seed.gold_actions), "",
                "### New task: user scenario", "```", t.user_scenario, "```", ""]
        added = ((t.tau2.get("initial_state") or {}).get("initialization_data") or {}).get("agent_data")
        if added:
            out += ["### New task: records added to the database (the agent sees them only through its tools)",
                    "```", json.dumps(added, indent=1, ensure_ascii=False), "```", ""]
        out += ["### New task: gold agent actions and their outputs", ""]
        for i, (a, step) in enumerate(zip(t.gold_actions, gold(t).steps), 1):
            text = step.content if len(step.content) <= CUT else step.content[:CUT] + " …(cut)"
            out += [f"{i}. `{_call(a)}` →", "```", text, "```", ""]
        if t.communicate_info:
            out += [f"Must communicate to the user: {list(t.communicate_info)}", ""]
        if t.nl_assertions:
            out += [f"NL assertions (judged): {list(t.nl_assertions)}", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=60, help="tasks synthesized per domain")
    ap.add_argument("--seed", type=int, default=1, help="synthesis and sampling seed")
    ap.add_argument("--per-strategy", type=int, default=6, help="most tasks sampled per strategy")
    ap.add_argument("--out-dir", type=Path, default=HERE / "results")
    ap.add_argument("--stem", default=f"review-tau2-{time.strftime('%Y-%m-%d')}", help="file name stem")
    args = ap.parse_args()
    start = time.perf_counter()
    tasks, seeds = build(args.n, args.seed)
    rows = sample(tasks, args.per_strategy, args.seed)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.stem}-sample.md").write_text(render(rows, seeds))
    key = {str(k): {"strategy": t.origin["strategy"], "target": t.origin["target"], "domain": t.domain,
                    "task_id": t.id, "seed": t.origin["seed"], "provenance": t.provenance}
           for k, t in enumerate(rows, 1)}
    (args.out_dir / f"{args.stem}-key.json").write_text(json.dumps(key, indent=1, ensure_ascii=False) + "\n")
    for label, group in (("built", tasks), ("sampled", rows)):
        counts = Counter((t.origin["strategy"], t.domain) for t in group)
        print(f"{label}: {len(group)} tasks; " + ", ".join(f"{s}/{d} {c}" for (s, d), c in sorted(counts.items())))
    print(f"wrote {args.out_dir / args.stem}-sample.md and -key.json in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
