"""ACE's ``rollout_func`` for TRL's GRPO trainer: episodes (or gold-prefix steps), verified, rewarded by
:func:`train.rewards.reward_of`, filtered, and rendered as token ids with a mask (see :mod:`train.grpo`)."""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ace_env.environments import environment_of
from ace_env.errors import ConfigError
from ace_env.fields import offset_seed
from ace_env.tasks import Task
from ace_env.verifier import over_budget, verify
from ace_env.worker import Budget
from train.engine import RolloutConfig, RolloutEngine, offered_schemas
from train.filtering import FillStats, Group, fill_batch
from train.grpo.config import GRPORunConfig
from train.policies.base import GenerationConfig, Policy
from train.policies.hf import HFPolicy
from train.rewards import STRICT, reward_of
from train.transitions import Transitions

log = logging.getLogger(__name__)


def check_mode(tasks: Iterable[Any], config: GRPORunConfig) -> None:
    """Refuse, in one line, whole-episode GRPO on an environment whose rollouts are dialogues with a simulated
    user (the rollout engine plays a task's own user turns); its gold-prefix steps train with ``--transitions``."""
    env = environment_of(tasks)
    if env.dialogues and not config.transitions:
        raise ConfigError(f"whole-episode GRPO plays a task's own user turns, and {env.title} tasks are dialogues "
                          "with a simulated user: train on their gold-prefix steps with --transitions")


def episode_tokens(tokenizer: Any, template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   compact_tools: bool = True) -> tuple[list[int], list[int], list[int]]:
    """(prompt_ids, completion_ids, env_mask) of one finished conversation."""
    enc = tokenizer.apply_chat_template(
        messages,
        tools=tools or None,
        chat_template=template,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
        compact_tools=compact_tools,
    )
    ids = list(enc["input_ids"])
    mask = list(enc["assistant_masks"])
    if 1 not in mask:
        raise ConfigError("the chat template marks no assistant tokens: it needs {% generation %} blocks.")
    first = mask.index(1)
    return ids[:first], ids[first:], mask[first:]


def check_sequence_length(task_id: str, n_tokens: int, limit: int) -> None:
    """Refuse an episode longer than ``limit`` tokens, in one line, before the trainer's forward pass sees it.

    Training memory grows with the longest episode of a micro-batch (activations,
    attention); past the limit the run would end in the OOM killer instead.
    """
    if n_tokens > limit:
        raise ConfigError(
            f"episode of task {task_id} is {n_tokens} tokens, over the training limit of {limit} "
            "(--max-sequence-tokens; training memory grows with episode length): lower --step-cap or --max-tokens, "
            "or raise --max-sequence-tokens if the machine has the memory (benchmarks/memory_bench.py measures it)."
        )


@dataclass
class StepRecord:
    """What one optimizer step cost and found; one line of the metrics file."""

    step: int
    fill: FillStats
    seconds_generate: float
    seconds_verify: float


