"""The closed loop: evaluate → frontier → synthesize → curriculum mix → train, one round after another.

Round ``k`` of experiment ``E``:

1. **eval** — checkpoint ``k`` of the policy is scored on the evaluation
   tasks, by default through the gold prefix (every oracle step with the
   oracle's calls and outputs before it: teacher-forced exact match and NLL,
   :mod:`train.goldprefix`), else by free-running rollouts; the results are
   ingested as scope ``E/NAME/round-k`` (per-skill success written back to the
   graph).  A small model fails free-running at its first calls, so its
   free-running pass rate stays 0.000 whatever training does; gold-prefix
   scores move;
2. **frontier** — the weak compositions next to the capability boundary of
   that scope (:func:`ace_graph.frontier.frontier`);
3. **synth** — tasks aimed at the frontier by the one synthesis pipeline
   (:func:`synth.pipeline.run`, on the schedule of the tasks' environment), their
   learnability measured with *this* policy's own rollouts (not the simulated
   agent's) where the environment's synthesis lets a model roll them out (BFCL;
   τ²'s tasks are dialogues with a simulated user: none);
4. **curriculum** — one curriculum round from the scope, then the training mix
   of synthesized and seed tasks (:func:`train.curriculum.mix.mix`);
5. **train** — an SFT warm start in round 0 when asked, then GRPO on the mix
   (on its gold-prefix steps, transition mode, for an environment whose rollouts
   are dialogues); the result is checkpoint ``k+1``.

Every stage asks the tasks' environment (:func:`ace_env.environments.environment_of`), never which one
it is: ``--tasks tau2:airline`` runs the same rounds on τ² (evaluated through the gold prefix only).

After the last round the final checkpoint is evaluated as well (round K's
eval and frontier stages only).  Every stage writes its result to ``$ACE_HOME/runs/E/round-k/<stage>.json``
(atomically, last), so a killed loop resumes at the first unfinished stage:
finished stages never run again and their graph counts stay as they were.
"""

from __future__ import annotations

import json
import logging
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ace.stages import curriculum_round
from ace_env.environments import environment_of
from ace_env.fields import SEED_MAX
from ace_env.tasksets import load_task_set
from ace_env.workspace import ace_home
from ace_graph.errors import ConfigError
from ace_graph.frontier import FrontierConfig, frontier
from ace_graph.store import GraphStore
from synth.pipeline import SynthConfig, run, write_tasks
from synth.registry import synthesis_of, targeted
from train.curriculum.core import CurriculumConfig
from train.curriculum.mix import mix
from train.curriculum.store import load_state, scopes_read
from train.engine import MAX_STEP_CAP, RolloutConfig, TaskRollouts
from train.evaluation import evaluate, evaluate_gold_prefix
from train.grpo import GRPORunConfig, train_grpo
from train.models import resolve_model
from train.policies import GenerationConfig, load_policy, policy_name
from train.policies.base import MAX_NEW_TOKENS
from train.sft import SFTRunConfig, train_sft

log = logging.getLogger(__name__)

STAGES = ("eval", "frontier", "synth", "curriculum", "train")


