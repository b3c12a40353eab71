"""Does data aimed at an agent's weak compositions teach them faster than untargeted data?

The unit of observation is one held-out oracle step scored through the gold prefix
(:mod:`train.goldprefix`): the model sees the oracle's calls and outputs up to the
step and is scored on the step's gold call.  Free-running, every model trainable
here fails at its first calls and never reaches a composition; through the gold
prefix every composition of every held-out task is observed at every checkpoint.

Design, fixed before any run (the splits file and this docstring are committed first):

* **Splits by task** (``benchmarks/evidence_splits.json``): the 200 BFCL base indices,
  permuted with seed 20261203: 40 held out, 60 in the diagnosis pool, 100 for the warm
  start.  All four BFCL categories of an index (base, long_context, miss_func,
  miss_param) belong to the index's split; held-out steps are never trained on, and
  no synthesized task has a held-out seed.
* **Warm start**: SFT of SmolLM2-135M-Instruct on the oracle transcripts of the first
  ``--warm-tasks`` train-split base tasks (default 60), epochs until held-out exact
  match reaches 10% (at most ``--warm-epochs``, default 3); AdamW, constant lr 5e-5,
  one transcript per step, 1,024 tokens at most (``--max-length``), loss on assistant tokens only.
* **Diagnosis**: gold-prefix scoring of the warm start on the pool's base tasks, stored
  in the graph as the gold-prefix scope ``evidence/warm/pool``.  **Targets**: from the
  ``composition-success`` query (tool level) of that scope, the compositions a→b seen
  at least 3 times, weakest first (failure share, then support), that occur in a
  held-out task and have a usable seed task in the train or pool split; the first 8.
* **Arms**, from the same warm start, equal sample counts (one sample = one task's
  oracle transcript of at most ``--arm-max-length`` = 2,048 tokens, one optimizer step; tokens and
  how many assistant answers the token window kept are recorded per arm):
  ``ace`` — the synthesizer (every strategy) aimed at the targets;
  ``random`` — the same synthesizer aimed at 8 compositions drawn uniformly from the
  pool's observed compositions (with usable seeds), then 8 more, without replacement,
  until the budget's tasks are built, so targeting is what differs;
  ``more-real`` — oracle transcripts of real BFCL tasks of the pool split (all four
  categories, shuffled; no synthesis).  Synthesis rolls its tasks out with the
  simulated agent (which only ranks plans; the targets come from the real model).
  The arm's tasks are shuffled with the run's seed; fewer tasks than the budget are
  cycled (``unique_samples`` says how many).
* ``grpo`` — GRPO in transition mode (:mod:`train.transitions`) from the warm start on the
  targets' steps in train and pool tasks: each prompt is a gold prefix ending before a
  target step, reward 1 when the sampled call reproduces the step's effect by execution;
  ``--grpo-steps`` steps of ``--grpo-prompts`` × ``--grpo-generations`` samples (its record's
  ``samples`` counts completions), with the reward curve and kept/sampled groups per step.
* **Checkpoints** at ``--budgets`` samples (default 32 64 128) within one run per
  (arm, seed), seeds ``--seeds`` (default 0 1 2).
* **Primary metric**: held-out gold-prefix exact match on the steps whose composition
  (previous oracle call → step) is a target.  Secondary: NLL on those steps; both on
  all other held-out steps (regression check); with ``--free-running``, free-running
  partial credit (share of user turns whose state matches the oracle's) and pass rate
  of the warm start and of each arm's final checkpoint on the first ``--free-tasks``
  held-out tasks (greedy, ``--free-max-tokens`` tokens, ``--free-step-cap`` answers a turn).
* **Statistics** (``--report``): per arm and budget the mean over seeds; the speed-up
  factor — the fraction of random's final budget the ace arm needs to reach random's
  final primary value (linear in log2 samples between checkpoints; > 1 when it never
  does) — with a 95% bootstrap interval resampling whole held-out tasks and seeds,
  steps paired across arms.  The claim (30% less data) holds if the interval's upper
  end is at most 0.7.  (Issue 32, after the three seeds: every interval is a
  hierarchical bootstrap — seeds with replacement, then held-out tasks within each
  drawn seed — and the report adds each seed's difference, the figures without target
  compositions whose gold call is one constant string in BFCL, the supervised tokens of
  each arm and the sha256 of each arm's data.)

Every result is appended to ``benchmarks/results/evidence.json`` as soon as it exists
(one record per arm, seed and checkpoint, with per-step outcomes for the bootstrap),
and models and optimizer states are saved under ``--work`` at each checkpoint, so a
killed run resumes where it stopped.  Needs Neo4j (the managed server, or NEO4J_URI).

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 python benchmarks/evidence_bench.py          # runs / resumes
    python benchmarks/evidence_bench.py --report                                      # the table only
    python benchmarks/evidence_bench.py --quick --state /tmp/ev.json --work /tmp/ev    # smoke (tiny model)

The preregistered replication of issue 32 (``benchmarks/evidence_plan.json``: six seeds, each its own split, warm
start and synthesis draw; arms ace / random / more-real / curriculum-mixed; budgets of 3,000-24,000 supervised
tokens; the synthesizer pinned to the plan's commit) is another mode, in ``evidence_replication.py``, with its own
state file (``benchmarks/results/evidence_replication.json``); this mode and its state are untouched by it.  It needs
Neo4j too and, by an estimate derived from the measured cell below (not a measurement), about 19-20 CPU hours
(3.2 a seed) before synthesis and free-running; see that module's docstring and RESULTS.md.  To run and report it:

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 python benchmarks/evidence_bench.py --plan benchmarks/evidence_plan.json
    python benchmarks/evidence_bench.py --plan benchmarks/evidence_plan.json --report

A cell's training stops at each transcript's last supervised token and its held-out scoring computes the prefixes
tasks share once (issue 32, item 3; the same results up to float rounding); ``--legacy-cell`` runs the old path,
and ``benchmarks/evidence_cell_cost.py`` measures one cell both ways.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_facts  # noqa: E402

from ace_env import bfcl  # noqa: E402
from ace_env.calls import Call, parse_call  # noqa: E402
from ace_env.sim import WeaknessSpec  # noqa: E402
from ace_env.tasks import Task  # noqa: E402
from ace_env.verifier import verify  # noqa: E402
from ace_graph.compositions import adjacent_pairs  # noqa: E402
from ace_graph.config import neo4j_settings  # noqa: E402
from ace_graph.db import get_driver  # noqa: E402
from ace_graph.ingest import GOLD_PREFIX, ingest_records  # noqa: E402
from ace_graph.store import GraphStore  # noqa: E402
from ace_graph.tagger import tag_task  # noqa: E402
from synth.pipeline import SynthConfig, seeds_by_target, sim_policy, synthesize  # noqa: E402
from train.engine import RolloutConfig, RolloutEngine  # noqa: E402
from train.goldprefix import records, score_tasks  # noqa: E402
from train.grpo import GRPORunConfig, train_grpo  # noqa: E402
from train.policies import GenerationConfig, load_policy  # noqa: E402
from train.policies.hf import HFPolicy, load_model  # noqa: E402
from train.sft import oracle_transcripts, tokenize  # noqa: E402

ROOT = Path(__file__).resolve().parent
SPLITS = ROOT / "evidence_splits.json"
STATE = ROOT / "results" / "evidence.json"
SPLIT_SEED = 20261203
CATEGORIES = ("base", "long_context", "miss_func", "miss_param")
ARMS = ("ace", "random", "more-real", "grpo")


# --------------------------------------------------------------------------- splits and state


def make_splits(n_held: int = 40, n_pool: int = 60) -> dict[str, Any]:
    order = list(range(200))
    random.Random(SPLIT_SEED).shuffle(order)
    return {"seed": SPLIT_SEED, "held_out": sorted(order[:n_held]), "pool": sorted(order[n_held:n_held + n_pool]),
            "train": order[n_held + n_pool:]}  # train keeps the permuted order: the warm start takes its first N


def load_splits(path: Path, quick: bool) -> dict[str, Any]:
    if quick:  # file-system tasks that share compositions, so the smoke run has targets
        return {"seed": None, "held_out": [0, 1, 2], "pool": [3, 4, 5, 6, 7, 8], "train": [9, 10, 11, 12]}
    if not path.exists():
        path.write_text(json.dumps(make_splits(), indent=1) + "\n")
    return json.loads(path.read_text())


def tasks_of(indices: list[int], categories: tuple[str, ...] = ("base",)) -> list[Task]:
    by_id = {t.id: t for t in bfcl.load_tasks("all")}
    return [by_id[f"multi_turn_{c}_{i}"] for i in indices for c in categories if f"multi_turn_{c}_{i}" in by_id]


def load_state(path: Path) -> dict[str, Any]:
    state = json.loads(path.read_text()) if path.exists() else {"records": [], "phases": {}}
    _BASE[(path, id(state))] = json.loads(json.dumps(state))
    return state


#: Each loaded state as it was last read or written, by (path, id of the state object): the base of the three-way merge in save_state.
_BASE: dict[tuple[Path, int], Any] = {}


def _item_key(key: str, item: Any) -> str:
    """What identifies an item of a list in the state: a record its (arm, seed, samples), anything else its
    content."""
    if key == "records":  # the replication's records (evidence_replication.py) are per token budget
        return f"{item['arm']}|{item['seed']}|{item.get('budget', item['samples'])}"
    return json.dumps(item, sort_keys=True)


def _merge_list(key: str, base: list, mine: list, theirs: list) -> list:
    """Lists merge item by item, each item a unit: kept unless deleted on one side and untouched on the other;
    where both sides hold an item, the side that changed it wins."""
    b, m, t = ({_item_key(key, x): x for x in xs} for xs in (base, mine, theirs))
    out = {}
    for k, v in t.items():
        if k in m:
            out[k] = v if m[k] == b.get(k) else m[k]
        elif k not in b:
            out[k] = v  # added on disk
    for k, v in m.items():
        if k not in t and not (k in b and v == b[k]):
            out[k] = v  # added (or changed) here
    return list(out.values())


def _merge(base: Any, mine: Any, theirs: Any, key: str = "") -> Any:
    """Three-way merge of what this process holds (``mine``) with the file (``theirs``) since both were
    ``base``: what one side changed wins, what one side deleted and the other left alone goes.  Dicts and lists
    are merged into ``mine`` in place, so a caller holding a part of the state keeps holding it."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        base = base if isinstance(base, dict) else {}
        for k in [k for k in mine if k not in theirs and k in base and mine[k] == base[k]]:
            del mine[k]  # deleted on disk, untouched here
        for k, v in theirs.items():
            if k in mine:
                mine[k] = _merge(base.get(k), mine[k], v, k)
            elif k not in base:
                mine[k] = v  # added on disk (a key in base but not in mine was deleted here)
        return mine
    if isinstance(mine, list) and isinstance(theirs, list):
        mine[:] = _merge_list(key, base if isinstance(base, list) else [], mine, theirs)  # in place, as dicts
        return mine
    return theirs if mine == base else mine


