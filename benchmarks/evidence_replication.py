"""The preregistered replication of issue 32 (``evidence_bench.py --plan benchmarks/evidence_plan.json``).

Runs the design the plan file fixes, reading from it every number it states: the seeds (each one a permutation
of the 200 BFCL base indices into held-out / pool / train of the plan's sizes, its own warm start, diagnosis,
targets and synthesis draw), the candidate pool and its constant-call exclusion, the targets and the random
draw, the four arms, the token budgets and their matching rule, the synthesizer commit, the bootstrap and the
decision rule.  Settings the plan leaves to "as benchmarks/evidence_bench.py today" (the warm start's 60 tasks,
at most 3 epochs until 10% held-out exact, its 1,024-token window; the synthesis settings) are evidence_bench's.

* **Arms** (per seed, all from the seed's warm start): ``ace`` -- the pinned synthesizer aimed at the seed's
  targets, shuffled by the seed; ``random`` -- the same synthesizer aimed at the random draw (compositions of
  the candidate pool less the targets: the random arm never draws a target); ``more-real`` -- oracle
  transcripts of the seed's pool split, all four categories, shuffled; ``curriculum-mixed`` -- the ace arm's
  tasks, ordered and mixed by ACE's curriculum (:mod:`train.curriculum`): a round per budget interval, the
  curriculum state stepped (``core.step``: its momentum, unlock/mastery/fallback rules over the prior-edge
  dependencies, ``level="tool"``, ``min_rounds=1`` as ``ace loop`` runs it) on gold-prefix evidence of the
  seed's pool split, read from the graph by ``store.observations_from_graph`` (the warm start's diagnosis
  scope for the first round, then the arm's own checkpoint at each budget, scored on the pool and ingested as
  scope ``<experiment>/curriculum-<seed>/t<budget>``); each round's tasks picked by ``mix.mix`` (tasks on
  active units plus the depth-stratified replay) from the ace tasks not yet used, until the round's tokens are
  covered, shuffled within the round.  The curriculum reads the graph, so this arm needs Neo4j, as does the
  diagnosis.
* **Synthesizer pinned**: ``ace`` and ``random`` data are built by ``evidence_synth_pinned.py`` in a subprocess
  whose PYTHONPATH is a ``git archive`` of the plan's commit (under ``--work``), always, whether or not the
  tree's synthesizer still matches it; each arm's data sha256 (its task file in training order) is recorded
  with that commit, and a record built at another commit is left out of the analysis.
* **Budgets in supervised tokens**: an arm is checkpointed at the first sample whose cumulative supervised
  (assistant) tokens reach the budget; that sample's supervised tokens beyond the budget are masked out of its
  loss, so ``loss_tokens`` equals the budget.  ``samples`` counts the samples trained, the cut one included.
* **Nested budgets, one run per (arm, seed)**: training is sequential from the seed's warm start in a fixed
  order, so the model at a budget depends only on the samples before it.  The cut sample is the one place a
  longer run differs from a run that stops at the budget: the longer run trains that sample whole.  So before the
  cut step the model and optimizer are saved, the cut step is taken, the checkpoint scored and recorded, and the
  run goes on from the saved state with the whole sample: every budget's checkpoint is the one a separate run to
  that budget would give (the curriculum arm's order too: its round after a budget is decided from that budget's
  checkpoint, which is the same in both).  The saved state is also the resume point: a killed run resumes at the
  last budget it recorded.
* **Records** (one per arm, seed and budget, appended to the state as each exists): the per-step exact match
  and NLL on every held-out step of the seed, primary (target steps), other steps, ``loss_tokens``,
  ``tokens`` (transcript tokens trained on), ``samples``, ``data_sha256``, ``synthesizer_commit``; and one
  ``warm`` record per seed.  Free-running pass rate and partial credit of the warm start and of each arm's final
  checkpoint on the seed's first held-out tasks (the plan's 20) go to ``free_running``.
* **Report** (``--report``): the plan's analysis -- per arm and budget the primary exact and NLL, each seed alone;
  ace minus random / more-real / curriculum-mixed at each budget with 95% hierarchical bootstrap intervals
  (seeds drawn with replacement, then each drawn seed's own held-out target tasks; arms paired;
  ``evidence_bench.bootstrap_draws``) and per seed; the speed-up (supervised tokens the ace arm needs to reach
  random's final primary value, interpolated in log2 tokens, over the largest budget; inf when never); the
  minimum detectable effect at the planned seeds; the other steps against the warm start; the excluded
  constant-call steps; and the decision rule's verdict line: established / refuted / not decidable.

Cost, an ESTIMATE derived from measured figures, not a measurement of the run (RESULTS.md, "Replication plan
(issue 32)", shows the arithmetic): about 3.2 CPU hours a seed, 19-20 CPU hours for the six seeds, one torch thread
a process, before synthesis and free-running (neither measured).  From: the "Cheaper cell" (this machine, one
thread: training 254.9 CPU s for 22,340 transcript tokens, 0.0114 CPU s a token; one held-out scoring 159.8 CPU
s); the transcript tokens per supervised token of the seeds 0-2 records (ace 4.94, random 5.78, more-real 6.91;
curriculum-mixed taken as ace's), so 24,000 supervised tokens are 542k transcript tokens over the four arms (6,180
s); 17 held-out scorings (2,717 s); the warm start's 2 epochs of 46,080 tokens as on seeds 0-2, with a scoring
each (1,371 s; a third epoch adds 686 s); the pool diagnosis and the curriculum's three pool scorings (60 tasks,
scaled from 40: 959 s); the 12 cut samples trained again (249 s) and the saves (about 80 s).  Wall time is more:
the measured cell took 4x its CPU time in wall time on this shared machine; two processes (one a core, disjoint
``--seeds``, one state file) halve it on an idle one.  The command (it is not started by anything here):

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 python benchmarks/evidence_bench.py --plan benchmarks/evidence_plan.json
    python benchmarks/evidence_bench.py --plan benchmarks/evidence_plan.json --report
    python benchmarks/evidence_bench.py --plan benchmarks/evidence_plan.json --quick --state /tmp/r.json --work /tmp/r
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence_bench as ev  # noqa: E402
from _common import machine_facts  # noqa: E402

from ace_env import bfcl  # noqa: E402
from ace_env.tasks import Task  # noqa: E402
from ace_graph.compositions import adjacent_pairs  # noqa: E402
from ace_graph.config import neo4j_settings  # noqa: E402
from ace_graph.db import get_driver  # noqa: E402
from ace_graph.ingest import GOLD_PREFIX, ingest_records  # noqa: E402
from ace_graph.store import GraphStore  # noqa: E402
from ace_graph.tagger import tag_task  # noqa: E402
from synth.pipeline import seeds_by_target  # noqa: E402
from train.curriculum.core import CurriculumConfig, CurriculumState, step  # noqa: E402
from train.curriculum.mix import candidate, mix  # noqa: E402
from train.curriculum.store import observations_from_graph  # noqa: E402
from train.engine import RolloutConfig, RolloutEngine  # noqa: E402
from train.goldprefix import records, score_tasks  # noqa: E402
from train.policies import GenerationConfig  # noqa: E402
from train.policies.hf import HFPolicy, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parent
PLAN = ROOT / "evidence_plan.json"
STATE = ROOT / "results" / "evidence_replication.json"
WORKER = ROOT / "evidence_synth_pinned.py"
ARMS = ("ace", "random", "more-real", "curriculum-mixed")
SYNTHETIC = ("ace", "random")
#: Tasks each synthetic arm asks the synthesizer for: the ace arm's 64 samples carried 22,629 supervised tokens on
#: seeds 0-2 (354 a task), so 96 leave about 40% headroom over 24,000; an arm with fewer tokens cycles its data.
SYNTH_TASKS = 96


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """The numbers of ``evidence_plan.json`` this code runs on, each read from the plan (never retyped)."""

    path: str
    sha256: str
    seeds: tuple[int, ...]
    indices: int
    sizes: tuple[int, int, int]  # held-out, pool, train
    commit: str
    min_n: int
    targets: int
    draw: int
    budgets: tuple[int, ...]
    max_length: int
    lr: float
    n_boot: int
    threshold: float
    free_tasks: int


def _find(pattern: str, text: str, what: str) -> re.Match:
    m = re.search(pattern, text)
    if m is None:
        raise SystemExit(f"error: the plan's {what} does not state what the code reads from it (/{pattern}/): "
                         f"{text[:120]!r}")
    return m


def load_plan(path: Path) -> Plan:
    """Read the plan; every number below comes from its text or values, and a plan that no longer states one
    stops the run with one line."""
    try:
        raw = path.read_bytes()
        plan = json.loads(raw)
        seed = plan["seed"]
        sizes = _find(r"(\d+) / (\d+) / (\d+)", seed["meaning"], "seed.meaning")
        indices = _find(r"the (\d+) BFCL base indices", seed["meaning"], "seed.meaning")
        pool = plan["candidate_pool"]
        budgets = plan["budgets"]
        rule = plan["decision_rule"]["established"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"error: {path} is not the replication plan ({type(e).__name__}: {e})") from None
    return Plan(
        path=str(path), sha256=hashlib.sha256(raw).hexdigest(), seeds=tuple(int(s) for s in seed["values"]),
        indices=int(indices.group(1)), sizes=tuple(int(x) for x in sizes.groups()),  # type: ignore[arg-type]
        commit=plan["synthesizer"]["commit"],
        min_n=int(_find(r"at least (\d+) times", pool["rule"], "candidate_pool.rule").group(1)),
        targets=int(_find(r"the (\d+) weakest", pool["targets"], "candidate_pool.targets").group(1)),
        draw=int(_find(r"^(\d+) compositions drawn", pool["random_draw"], "candidate_pool.random_draw").group(1)),
        budgets=tuple(int(b) for b in budgets["values"]),
        max_length=int(_find(r"at most ([\d,]+) tokens", plan["training"], "training").group(1).replace(",", "")),
        lr=float(_find(r"lr ([\d.e-]+)", plan["training"], "training").group(1)),
        n_boot=int(_find(r"([\d,]+) resamples", plan["analysis"]["intervals"], "analysis.intervals")
                   .group(1).replace(",", "")),
        threshold=float(_find(r"<= (\d*\.\d+)", rule, "decision_rule.established").group(1)),
        free_tasks=int(_find(r"first (\d+) held-out tasks", " ".join(plan["metrics"]["secondary"]),
                             "metrics.secondary").group(1)))


def plan_commit(path: Path) -> str | None:
    """The commit that last changed the plan file (it must precede every record it governs)."""
    try:
        return subprocess.run(["git", "log", "-1", "--format=%H", "--", str(path.resolve())], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


# --------------------------------------------------------------------------- per seed: splits, warm start, diagnosis


#: Quick mode: 40 base tasks (mostly file-system ones, which share compositions), split 6 / 14 / 20 by each seed's permutation.
QUICK_INDICES, QUICK_SIZES = 40, (6, 14, 20)


def seed_splits(plan: Plan, seed: int, quick: bool) -> dict[str, list[int]]:
    """The seed's permutation of the base indices into held-out / pool / train (train keeps the permuted order:
    the warm start takes its first tasks)."""
    n, (held, pool, _) = (QUICK_INDICES, QUICK_SIZES) if quick else (plan.indices, plan.sizes)
    order = list(range(n))
    random.Random(f"evidence-plan/split/{seed}").shuffle(order)
    return {"held_out": sorted(order[:held]), "pool": sorted(order[held:held + pool]), "train": order[held + pool:]}


def _seed_state(state: dict[str, Any], seed: int) -> dict[str, Any]:
    return state.setdefault("seeds", {}).setdefault(str(seed), {})


def warm_start(args: argparse.Namespace, plan: Plan, state: dict[str, Any], seed: int, splits: dict[str, Any],
               held: list[Task], steps: list[dict[str, Any]]) -> Path:
    """SFT of the base model on the first ``--warm-tasks`` of the seed's train split, epochs in an order fixed by
    the seed, until held-out exact reaches ``--warm-target`` (at most ``--warm-epochs``)."""
    out = args.work / f"seed-{seed}" / "warm"
    phase = _seed_state(state, seed).setdefault("warm", {"epochs": []})
    if phase.get("done"):
        if not (out / "config.json").exists():
            rebuild_warm(args, plan, state, seed, splits, held, steps, out)
        return out
    tasks = ev.tasks_of(splits["train"][: args.warm_tasks])
    resume = (out / "config.json").exists() and bool(phase["epochs"])
    if not resume:
        phase["epochs"] = []
    trainer = ev.Trainer(str(out if resume else args.model), plan.lr, seed, out / "optimizer.pt" if resume else None,
                         legacy=ev.LEGACY)
    examples = trainer.examples(tasks, args.max_length)
    if not examples:
        raise SystemExit(f"error: seed {seed}'s warm start: no transcript fits in --max-length {args.max_length}")
    while len(phase["epochs"]) < args.warm_epochs:
        t0 = time.perf_counter()
        losses = _warm_epoch(trainer, examples, seed, len(phase["epochs"]))
        result = ev.evaluate(trainer.policy(), held, steps, set())
        phase["epochs"].append({"train_seconds": round(time.perf_counter() - t0, 1), "first_loss": losses[0],
                                "last_loss": losses[-1], "held_out_exact": result["all_exact"],
                                "examples": len(examples), "tokens": sum(len(e["input_ids"]) for e in examples)})
        trainer.save(out)
        ev.save_state(args.state, state)
        ev.say(f"seed {seed} warm start epoch {len(phase['epochs'])}: held-out exact {result['all_exact']}")
        if (result["all_exact"] or 0) >= args.warm_target:
            break
    phase.update(done=True, model=str(args.model), tasks=len(tasks), max_length=args.max_length)
    ev.save_state(args.state, state)
    return out


def _warm_epoch(trainer: Any, examples: list[dict[str, list[int]]], seed: int, epoch: int) -> list[float]:
    """One warm-start epoch (0-based ``epoch``) in the order the seed fixes; the training loss of each step."""
    order = list(range(len(examples)))
    random.Random(f"evidence-plan/warm/{seed}/{epoch}").shuffle(order)
    losses = []
    for i in order:
        trainer.model.train()
        losses.append(trainer.step(examples[i]))
    return losses


def rebuild_warm(args: argparse.Namespace, plan: Plan, state: dict[str, Any], seed: int, splits: dict[str, Any],
                 held: list[Task], steps: list[dict[str, Any]], out: Path) -> None:
    """A seed's warm start replayed from its recorded recipe when its checkpoint is gone (a new machine: checkpoints
    are not committed).  Every recorded epoch's first and last training loss must come out the same, and the
    rebuilt model must score every held-out step as the recorded warm start did (its ``warm`` record, or the last
    epoch's held-out exact before that record exists); otherwise the run stops: the seed's records were made from
    the original."""
    phase = _seed_state(state, seed)["warm"]
    tasks = ev.tasks_of(splits["train"][: phase["tasks"]])
    trainer = ev.Trainer(str(phase["model"]), plan.lr, seed, None, legacy=ev.LEGACY)
    examples = trainer.examples(tasks, phase["max_length"])
    ev.say(f"seed {seed} warm start: checkpoint missing under {args.work}; replaying its {len(phase['epochs'])} "
           "recorded epochs")
    t0 = time.perf_counter()
    for e, epoch in enumerate(phase["epochs"]):
        losses = _warm_epoch(trainer, examples, seed, e)
        if not (math.isclose(losses[0], epoch["first_loss"], rel_tol=1e-6)
                and math.isclose(losses[-1], epoch["last_loss"], rel_tol=1e-6)):
            raise SystemExit(f"error: seed {seed}'s rebuilt warm start epoch {e + 1} trains with losses "
                             f"{losses[0]:.6f} .. {losses[-1]:.6f}, recorded {epoch['first_loss']:.6f} .. "
                             f"{epoch['last_loss']:.6f}; its records were made from the original, so the run stops")
    result = ev.evaluate(trainer.policy(), held, steps, set())
    original = next((r for r in state["records"] if r["arm"] == "warm" and r["seed"] == seed), None)
    same = (result["step_exact"] == original["step_exact"] if original is not None
            else result["all_exact"] == phase["epochs"][-1]["held_out_exact"])
    state.setdefault("notes", []).append({
        "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "seed": seed,
        "what": "warm start rebuilt from its recorded recipe (checkpoint lost with the machine)",
        "same_scores": same, "all_exact": result["all_exact"],
        "train_seconds": round(time.perf_counter() - t0, 1), "commit": ev.commit()})
    ev.save_state(args.state, state)
    if not same:
        raise SystemExit(f"error: seed {seed}'s rebuilt warm start scores the held-out steps differently from the "
                         "recorded one; its records were made from the original, so the run stops")
    trainer.save(out)
    ev.say(f"seed {seed} warm start rebuilt: same losses and held-out scores as recorded")


def ensure_diagnosis_scope(args: argparse.Namespace, state: dict[str, Any], store: GraphStore, seed: int,
                           splits: dict[str, Any], warm: Path) -> None:
    """The warm start's pool scope back in the graph when it is not there (a new machine's Neo4j): the curriculum's
    first round reads it.  Re-scored from the warm start and checked against the recorded diagnosis."""
    diag = _seed_state(state, seed)["diagnosis"]
    rows = [r for r in store.run("composition-success", scope=diag["scope"], level="tool") if r["kind"] == "composition"]
    if rows:
        return
    pool = ev.tasks_of(splits["pool"])
    tokenizer, model, template = load_model(str(warm))
    run = score_tasks(HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0), pool,
                      share_prefix=not ev.LEGACY)
    exact = round(sum(bool(s.exact) for s in run.scores) / max(len(run.scores), 1), 4)
    if exact != diag["exact"] or len(run.scores) != diag["steps"]:
        raise SystemExit(f"error: seed {seed}'s warm start re-scores its pool at exact {exact} over {len(run.scores)} "
                         f"steps, recorded {diag['exact']} over {diag['steps']}; the run stops")
    by_id = {t.id: t for t in pool}
    ingest_records(store, records(run.scores, by_id, diag["scope"]), by_id, args.experiment, f"warm-{seed}", "pool",
                   mode=GOLD_PREFIX)
    ev.say(f"seed {seed}: the warm start's pool scope {diag['scope']} re-ingested (same exact as recorded)")


def corpus_steps() -> list[dict[str, Any]]:
    """Every oracle step of BFCL multi-turn, all four categories (what the constant-call rule looks at)."""
    return [st for task in bfcl.load_tasks("all") for st in ev.gold_steps(task)]


def diagnose(args: argparse.Namespace, plan: Plan, state: dict[str, Any], store: GraphStore, seed: int,
             splits: dict[str, Any], warm: Path, held: list[Task], corpus: Callable[[], list[dict[str, Any]]]
             ) -> dict[str, Any]:
    """The warm start scored through the gold prefix on the seed's pool split (stored as a gold-prefix scope), and
    from it the candidate pool, the targets and the random draw, as the plan's ``candidate_pool`` says."""
    sst = _seed_state(state, seed)
    if "diagnosis" in sst:
        return sst["diagnosis"]
    pool = ev.tasks_of(splits["pool"])
    tokenizer, model, template = load_model(str(warm))
    run = score_tasks(HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0), pool,
                      share_prefix=not ev.LEGACY)
    by_id = {t.id: t for t in pool}
    scope = f"{args.experiment}/warm-{seed}/pool"
    ingest_records(store, records(run.scores, by_id, scope), by_id, args.experiment, f"warm-{seed}", "pool",
                   mode=GOLD_PREFIX)
    rows = [r for r in store.run("composition-success", scope=scope, level="tool") if r["kind"] == "composition"]
    held_pairs = {tuple(p.split(">", 1)) for t in held for p in adjacent_pairs(tag_task(t))[0]}
    seeds = {t.id: t for t in ev.tasks_of(splits["train"] + splits["pool"])}
    with_seeds = seeds_by_target([{"from": r["from"], "to": r["to"]} for r in rows], seeds)
    eligible = [r for r in rows if r["n"] >= args.min_n and (r["from"], r["to"]) in held_pairs
                and with_seeds.get((r["from"], r["to"]))]
    constant = ev.constant_call_compositions(corpus(), [(r["from"], r["to"]) for r in eligible])
    candidates = [r for r in eligible if (r["from"], r["to"]) not in constant]
    candidates.sort(key=lambda r: (-r["failures"] / r["n"], -r["n"], r["from"], r["to"]))
    targets = [[r["from"], r["to"]] for r in candidates[: args.targets]]
    rest = [[r["from"], r["to"]] for r in candidates[args.targets:]]
    rest.sort()
    random.Random(f"evidence-plan/random-draw/{seed}").shuffle(rest)
    sst["diagnosis"] = {
        "scope": scope, "steps": len(run.scores), "seconds": round(run.seconds, 1),
        "exact": round(sum(bool(s.exact) for s in run.scores) / max(len(run.scores), 1), 4),
        "compositions_observed": len(rows),
        "candidate_pool": [{k: r[k] for k in ("from", "to", "n", "failures")} for r in candidates],
        "constant_excluded": {f"{a}>{b}": v for (a, b), v in constant.items()},
        "targets": targets,
        "random_draw": [rest[i:i + plan.draw] for i in range(0, len(rest), plan.draw)],
    }
    ev.save_state(args.state, state)
    return sst["diagnosis"]