@dataclass
class LoopConfig:
    """One closed-loop run; ``ace loop``'s flags are these fields."""

    rounds: int = field(default=1, metadata={"help": "Rounds of eval → frontier → synth → curriculum → train.", "min": 1,
                                                 "max": 100})
    tasks: str = field(default="bfcl:base", metadata={"help": "Seed tasks."})
    seeds: int = field(default=20, metadata={"help": "Seed tasks used for synthesis and the replay buffer.", "min": 1, "max": 10_000})
    eval_limit: int = field(default=5, metadata={"help": "Tasks of each evaluation (taken after the seed tasks).", "min": 1,
                                                  "max": 10_000})
    gold_prefix: bool = field(default=True, metadata={"help": (
        "Evaluate each checkpoint through the gold prefix (every oracle step scored with the oracle's prefix in "
        "context: exact match and NLL); off: free-running rollouts.")})
    synth: int = field(default=8, metadata={"help": "Tasks to synthesize per round.", "min": 1, "max": 10_000})
    train_tasks: int = field(default=8, metadata={"help": "Size of each round's training mix.", "min": 1, "max": 10_000})
    sft_warm_start: bool = field(default=False, metadata={"help": "Round 0 starts with SFT on the seed tasks' oracle transcripts."})
    sft_epochs: float = field(default=1.0, metadata={"help": "Epochs of the warm start.", "min": 0.0, "max": 100.0})
    grpo_steps: int = field(default=1, metadata={"help": "GRPO steps per round.", "min": 1, "max": 100_000})
    prompts_per_step: int = field(default=2, metadata={"help": "GRPO groups per step.", "min": 1, "max": 1024})
    generations: int = field(default=2, metadata={"help": "GRPO rollouts per prompt.", "min": 2, "max": 256})
    max_groups_sampled: int = field(default=0, metadata={
        "help": "Cap on GRPO groups sampled per step while filtering (0: 4 x prompts-per-step).",
        "min": 0, "max": 100_000})
    max_tokens: int = field(default=64, metadata={"help": "Longest assistant answer, in tokens (eval and training).",
                                                 "min": 1, "max": MAX_NEW_TOKENS})
    step_cap: int = field(default=2, metadata={"help": "Most assistant answers per user turn.", "min": 1, "max": MAX_STEP_CAP})
    synth_rollouts: int = field(default=2, metadata={"help": "The policy's rollouts per synthesized task (learnability).",
                                                     "min": 1, "max": 64})
    min_support: int = field(default=1, metadata={"help": "Least attempts for a frontier edge (small evaluations need 1).",
                                                  "min": 1, "max": 1_000_000})
    seed: int = field(default=0, metadata={"help": "Seed of synthesis, the mix and training.", "min": 0, "max": SEED_MAX})

    def __post_init__(self) -> None:
        if self.max_groups_sampled < 0:
            raise ConfigError(f"--max-groups-sampled must be 0 or more, got {self.max_groups_sampled}.")
        for name in ("rounds", "seeds", "eval_limit", "synth", "train_tasks", "grpo_steps", "prompts_per_step",
                     "max_tokens", "step_cap", "synth_rollouts", "min_support"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}.")
        if self.generations < 2:
            raise ConfigError("--generations must be at least 2: GRPO compares samples within a group.")


def run_root(experiment: str) -> Path:
    return ace_home() / "runs" / experiment


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, default=str)
    os.replace(tmp, path)


def engine_policy(spec: str, config: LoopConfig) -> TaskRollouts:
    """The synthesis pipeline's policy, served by a real model through the engine: a round's tasks in one batched run."""
    return TaskRollouts(load_policy(spec), RolloutConfig(
        step_cap=config.step_cap,
        generation=GenerationConfig(temperature=1.0, max_tokens=config.max_tokens),
    ))