def save_state(path: Path, state: dict[str, Any]) -> None:
    """Write the state, merged with whatever another evidence process saved since this one read it (two processes
    may run disjoint arms or seeds against one state file, one core each); under a lock, replaced atomically."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = _BASE.get((path, id(state)))
        if path.exists() and base is not None:
            _merge(base, state, json.loads(path.read_text()))
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        os.replace(tmp, path)
        _BASE[(path, id(state))] = json.loads(json.dumps(state))


def _code_version() -> str:
    """The commit whose code this process imported, "+dirty" when ACE's packages had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "ace_env", "ace_graph", "synth", "train",
                                "cypher"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+dirty" if dirty else "")


CODE = _code_version()  # taken at import: later commits do not change the code a running process uses


def commit() -> str:
    return CODE


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------- training


class Trainer:
    """SFT one transcript at a time: AdamW at a constant rate, loss on assistant tokens only, logits
    computed only at the positions that predict them (never full-vocabulary logits for the whole text)."""

    def __init__(self, model_dir: str, lr: float, seed: int, optimizer_state: Path | None = None,
                 legacy: bool = False):
        import torch

        torch.manual_seed(seed)
        self.legacy = legacy
        self.tokenizer, self.model, self.template = load_model(model_dir)
        self.model.train()
        # fused: one pass over each tensor instead of a dozen (0.1 s instead of 0.4-3.7 s a step for SmolLM2 on
        # one CPU thread); the same update up to float rounding
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, **({} if legacy else {"fused": True}))
        if optimizer_state is not None and optimizer_state.exists():
            self.opt.load_state_dict(torch.load(optimizer_state, weights_only=True))

    def examples(self, tasks: list[Task], max_length: int) -> list[dict[str, list[int]]]:
        rows, skipped = oracle_transcripts(tasks)
        out = tokenize(self.tokenizer, self.template, rows, max_length, True, skipped)
        if skipped:
            say(f"  {len(skipped)} transcript(s) left out: {skipped[0]}")
        kept = [r for r in rows if not any(f"task {r['task_id']}:" in why for why in skipped)]
        spans = sum(_spans(e["assistant_masks"]) for e in out)
        answers = sum(sum(1 for m in r["messages"] if m["role"] == "assistant") for r in kept)
        #: assistant answers inside the token window / all of them (a cut transcript loses its last steps)
        self.window = {"assistant_answers_kept": spans, "assistant_answers": answers,
                       "truncated": sum(1 for e in out if len(e["input_ids"]) >= max_length)}
        return out

    def loss(self, example: dict[str, list[int]]) -> Any:
        """The mean loss over a transcript's supervised tokens, as a tensor to differentiate.  The forward pass
        stops at the last position that predicts a supervised token: in a causal model nothing after it changes
        the loss or its gradient, and a transcript cut at the token window often ends in a tool output or user
        turn that nothing is trained on (the legacy path runs the whole window)."""
        import torch

        mask = example["assistant_masks"]
        positions = [i - 1 for i in range(1, len(mask)) if mask[i]]
        ids = torch.tensor([example["input_ids"] if self.legacy else example["input_ids"][: positions[-1] + 1]])
        targets = torch.tensor([example["input_ids"][p + 1] for p in positions])
        out = self.model(input_ids=ids, logits_to_keep=torch.tensor(positions))
        return torch.nn.functional.cross_entropy(out.logits[0].float(), targets)

    def step(self, example: dict[str, list[int]]) -> float:
        """One optimizer step on one transcript; returns its loss."""
        loss = self.loss(example)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.item()

    def policy(self) -> HFPolicy:
        self.model.eval()
        return HFPolicy.from_model("hf:evidence", self.tokenizer, self.model, self.template, cache_tokens=0)

    def save(self, out: Path) -> None:
        import torch

        tmp = out.with_name(out.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(tmp)
        self.tokenizer.chat_template = self.template
        self.tokenizer.save_pretrained(tmp)
        torch.save(self.opt.state_dict(), tmp / "optimizer.pt")
        if out.exists():
            for f in out.iterdir():
                f.unlink()
            out.rmdir()
        tmp.rename(out)


def _spans(mask: list[int]) -> int:
    """Runs of 1 in an assistant mask: the assistant answers a tokenized transcript holds."""
    return sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))


# --------------------------------------------------------------------------- evaluation


def held_out_steps(tasks: list[Task]) -> list[dict[str, Any]]:
    """Every held-out oracle step in a fixed order, with its composition (previous call's tool → tool) and its gold
    call as the ground truth writes it (what :func:`constant_call_compositions` looks at)."""
    out = []
    for task in tasks:
        tags = tag_task(task)
        calls = {s["flat"]: s["call"] for s in gold_steps(task)}
        last = None
        for tag in tags:
            out.append({"task": task.id, "flat": tag.flat, "tool": tag.tool, "prev": last, "call": calls.get(tag.flat)})
            if tag.tool is not None:
                last = tag.tool
    return out


def gold_steps(task: Task) -> list[dict[str, Any]]:
    """A task's oracle steps in the tagger's flat order (a turn without ground truth is one abstain step, tool None),
    each with its composition (previous call's tool → tool) and its gold call string; from the ground truth alone,
    so a whole corpus is read in a moment."""
    out: list[dict[str, Any]] = []
    last = None
    for turn in task.turns:
        for raw in turn.ground_truth:
            call = parse_call(raw)
            tool = call.name if isinstance(call, Call) else None
            out.append({"task": task.id, "flat": len(out), "tool": tool, "prev": last, "call": raw})
            if tool is not None:
                last = tool
        if not turn.ground_truth:
            out.append({"task": task.id, "flat": len(out), "tool": None, "prev": last, "call": None})
    return out


