"""A sample of τ² tasks synthesized by ACE, written out for a blind review.

One command gives the whole sample: it synthesizes ``--n`` tasks per domain (airline, retail) with all five τ²
strategies (distractor, ambiguity, depth, cascade, lookalike), aimed at a fixed frontier of compositions per
domain, once per synthesis seed of ``--seeds`` (the seeds draw other seed tasks and other constructions), pools
the runs and drops every task whose body (scenario, added records, gold, what to communicate) another already
has.  It then samples ``--total`` tasks (40): at most one per seed task and strategy, at most ``--per-seed`` (2)
per seed task and ``--per-user`` (3) per customer overall, seed tasks not yet used first, aiming at
``--per-strategy`` (8) per strategy (the domains alternating); where a strategy has fewer distinct tasks it says so
and the others fill the rest, evenly, up to ``--most`` (10) each, and past it only once every other strategy has
run out (said too).  Shuffled
with ``--seeds``'s first seed.  Writes to ``--out-dir`` (the key to ``--key-dir``, the out dir by default, so that
it can be kept away from the reviewer's folder):

* ``STEM-sample.md``: for the reviewer.  Per task: the domain, strategy and target composition, the seed
  task's scenario and gold (for comparison), the new task's user scenario, the records it adds to the
  database (a distractor's look-alike), its gold agent actions each with the output the agent sees (cut at
  800 characters for reading), and what the agent must communicate.  No provenance notes about what the
  strategy did: the reviewer judges the task alone.
* ``STEM-key.json``: task number -> strategy, target, task id and the full provenance; for whoever
  tallies the review, not for the reviewer.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/review_sample_tau2.py [--n 200] [--seeds 3 4 5] [--total 40] \\
        [--per-strategy 8] [--per-seed 2] [--per-user 3] [--most 10] [--out-dir benchmarks/results] [--key-dir DIR] \\
        [--stem review-tau2-DATE]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from ace_env.tau2.drafting import owner
from ace_env.tau2.synthesis import SYNTHESIS
from ace_env.tau2.tasks import Tau2Task, load_tasks
from ace_env.tau2.verify import gold
from synth.pipeline import SynthConfig, run
from synth.registry import targeted

TAU2_STRATEGIES = targeted(Tau2Task)

HERE = Path(__file__).resolve().parent
#: Characters of a call's output shown (for reading only): enough for a product's options and stock, which the depth
#: answers are read from (at 800 the s6 reviewer could check none of them).
CUT = 6000
#: Per domain, the compositions aimed at: together every edge on which a seed task carries ambiguity, cascade,
#: distractor or lookalike (rare on τ²'s seeds), and the depth edges; retail's last seven since the s6 review (the
#: cascade after any write on an order; depth on the seed tasks those edges hold).
FRONTIER = {
    "airline": ["get_reservation_details>update_reservation_flights", "get_user_details>get_reservation_details",
                "search_direct_flight>update_reservation_flights", "calculate>update_reservation_baggages",
                "get_reservation_details>search_direct_flight", "update_reservation_flights>update_reservation_flights",
                "update_reservation_flights>update_reservation_baggages", "get_reservation_details>get_user_details",
                "get_reservation_details>update_reservation_passengers", "get_reservation_details>get_reservation_details"],
    "retail": ["get_order_details>modify_pending_order_address", "get_user_details>get_order_details",
               "get_product_details>exchange_delivered_order_items", "get_order_details>cancel_pending_order",
               "get_order_details>return_delivered_order_items", "cancel_pending_order>modify_pending_order_address",
               "find_user_id_by_name_zip>get_order_details", "get_order_details>get_product_details",
               "get_order_details>get_order_details", "calculate>modify_pending_order_items",
               "get_product_details>return_delivered_order_items", "get_user_details>modify_pending_order_items",
               "calculate>cancel_pending_order", "get_product_details>modify_pending_order_items",
               "cancel_pending_order>modify_pending_order_items", "exchange_delivered_order_items>exchange_delivered_order_items",
               "modify_pending_order_items>modify_pending_order_address",
               "return_delivered_order_items>return_delivered_order_items"],
}


def build(n: int, seeds: list[int]) -> tuple[list, dict]:
    """Every synthesized task of both domains over the synthesis seeds, each body once, and every seed task by id."""
    tasks, base_tasks, bodies = [], {}, set()
    for domain, edges in FRONTIER.items():
        base = {t.id: t for t in load_tasks(domain)}
        base_tasks.update(base)
        rows = [dict(zip(("from", "to"), e.split(">"))) for e in edges]
        for seed in seeds:
            for t in run(SYNTHESIS, Tau2Task, rows, base, None, None,
                         SynthConfig(n=n, strategies=TAU2_STRATEGIES, seed=seed)).tasks:
                if body(t) not in bodies:
                    bodies.add(body(t))
                    tasks.append(t)
    return tasks, base_tasks


def body(t) -> str:
    """What a reviewer reads of a task (scenario, added records, gold, what to communicate): equal bodies are copies."""
    added = ((t.tau2.get("initial_state") or {}).get("initialization_data") or {}).get("agent_data")
    return json.dumps([t.domain, t.user_scenario, added, [(a.requestor, a.name, a.arguments) for a in t.gold_actions],
                       list(t.communicate_info), list(t.nl_assertions)], sort_keys=True, ensure_ascii=False)


def trapped(t) -> bool:
    """Whether the task records a trap (the wrong answer a shortcut gives, or a live look-alike)."""
    return bool(t.origin.get("trap") or t.origin.get("look_alike"))


def user_of(t) -> str | None:
    """The task's customer: the first user id its gold passes, else the owner of the first record it acts on."""
    for a in t.gold_actions:
        if isinstance(a.arguments.get("user_id"), str):
            return a.arguments["user_id"]
    for a in t.gold_actions:
        for key in ("reservation_id", "order_id"):
            if isinstance(a.arguments.get(key), str) and owner(t.domain, a.arguments[key]):
                return owner(t.domain, a.arguments[key])
    return None