class Loop:
    """Runs and resumes the rounds of one experiment."""

    def __init__(self, store: GraphStore, experiment: str, policy: str, config: LoopConfig,
                 say: Callable[[str], None] = log.info):
        kind, _, model = policy.partition(":")
        if kind != "hf" or not model:
            raise ConfigError(f"--policy {policy!r}: the loop trains a local model, give hf:<folder or name>")
        self.store = store
        self.experiment = experiment
        self.base = policy
        self.name = policy_name(policy)
        self.config = config
        self.say = say
        self.root = run_root(experiment)
        all_tasks = list(load_task_set(config.tasks, any_environment=True).values())
        self.env = environment_of(all_tasks)  # what the stages ask, never which environment it is
        if self.env.dialogues and not config.gold_prefix:
            raise ConfigError(f"{self.env.title} tasks are dialogues with a simulated user: the loop evaluates them "
                              "through the gold prefix only (drop --no-gold-prefix)")
        if len(all_tasks) < config.seeds + config.eval_limit:
            raise ConfigError(f"{config.tasks!r} has {len(all_tasks)} tasks; --seeds {config.seeds} and "
                              f"--eval-limit {config.eval_limit} need {config.seeds + config.eval_limit}")
        self.seeds = all_tasks[: config.seeds]
        self.eval_tasks = all_tasks[config.seeds: config.seeds + config.eval_limit]
        self._check_run()

    def _check_run(self) -> None:
        """A run folder belongs to one (policy, config): refuse to resume another's.

        Only ``--rounds`` (extend a loop) and ``--grpo-steps`` (for rounds not yet
        trained) may change between runs of one experiment.
        """
        meta = self.root / "loop.json"
        mine = {"policy": self.base,
                "config": {k: v for k, v in asdict(self.config).items() if k not in ("rounds", "grpo_steps")}}
        if meta.is_file():
            theirs = json.loads(meta.read_text(encoding="utf-8"))
            if {k: theirs.get(k) for k in mine} != mine:
                raise ConfigError(
                    f"{self.root} holds a loop of {theirs.get('policy')} with other settings; resume it with "
                    f"the same flags, or pick another --experiment")
        else:
            _write_json(meta, mine)

    # ------------------------------------------------------------------ bookkeeping

    def stage_file(self, k: int, stage: str) -> Path:
        return self.root / f"round-{k}" / f"{stage}.json"

    def done(self, k: int, stage: str) -> dict[str, Any] | None:
        path = self.stage_file(k, stage)
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def checkpoint(self, k: int) -> str:
        """The policy spec of checkpoint ``k`` (0: the starting model)."""
        if k == 0:
            return self.base
        trained = self.done(k - 1, "train")
        if trained is None:
            raise ConfigError(f"checkpoint {k} does not exist yet: round {k - 1} has not trained")
        return f"hf:{trained['model']}"

    # ------------------------------------------------------------------ stages

    def _eval(self, k: int) -> dict[str, Any]:
        if self.config.gold_prefix:
            result = evaluate_gold_prefix(
                self.store, self.checkpoint(k), self.eval_tasks, self.experiment, self.name, f"round-{k}",
                self.root / f"round-{k}" / "eval-steps.jsonl")
            return {k2: result[k2] for k2 in ("scope", "mode", "policy", "rollouts", "rewarded", "pass_rate", "steps",
                                              "exact_match", "mean_nll", "tool_accuracy", "skills", "tools")}
        result = evaluate(
            self.store, self.checkpoint(k), self.eval_tasks, self.experiment, self.name, f"round-{k}",
            RolloutConfig(step_cap=self.config.step_cap, generation=GenerationConfig(max_tokens=self.config.max_tokens)),
            self.root / f"round-{k}" / "eval-rollouts.jsonl",
        )
        return {k2: result[k2] for k2 in ("scope", "rollouts", "rewarded", "pass_rate", "skills", "tools")}

    def _frontier(self, k: int) -> dict[str, Any]:
        scope = self.done(k, "eval")["scope"]
        cfg = FrontierConfig(level="tool", min_support=self.config.min_support, min_lift=0.0, min_prereq=0.0, limit=20)
        return {"scope": scope, "edges": frontier(self.store, scope, cfg, check=False)}

    def _synth(self, k: int) -> dict[str, Any]:
        edges = self.done(k, "frontier")["edges"]
        seeds = {t.id: t for t in self.seeds}
        path = self.root / f"round-{k}" / "synth-tasks.jsonl"
        if not edges:
            write_tasks(path, [])
            return {"file": str(path), "tasks": 0, "note": "the frontier was empty: nothing to aim at"}
        config = SynthConfig(n=self.config.synth, rounds=1, plans=4, rollouts_per_task=self.config.synth_rollouts,
                             seed=self.config.seed + k, strategies=targeted(self.env.task_type))
        # the one pipeline, on the environment's schedule; its tasks' learnability is measured with this policy
        # where the environment's synthesis lets a model roll them out (not where they are dialogues with a
        # simulated user: no rollouts, then)
        synthesis = synthesis_of(self.env)
        policy = engine_policy(self.checkpoint(k), self.config) if synthesis.models else None
        result = run(synthesis, self.env.task_type, edges, seeds, None, policy, config)
        write_tasks(path, result.tasks)
        self.store.upsert_tasks(result.tasks)
        self.store.upsert_plans(self.experiment, result.plans)
        self.store.upsert_lineage(self.experiment, result.lineage)
        return {"file": str(path), "tasks": len(result.tasks), "policy": self.checkpoint(k) if policy else None,
                "learnable": sum(bool(t.provenance.get("learnable")) for t in result.tasks)}

    def _curriculum(self, k: int) -> dict[str, Any]:
        scope = self.done(k, "eval")["scope"]
        if scope not in scopes_read(self.store, self.experiment):
            report = curriculum_round(self.store, self.experiment, scope, CurriculumConfig(min_rounds=1))
            states = report.states
        else:  # stored before the stage file was written (killed in between): read it, never twice
            states = None
        state = load_state(self.store, self.experiment)
        synthesized = self._synthesized(k)
        pool = synthesized + self.seeds
        chosen = mix(state, pool, self.config.train_tasks, random.Random(self.config.seed + k))
        by_id = {t.id: t for t in pool}
        picked = [by_id[i] for i in chosen.task_ids if i in by_id]
        path = self.root / f"round-{k}" / "train-tasks.jsonl"
        write_tasks(path, picked)
        return {"file": str(path), "tasks": len(picked), "focus": len(chosen.focus), "replay": len(chosen.replay),
                "synthesized": sum(t.id in {s.id for s in synthesized} for t in picked), "states": states,
                "ids": [t.id for t in picked]}

    def _synthesized(self, k: int) -> list[Any]:
        """Round ``k``'s synthesized tasks, read back from their file (every gold re-verified)."""
        synth = self.done(k, "synth")
        return list(load_task_set(synth["file"], any_environment=True).values()) if synth["tasks"] else []

    def _training_tasks(self, k: int) -> dict[str, Any]:
        """Round ``k``'s training mix by id, from its seeds and synthesized tasks (an environment's own tasks
        need not read back from a task file); a curriculum stage written before the ids were kept: its file."""
        chosen = self.done(k, "curriculum")
        if "ids" not in chosen:
            return load_task_set(chosen["file"], any_environment=True)
        by_id = {t.id: t for t in self._synthesized(k) + self.seeds}
        return {i: by_id[i] for i in chosen["ids"]}

    def _train(self, k: int) -> dict[str, Any]:
        start = resolve_model(self.checkpoint(k).partition(":")[2])
        out = self.root / f"round-{k}" / "model"
        report: dict[str, Any] = {}
        if k == 0 and self.config.sft_warm_start:
            sft_out = self.root / "round-0" / "sft"
            report["sft"] = train_sft(SFTRunConfig(model=str(start), out=str(sft_out), epochs=self.config.sft_epochs,
                                                   max_length=1024, seed=self.config.seed), self.seeds)
            start = sft_out
        tasks = self._training_tasks(k)
        if not tasks:
            raise ConfigError(f"round {k}: the curriculum picked no training tasks")
        grpo = GRPORunConfig(steps=self.config.grpo_steps, prompts_per_step=self.config.prompts_per_step,
                             generations=self.config.generations, max_groups_sampled=self.config.max_groups_sampled,
                             max_tokens=self.config.max_tokens, step_cap=self.config.step_cap, seed=self.config.seed + k,
                             transitions=self.env.dialogues)  # a dialogue's steps train through the gold prefix
        lines = train_grpo(start, tasks, out, grpo, metrics_out=self.root / f"round-{k}" / "grpo-metrics.jsonl")
        report.update({"model": str(out), "grpo_steps": len(lines), "metrics": lines})
        return report

    # ------------------------------------------------------------------ driver

    def run(self) -> list[dict[str, Any]]:
        """Run (or resume) every round; one summary per round."""
        summaries = []
        for k in range(self.config.rounds):
            for stage in STAGES:
                if self.done(k, stage) is not None:
                    self.say(f"round {k}: {stage} done already")
                    continue
                self.say(f"round {k}: {stage} ...")
                result = getattr(self, f"_{stage}")(k)
                _write_json(self.stage_file(k, stage), result)
            summaries.append(self.summary(k))
        # The last checkpoint is evaluated too (round K's eval and frontier), so the
        # graph shows how per-skill success and the frontier moved after training.
        k = self.config.rounds
        for stage in ("eval", "frontier"):
            if self.done(k, stage) is None:
                self.say(f"checkpoint {k}: {stage} ...")
                _write_json(self.stage_file(k, stage), getattr(self, f"_{stage}")(k))
        summaries.append(self.summary(k))
        return summaries

    def summary(self, k: int) -> dict[str, Any]:
        ev = self.done(k, "eval") or {}
        fr = self.done(k, "frontier") or {}
        return {
            "round": k,
            "stages": {s: self.done(k, s) is not None for s in STAGES},
            "scope": ev.get("scope"),
            "pass_rate": ev.get("pass_rate"),
            "exact_match": ev.get("exact_match"),
            "mean_nll": ev.get("mean_nll"),
            "frontier": [f"{e['from']}→{e['to']}" for e in fr.get("edges", [])][:5],
            "synthesized": (self.done(k, "synth") or {}).get("tasks"),
            "trained": (self.done(k, "train") or {}).get("model"),
        }