def constant_call_compositions(steps: list[dict[str, Any]], compositions: Any,
                               min_occurrences: int = 2) -> dict[tuple[str, str], dict[str, Any]]:
    """The compositions among ``compositions`` whose gold call at the step is one and the same string in every one of
    their occurrences among ``steps`` (at least ``min_occurrences`` of them): such a step is learnt by any arm whose
    data happens to carry the composition, once, whatever else the data teaches, so a comparison of arms on it
    measures which arm carried it.  Steps are dicts with ``prev``, ``tool`` and ``call`` (:func:`gold_steps`).
    Returns {composition: {"call": the string, "occurrences": how many}}.

    >>> steps = [{"prev": "a", "tool": "b", "call": "b(x=1)"}] * 3 + [{"prev": "c", "tool": "b", "call": "b(x=2)"},
    ...          {"prev": "c", "tool": "b", "call": "b(x=3)"}]
    >>> constant_call_compositions(steps, {("a", "b"), ("c", "b")})
    {('a', 'b'): {'call': 'b(x=1)', 'occurrences': 3}}
    """
    wanted = {tuple(c) for c in compositions}
    calls: dict[tuple[str, str], list[Any]] = {}
    for st in steps:
        comp = (st["prev"], st["tool"])
        if comp in wanted:
            calls.setdefault(comp, []).append(st.get("call"))
    return {comp: {"call": xs[0], "occurrences": len(xs)} for comp, xs in sorted(calls.items())
            if len(xs) >= min_occurrences and xs[0] is not None and len(set(xs)) == 1}


#: Set by --legacy-cell: train on the whole token window with the plain AdamW loop and score each held-out task
#: from scratch, as before issue 32 (item 3); kept to measure what the cheaper cell saves.
LEGACY = False


def evaluate(policy: HFPolicy, tasks: list[Task], steps: list[dict[str, Any]], targets: set[tuple[str, str]]) -> dict[str, Any]:
    run = score_tasks(policy, tasks, share_prefix=not LEGACY)
    by_key = {(s.task_id, s.flat): s for s in run.scores}
    exact, nll = [], []
    for st in steps:
        s = by_key.get((st["task"], st["flat"]))
        exact.append(None if s is None else int(bool(s.exact)))
        nll.append(None if s is None else round(s.nll, 4))
    on = [i for i, st in enumerate(steps) if (st["prev"], st["tool"]) in targets]
    off = [i for i, st in enumerate(steps) if (st["prev"], st["tool"]) not in targets]

    def mean(xs: list[Any], idx: list[int]) -> tuple[float | None, int]:
        vals = [xs[i] for i in idx if xs[i] is not None]
        return (round(sum(vals) / len(vals), 4) if vals else None), len(vals)

    primary, n_primary = mean(exact, on)
    return {
        "primary_exact": primary, "primary_n": n_primary, "primary_nll": mean(nll, on)[0],
        "other_exact": mean(exact, off)[0], "other_n": mean(exact, off)[1], "other_nll": mean(nll, off)[0],
        "all_exact": mean(exact, list(range(len(steps))))[0],
        "step_exact": "".join("." if x is None else str(x) for x in exact), "step_nll": nll,
        "eval_seconds": round(run.seconds, 1),
    }


# --------------------------------------------------------------------------- phases


def _train_epochs(trainer: Any, examples: list[dict[str, Any]], epoch: int) -> list[float]:
    """One warm-start epoch: every example once, in an order fixed by the epoch's number."""
    order = list(range(len(examples)))
    random.Random(epoch).shuffle(order)
    losses = []
    for k, i in enumerate(order):
        trainer.model.train()
        losses.append(trainer.step(examples[i]))
        if (k + 1) % 10 == 0:
            say(f"warm start epoch {epoch + 1}: {k + 1}/{len(order)} loss {losses[-1]:.3f}")
    return losses


def warm_start(args: argparse.Namespace, state: dict[str, Any], splits: dict[str, Any], held: list[Task],
               steps: list[dict[str, Any]]) -> Path:
    warm_dir = args.work / "warm"
    phase = state["phases"].setdefault("warm", {"epochs": []})
    if phase.get("done") and warm_dir.exists():
        return warm_dir
    if phase.get("done"):
        return rebuild_warm(args, state, splits, held, steps)
    tasks = tasks_of(splits["train"][: args.warm_tasks])
    start_dir = warm_dir if (warm_dir.exists() and phase["epochs"]) else args.model
    if start_dir == args.model:
        phase["epochs"] = []
    trainer = Trainer(str(start_dir), args.lr, 0, warm_dir / "optimizer.pt" if start_dir == warm_dir else None,
                      legacy=LEGACY)
    examples = trainer.examples(tasks, args.max_length)
    if not examples:
        raise SystemExit(f"warm start: no transcript fits in --max-length {args.max_length}")
    while len(phase["epochs"]) < args.warm_epochs:
        t0 = time.perf_counter()
        losses = _train_epochs(trainer, examples, len(phase["epochs"]))
        result = evaluate(trainer.policy(), held, steps, set())
        phase["epochs"].append({"train_seconds": round(time.perf_counter() - t0, 1), "first_loss": losses[0],
                                "last_loss": losses[-1], "held_out_exact": result["all_exact"],
                                "held_out_nll": result["other_nll"], "examples": len(examples),
                                "tokens": sum(len(e["input_ids"]) for e in examples)})
        trainer.save(warm_dir)
        save_state(args.state, state)
        say(f"warm start epoch {len(phase['epochs'])}: held-out exact {result['all_exact']}")
        if (result["all_exact"] or 0) >= args.warm_target:
            break
    phase.update(done=True, model=str(args.model), tasks=len(tasks), lr=args.lr, max_length=args.max_length)
    save_state(args.state, state)
    return warm_dir


def rebuild_warm(args: argparse.Namespace, state: dict[str, Any], splits: dict[str, Any], held: list[Task],
                 steps: list[dict[str, Any]]) -> Path:
    """The warm start's recorded training, replayed when its checkpoint is gone (a new machine: checkpoints are
    not committed).  The recorded arms were trained from the original, so the rebuilt model is accepted only if
    it scores every held-out step exactly as the original did; otherwise the run stops and says so."""
    phase = state["phases"]["warm"]
    original = next((r for r in state["records"] if r["arm"] == "warm"), None)
    tasks = tasks_of(splits["train"][: phase["tasks"]])
    trainer = Trainer(str(args.model), phase["lr"], 0, None, legacy=True)  # replayed as it was first trained
    examples = trainer.examples(tasks, phase["max_length"])
    say(f"warm start: checkpoint missing under {args.work}; replaying its {len(phase['epochs'])} recorded epochs")
    t0 = time.perf_counter()
    for epoch in range(len(phase["epochs"])):
        _train_epochs(trainer, examples, epoch)
    result = evaluate(trainer.policy(), held, steps, set())
    same = original is not None and result["step_exact"] == original["step_exact"]
    differing = None if original is None else sum(a != b for a, b in zip(result["step_exact"], original["step_exact"]))
    state.setdefault("notes", []).append({
        "when": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
        "what": "warm start rebuilt from its recorded recipe (checkpoint lost with the machine)",
        "identical_step_exact": same, "steps_differing": differing, "all_exact": result["all_exact"],
        "train_seconds": round(time.perf_counter() - t0, 1), "commit": commit()})
    save_state(args.state, state)
    if not same:
        trainer.save(args.work / "warm-rebuilt")
        raise SystemExit(f"the rebuilt warm start scores {differing} held-out steps differently from the recorded "
                         f"one; the recorded arms started from the original, so the run stops (rebuilt model in "
                         f"{args.work / 'warm-rebuilt'})")
    trainer.save(args.work / "warm")
    say("warm start rebuilt: every held-out step scores as recorded")
    return args.work / "warm"


def diagnose(args: argparse.Namespace, state: dict[str, Any], splits: dict[str, Any], warm: Path,
             held: list[Task]) -> list[tuple[str, str]]:
    if "diagnosis" in state["phases"]:
        return [tuple(t) for t in state["phases"]["diagnosis"]["targets"]]
    pool = tasks_of(splits["pool"])
    tokenizer, model, template = load_model(str(warm))
    policy = HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0)
    run = score_tasks(policy, pool, share_prefix=not LEGACY)
    by_id = {t.id: t for t in pool}
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        store = GraphStore(driver, settings.database)
        experiment = args.experiment
        ingest_records(store, records(run.scores, by_id, f"{experiment}/warm/pool"), by_id, experiment, "warm",
                       "pool", mode=GOLD_PREFIX)
        rows = [r for r in store.run("composition-success", scope=f"{experiment}/warm/pool", level="tool")
                if r["kind"] == "composition"]
    finally:
        driver.close()
    held_pairs = {tuple(p.split(">", 1)) for t in held for p in adjacent_pairs(tag_task(t))[0]}
    seeds = {t.id: t for t in tasks_of(splits["train"] + splits["pool"])}
    with_seeds = seeds_by_target([{"from": r["from"], "to": r["to"]} for r in rows], seeds)
    eligible = [r for r in rows if r["n"] >= args.min_n and (r["from"], r["to"]) in held_pairs
                and with_seeds.get((r["from"], r["to"]))]
    eligible.sort(key=lambda r: (-r["failures"] / r["n"], -r["n"], r["from"], r["to"]))
    targets = [(r["from"], r["to"]) for r in eligible[: args.targets]]
    observed = sorted({(r["from"], r["to"]) for r in rows if with_seeds.get((r["from"], r["to"]))})
    state["phases"]["diagnosis"] = {
        "scope": f"{experiment}/warm/pool", "steps": len(run.scores),
        "exact": round(sum(bool(s.exact) for s in run.scores) / max(len(run.scores), 1), 4),
        "compositions_observed": len(rows), "eligible": len(eligible), "targets": targets,
        "target_rows": [{k: r[k] for k in ("from", "to", "n", "failures")} for r in eligible[: args.targets]],
        "observed_with_seeds": observed,
    }
    save_state(args.state, state)
    return targets