def record_of(t) -> str | None:
    """The record the task is about: the one a strategy describes or copies, the item a retail depth question
    asks about, else the last one the gold acts on (an airline depth question: its reservation, so that the two
    flights of one reservation are not two tasks; blind review s7, tasks 8 and 11)."""
    for key in ("described", "of", "item_id"):
        if isinstance(t.origin.get(key), str):
            return t.origin[key]
    ids = [a.arguments.get(k) for a in t.gold_actions for k in ("reservation_id", "order_id")
           if isinstance(a.arguments.get(k), str)]
    return ids[-1] if ids else None


def queue(tasks: list, rng: random.Random) -> list:
    """One strategy's tasks in the order they are taken: those that record a trap first, the domains in turn, one
    task per seed task before any seed task's second (taken only where the first's customer and record are used
    up: :func:`sample` takes at most one per seed task and strategy)."""
    tasks = list(tasks)
    rng.shuffle(tasks)
    tasks.sort(key=lambda t: not trapped(t))
    by_domain = {d: [t for t in tasks if t.domain == d] for d in FRONTIER}
    turns = [by_domain[d][i] for i in range(max(map(len, by_domain.values()), default=0))
             for d in FRONTIER if i < len(by_domain[d])]
    out, seen = [], set()
    for t in turns:
        if t.origin["seed"] not in seen:
            seen.add(t.origin["seed"])
            out.append(t)
    return out + [t for t in turns if not any(t is x for x in out)]