def loop_status(store: GraphStore, experiment: str) -> dict[str, Any]:
    """Rounds on disk, the frontier per round and the per-skill success per checkpoint from the graph."""
    root = run_root(experiment)
    if not (root / "loop.json").is_file():
        raise ConfigError(f"no loop has run for experiment {experiment!r} (nothing under {root})")
    meta = json.loads((root / "loop.json").read_text(encoding="utf-8"))
    rounds = []
    for folder in sorted(root.glob("round-*"), key=lambda p: int(p.name.split("-")[1])):
        k = int(folder.name.split("-")[1])
        stages = {s: (folder / f"{s}.json").is_file() for s in STAGES}
        ev = json.loads((folder / "eval.json").read_text()) if stages["eval"] else {}
        fr = json.loads((folder / "frontier.json").read_text()) if stages["frontier"] else {}
        rounds.append({"round": k, "stages": stages, "scope": ev.get("scope"), "pass_rate": ev.get("pass_rate"),
                       "exact_match": ev.get("exact_match"), "mean_nll": ev.get("mean_nll"),
                       "frontier": [f"{e['from']}→{e['to']}" for e in fr.get("edges", [])][:5]})
    history = store.run("capability-history", experiment=experiment, policy=policy_name(meta["policy"]),
                        level="skill") if rounds else []
    return {"experiment": experiment, "policy": meta["policy"], "rounds": rounds, "skill_history": history}