def arm_tasks(args: argparse.Namespace, state: dict[str, Any], splits: dict[str, Any], arm: str, seed: int,
              targets: list[tuple[str, str]]) -> list[Task]:
    """The arm's training tasks for one seed, in training order (cached as a task file under --work)."""
    path = args.work / "data" / f"{arm}-{seed}.jsonl"
    if path.exists():
        text = path.read_text()
        tasks = [Task.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]
        record_data(state, arm, seed, text, len(tasks))
        save_state(args.state, state)
        return tasks
    rng = random.Random(f"{arm}:{seed}")
    want = max(args.budgets)
    if arm == "more-real":
        tasks = tasks_of(splits["pool"], CATEGORIES)
        rng.shuffle(tasks)
        text = "".join(json.dumps(t.to_dict()) + "\n" for t in tasks)
    else:
        if arm == "ace":
            batches = [targets]
        else:
            # Compositions drawn uniformly from the pool, without replacement, as many at a time as there are
            # targets, until the budget's tasks are built: one batch of randomly drawn compositions can yield
            # far fewer (seed 1's first 8 gave 7 tasks in 512 attempts), and training 64 samples on 7 tasks
            # would compare targeting with a lack of data.  Seed 0's first batch is the draw it always had.
            observed = [tuple(p) for p in state["phases"]["diagnosis"]["observed_with_seeds"]]
            first = rng.sample(observed, min(len(observed), len(targets)))
            rest = [c for c in observed if c not in first]
            rng.shuffle(rest)
            drawn = first + rest
            batches = [drawn[i:i + len(targets)] for i in range(0, len(drawn), len(targets))]
        seeds = {t.id: t for t in tasks_of(splits["train"] + splits["pool"])}
        tasks, record = [], {"aimed_at": [], "batches": [], "commit": commit()}
        for aim in batches:
            frontier = [{"from": a, "to": b} for a, b in aim]
            config = SynthConfig(n=want - len(tasks), rounds=2, plans=max(8, 2 * len(aim)), rollouts_per_task=1,
                                 seed=seed)
            result = synthesize(frontier, seeds, seeds_by_target(frontier, seeds), sim_policy(WeaknessSpec()), config)
            tasks += result.tasks
            record["aimed_at"] += [f"{a}>{b}" for a, b in aim]
            record["batches"].append(result.summary())
            say(f"{arm} seed {seed}: {len(result.tasks)} tasks from {len(aim)} compositions ({len(tasks)}/{want})")
            if len(tasks) >= want:
                break
        record["tasks"] = len(tasks)
        rng.shuffle(tasks)
        text = "".join(json.dumps(t.to_dict()) + "\n" for t in tasks)
        record["sha256"] = hashlib.sha256(text.encode()).hexdigest()  # the data itself, in training order
        previous = state["phases"].setdefault("synthesis", {}).get(f"{arm}-{seed}")
        if previous is not None:  # the data file was lost with its machine: built again, it must be the same data
            if "sha256" in previous:
                record["matches_previous"] = previous["sha256"] == record["sha256"]
            else:  # recorded before the hash was kept: its counts per batch are what can be compared
                strip = lambda batches: [{k: v for k, v in b.items() if k != "commit"} for b in batches]  # noqa: E731
                record["matches_previous"] = strip(previous.get("batches", [])) == strip(record["batches"])
            if not record["matches_previous"]:
                stale = [r for r in state["records"] if r["arm"] == arm and r["seed"] == seed]
                state.setdefault("superseded", []).extend(stale)
                state["records"] = [r for r in state["records"] if r not in stale]
                state["free_running"] = [r for r in state.get("free_running", [])
                                         if (r.get("arm"), r.get("seed")) != (arm, seed)]
                say(f"{arm} seed {seed}: the rebuilt data differs from the recorded synthesis; its {len(stale)} "
                    "records move to 'superseded' and every budget runs again")
        state["phases"]["synthesis"][f"{arm}-{seed}"] = record
    state["phases"].setdefault("data", {}).pop(f"{arm}-{seed}", None)  # built now: this text is the arm's data
    record_data(state, arm, seed, text, len(tasks))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    save_state(args.state, state)
    return tasks


def record_data(state: dict[str, Any], arm: str, seed: int, text: str, tasks: int) -> None:
    """Record the sha256 of an arm's training data (its task file, in training order) in ``phases.data``, for every
    arm (more-real included), when the data is built or first read; a file that no longer matches its recorded
    hash stops the run, since the arm's records were trained on other data."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    data = state["phases"].setdefault("data", {})
    known = data.get(f"{arm}-{seed}")
    if known is not None and known["sha256"] != digest:
        raise SystemExit(f"{arm} seed {seed}: the data file's sha256 ({digest[:16]}) is not the one recorded "
                         f"({known['sha256'][:16]}); its records were trained on the recorded data (remove the "
                         "file to build the arm's data again, or give another --state)")
    if known is None:
        data[f"{arm}-{seed}"] = {"sha256": digest, "tasks": tasks, "recorded_by": commit(),
                                 "after_training": any(r["arm"] == arm and r["seed"] == seed for r in state["records"])}


def run_arm(args: argparse.Namespace, state: dict[str, Any], warm: Path, arm: str, seed: int, tasks: list[Task],
            held: list[Task], steps: list[dict[str, Any]], targets: set[tuple[str, str]]) -> None:
    done = {r["samples"] for r in state["records"] if r["arm"] == arm and r["seed"] == seed}
    todo = [b for b in sorted(args.budgets) if b not in done]
    if not todo:
        return
    ckpt = args.work / "runs" / f"{arm}-{seed}"
    at = 0
    if ckpt.exists() and (ckpt / "position.json").exists():
        at = json.loads((ckpt / "position.json").read_text())["samples"]
    if at and at not in done:
        at = 0  # a checkpoint without its record: start over
    if at >= min(todo) or (done and at < max(done)):
        at = 0
    start = ckpt if at else warm
    trainer = Trainer(str(start), args.lr, seed, ckpt / "optimizer.pt" if at else None, legacy=LEGACY)
    examples = trainer.examples(tasks, args.arm_max_length)
    if not examples:
        raise SystemExit(f"arm {arm} seed {seed}: no training example")
    tokens = loss_tokens = 0
    for k in range(at):
        tokens += len(examples[k % len(examples)]["input_ids"])
        loss_tokens += sum(examples[k % len(examples)]["assistant_masks"])
    t0 = time.perf_counter()
    losses: list[float] = []
    for k in range(at, max(todo)):
        ex = examples[k % len(examples)]
        trainer.model.train()
        losses.append(trainer.step(ex))
        tokens += len(ex["input_ids"])
        loss_tokens += sum(ex["assistant_masks"])
        n = k + 1
        if n % 8 == 0:
            say(f"{arm} seed {seed}: {n} samples, loss {sum(losses[-8:]) / 8:.3f}")
        if n in todo:
            result = evaluate(trainer.policy(), held, steps, targets)
            record = {"arm": arm, "seed": seed, "samples": n, "tokens": tokens, "loss_tokens": loss_tokens,
                      "data_sha256": state["phases"].get("data", {}).get(f"{arm}-{seed}", {}).get("sha256"),
                      "unique_samples": len(examples), "max_length": args.arm_max_length, **trainer.window, "train_seconds": round(time.perf_counter() - t0, 1),
                      "mean_loss": round(sum(losses) / len(losses), 4), **result, "commit": commit(),
                      "date": time.strftime("%Y-%m-%d %H:%M"), "load": round(os.getloadavg()[0], 2)}
            state["records"] = [r for r in state["records"]
                                if not (r["arm"] == arm and r["seed"] == seed and r["samples"] == n)] + [record]
            trainer.save(ckpt)
            (ckpt / "position.json").write_text(json.dumps({"samples": n}))
            save_state(args.state, state)
            say(f"{arm} seed {seed} @ {n}: primary exact {result['primary_exact']} (n={result['primary_n']}), "
                f"other {result['other_exact']}")
            t0 = time.perf_counter()
            losses = []


def free_running(args: argparse.Namespace, state: dict[str, Any], held: list[Task], warm: Path) -> None:
    """Free-running partial credit of the warm start and of each arm's final checkpoint (one record each)."""
    done = state.setdefault("free_running", [])
    have = {(r["arm"], r["seed"]) for r in done}
    final = max(args.budgets)
    models = [("warm", None, 0, warm)]
    for r in state["records"]:
        if r["arm"] == "grpo" or (r["arm"] != "warm" and r["samples"] == final):
            models.append((r["arm"], r["seed"], r["samples"], args.work / "runs" / f"{r['arm']}-{r['seed']}"))
    tasks = held[: args.free_tasks]
    by_id = {t.id: t for t in tasks}
    config = RolloutConfig(step_cap=args.free_step_cap, generation=GenerationConfig(max_tokens=args.free_max_tokens))
    for arm, seed, samples, folder in models:
        position = folder / "position.json"
        if (arm, seed) in have or not (folder / "config.json").exists():
            continue
        if position.exists() and json.loads(position.read_text())["samples"] != samples:
            continue  # the folder holds another checkpoint of this arm now
        t0 = time.perf_counter()
        policy = load_policy(f"hf:{folder}")
        try:
            rows = list(RolloutEngine(policy, config).run(tasks))
        finally:
            policy.close()
        verdicts = [verify(by_id[r["task_id"]], r["turns"], r["rollout_id"]) for r in rows]
        done.append({"arm": arm, "seed": seed, "samples": samples, "tasks": len(verdicts),
                     "pass_rate": round(sum(v.reward == 1.0 for v in verdicts) / len(verdicts), 4),
                     "partial_credit": round(sum(v.partial_credit for v in verdicts) / len(verdicts), 4),
                     "per_task": [round(v.partial_credit, 4) for v in verdicts],
                     "max_tokens": args.free_max_tokens, "step_cap": args.free_step_cap,
                     "seconds": round(time.perf_counter() - t0, 1), "commit": commit()})
        save_state(args.state, state)
        say(f"free-running {arm} seed {seed} @ {samples}: pass {done[-1]['pass_rate']}, "
            f"partial credit {done[-1]['partial_credit']} over {len(verdicts)} held-out tasks")