class ACERollout:
    """The ``rollout_func`` for :class:`trl.GRPOTrainer`: ACE episodes, verified and filtered."""

    def __init__(
        self,
        tasks: dict[str, Task],
        config: GRPORunConfig,
        template: str,
        policy_factory: Callable[[Any], Policy] | None = None,
    ):
        check_mode(tasks.values(), config)
        self.config = config
        self.template = template
        #: Transition mode: prompts are gold-prefix steps (train.transitions), keyed TASK@TURN.INDEX.
        self.transitions = Transitions.from_tasks(tasks, config.targets, template, config.compact_tools) \
            if config.transitions else None
        self.tasks = self.transitions.tasks if self.transitions is not None else tasks
        #: Builds the sampling policy from the trainer (default: its model, as it is now).
        self.policy_factory = policy_factory or self._hf_policy
        #: The rollouts behind the last step's completions (with their verdicts), in order.
        self.last_rows: list[dict[str, Any]] = []
        order = sorted(self.tasks)
        random.Random(config.seed + 1).shuffle(order)
        self._refill: Iterator[str] = itertools.cycle(order)
        self.records: list[StepRecord] = []
        self._calls = 0
        #: Longest episode trained on (train_grpo lowers it to the model's context).
        self.max_sequence_tokens = config.max_sequence_tokens

    def _hf_policy(self, trainer: Any) -> HFPolicy:
        model = trainer.accelerator.unwrap_model(trainer.model)
        return HFPolicy.from_model(
            "hf:training", trainer.processing_class, model, self.template, compact_tools=self.config.compact_tools
        )

    def _sample(self, policy: Policy, timing: dict[str, float]) -> Callable[[list[str]], list[Group]]:
        G = self.config.generations
        if self.transitions is not None:
            transitions = self.transitions

            def sample_steps(keys: list[str]) -> list[Group]:
                generation = GenerationConfig(temperature=self.config.temperature, max_tokens=self.config.max_tokens,
                                              seed=offset_seed(self.config.seed, self._calls))
                self._calls += 1
                return transitions.sample(policy, keys, G, generation, Budget(call_seconds=self.config.call_timeout),
                                          timing)

            return sample_steps

        def sample(task_ids: list[str]) -> list[Group]:
            engine = RolloutEngine(
                policy,
                RolloutConfig(
                    n_per_task=G,
                    step_cap=self.config.step_cap,
                    batch_size=len(task_ids) * G,
                    budget=Budget(call_seconds=self.config.call_timeout),
                    generation=GenerationConfig(
                        temperature=self.config.temperature,
                        max_tokens=self.config.max_tokens,
                        seed=offset_seed(self.config.seed, self._calls),
                    ),
                ),
            )
            self._calls += 1
            start = time.perf_counter()
            rows = list(engine.run([self.tasks[t] for t in task_ids]))
            timing["generate"] += time.perf_counter() - start
            start = time.perf_counter()
            by_task: dict[str, list[tuple[dict[str, Any], float]]] = {t: [] for t in task_ids}
            for row in rows:
                task = self.tasks[row["task_id"]]
                ended = row["meta"].get("ended")
                if ended:
                    # A tool call went over budget: the engine ended the rollout there (reward 0); the
                    # verifier must not run that call again, unbounded, in this process.
                    turn = max(len(row["turns"]) - 1, 0)
                    step = max(len(row["turns"][-1]) - 1, 0) if row["turns"] else 0
                    verdict = over_budget(task, row["rollout_id"], ended, row["meta"].get("ended_detail", ""), turn, step)
                else:
                    verdict = verify(task, row["turns"], rollout_id=row["rollout_id"], strict=STRICT)
                row["verdict"] = verdict.to_dict()
                by_task[row["task_id"]].append((row, reward_of(verdict, self.config.partial_credit)))
            timing["verify"] += time.perf_counter() - start
            return [Group(t, [r for _, r in by_task[t]], [row for row, _ in by_task[t]]) for t in task_ids]

        return sample

    def _tokens(self, row: dict[str, Any], tokenizer: Any) -> tuple[list[int], list[int], list[int]]:
        """(prompt_ids, completion_ids, env_mask) of one sampled row: the whole episode after its first
        assistant token is the completion (the user's and the tools' tokens masked out); in transition
        mode only the sampled answer."""
        if self.transitions is not None:
            return self.transitions.tokens(row, tokenizer)
        return episode_tokens(tokenizer, self.template, row["messages"], offered_schemas(self.tasks[row["task_id"]], 0),
                              self.config.compact_tools)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        import torch

        G = self.config.generations
        if len(prompts) % G:
            raise ConfigError(f"{len(prompts)} prompts are not whole groups of {G}.")
        wanted = [str(p) for p in prompts[::G]]
        unknown = [t for t in wanted if t not in self.tasks]
        if unknown:
            raise ConfigError(f"prompts must be task ids of the run's task set; unknown: {unknown[:3]}")
        timing = {"generate": 0.0, "verify": 0.0}
        policy = self.policy_factory(trainer)
        model = getattr(policy, "model", None)
        was_training = bool(model is not None and model.training)
        if model is not None:
            model.eval()
        try:
            with torch.no_grad():
                filled = fill_batch(
                    self._sample(policy, timing),
                    itertools.chain(wanted, self._refill),
                    groups_needed=len(wanted),
                    max_groups=max(self.config.max_groups_sampled, len(wanted)),
                    enabled=self.config.dynamic_filtering,
                )
        finally:
            if model is not None:
                model.train(was_training)
        kept, fill = filled.kept, filled.stats
        # Capped before the batch was full: fill the rest with groups that carry no loss
        # (their tokens are masked out, and cut to one prompt and one completion token), so the
        # step still has TRL's shape without a forward pass over thousands of masked tokens.
        padding: list[Group] = []
        if len(kept) < len(wanted):
            log.info("step %d: only %d of %d groups had signal; padding with masked groups",
                     len(self.records), len(kept), len(wanted))
            pool = filled.dropped or kept
            padding = [pool[i % len(pool)] for i in range(len(wanted) - len(kept))]
        self.last_rows = []
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "env_mask", "ace_reward", "ace_task_id")}
        for group, live in [(g, True) for g in kept] + [(g, False) for g in padding]:
            for row, reward in zip(group.samples, group.rewards):
                p, c, m = self._tokens(row, trainer.processing_class)
                check_sequence_length(row["task_id"], len(p) + len(c), self.max_sequence_tokens)
                if not live:  # a padding row carries no loss: one token each, so TRL's pass over it costs nothing
                    p, c, m = p[-1:], c[:1], m[:1]
                out["prompt_ids"].append(p)
                out["completion_ids"].append(c)
                out["env_mask"].append(m if live else [0] * len(m))
                out["ace_reward"].append(reward if live else 0.0)
                out["ace_task_id"].append(row["task_id"])
                self.last_rows.append(row)
        self.records.append(StepRecord(len(self.records) + 1, fill, timing["generate"], timing["verify"]))
        return {"logprobs": None, **out}

