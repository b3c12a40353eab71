"""A demo-like synthesis run written out for a blind review of the strategies.

Runs the pipeline as ``ace demo`` does (all BFCL seeds, the demo's planted weak
compositions as the frontier, 8 plans, 2 rounds, the simulated agent of
``ace_env/demo_weakness.toml``), and writes

* ``benchmarks/out/review_sample.jsonl``: one line per task with only what a
  reviewer needs (an opaque number, the strategy, the target, the user turns,
  the tools offered and the distractors, the ground truth and each call's
  output as the agent sees it, in full: the rollout engine gives the agent the
  whole output, so a flag or a value is never cut off here either; the
  output views), sampled evenly across
  strategies, at most one task per base task and strategy (a base task's BFCL
  variants counted as one), a base task no other strategy drew preferred;
* ``benchmarks/out/review_sample.md``: the same, rendered for reading;
* ``benchmarks/out/review_tasks.jsonl``: the same tasks as ACE task files;
* ``benchmarks/out/strategy_definitions.md``: the one-page definitions a
  reviewer judges against (copied from ``benchmarks/strategy_definitions.md``).

    .venv/bin/python benchmarks/review_sample.py [--n 120] [--sample 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tomllib
from pathlib import Path

from ace_env import bfcl, twins
from ace_env.calls import parse_call
from ace_env.oracle import replay_oracle
from ace_env.sim import DEMO_WEAKNESS, load_weakness
from synth.pipeline import SynthConfig, one_per_base, seeds_by_target, sim_policy, synthesize, write_tasks

HERE = Path(__file__).resolve().parent


def render_markdown(rows: list[dict]) -> str:
    """The sample as a readable page: per task, the user turns, then each ground-truth call and what the agent
    sees of its output, the tools offered and the distractors."""
    out = ["# Review sample", "", "Judge each task against `strategy_definitions.md`.", ""]
    for row in rows:
        out += [f"## {row['n']}. {row['strategy']} (target `{row['target']}`)", ""]
        for t, turn in enumerate(row["turns"]):
            for u in turn["user"]:
                out.append(f"**User (turn {t + 1}):** {u}")
            out.append("")
            if not turn["ground_truth"]:
                out += ["- *(no call: the right answer is to make none)*", ""]
            for step in turn["ground_truth"]:
                out.append(f"- `{step['call']}`")
                out.append(f"  - output: `{step['output_seen_by_agent']}`")
            out.append("")
        out.append(f"Tools offered: {', '.join(f'`{x}`' for x in row['tools_offered'])}")
        if row["distractors"]:
            out.append(f"Distractors (declared wrong): {', '.join(f'`{x}`' for x in row['distractors'])}")
        if row["output_views"]:
            out.append(f"Output views: `{json.dumps(row['output_views'])}`")
        if row.get("docs"):
            out += ["", "Documentation of the tools the ground truth calls and of the distractors:"]
            out += [f"- `{name}`: {text}" for name, text in row["docs"].items()]
        out += ["", "---", ""]
    return "\n".join(out)


def tool_docs(task, oracle) -> dict[str, str]:
    """The documentation (description, parameters, result) of each tool the ground truth calls and of each
    distractor, as the agent is given it: what a reviewer needs to judge a conversion, a documented unit or a
    distractor's stated wrong way."""
    names = [getattr(parse_call(s.call), "name", None) for turn in oracle.turns for s in turn.steps] + list(task.distractors)
    known = twins.all_functions()
    out = {}
    for name in dict.fromkeys(names):
        if name not in known:
            continue
        d = known[name].doc
        params = "; ".join(f"{p} ({v.get('type', '?')}): {v.get('description', '')}"
                           for p, v in (d.get("parameters") or {}).get("properties", {}).items())
        returns = "; ".join(f"{p} ({v.get('type', '?')}): {v.get('description', '')}"
                            for p, v in (d.get("response") or {}).get("properties", {}).items())
        text = str(d.get("description", "")).split("Tool description: ")[-1]
        out[name] = f"{text} Parameters: {params or 'none'}. Returns: {returns or 'nothing documented'}."
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=120, help="tasks the run synthesizes (the demo's default)")
    ap.add_argument("--sample", type=int, default=60, help="tasks written for the review")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args()
    planted = tomllib.loads(Path(DEMO_WEAKNESS).read_text())
    frontier = [{"from": c["from"], "to": c["to"], "n": 100, "fragility": c["error"], "fragility_low": c["error"] - 0.1}
                for c in planted["composition"]]
    seeds = {t.id: t for t in bfcl.load_tasks("all")}
    by_target = seeds_by_target(frontier, seeds)
    config = SynthConfig(n=args.n, rounds=2, plans=8, rollouts_per_task=4, seed=args.seed)
    result = synthesize(frontier, seeds, by_target, sim_policy(load_weakness(DEMO_WEAKNESS)), config)
    by_strategy: dict[str, list] = {}
    for t in result.tasks:
        by_strategy.setdefault(t.provenance["strategy"], []).append(t)
    rng = random.Random(args.seed)
    # at most one task per base task and strategy (cosmetic variants of one BFCL task never side by side)
    picked = one_per_base(result.tasks, min(args.sample, len(result.tasks)), rng)
    rng.shuffle(picked)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(args.out / "review_sample.jsonl", "w", encoding="utf-8") as f:
        for n, task in enumerate(picked, 1):
            oracle = replay_oracle(task)
            rows.append({
                "n": n,
                "strategy": task.provenance["strategy"],
                "target": task.provenance["target_edge"].replace(">", " -> "),
                "turns": [{
                    "user": [m["content"] for m in turn.user if m.get("role") == "user"],
                    "ground_truth": [{"call": s.call, "output_seen_by_agent": s.output} for s in oturn.steps],
                } for turn, oturn in zip(task.turns, oracle.turns)],
                "tools_offered": task.tools,
                "distractors": task.distractors,
                "output_views": task.output_views,
                "long_context": task.long_context,
                "docs": tool_docs(task, oracle),
            })
            f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
    (args.out / "review_sample.md").write_text(render_markdown(rows), encoding="utf-8")
    write_tasks(args.out / "review_tasks.jsonl", picked)
    shutil.copy(HERE / "strategy_definitions.md", args.out / "strategy_definitions.md")
    print(json.dumps({"run": result.summary(), "sampled": len(picked),
                      "sampled_by_strategy": {k: sum(t.provenance["strategy"] == k for t in picked)
                                              for k in sorted(by_strategy)},
                      "out": str(args.out)}, indent=1))


if __name__ == "__main__":
    main()