def run_grpo_arm(args: argparse.Namespace, state: dict[str, Any], splits: dict[str, Any], warm: Path, seed: int,
                 held: list[Task], steps: list[dict[str, Any]], targets: list[tuple[str, str]]) -> None:
    """GRPO on the targets' transitions from the warm start; one record at the end (resumable per seed)."""
    if any(r["arm"] == "grpo" and r["seed"] == seed for r in state["records"]):
        return
    out = args.work / "runs" / f"grpo-{seed}"
    tasks = {t.id: t for t in tasks_of(splits["train"] + splits["pool"])}
    config = GRPORunConfig(steps=args.grpo_steps, prompts_per_step=args.grpo_prompts,
                           generations=args.grpo_generations, max_tokens=64, learning_rate=args.grpo_lr,
                           transitions=True, targets=",".join(f"{a}>{b}" for a, b in targets), seed=seed)
    t0 = time.perf_counter()
    lines = train_grpo(warm, tasks, out, config, metrics_out=args.work / "runs" / f"grpo-{seed}.metrics.jsonl")
    seconds = time.perf_counter() - t0
    tokenizer, model, template = load_model(str(out))
    result = evaluate(HFPolicy.from_model("hf:grpo", tokenizer, model, template, cache_tokens=0), held, steps,
                      set(targets))
    samples = args.grpo_steps * args.grpo_prompts * args.grpo_generations
    state["records"].append({
        "arm": "grpo", "seed": seed, "samples": samples, "train_seconds": round(seconds, 1), **result,
        "grpo": [{k: x.get(k) for k in ("step", "reward_mean", "reward_std", "groups_sampled", "groups_kept", "loss")}
                 for x in lines],
        "lr": args.grpo_lr, "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
        "load": round(os.getloadavg()[0], 2)})
    save_state(args.state, state)
    say(f"grpo seed {seed}: {len(lines)} steps, mean reward {[x['reward_mean'] for x in lines]}; "
        f"primary exact {result['primary_exact']}")


# --------------------------------------------------------------------------- statistics


def _reach(curve: list[tuple[int, float]], value: float) -> float:
    """Samples (interpolated linearly in log2) at which a rising curve first reaches ``value``; inf if never."""
    prev = None
    for n, v in curve:
        if v >= value:
            if prev is None or prev[1] >= value:
                return float(n)
            (n0, v0) = prev
            frac = (value - v0) / (v - v0) if v != v0 else 0.0
            return 2 ** (math.log2(n0) + frac * (math.log2(n) - math.log2(n0)))
        prev = (n, v)
    return math.inf


#: The two per-step outcomes a speed-up is measured on. Exact match is the claim's metric but coarse (a step
#: is 0 or 1, and the warm start gets few primary steps right); the gold call's NLL moves with every sample,
#: so it can show a difference in learning speed long before exact match does. Both are "higher is better"
#: here: NLL is negated.
METRICS = {"exact": "step_exact", "nll": "step_nll"}


def _step_value(entry: Any, i: int, metric: str) -> float | None:
    if metric == "exact":
        return None if entry[i] == "." else float(entry[i])
    return None if entry[i] is None else -float(entry[i])


def _target_cells(state: dict[str, Any], metric: str,
                  exclude: Any = ()) -> tuple[list[int], dict[str, list[int]], dict[tuple, Any]]:
    """The held-out steps at a target composition (less those in ``exclude``), those steps by task, and each
    record's per-step outcomes for ``metric`` keyed by (arm, seed, samples): what the speed-up and the difference
    are computed from."""
    steps = state.get("held_out_steps", [])
    targets = {tuple(t) for t in state["phases"].get("diagnosis", {}).get("targets", [])} - {tuple(c) for c in exclude}
    on = [i for i, st in enumerate(steps) if (st["prev"], st["tool"]) in targets]
    by_task = {t: [i for i in on if steps[i]["task"] == t] for t in sorted({steps[i]["task"] for i in on})}
    key = METRICS[metric]
    cell = {(r["arm"], r["seed"], r["samples"]): r[key] for r in state["records"] if r.get(key) is not None}
    return on, by_task, cell


def bootstrap_draws(seeds: list[Any], tasks: list[str] | dict[Any, list[str]], n_boot: int, hierarchical: bool = True,
                    rng_seed: int = 0) -> Iterator[list[tuple[Any, list[str]]]]:
    """Resamples of the design for a bootstrap interval, each a list of (seed, held-out tasks) that every arm is
    measured on (paired).  Hierarchical (the default, what every interval of the report uses): the seeds drawn with
    replacement, then for each drawn seed its held-out tasks drawn with replacement, independently of the other
    drawn seeds; with few seeds that disagree, the interval is as wide as their disagreement.
    ``hierarchical=False`` holds the seeds fixed and draws one sample of tasks for all of them (the interval
    published before issue 32: it hides the seeds' disagreement).  Seeds and tasks come from two random streams,
    so with one seed the two are the same per-task bootstrap, draw for draw.  ``tasks`` may map each seed to its
    own held-out tasks (the replication, where a seed is also a split): each drawn seed's tasks are drawn from its
    own (hierarchical only)."""
    seed_rng, task_rng = random.Random(f"seeds/{rng_seed}"), random.Random(f"tasks/{rng_seed}")
    own = tasks if isinstance(tasks, dict) else None
    if own is not None and not hierarchical:
        raise ValueError("per-seed tasks need the hierarchical bootstrap")
    for _ in range(n_boot):
        if hierarchical:
            drawn = [seed_rng.choice(seeds) for _ in seeds]
            yield [(s, [task_rng.choice(ts) for _ in ts]) for s in drawn
                   for ts in [own[s] if own is not None else tasks]]
        else:
            sample = [task_rng.choice(tasks) for _ in tasks]
            yield [(s, sample) for s in seeds]


def _pooled(cell: dict[tuple, Any], arm: str, n: int, draw: list[tuple[Any, list[str]]],
            by_task: dict[str, list[int]], metric: str) -> float | None:
    """Mean of ``metric`` over every step of every (seed, task) of a draw, for the arm's record at ``n`` samples
    (the warm start has one record, used for every seed); None if a record is missing or nothing was scored."""
    vals: list[float] = []
    for s, tasks in draw:
        entry = cell.get(("warm", None, 0) if arm == "warm" else (arm, s, n))
        if entry is None:
            return None
        vals += [v for t in tasks for i in by_task[t] if (v := _step_value(entry, i, metric)) is not None]
    return sum(vals) / len(vals) if vals else None


