"""Build one synthetic arm's tasks with the synthesizer of a pinned commit (issue 32's replication plan).

Run by ``benchmarks/evidence_replication.py`` as a subprocess whose PYTHONPATH is a checkout (``git archive``) of
the plan's synthesizer commit, so ``synth`` and ``ace_env`` are imported from that commit whatever the tree holds
now; the script refuses to run if they are not.  Reads a JSON request, writes the tasks (one JSON object a line,
in the order the synthesizer made them) and a summary JSON:

    PYTHONPATH=/path/to/checkout python benchmarks/evidence_synth_pinned.py REQUEST.json TASKS.jsonl SUMMARY.json

The request holds ``checkout`` (the folder the imports must come from), ``seed_ids`` (the usable seed tasks: BFCL
ids of the seed's train and pool splits), ``batches`` (lists of compositions [a, b], aimed at one batch at a time
until ``n`` tasks exist) and ``seed``.  Settings are those of ``evidence_bench.py`` since seeds 0-2: two rounds,
``max(8, 2 x compositions)`` plans, one simulated rollout a task, every strategy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    request_path, tasks_path, summary_path = (Path(a) for a in argv)
    request = json.loads(request_path.read_text())
    checkout = Path(request["checkout"]).resolve()

    import ace_env
    import synth
    from ace_env import bfcl
    from ace_env.sim import WeaknessSpec
    from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize

    for module in (synth, ace_env):
        if checkout not in Path(module.__file__).resolve().parents:
            print(f"error: {module.__name__} was imported from {module.__file__}, not from the pinned checkout "
                  f"{checkout}", file=sys.stderr)
            return 2
    by_id = {t.id: t for t in bfcl.load_tasks("all")}
    seeds = {i: by_id[i] for i in request["seed_ids"] if i in by_id}
    tasks, summary = [], {"aimed_at": [], "batches": []}
    for aim in request["batches"]:
        frontier = [{"from": a, "to": b} for a, b in aim]
        config = SynthConfig(n=request["n"] - len(tasks), rounds=2, plans=max(8, 2 * len(aim)), rollouts_per_task=1,
                             seed=request["seed"])
        result = synthesize(frontier, seeds, seeds_by_target(frontier, seeds), sim_policy(WeaknessSpec()), config)
        tasks += result.tasks
        summary["aimed_at"] += [f"{a}>{b}" for a, b in aim]
        summary["batches"].append(result.summary())
        if len(tasks) >= request["n"]:
            break
    summary["tasks"] = len(tasks)
    summary["synth_module"] = str(Path(synth.__file__).resolve())
    tasks_path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    summary_path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