def sample(tasks: list, total: int, per_strategy: int, per_seed: int, seed: int,
           per_user: int = 3, most: int = 10) -> tuple[list, list[str]]:
    """``total`` tasks, at most one per seed task and strategy, ``per_seed`` per seed task and ``per_user`` per
    customer, never two with the same customer, strategy and record, one strategy after
    another (the one with fewest first), up to ``per_strategy`` each, then the strategies that have more fill the
    rest evenly up to ``most`` each (s6: depth, 16 of 30, one template), and only where they all run out past
    it (noted); each takes the first task in its queue whose seed task, then customer, is used least so far.  Shuffled; with a
    note for each strategy short of ``per_strategy``."""
    rng = random.Random(seed)
    queues = {s: queue([t for t in tasks if t.origin["strategy"] == s], rng) for s in TAU2_STRATEGIES}
    picked: dict[str, list] = {s: [] for s in TAU2_STRATEGIES}
    used: Counter = Counter()  # tasks per seed task
    users: Counter = Counter()  # tasks per customer
    about: set = set()  # (customer, strategy, record) taken
    pairs: set = set()  # (seed task, strategy) taken
    who = {id(t): (user_of(t), record_of(t)) for t in tasks}

    def fits(t, s: str) -> bool:
        user, rec = who[id(t)]
        return used[t.origin["seed"]] < per_seed and (t.origin["seed"], s) not in pairs and (user is None or (users[user] < per_user
                                                                       and (user, s, rec) not in about))

    for cap in (per_strategy, max(per_strategy, most), total):  # the last only where the others ran out
        while sum(map(len, picked.values())) < total:
            for s in TAU2_STRATEGIES:
                queues[s] = [t for t in queues[s] if fits(t, s)]
            open_ = [s for s in TAU2_STRATEGIES if queues[s] and len(picked[s]) < cap]
            if not open_:
                break
            s = min(open_, key=lambda s: len(picked[s]))
            # the first of the least used seed tasks and customers, one that records a trap first
            t = min(queues[s], key=lambda t: (used[t.origin["seed"]], users[who[id(t)][0]], not trapped(t)))
            queues[s].remove(t)
            used[t.origin["seed"]] += 1
            pairs.add((t.origin["seed"], s))
            user, rec = who[id(t)]
            if user is not None:
                users[user] += 1
                about.add((user, s, rec))
            picked[s].append(t)
    notes = [f"{s}: {len(picked[s])} of {per_strategy} (the frontier's seed tasks give no more distinct {s} tasks "
             f"under the per-seed and per-user limits)" for s in TAU2_STRATEGIES if len(picked[s]) < per_strategy]
    notes += [f"{s}: {len(picked[s])}, past --most {most}: the other strategies ran out" for s in TAU2_STRATEGIES
              if len(picked[s]) > max(per_strategy, most)]
    out = [t for s in TAU2_STRATEGIES for t in picked[s]]
    rng.shuffle(out)
    return out, notes


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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="tasks synthesized per domain and synthesis seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5],
                    help="synthesis seeds, one run each, pooled; the first also seeds the sampling")
    ap.add_argument("--total", type=int, default=40, help="tasks in the sample")
    ap.add_argument("--per-strategy", type=int, default=8, help="tasks aimed at per strategy")
    ap.add_argument("--per-seed", type=int, default=2, help="most tasks sampled from one seed task")
    ap.add_argument("--per-user", type=int, default=3, help="most tasks sampled with one customer")
    ap.add_argument("--most", type=int, default=10, help="most tasks sampled of one strategy")
    ap.add_argument("--out-dir", type=Path, default=HERE / "results")
    ap.add_argument("--key-dir", type=Path, default=None, help="where the key goes (default: --out-dir)")
    ap.add_argument("--stem", default=f"review-tau2-{time.strftime('%Y-%m-%d')}", help="file name stem")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    tasks, seeds = build(args.n, args.seeds)
    rows, notes = sample(tasks, args.total, args.per_strategy, args.per_seed, args.seeds[0], args.per_user, args.most)
    key_dir = args.key_dir or args.out_dir
    for d in (args.out_dir, key_dir):
        d.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{args.stem}-sample.md").write_text(render(rows, seeds))
    key = {str(k): {"strategy": t.origin["strategy"], "target": t.origin["target"], "domain": t.domain,
                    "task_id": t.id, "seed": t.origin["seed"], "provenance": t.provenance}
           for k, t in enumerate(rows, 1)}
    (key_dir / f"{args.stem}-key.json").write_text(json.dumps(key, indent=1, ensure_ascii=False) + "\n")
    for label, group in (("built (distinct bodies)", tasks), ("sampled", rows)):
        counts = Counter((t.origin["strategy"], t.domain) for t in group)
        print(f"{label}: {len(group)} tasks; " + ", ".join(f"{s}/{d} {c}" for (s, d), c in sorted(counts.items())))
    print("sampled per strategy: " + ", ".join(f"{s} {c}" for s, c in
                                              sorted(Counter(t.origin["strategy"] for t in rows).items())))
    print(f"tasks recording a trap: {sum(map(trapped, rows))}; distinct customers: "
          f"{len({user_of(t) for t in rows})}")
    print(f"distinct seed tasks: {len({t.origin['seed'] for t in rows})}; most from one: "
          f"{max(Counter(t.origin['seed'] for t in rows).values(), default=0)}")
    for note in notes:
        print("short: " + note)
    print(f"wrote {args.out_dir / args.stem}-sample.md and {key_dir / args.stem}-key.json in "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