def _interval(boots: list[float]) -> tuple[float | None, float | None]:
    """The 95% percentile interval of bootstrap values (None, None when there are none)."""
    boots = sorted(boots)
    if not boots:
        return None, None
    k = int(0.025 * len(boots))
    return boots[k], boots[len(boots) - 1 - k]


def speed_up(state: dict[str, Any], metric: str = "exact", n_boot: int = 2000, exclude: Any = (),
             hierarchical: bool = True) -> dict[str, Any] | None:
    """Samples the ace arm needs to reach the random arm's final value on the target steps, over random's
    final budget (< 1: targeted data is faster), with a bootstrap interval (:func:`bootstrap_draws`)."""
    on, by_task, cell = _target_cells(state, metric, exclude)
    tasks = list(by_task)
    arms_budgets = {arm: {n for (a, _, n) in cell if a == arm} for arm in ("ace", "random")}
    budgets = sorted(arms_budgets["ace"] & arms_budgets["random"])
    seeds = sorted({s for (a, s, n) in cell if a == "random" and budgets and n == budgets[-1]}
                   & {s for (a, s, n) in cell if a == "ace"})
    if not tasks or not budgets or not seeds or ("warm", None, 0) not in cell:
        return None

    def speed(draw: list[tuple[Any, list[str]]]) -> float | None:
        curve = [(n, _pooled(cell, "ace", n, draw, by_task, metric)) for n in budgets]
        final = _pooled(cell, "random", budgets[-1], draw, by_task, metric)
        start = _pooled(cell, "warm", 0, draw, by_task, metric)
        if final is None or start is None or any(v is None for _, v in curve) or final <= start:
            return None  # random did not improve on the warm start: there is nothing to reach faster
        return _reach(curve, final) / budgets[-1]

    point = speed([(s, tasks) for s in seeds])
    boots = [s for s in (speed(d) for d in bootstrap_draws(seeds, tasks, n_boot, hierarchical)) if s is not None]
    lo, hi = _interval(boots) if point is not None else (None, None)
    first = budgets[0] / budgets[-1]
    note = None
    if point is None:
        note = f"random's final primary {metric} is not better than the warm start's: no speed-up to measure"
    elif point <= first:
        note = (f"ace was already there at its first budget ({budgets[0]} samples): the speed-up is at most "
                f"{first:.3g}, its true value is not resolved by these budgets")
    return {"metric": metric, "point": point, "note": note, "upper_bound_only": point is not None and point <= first,
            "low": lo, "high": hi, "budgets": budgets, "seeds": seeds, "target_tasks": len(tasks),
            "target_steps": len(on), "bootstrap": len(boots), "claim_holds": hi is not None and hi <= 0.7,
            "interval": "seeds, then tasks" if hierarchical else "tasks, seeds held fixed"}


def difference(state: dict[str, Any], metric: str = "exact", n_boot: int = 2000, baseline: str = "random",
               exclude: Any = (), hierarchical: bool = True) -> dict[int, dict[str, Any]]:
    """ace minus ``baseline`` (random, or the more-real control) on the target steps at each budget both arms
    reached (pooled over their common seeds), with a 95% bootstrap interval (:func:`bootstrap_draws`:
    hierarchical by default), its standard error (the bootstrap's SD) and the difference on each seed alone: the
    equal-budget comparison, defined even when the random arm never leaves the warm start (where
    :func:`speed_up` has nothing to reach).  NLL is reported as measured (lower is better), so a negative
    difference favours ace."""
    on, by_task, cell = _target_cells(state, metric, exclude)
    tasks = list(by_task)
    sign = -1.0 if metric == "nll" else 1.0  # _step_value negates NLL; undo it
    out: dict[int, dict[str, Any]] = {}
    if not tasks:
        return out

    def diff(n: int, draw: list[tuple[Any, list[str]]]) -> float | None:
        a, b = _pooled(cell, "ace", n, draw, by_task, metric), _pooled(cell, baseline, n, draw, by_task, metric)
        return None if a is None or b is None else sign * (a - b)

    for n in sorted({b for (a, _, b) in cell if a == "ace"} & {b for (a, _, b) in cell if a == baseline}):
        seeds = sorted({s for (a, s, b) in cell if a == "ace" and b == n} & {s for (a, s, b) in cell if a == baseline and b == n})
        point = diff(n, [(s, tasks) for s in seeds])
        if point is None:
            continue
        boots = [d for d in (diff(n, draw) for draw in bootstrap_draws(seeds, tasks, n_boot, hierarchical))
                 if d is not None]
        lo, hi = _interval(boots)
        out[n] = {"point": round(point, 4), "low": round(lo, 4), "high": round(hi, 4),
                  "se": round(statistics.pstdev(boots), 4), "seeds": seeds, "target_tasks": len(tasks),
                  "target_steps": len(on), "per_seed": {s: round(diff(n, [(s, tasks)]), 4) for s in seeds},
                  "interval": "seeds, then tasks" if hierarchical else "tasks, seeds held fixed"}
    return out


def arm_means(state: dict[str, Any], metric: str = "exact", exclude: Any = ()) -> dict[str, dict[int, float]]:
    """Each arm's mean over its seeds and the target steps (less ``exclude``) at each budget (the warm start at 0)."""
    _, by_task, cell = _target_cells(state, metric, exclude)
    sign = -1.0 if metric == "nll" else 1.0
    out: dict[str, dict[int, float]] = {}
    for arm, n in sorted({(a, n) for (a, _, n) in cell}):
        seeds = sorted((s for (a, s, b) in cell if a == arm and b == n), key=str)
        v = _pooled(cell, arm, n, [(s, list(by_task)) for s in seeds], by_task, metric)
        if v is not None:
            out.setdefault(arm, {})[n] = round(sign * v, 4)
    return out


def supervised_tokens(state: dict[str, Any]) -> dict[str, dict[int, dict[Any, int]]]:
    """The supervised (assistant, loss-bearing) tokens each arm had been trained on at each budget, per seed, as
    recorded (``loss_tokens``)."""
    out: dict[str, dict[int, dict[Any, int]]] = {}
    for r in state["records"]:
        if r.get("loss_tokens") is not None:
            out.setdefault(r["arm"], {}).setdefault(r["samples"], {})[r["seed"]] = r["loss_tokens"]
    return out


def minimum_detectable_effect(diffs: dict[int, dict[str, Any]], seeds_planned: int, alpha: float = 0.05,
                              power: float = 0.8) -> dict[int, float]:
    """The smallest true difference a design with ``seeds_planned`` seeds (the same held-out tasks) would detect
    with the given power in a two-sided test at ``alpha``, from the differences measured now (:func:`difference`):
    (z_{1-alpha/2} + z_{power}) × SE × sqrt(seeds now / seeds planned), where SE is the SD of the hierarchical
    bootstrap at the seeds now (whose variance, seeds then tasks within them, scales as 1/seeds).  With three
    seeds the SE is itself rough: read the result as an order of magnitude."""
    z = statistics.NormalDist().inv_cdf
    return {n: round((z(1 - alpha / 2) + z(power)) * d["se"] * math.sqrt(len(d["seeds"]) / seeds_planned), 4)
            for n, d in diffs.items()}


def per_target(state: dict[str, Any]) -> dict[str, dict[str, tuple[int, int]]]:
    """Exactly right / scored target steps, per target composition, for each arm's records at the largest
    budget (summed over seeds) and the warm start: which compositions a gain comes from."""
    steps = state.get("held_out_steps", [])
    targets = [tuple(t) for t in state["phases"].get("diagnosis", {}).get("targets", [])]
    final = max((r["samples"] for r in state["records"] if r["arm"] not in ("warm", "grpo")), default=0)
    chosen = [r for r in state["records"] if r["arm"] == "warm" or r["arm"] == "grpo" or r["samples"] == final]
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for a, b in targets:
        idx = [i for i, st in enumerate(steps) if (st["prev"], st["tool"]) == (a, b)]
        row: dict[str, tuple[int, int]] = {}
        for r in chosen:
            label = "warm" if r["arm"] == "warm" else f"{r['arm']}@{r['samples']}"
            marks = [r["step_exact"][i] for i in idx if i < len(r.get("step_exact", ""))]
            right, seen = row.get(label, (0, 0))
            row[label] = (right + marks.count("1"), seen + sum(m in "01" for m in marks))
        out[f"{a}>{b}"] = row
    return out