# --------------------------------------------------------------------------- arm data


def pinned_checkout(work: Path, commit: str) -> Path:
    """A ``git archive`` of ``commit`` under ``work`` (made once): the tree the synthetic arms' data is built by."""
    out = work / f"synth-{commit[:12]}"
    if (out / "synth" / "pipeline.py").exists():
        return out
    tmp = Path(tempfile.mkdtemp(prefix="synth-", dir=work))
    archive = subprocess.run(["git", "archive", "--format=tar", commit], capture_output=True, cwd=ROOT.parent)
    if archive.returncode != 0:
        raise SystemExit(f"error: cannot check out the plan's synthesizer commit {commit}: "
                         f"{archive.stderr.decode(errors='replace').strip()[:200]}")
    tar_path = tmp / "tree.tar"
    tar_path.write_bytes(archive.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(tmp / "tree", filter="data")
    tar_path.unlink()
    if not (tmp / "tree" / "synth" / "pipeline.py").exists():
        raise SystemExit(f"error: the archive of {commit} holds no synth/pipeline.py")
    try:
        (tmp / "tree").rename(out)
    except OSError:  # another process of the replication made it meanwhile
        if not (out / "synth" / "pipeline.py").exists():
            raise
        shutil.rmtree(tmp / "tree")
    tmp.rmdir()
    return out


def synthesize_pinned(args: argparse.Namespace, plan: Plan, seed: int, batches: list[list[list[str]]],
                      seed_ids: list[str], n: int) -> tuple[list[Task], dict[str, Any]]:
    """The synthetic tasks of one arm, built in a subprocess by the synthesizer of the plan's commit."""
    checkout = pinned_checkout(args.work, plan.commit)
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        req, out, summary = Path(tmp) / "request.json", Path(tmp) / "tasks.jsonl", Path(tmp) / "summary.json"
        req.write_text(json.dumps({"checkout": str(checkout), "seed_ids": seed_ids, "batches": batches, "n": n,
                                   "seed": seed}))
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        proc = subprocess.run([sys.executable, str(WORKER), str(req), str(out), str(summary)], env=env,
                              capture_output=True, text=True, cwd=checkout)
        if proc.returncode != 0:
            raise SystemExit(f"error: the pinned synthesizer ({plan.commit[:12]}) failed for seed {seed}: "
                             f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        tasks = [Task.from_dict(json.loads(line)) for line in out.read_text().splitlines() if line.strip()]
        return tasks, json.loads(summary.read_text())


def _tree_synth_differs(commit: str) -> bool | None:
    try:
        proc = subprocess.run(["git", "diff", "--quiet", commit, "HEAD", "--", "synth", "ace_env/sim.py"], cwd=ROOT,
                              capture_output=True)
    except OSError:
        return None
    return {0: False, 1: True}.get(proc.returncode)


def arm_data(args: argparse.Namespace, plan: Plan, state: dict[str, Any], seed: int, arm: str,
             splits: dict[str, Any], diag: dict[str, Any]) -> list[Task]:
    """The arm's tasks in training order (the curriculum arm: the ace arm's, which it orders itself), cached as a
    task file under ``--work`` and recorded in the state by sha256 with the commit of the synthesizer that built
    them; a file that no longer matches its recorded hash stops the run."""
    name = "ace" if arm == "curriculum-mixed" else arm
    path = args.work / "data" / f"{name}-{seed}.jsonl"
    data = _seed_state(state, seed).setdefault("data", {})
    if not path.exists():
        rng = random.Random(f"evidence-plan/{name}/{seed}")
        info: dict[str, Any] = {}
        if name == "more-real":
            tasks = ev.tasks_of(splits["pool"], ev.CATEGORIES)
            info["synthesizer_commit"] = None
        else:
            batches = [diag["targets"]] if name == "ace" else diag["random_draw"]
            if not batches or not batches[0]:
                return []
            seed_ids = [t.id for t in ev.tasks_of(splits["train"] + splits["pool"])]
            t0 = time.perf_counter()
            tasks, summary = synthesize_pinned(args, plan, seed, batches, seed_ids, args.synth_tasks)
            info.update(synthesizer_commit=plan.commit, synthesis=summary, seconds=round(time.perf_counter() - t0, 1),
                        tree_synthesizer_differs=_tree_synth_differs(plan.commit))
            if name == "random" and {tuple(c) for c in diag["targets"]} & {tuple(s.split(">", 1)) for s in
                                                                            summary["aimed_at"]}:
                raise SystemExit(f"error: seed {seed}'s random arm drew a target; the plan forbids it")
        rng.shuffle(tasks)
        text = "".join(json.dumps(t.to_dict()) + "\n" for t in tasks)
        digest = hashlib.sha256(text.encode()).hexdigest()
        if name in data and data[name]["sha256"] != digest:
            raise SystemExit(f"error: seed {seed} {name}: rebuilt data (sha256 {digest[:16]}) is not the recorded "
                             f"data ({data[name]['sha256'][:16]}); its records were trained on that (give another "
                             "--state)")
        data.setdefault(name, {"sha256": digest, "tasks": len(tasks), **info, "code": ev.commit()})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        ev.save_state(args.state, state)
    text = path.read_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    if name not in data or data[name]["sha256"] != digest:
        raise SystemExit(f"error: {path}'s sha256 ({digest[:16]}) is not the one recorded for seed {seed} {name} "
                         "in the state; remove the file to build it again, or give another --state")
    return [Task.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------- training with token budgets


def cut(example: dict[str, list[int]], keep: int) -> dict[str, list[int]]:
    """The example with only its first ``keep`` supervised tokens left in the loss (the rest masked out).

    >>> cut({"input_ids": [1, 2, 3, 4, 5], "assistant_masks": [0, 1, 1, 0, 1]}, 2)["assistant_masks"]
    [0, 1, 1, 0, 0]
    """
    mask, seen = [], 0
    for m in example["assistant_masks"]:
        seen += m
        mask.append(m if seen <= keep else 0)
    return {**example, "assistant_masks": mask}


class Curriculum:
    """The curriculum-mixed arm's training order over the ace arm's examples, a round at a time: each round the
    curriculum state is stepped on the graph's evidence and ``mix`` picks tasks (from those not yet used) until the
    round's supervised tokens are covered.  Rounds are kept in the state, so a resumed run replays them."""

    def __init__(self, args: argparse.Namespace, state: dict[str, Any], store: GraphStore, seed: int,
                 tasks: list[Task], examples: list[dict[str, Any]], budgets: list[int], diag_scope: str,
                 pool: list[Task], splits: dict[str, Any], warm: Path):
        self.args, self.state, self.store, self.seed = args, state, store, seed
        self.splits, self.warm = splits, warm
        self.tasks, self.examples, self.budgets, self.pool = tasks, examples, budgets, pool
        self.config = CurriculumConfig(level="tool", min_rounds=1)
        self.phase = _seed_state(state, seed).setdefault("curriculum", {"rounds": []})
        self.diag_scope = diag_scope
        self.cands = [candidate(t, "tool") for t in tasks]

    @property
    def order(self) -> list[int]:
        return [i for r in self.phase["rounds"] for i in r["order"]]

    def covered(self) -> int:
        return sum(sum(self.examples[i]["assistant_masks"]) for i in self.order)

    def ensure(self, k: int, policy: Callable[[], HFPolicy]) -> None:
        """Make sure the order reaches sample ``k`` (the first round, from the warm start's diagnosis, is made here;
        the later ones by :meth:`round_after` at each budget)."""
        while len(self.order) <= k:
            if len(self.phase["rounds"]) >= len(self.budgets):
                raise RuntimeError("the curriculum order is exhausted past the largest budget")
            self.next_round(policy)

    def round_after(self, j: int, policy: Callable[[], HFPolicy]) -> None:
        """The round after budget ``j`` (an index), from the evidence of its checkpoint (``policy``); a round whose
        tokens the earlier rounds already cover is empty."""
        while len(self.phase["rounds"]) < min(j + 2, len(self.budgets)):
            self.next_round(policy)

    def next_round(self, policy: Callable[[], HFPolicy]) -> None:
        """One round: the curriculum stepped on the evidence (the warm start's diagnosis for the first round, the
        checkpoint at the previous budget, scored on the pool, for the others) and its mix."""
        r = len(self.phase["rounds"])
        if r == 0:
            scope = self.diag_scope
            ensure_diagnosis_scope(self.args, self.state, self.store, self.seed, self.splits, self.warm)
        else:
            scope = f"{self.args.experiment}/curriculum-{self.seed}/t{self.budgets[r - 1]}"
            by_id = {t.id: t for t in self.pool}
            run = score_tasks(policy(), self.pool, share_prefix=not ev.LEGACY)
            ingest_records(self.store, records(run.scores, by_id, scope), by_id, self.args.experiment,
                           f"curriculum-{self.seed}", f"t{self.budgets[r - 1]}", mode=GOLD_PREFIX)
        before = CurriculumState.from_dict(self.phase["rounds"][-1]["state"]) if r else CurriculumState()
        observations = observations_from_graph(self.store, scope, self.config.level)
        after, decisions = step(before, observations, self.config)
        used = set(self.order)
        rng = random.Random(f"evidence-plan/curriculum/{self.seed}/{r}")
        need = self.budgets[r] - self.covered()
        order: list[int] = []
        while need > 0:
            free = [i for i in range(len(self.tasks)) if i not in used]
            if not free:  # every task used: the data cycles, as the other arms' does
                used, free = set(), list(range(len(self.tasks)))
            per = statistics.mean(sum(self.examples[i]["assistant_masks"]) for i in free) or 1
            n = max(1, math.ceil(need / per))
            chosen = mix(after, [self.cands[i] for i in free], n, rng, self.config)
            index = {self.cands[i].task_id: i for i in free}
            picked = [index[c.task_id] for c in chosen.tasks]
            rng.shuffle(picked)
            for i in picked:
                if need <= 0:
                    break
                order.append(i)
                used.add(i)
                need -= sum(self.examples[i]["assistant_masks"])
        self.phase["rounds"].append({"round": r + 1, "scope": scope, "state": after.to_dict(),
                                     "active": after.in_state("active"),
                                     "decisions": [d.to_dict() for d in decisions], "order": order,
                                     "task_ids": [self.tasks[i].id for i in order]})
        ev.save_state(self.args.state, self.state)
        ev.say(f"curriculum-mixed seed {self.seed}: round {r + 1} from {scope}: {len(order)} tasks, "
               f"{len(after.in_state('active'))} active units")


def run_arm(args: argparse.Namespace, plan: Plan, state: dict[str, Any], store: GraphStore, seed: int, arm: str,
            warm: Path, tasks: list[Task], held: list[Task], steps: list[dict[str, Any]], targets: set,
            splits: dict[str, Any]) -> None:
    budgets = sorted(args.budgets)
    done = {r["budget"] for r in state["records"] if r["arm"] == arm and r["seed"] == seed}
    if all(b in done for b in budgets):
        return
    ckpt = args.work / "runs" / f"{arm}-{seed}"
    position = ckpt / "position.json"
    at = {"samples": 0, "loss_tokens": 0, "tokens": 0}
    if position.exists() and (ckpt / "config.json").exists():
        saved = json.loads(position.read_text())
        if all(b in done for b in budgets if b <= saved["loss_tokens"]):
            at = saved
    trainer = ev.Trainer(str(ckpt if at["samples"] else warm), plan.lr, seed,
                         ckpt / "optimizer.pt" if at["samples"] else None, legacy=ev.LEGACY)
    examples = trainer.examples(tasks, args.arm_max_length)
    window = dict(trainer.window)
    if not examples:
        raise SystemExit(f"error: arm {arm} seed {seed}: no training example")
    data = _seed_state(state, seed)["data"]["more-real" if arm == "more-real" else "random" if arm == "random" else "ace"]
    curriculum = None
    if arm == "curriculum-mixed":  # the tasks with a training example, each beside its own
        pairs = [(t, e) for t in tasks for e in trainer.examples([t], args.arm_max_length)]
        tasks, examples = [t for t, _ in pairs], [e for _, e in pairs]
        trainer.window = window
        curriculum = Curriculum(args, state, store, seed, tasks, examples, budgets,
                                _seed_state(state, seed)["diagnosis"]["scope"], ev.tasks_of(splits["pool"]), splits, warm)

    def example(k: int, policy: Callable[[], HFPolicy]) -> dict[str, Any]:
        if curriculum is not None:
            curriculum.ensure(k, policy)
            return examples[curriculum.order[k]]
        return examples[k % len(examples)]

    k, cum, tokens = at["samples"], at["loss_tokens"], at["tokens"]
    todo = [b for b in budgets if b > cum]
    t0 = time.perf_counter()
    while todo:
        budget = todo[0]
        ex = example(k, trainer.policy)
        sup = sum(ex["assistant_masks"])
        if cum + sup < budget:
            trainer.model.train()
            trainer.step(ex)
            cum, tokens, k = cum + sup, tokens + len(ex["input_ids"]), k + 1
            continue
        if budget in done:  # recorded already (by a run that went further): pass it without the cut step
            todo.pop(0)
            continue
        trainer.save(ckpt)  # the state before the cut sample: the run goes on from here, and resumes from here
        position.write_text(json.dumps({"samples": k, "loss_tokens": cum, "tokens": tokens}))
        keep = budget - cum
        trainer.model.train()
        trainer.step(cut(ex, keep))
        train_seconds = time.perf_counter() - t0
        result = ev.evaluate(trainer.policy(), held, steps, targets)
        record = {"arm": arm, "seed": seed, "budget": budget, "samples": k + 1, "loss_tokens": cum + keep,
                  "masked_tokens": sup - keep, "tokens": tokens + len(ex["input_ids"]),
                  "unique_samples": len(examples), "data_sha256": data["sha256"],
                  "synthesizer_commit": data.get("synthesizer_commit"), "max_length": args.arm_max_length,
                  **window, "train_seconds": round(train_seconds, 1), **result, "commit": ev.commit(),
                  "plan_sha256": plan.sha256, "date": time.strftime("%Y-%m-%d %H:%M"),
                  "load": round(os.getloadavg()[0], 2)}
        if curriculum is not None:
            record["order_sha256"] = hashlib.sha256(
                json.dumps([tasks[i].id for i in curriculum.order[:k + 1]]).encode()).hexdigest()
            # the next round, from this checkpoint's evidence (before the record: a run killed in between redoes
            curriculum.round_after(budgets.index(budget), trainer.policy)  # this budget)
        if budget == budgets[-1] and args.free_tasks:
            free_running(args, state, arm, seed, budget, trainer.policy(), held)
        state["records"].append(record)
        ev.save_state(args.state, state)
        ev.say(f"{arm} seed {seed} @ {budget} supervised tokens ({k + 1} samples): primary exact "
               f"{result['primary_exact']} (n={result['primary_n']}), other {result['other_exact']}")
        done.add(budget)
        todo.pop(0)
        if todo:  # back to the state before the cut: the longer run trains the sample whole
            trainer = ev.Trainer(str(ckpt), plan.lr, seed, ckpt / "optimizer.pt", legacy=ev.LEGACY)
            trainer.window = window
        t0 = time.perf_counter()


def free_running(args: argparse.Namespace, state: dict[str, Any], arm: str, seed: int, budget: int,
                 policy: HFPolicy, held: list[Task]) -> None:
    """Free-running pass rate and partial credit of one model on the seed's first ``--free-tasks`` held-out tasks."""
    done = state.setdefault("free_running", [])
    if any(r["arm"] == arm and r["seed"] == seed for r in done):
        return
    tasks = held[: args.free_tasks]
    by_id = {t.id: t for t in tasks}
    config = RolloutConfig(step_cap=args.free_step_cap, generation=GenerationConfig(max_tokens=args.free_max_tokens))
    t0 = time.perf_counter()
    rows = list(RolloutEngine(policy, config).run(tasks))
    verdicts = [ev.verify(by_id[r["task_id"]], r["turns"], r["rollout_id"]) for r in rows]
    done.append({"arm": arm, "seed": seed, "budget": budget, "tasks": len(verdicts),
                 "pass_rate": round(sum(v.reward == 1.0 for v in verdicts) / len(verdicts), 4),
                 "partial_credit": round(sum(v.partial_credit for v in verdicts) / len(verdicts), 4),
                 "per_task": [round(v.partial_credit, 4) for v in verdicts], "max_tokens": args.free_max_tokens,
                 "step_cap": args.free_step_cap, "seconds": round(time.perf_counter() - t0, 1), "commit": ev.commit()})
    ev.save_state(args.state, state)


# --------------------------------------------------------------------------- the run


def run_seed(args: argparse.Namespace, plan: Plan, state: dict[str, Any], store: GraphStore, seed: int,
             corpus: Callable[[], list[dict[str, Any]]]) -> None:
    sst = _seed_state(state, seed)
    splits = seed_splits(plan, seed, args.quick)
    if sst.setdefault("splits", splits) != splits:
        raise SystemExit(f"error: seed {seed}'s recorded split is not the one this code makes; give another --state")
    held = ev.tasks_of(splits["held_out"])
    steps = ev.held_out_steps(held)
    sst["held_out_steps"] = steps
    warm = warm_start(args, plan, state, seed, splits, held, steps)
    diag = diagnose(args, plan, state, store, seed, splits, warm, held, corpus)
    targets = {tuple(t) for t in diag["targets"]}
    ev.say(f"seed {seed}: targets {', '.join(f'{a}>{b}' for a, b in targets) or 'none'}; random draw "
           f"{sum(len(b) for b in diag['random_draw'])} compositions")
    need_record = not any(r["arm"] == "warm" and r["seed"] == seed for r in state["records"])
    need_free = args.free_tasks and not any(r["arm"] == "warm" and r["seed"] == seed
                                            for r in state.get("free_running", []))
    if need_record or need_free:
        tokenizer, model, template = load_model(str(warm))
        policy = HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0)
        if need_record:
            result = ev.evaluate(policy, held, steps, targets)
            state["records"].append({"arm": "warm", "seed": seed, "budget": 0, "samples": 0, **result,
                                     "commit": ev.commit(), "plan_sha256": plan.sha256})
            ev.save_state(args.state, state)
        if need_free:
            free_running(args, state, "warm", seed, 0, policy, held)
    for arm in args.arms:
        tasks = arm_data(args, plan, state, seed, arm, splits, diag)
        if not tasks:
            sst.setdefault("empty_arms", {})[arm] = "no candidate composition to aim at, or the synthesizer made none"
            ev.save_state(args.state, state)
            ev.say(f"{arm} seed {seed}: no training data")
            continue
        run_arm(args, plan, state, store, seed, arm, warm, tasks, held, steps, targets, splits)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="The preregistered replication of issue 32 (evidence_plan.json).")
    ap.add_argument("--plan", type=Path, required=True, help="The plan file (benchmarks/evidence_plan.json).")
    ap.add_argument("--state", type=Path, default=STATE)
    ap.add_argument("--work", type=Path, default=ROOT / "out" / "evidence-replication")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--seeds", nargs="+", type=int, help="Seeds to run (default: the plan's).")
    ap.add_argument("--warm-tasks", type=int, default=60)
    ap.add_argument("--warm-epochs", type=int, default=3)
    ap.add_argument("--warm-target", type=float, default=0.10)
    ap.add_argument("--max-length", type=int, default=1024, help="Tokens per warm-start transcript.")
    ap.add_argument("--synth-tasks", type=int, default=SYNTH_TASKS, help="Tasks each synthetic arm asks for.")
    ap.add_argument("--experiment", default="evidence-replication")
    ap.add_argument("--free-max-tokens", type=int, default=96)
    ap.add_argument("--free-step-cap", type=int, default=4)
    ap.add_argument("--no-free-running", action="store_true", help="Skip the free-running secondary metric.")
    ap.add_argument("--legacy-cell", action="store_true", help="As evidence_bench.py --legacy-cell.")
    ap.add_argument("--quick", action="store_true",
                    help="A smoke run: tiny model built offline, 40 tasks, 2 seeds, budgets of 500 and 1,500 tokens.")
    ap.add_argument("--report", action="store_true", help="Print the plan's analysis of the state file and stop.")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    plan = load_plan(args.plan)
    ev.LEGACY = args.legacy_cell
    args.budgets, args.min_n, args.targets = list(plan.budgets), plan.min_n, plan.targets
    args.arm_max_length, args.free_tasks = plan.max_length, 0 if args.no_free_running else plan.free_tasks
    seeds_given, args.seeds = args.seeds is not None, args.seeds if args.seeds is not None else list(plan.seeds)
    if args.quick:
        from train.tiny import build_tiny_model

        if args.state == STATE:
            raise SystemExit("error: --quick writes its own --state (not the replication's)")
        if not args.report:
            args.model = str(build_tiny_model(args.work / "tiny", seed=0))
        args.budgets, args.seeds = [500, 1500], (args.seeds if seeds_given else [0, 1])
        args.warm_tasks, args.warm_epochs, args.max_length, args.arm_max_length = 4, 1, 4096, 4096
        args.min_n, args.targets, args.synth_tasks, args.experiment = 1, 2, 6, "evidence-replication-quick"
        args.free_tasks, args.free_max_tokens, args.free_step_cap = (0 if args.no_free_running else 1), 8, 1
    state = ev.load_state(args.state)
    if args.report:
        print_report(state, plan, quick=args.quick)
        return 0
    if not args.seeds or min(args.seeds) < 0:
        raise SystemExit("error: --seeds must be non-negative")
    settings = {"plan": str(args.plan), "plan_sha256": plan.sha256, "plan_commit": plan_commit(args.plan),
                "synthesizer_commit": plan.commit, "budgets": args.budgets, "model": args.model if not args.quick
                else "tiny", "warm_tasks": args.warm_tasks, "lr": plan.lr, "max_length": args.max_length,
                "arm_max_length": args.arm_max_length, "targets": args.targets, "min_n": args.min_n,
                "synth_tasks": args.synth_tasks, "quick": args.quick}
    recorded = state.setdefault("settings", settings)
    for key in ("plan_sha256", "budgets", "arm_max_length", "synthesizer_commit", "quick"):
        if recorded.get(key) != settings[key]:
            raise SystemExit(f"error: {args.state} was made with {key} {recorded.get(key)!r}, not {settings[key]!r}; "
                             "resuming would mix designs (give another --state)")
    args.work.mkdir(parents=True, exist_ok=True)
    print(machine_facts())
    cache: list[list[dict[str, Any]]] = []

    def corpus() -> list[dict[str, Any]]:
        if not cache:
            cache.append(corpus_steps())
        return cache[0]

    neo = neo4j_settings()
    driver = get_driver(neo)
    try:
        store = GraphStore(driver, neo.database)
        for seed in args.seeds:
            run_seed(args, plan, state, store, seed, corpus)
    finally:
        driver.close()
    print_report(state, plan, quick=args.quick)
    ev.save_state(args.state, state)
    return 0


# --------------------------------------------------------------------------- the plan's analysis


def _valid(state: dict[str, Any], plan: Plan) -> list[dict[str, Any]]:
    """The records the analysis uses: synthetic data built at the plan's commit (the rest are listed, not used)."""
    return [r for r in state["records"] if r["arm"] in ("warm", "more-real") or r.get("synthesizer_commit") == plan.commit]


def _cells(state: dict[str, Any], plan: Plan, metric: str, which: str = "targets") -> tuple[
        dict[int, dict[str, list[int]]], dict[tuple, Any]]:
    """Per seed, the held-out steps of ``which`` (the seed's targets, its excluded constant-call compositions, or
    the other steps) by task; and each record's per-step outcomes keyed (arm, seed, budget)."""
    by_seed: dict[int, dict[str, list[int]]] = {}
    for key, sst in state.get("seeds", {}).items():
        steps, diag = sst.get("held_out_steps"), sst.get("diagnosis")
        if not steps or not diag:
            continue
        targets = {tuple(t) for t in diag["targets"]}
        constant = {tuple(c.split(">", 1)) for c in diag.get("constant_excluded", {})}
        pick = {"targets": lambda c: c in targets, "constant": lambda c: c in constant,
                "other": lambda c: c not in targets and c not in constant}[which]
        on = [i for i, st in enumerate(steps) if pick((st["prev"], st["tool"]))]
        tasks = {t: [i for i in on if steps[i]["task"] == t] for t in sorted({steps[i]["task"] for i in on})}
        if tasks:
            by_seed[int(key)] = tasks
    cell = {(r["arm"], r["seed"], r["budget"]): r[ev.METRICS[metric]] for r in _valid(state, plan)
            if r.get(ev.METRICS[metric]) is not None}
    return by_seed, cell


def _pooled(cell: dict[tuple, Any], arm: str, budget: int, draw: list[tuple[Any, list[str]]],
            by_seed: dict[int, dict[str, list[int]]], metric: str) -> float | None:
    vals: list[float] = []
    for s, tasks in draw:
        entry = cell.get((arm, s, 0 if arm == "warm" else budget))
        if entry is None:
            return None
        vals += [v for t in tasks for i in by_seed[s][t] if (v := ev._step_value(entry, i, metric)) is not None]
    return sum(vals) / len(vals) if vals else None


def _seeds_with(cell: dict[tuple, Any], by_seed: dict[int, Any], needs: list[tuple[str, int]]) -> list[int]:
    return sorted(s for s in by_seed if all((a, s, 0 if a == "warm" else b) in cell for a, b in needs))


def differences(state: dict[str, Any], plan: Plan, budgets: list[int], baseline: str, metric: str = "exact",
                which: str = "targets") -> dict[int, dict[str, Any]]:
    """ace minus ``baseline`` at each budget over the seeds holding both, with the plan's hierarchical interval,
    the bootstrap SE and each seed alone; NLL as measured (negative favours ace)."""
    by_seed, cell = _cells(state, plan, metric, which)
    sign = -1.0 if metric == "nll" else 1.0
    out: dict[int, dict[str, Any]] = {}
    for b in budgets:
        seeds = _seeds_with(cell, by_seed, [("ace", b), (baseline, b)])
        if not seeds:
            continue

        def diff(draw: list[tuple[Any, list[str]]]) -> float | None:
            a, c = _pooled(cell, "ace", b, draw, by_seed, metric), _pooled(cell, baseline, b, draw, by_seed, metric)
            return None if a is None or c is None else sign * (a - c)

        tasks = {s: list(by_seed[s]) for s in seeds}
        point = diff([(s, tasks[s]) for s in seeds])
        if point is None:
            continue
        boots = [d for d in (diff(x) for x in ev.bootstrap_draws(seeds, tasks, plan.n_boot)) if d is not None]
        lo, hi = ev._interval(boots)
        out[b] = {"point": round(point, 4), "low": round(lo, 4), "high": round(hi, 4),
                  "se": round(statistics.pstdev(boots), 4), "seeds": seeds,
                  "per_seed": {s: round(diff([(s, tasks[s])]), 4) for s in seeds}}
    return out


def speed_up(state: dict[str, Any], plan: Plan, budgets: list[int]) -> dict[str, Any] | None:
    """Supervised tokens the ace arm needs to reach random's final primary value (log2-interpolated between
    budgets), over the largest budget; inf when it never does; with the plan's interval and the count of resamples
    where random's final value does not exceed the warm start's."""
    by_seed, cell = _cells(state, plan, "exact")
    final = budgets[-1]
    seeds = _seeds_with(cell, by_seed, [("warm", 0), ("random", final)] + [("ace", b) for b in budgets])
    if not seeds:
        return None
    tasks = {s: list(by_seed[s]) for s in seeds}

    def speed(draw: list[tuple[Any, list[str]]]) -> float | None:
        curve = [(b, _pooled(cell, "ace", b, draw, by_seed, "exact")) for b in budgets]
        target = _pooled(cell, "random", final, draw, by_seed, "exact")
        start = _pooled(cell, "warm", 0, draw, by_seed, "exact")
        if target is None or start is None or any(v is None for _, v in curve) or target <= start:
            return None
        return ev._reach(curve, target) / final

    point = speed([(s, tasks[s]) for s in seeds])
    results = [speed(d) for d in ev.bootstrap_draws(seeds, tasks, plan.n_boot)]
    boots = [x for x in results if x is not None]
    lo, hi = ev._interval(boots) if point is not None else (None, None)
    return {"point": point, "low": lo, "high": hi, "seeds": seeds, "bootstrap": len(boots),
            "undefined": len(results) - len(boots), "budgets": budgets}


def verdict(s: dict[str, Any] | None, plan: Plan) -> tuple[str, str]:
    """The plan's decision rule on the speed-up: (established | refuted | not decidable, why)."""
    t = plan.threshold
    if s is None:
        return "not decidable", "no seed holds the warm start, random's final and every ace budget"
    if s["point"] is None:
        return "not decidable", "random's final primary value does not exceed the warm start's (no speed-up to measure)"
    if s["high"] is not None and s["high"] <= t:
        return "established", f"the speed-up's 95% upper end {s['high']:.3f} <= {t}"
    if s["low"] is not None and s["low"] > t:
        return "refuted", f"the speed-up's 95% lower end {s['low']:.3f} > {t}"
    return "not decidable", f"the interval [{ev._r(s['low'])}, {ev._r(s['high'])}] contains {t}"


def arm_table(state: dict[str, Any], plan: Plan, metric: str, which: str, budgets: list[int]
              ) -> dict[str, dict[int, tuple[float | None, dict[int, float | None]]]]:
    """Per arm and budget: the pooled value over the seeds holding it, and each seed alone (the warm start at 0)."""
    by_seed, cell = _cells(state, plan, metric, which)
    sign = -1.0 if metric == "nll" else 1.0
    out: dict[str, dict[int, tuple[float | None, dict[int, float | None]]]] = {}
    for arm in ("warm", *ARMS):
        for b in ([0] if arm == "warm" else budgets):
            seeds = _seeds_with(cell, by_seed, [(arm, b)])
            if not seeds:
                continue
            pooled = _pooled(cell, arm, b, [(s, list(by_seed[s])) for s in seeds], by_seed, metric)
            per = {s: _pooled(cell, arm, b, [(s, list(by_seed[s]))], by_seed, metric) for s in seeds}
            out.setdefault(arm, {})[b] = (None if pooled is None else sign * pooled,
                                          {s: None if v is None else sign * v for s, v in per.items()})
    return out


def not_after_plan(state: dict[str, Any], governing: str | None) -> list[str]:
    """The code commits of records that do not descend from the commit that last changed the plan (a record the plan
    does not precede); unknown commits count as not descending."""
    if not governing:
        return []
    out = []
    for c in sorted({str(r.get("commit", "?")).split("+")[0] for r in state["records"]}):
        try:
            ok = subprocess.run(["git", "merge-base", "--is-ancestor", governing, c], cwd=ROOT,
                                capture_output=True).returncode == 0
        except OSError:
            ok = False
        if not ok:
            out.append(c)
    return out


def print_report(state: dict[str, Any], plan: Plan, quick: bool = False) -> None:
    budgets = list(state.get("settings", {}).get("budgets") or plan.budgets)
    settings = state.get("settings", {})
    governing = settings.get("plan_commit") or plan_commit(Path(plan.path))
    print(f"plan {plan.path} (sha256 {plan.sha256[:16]}, last changed in commit {(governing or '?')[:12]}); "
          f"synthesizer {plan.commit[:12]}; budgets {budgets} supervised tokens; planned seeds {list(plan.seeds)}")
    if settings.get("plan_sha256") not in (None, plan.sha256):
        print(f"warning: the state was made under another plan (sha256 {settings['plan_sha256'][:16]})")
    late = not_after_plan(state, governing)
    if late:
        print(f"warning: records made by code the plan's commit does not precede: {', '.join(late)}")
    left_out = [r for r in state["records"] if r not in _valid(state, plan)]
    if left_out:
        print(f"left out of the analysis: {len(left_out)} record(s) whose data was built at another commit")
    for key, sst in sorted(state.get("seeds", {}).items(), key=lambda kv: int(kv[0])):
        diag = sst.get("diagnosis", {})
        print(f"seed {key}: targets {', '.join(f'{a}>{b}' for a, b in diag.get('targets', [])) or '-'}; "
              f"candidate pool {len(diag.get('candidate_pool', []))}; constant-call excluded "
              f"{', '.join(diag.get('constant_excluded', {})) or '-'}")
        for arm, d in sorted(sst.get("data", {}).items()):
            print(f"  data {arm}: {d['tasks']} tasks, sha256 {d['sha256'][:16]}, synthesizer "
                  f"{d['synthesizer_commit'][:12] if d.get('synthesizer_commit') else 'none (real tasks)'}")
    head = f"{'arm':17s}" + "".join(f"{b:>10d}" for b in budgets)
    for title, metric, which in (("primary exact (target steps)", "exact", "targets"),
                                 ("primary NLL of the gold call", "nll", "targets"),
                                 ("other held-out steps, exact (regression check)", "exact", "other"),
                                 ("excluded constant-call steps, exact (reported apart)", "exact", "constant")):
        table = arm_table(state, plan, metric, which, budgets)
        if not table:
            continue
        print(f"{head}   {title}; pooled over seeds, each seed below")
        for arm, row in table.items():
            cols = [row.get(0 if arm == "warm" else b, (None, {}))[0] for b in ([0] if arm == "warm" else budgets)]
            print(f"{arm:17s}" + "".join(f"{v:>10.4f}" if v is not None else f"{'-':>10s}" for v in cols))
            if metric == "exact" and which == "targets":
                for s in sorted({s for _, per in row.values() for s in per}):
                    cols = [row.get(0 if arm == "warm" else b, (None, {}))[1].get(s)
                            for b in ([0] if arm == "warm" else budgets)]
                    print(f"  seed {s:<10d}" + "".join(f"{v:>10.4f}" if v is not None else f"{'-':>10s}"
                                                      for v in cols))
    samples: dict[str, dict[int, list[int]]] = {}
    for r in _valid(state, plan):
        if r["arm"] != "warm":
            samples.setdefault(r["arm"], {}).setdefault(r["budget"], []).append(r["samples"])
    if samples:
        print(f"{head}   samples at each budget (mean over seeds)")
        for arm, row in samples.items():
            print(f"{arm:17s}" + "".join(f"{statistics.mean(row[b]):>10.1f}" if b in row else f"{'-':>10s}"
                                         for b in budgets))
    print(f"intervals: 95%, hierarchical bootstrap, {plan.n_boot} resamples: seeds with replacement, then each drawn "
          "seed's held-out target tasks; arms paired")
    mde: dict[int, float] = {}
    for baseline in ("random", "more-real", "curriculum-mixed"):
        for metric in ("exact", "nll"):
            d = differences(state, plan, budgets, baseline, metric)
            if not d:
                continue
            if baseline == "random" and metric == "exact":
                mde = ev.minimum_detectable_effect(d, len(plan.seeds))
            print(f"ace - {baseline}, primary {metric}: " + ", ".join(f"{ev._ci(x)} @{b}" for b, x in d.items())
                  + f" (seeds {next(iter(d.values()))['seeds']})")
            seeds = sorted({s for x in d.values() for s in x["per_seed"]})
            for s in seeds:
                print(f"  seed {s:<10d}" + "".join(f"{d[b]['per_seed'][s]:>+10.4f}" if b in d and s in d[b]["per_seed"]
                                                  else f"{'-':>10s}" for b in budgets))
    if mde:
        print(f"minimum detectable ace - random, primary exact, at {len(plan.seeds)} seeds (two-sided 0.05, power 0.8; "
              "(1.96 + 0.84) x bootstrap SE now x sqrt(seeds now / planned)): "
              + ", ".join(f"{v:.3f} @{b}" for b, v in mde.items()))
    for r in state.get("free_running", []):
        print(f"free-running {r['arm']} seed {r['seed']} @ {r['budget']}: pass {r['pass_rate']:.3f}, partial credit "
              f"{r['partial_credit']:.3f} over {r['tasks']} held-out tasks")
    s = speed_up(state, plan, budgets)
    if s is not None and s["point"] is not None:
        print(f"speed-up (ace supervised tokens to reach random's final primary exact / {budgets[-1]}): "
              f"{ev._r(s['point'])} [95% CI {ev._r(s['low'])}, {ev._r(s['high'])}], seeds {s['seeds']}; "
              f"{s['undefined']} of {plan.n_boot} resamples where random's final value does not exceed the warm "
              "start's (left out of the interval)")
    cells = {(r["arm"], r["seed"], r["budget"]) for r in _valid(state, plan) if r["arm"] != "warm"}
    want = len(plan.seeds) * len(ARMS) * len(plan.budgets)
    complete = "" if len(cells) >= want and not quick else (
        f" (provisional: {len(cells)} of the plan's {want} arm x seed x budget records)")
    label, why = verdict(s, plan)
    print(f"verdict: {label} -- {why}{complete}")