def report(state: dict[str, Any], n_boot: int = 2000, constant: dict[tuple[str, str], Any] | None = None,
           seeds_planned: int = 6) -> dict[str, Any]:
    """Every figure ``--report`` prints, every interval from the hierarchical bootstrap (:func:`bootstrap_draws`);
    ``constant`` (:func:`constant_call_compositions`) adds the same figures without those compositions."""
    table: dict[str, dict[int, list[float]]] = {}
    nll: dict[str, dict[int, list[float]]] = {}
    for r in state["records"]:
        if r.get("primary_exact") is not None:
            table.setdefault(r["arm"], {}).setdefault(r["samples"], []).append(r["primary_exact"])
        if r.get("primary_nll") is not None:
            nll.setdefault(r["arm"], {}).setdefault(r["samples"], []).append(r["primary_nll"])
    out: dict[str, Any] = {"table": {arm: {n: round(sum(v) / len(v), 4) for n, v in sorted(c.items())}
                                     for arm, c in table.items()},
                           "nll": {arm: {n: round(sum(v) / len(v), 4) for n, v in sorted(c.items())}
                                   for arm, c in nll.items()},
                           "seeds": {arm: {n: len(v) for n, v in sorted(c.items())} for arm, c in table.items()}}
    out["difference"] = {metric: difference(state, metric, n_boot) for metric in METRICS}
    out["difference_more_real"] = {metric: difference(state, metric, n_boot, baseline="more-real") for metric in METRICS}
    for metric in METRICS:
        s = speed_up(state, metric, n_boot)
        if s is not None:
            out["speed_up" if metric == "exact" else f"speed_up_{metric}"] = s
    out["tokens"] = supervised_tokens(state)
    out["mde"] = {"seeds_planned": seeds_planned,
                  "exact": minimum_detectable_effect(out["difference"]["exact"], seeds_planned)}
    if constant:
        ex = list(constant)
        on, _, _ = _target_cells(state, "exact", ex)
        out["without_constant"] = {
            "compositions": {f"{a}>{b}": v for (a, b), v in constant.items()}, "target_steps": len(on),
            "exact": arm_means(state, "exact", ex),
            "difference": {m: difference(state, m, n_boot, exclude=ex) for m in METRICS},
            "difference_more_real": {m: difference(state, m, n_boot, baseline="more-real", exclude=ex) for m in METRICS},
            "speed_up": speed_up(state, "exact", n_boot, exclude=ex)}
        out["mde"]["exact_without_constant"] = minimum_detectable_effect(
            out["without_constant"]["difference"]["exact"], seeds_planned)
    return out


def corpus_constant_compositions(state: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The target compositions whose gold call is one string in every occurrence in BFCL multi-turn (all four
    categories, every split): the rule of issue 32, applied to the whole corpus so that a composition held once
    by the held-out split is not called constant for that."""
    corpus = [st for task in bfcl.load_tasks("all") for st in gold_steps(task)]
    return constant_call_compositions(corpus, state["phases"].get("diagnosis", {}).get("targets", []))


def _r(x: float | None) -> str:
    return "None" if x is None else f"{x:.3f}"


def _ci(d: dict[str, Any]) -> str:
    return f"{d['point']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"


def print_report(state: dict[str, Any], n_boot: int = 2000) -> None:
    constant = corpus_constant_compositions(state)
    rep = report(state, n_boot, constant)
    state["speed_up"] = rep.get("speed_up")
    state["speed_up_nll"] = rep.get("speed_up_nll")
    diag = state["phases"].get("diagnosis", {})
    print(f"targets ({len(diag.get('targets', []))}): " + ", ".join(f"{a}>{b}" for a, b in diag.get("targets", [])))
    warm = [r for r in state["records"] if r["arm"] == "warm"]
    if warm:
        print(f"warm start: primary exact {warm[0]['primary_exact']} NLL {warm[0]['primary_nll']} "
              f"(n={warm[0]['primary_n']}), other exact {warm[0]['other_exact']} (n={warm[0]['other_n']})")
    budgets = sorted({r["samples"] for r in state["records"] if r["arm"] not in ("warm", "grpo")})
    head = f"{'arm':10s}" + "".join(f"{b:>13d}" for b in budgets)
    for title, key in (("primary exact", "table"), ("primary NLL of the gold call", "nll")):
        print(head + f"   ({title}, mean over seeds [seeds])")
        for arm in ARMS:
            if arm not in rep[key] or arm == "grpo":
                continue
            row = rep[key][arm]
            print(f"{arm:10s}" + "".join(f"{row.get(b, float('nan')):>9.4f} [{rep['seeds'][arm].get(b, 0)}]"
                                         for b in budgets))
    for r in (x for x in state["records"] if x["arm"] == "grpo"):
        print(f"grpo seed {r['seed']}: {r['samples']} completions, rewards per step "
              f"{[x['reward_mean'] for x in r['grpo']]}, kept/sampled {[(x['groups_kept'], x['groups_sampled']) for x in r['grpo']]}; "
              f"primary exact {r['primary_exact']} NLL {r['primary_nll']} (warm {warm[0]['primary_exact'] if warm else '?'})")
    rows = per_target(state)
    labels = sorted({k for row in rows.values() for k in row}, key=lambda k: (k != "warm", k))
    if rows and labels:
        print(f"{'target composition (exact / steps)':46s}" + "".join(f"{k:>16s}" for k in labels))
        for comp, row in rows.items():
            print(f"{comp:46s}" + "".join(f"{'%d/%d' % row[k] if k in row else '-':>16s}" for k in labels))
        macro = {k: [r / n for row in rows.values() if k in row for r, n in [row[k]] if n] for k in labels}
        print(f"{'mean over compositions (post hoc, not primary)':46s}"
              + "".join(f"{sum(v) / len(v) if v else float('nan'):>16.3f}" for v in macro.values()))
    for r in state.get("free_running", []):
        print(f"free-running {r['arm']} seed {r['seed']} @ {r['samples']}: pass {r['pass_rate']:.3f}, "
              f"partial credit {r['partial_credit']:.3f} over {r['tasks']} held-out tasks")
    for name, why in state.get("empty_arms", {}).items():
        print(f"{name}: no training data ({why}; see phases.synthesis)")
    _print_data(state, rep, budgets)
    print(f"intervals: 95%, hierarchical bootstrap, {n_boot} resamples: the seeds drawn with replacement, then the "
          "held-out tasks within each drawn seed; arms paired on each draw")
    for key, baseline in (("difference", "random"), ("difference_more_real", "more-real")):
        _print_differences(rep[key], baseline, budgets)
    for key in ("speed_up", "speed_up_nll"):
        s = rep.get(key)
        if s:
            print(f"speed-up on {s['metric']} (ace samples / random's to reach random's final value): {_r(s['point'])} "
                  f"[95% CI {_r(s['low'])}, {_r(s['high'])}] over {s['target_tasks']} tasks, seeds {s['seeds']} "
                  f"({s['bootstrap']} of {n_boot} resamples defined); "
                  f"claim (upper <= 0.7) holds: {s['claim_holds']}" + (f" -- {s['note']}" if s["note"] else ""))
    wc = rep.get("without_constant")
    if wc:
        print("constant-call target compositions (rule: one gold call string in every occurrence in BFCL multi-turn, "
              "all four categories): " + "; ".join(f"{c} = {v['call']} ({v['occurrences']} occurrences)"
                                                  for c, v in wc["compositions"].items()))
        print(head + f"   (primary exact without them: {wc['target_steps']} target steps, mean over seeds)")
        for arm in ARMS:
            if arm in wc["exact"] and arm != "grpo":
                print(f"{arm:10s}" + "".join(f"{wc['exact'][arm].get(b, float('nan')):>13.4f}" for b in budgets))
        for key, baseline in (("difference", "random"), ("difference_more_real", "more-real")):
            _print_differences(wc[key], baseline, budgets, " without them")
        s = wc["speed_up"]
        if s:
            print(f"speed-up on exact without them: {_r(s['point'])} [95% CI {_r(s['low'])}, {_r(s['high'])}] "
                  f"({s['bootstrap']} of {n_boot} resamples defined); claim holds: "
                  f"{s['claim_holds']}" + (f" -- {s['note']}" if s["note"] else ""))
    mde = rep["mde"]
    for key, what in (("exact", "target steps"), ("exact_without_constant", "target steps without constant calls")):
        if mde.get(key):
            print(f"minimum detectable ace - random, primary exact on {what}, at {mde['seeds_planned']} seeds "
                  "(two-sided 0.05, power 0.8; (1.96 + 0.84) x bootstrap SE now x sqrt(seeds now / planned)): "
                  + ", ".join(f"{v:.3f} @{n}" for n, v in mde[key].items()))


def _print_differences(rows: dict[str, dict[int, dict[str, Any]]], baseline: str, budgets: list[int],
                       label: str = "") -> None:
    """ace minus a baseline, per budget, each with its interval and each seed alone."""
    for metric, by_n in rows.items():
        if not by_n:
            continue
        print(f"ace - {baseline}{label}, primary {metric}: " + ", ".join(f"{_ci(d)} @{n}" for n, d in by_n.items())
              + f" (over {next(iter(by_n.values()))['target_tasks']} tasks, seeds {next(iter(by_n.values()))['seeds']})")
        seeds = sorted({s for d in by_n.values() for s in d["per_seed"]}, key=str)
        print(f"  per seed{'':8s}" + "".join(f"{b:>10d}" for b in budgets))
        for s in seeds:
            print(f"  seed {s!s:12s}" + "".join(f"{by_n[b]['per_seed'][s]:>+10.4f}" if b in by_n and s in by_n[b]['per_seed']
                                                else f"{'-':>10s}" for b in budgets))


def _print_data(state: dict[str, Any], rep: dict[str, Any], budgets: list[int]) -> None:
    """What each arm trained on: supervised tokens per budget, and where its data came from (commit, sha256)."""
    tokens = rep["tokens"]
    if tokens:
        print(f"{'supervised':10s}" + "".join(f"{b:>13d}" for b in budgets)
              + "   (assistant tokens trained on, mean over seeds; per seed below)")
        for arm in ARMS:
            if arm in tokens:
                print(f"{arm:10s}" + "".join(f"{statistics.mean(tokens[arm][b].values()):>13,.0f}" if b in tokens[arm]
                                             else f"{'-':>13s}" for b in budgets)
                      + "   " + "; ".join(f"{b}: {tokens[arm][b]}" for b in budgets if b in tokens[arm]))
        if "ace" in tokens and "random" in tokens:
            print(f"{'ace/random':10s}" + "".join(
                f"{statistics.mean(tokens['ace'][b].values()) / statistics.mean(tokens['random'][b].values()):>13.3f}"
                if b in tokens["ace"] and b in tokens["random"] else f"{'-':>13s}" for b in budgets))
    else:
        print("supervised tokens: not recorded in this state")
    data = state["phases"].get("data", {})
    for key in sorted(set(state["phases"].get("synthesis", {})) | set(data)):
        syn = state["phases"].get("synthesis", {}).get(key, {})
        digest = data.get(key, {}).get("sha256") or syn.get("sha256")
        print(f"data {key}: {syn.get('tasks', data.get(key, {}).get('tasks', '?'))} tasks, synthesizer of commit "
              f"{syn.get('commit', '-')}, sha256 {digest[:16] if digest else 'not recorded'}")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--plan" or a.startswith("--plan=") for a in argv):  # the preregistered replication (issue 32)
        import evidence_replication

        return evidence_replication.main(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--state", type=Path, default=STATE)
    ap.add_argument("--work", type=Path, default=ROOT / "out" / "evidence")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--budgets", nargs="+", type=int, default=[32, 64, 128])
    ap.add_argument("--warm-tasks", type=int, default=60)
    ap.add_argument("--warm-epochs", type=int, default=3)
    ap.add_argument("--warm-target", type=float, default=0.10)
    ap.add_argument("--targets", type=int, default=8)
    ap.add_argument("--min-n", type=int, default=3)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--max-length", type=int, default=1024, help="Tokens per warm-start transcript.")
    ap.add_argument("--arm-max-length", type=int, default=2048,
                    help="Tokens per training transcript of the arms: long enough that the steps a transcript is "
                         "about (deep in BFCL tasks) are trained, not cut off.")
    ap.add_argument("--experiment", default="evidence")
    ap.add_argument("--grpo-steps", type=int, default=8)
    ap.add_argument("--grpo-prompts", type=int, default=2)
    ap.add_argument("--grpo-generations", type=int, default=4)
    ap.add_argument("--grpo-lr", type=float, default=1e-6)
    ap.add_argument("--grpo-seeds", nargs="+", type=int, default=[0], help="Seeds the grpo arm runs for.")
    ap.add_argument("--free-running", action="store_true",
                    help="Also score the warm start and each arm's final checkpoint free-running (secondary metric).")
    ap.add_argument("--free-tasks", type=int, default=20, help="Held-out tasks of the free-running evaluation.")
    ap.add_argument("--free-max-tokens", type=int, default=96)
    ap.add_argument("--free-step-cap", type=int, default=4)
    ap.add_argument("--legacy-cell", action="store_true",
                    help="Train on each transcript's whole token window with the plain AdamW loop and score each "
                         "held-out task from scratch (the cost before issue 32, item 3; the same results up to "
                         "float rounding; benchmarks/evidence_cell_cost.py measures both).")
    ap.add_argument("--quick", action="store_true", help="A smoke run on a tiny model built offline.")
    ap.add_argument("--report", action="store_true", help="Print the table from the state file and stop.")
    ap.add_argument("--plan", type=Path, help="Run (or with --report, analyse) the preregistered replication of this "
                    "plan file instead (benchmarks/evidence_plan.json; evidence_replication.py, its own --state).")
    args = ap.parse_args(argv)
    global LEGACY
    LEGACY = args.legacy_cell
    if args.quick:
        from train.tiny import build_tiny_model

        if args.state == STATE:
            raise SystemExit("--quick writes its own --state (not the committed results)")
        args.model = str(build_tiny_model(args.work / "tiny", seed=0))
        args.budgets, args.seeds, args.warm_epochs, args.min_n, args.targets = [1, 2], [0], 1, 1, 3
        args.warm_tasks, args.max_length, args.arm_max_length, args.experiment = 4, 4096, 4096, "evidence-quick"
        args.grpo_steps, args.grpo_prompts, args.grpo_generations = 1, 1, 2
        args.free_running, args.free_tasks, args.free_max_tokens, args.free_step_cap = True, 1, 8, 1
    state = load_state(args.state)
    if args.report:
        print_report(state)
        return 0
    for name, value in (("budgets", args.budgets), ("seeds", args.seeds)):
        if not value or min(value) < (1 if name == "budgets" else 0):
            raise SystemExit(f"--{name} must be positive")
    splits = load_splits(SPLITS, args.quick)
    state.setdefault("settings", {"splits": str(SPLITS.name) if not args.quick else "quick", "model": args.model,
                                  "warm_tasks": args.warm_tasks, "lr": args.lr, "max_length": args.max_length,
                                  "arm_max_length": args.arm_max_length,
                                  "targets": args.targets, "min_n": args.min_n})
    recorded = state["settings"].setdefault("arm_max_length", args.arm_max_length)
    if recorded != args.arm_max_length:
        raise SystemExit(f"{args.state} was made with --arm-max-length {recorded}; resuming with another value "
                         "would mix results (give another --state)")
    print(machine_facts())
    held = tasks_of(splits["held_out"])
    steps = held_out_steps(held)
    state["held_out_steps"] = steps
    warm = warm_start(args, state, splits, held, steps)
    targets = diagnose(args, state, splits, warm, held)
    if not targets:
        raise SystemExit("the diagnosis found no eligible target composition (see phases.diagnosis in the state)")
    say(f"targets: {', '.join(f'{a}>{b}' for a, b in targets)}")
    if not any(r["arm"] == "warm" for r in state["records"]):
        tokenizer, model, template = load_model(str(warm))
        result = evaluate(HFPolicy.from_model("hf:warm", tokenizer, model, template, cache_tokens=0), held, steps,
                          set(targets))
        state["records"].append({"arm": "warm", "seed": None, "samples": 0, **result, "commit": commit()})
        save_state(args.state, state)
    for seed in args.seeds:
        for arm in args.arms:
            if arm == "grpo":
                if seed in args.grpo_seeds:
                    run_grpo_arm(args, state, splits, warm, seed, held, steps, targets)
                continue
            tasks = arm_tasks(args, state, splits, arm, seed, targets)
            say(f"{arm} seed {seed}: {len(tasks)} training tasks")
            if not tasks:  # said in the state (phases.synthesis) and by the report; the other arms go on
                state.setdefault("empty_arms", {})[f"{arm}-{seed}"] = "the synthesizer made no task"
                save_state(args.state, state)
                continue
            run_arm(args, state, warm, arm, seed, tasks, held, steps, set(targets))
    if args.free_running:
        free_running(args, state, held, warm)
    print_report(state)
    save_state(args.state, state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
