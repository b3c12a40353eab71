"""GRPO with ACE's verifier as the reward, multi-turn, with dynamic filtering.

TRL's :class:`trl.GRPOTrainer` does the optimisation; ACE owns the rollout.

Why ``rollout_func`` and not ``environment_factory``: an ACE episode is a
whole multi-turn conversation — scripted (or simulated) user turns between
assistant turns, tools offered per turn, tool results fed back, a step cap per
turn — and its reward is the verifier's verdict over all of it.  TRL's
environment mode runs a tool loop inside one assistant turn and cannot put a
user turn between two assistant turns; nor could it resample prompts, which
dynamic filtering needs.  With ``rollout_func`` ACE runs its own rollout engine
(:mod:`train.engine`, the same engine ``ace rollout`` and ``ace eval`` use),
verifies every episode, drops zero-variance groups and refills the batch from
further prompts (:mod:`train.filtering`), and hands TRL token ids with a mask.

Token layout: each episode is re-rendered with the policy's chat template
(``return_assistant_tokens_mask``); the prompt is everything before the first
assistant token, the completion everything after, and ``env_mask`` is 1 on the
assistant's tokens and 0 on the user's and the tools' tokens, so only what the
policy wrote carries loss.  Re-rendering can tokenise the policy's text
slightly differently from how it was sampled; TRL recomputes log-probabilities
from the ids it is given, so the update is exact for those ids.  Tools offered
only from a later turn (BFCL miss_func) are listed with the first turn's tools
in the rendered prompt — a small mismatch with what the policy saw.

The dataset's ``prompt`` column holds task ids: the engine builds each
conversation from its task.  Rewards reach TRL through the ``ace_reward``
field of the rollout output and :func:`ace_reward` (a TRL-native reward
function).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ace_env.errors import ConfigError
from ace_env.fields import SEED_MAX, offset_seed
from ace_env.tasks import Task
from ace_env.verifier import over_budget, verify
from ace_env.worker import MAX_CALL_SECONDS, Budget
from train.engine import MAX_STEP_CAP, RolloutConfig, RolloutEngine, offered_schemas
from train.filtering import FillStats, Group, fill_batch
from train.logprobs import install_bounded_lm_head
from train.policies.base import MAX_NEW_TOKENS, MAX_SEQUENCE_TOKENS, GenerationConfig, Policy
from train.policies.hf import HFPolicy, set_torch_threads
from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support
from train.policies.trainer_vllm import TrainerVLLMPolicy
from train.transitions import Transitions

log = logging.getLogger(__name__)

#: Where GRPO's rollouts are generated: transformers in the trainer (off), or TRL's vLLM integration.
VLLM_MODES = ("off", "colocate", "server")


@dataclass
class GRPORunConfig:
    """One GRPO run; the CLI's flags are these fields."""

    steps: int = field(default=2, metadata={"help": "Optimizer steps (each on prompts-per-step × generations rollouts).",
                                                "min": 1, "max": 100_000})
    prompts_per_step: int = field(default=2, metadata={"help": "Groups (prompts) per step, after filtering.", "min": 1,
                                                           "max": 1024})
    generations: int = field(default=4, metadata={"help": "Rollouts per prompt (the group size G).", "min": 2, "max": 256})
    learning_rate: float = field(default=1e-6, metadata={"help": "AdamW learning rate.", "min": 0.0, "max": 1.0})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of the rollouts.", "min": 0.0, "max": 2.0})
    max_tokens: int = field(default=96, metadata={"help": "Longest assistant answer, in tokens.", "min": 1,
                                                     "max": MAX_NEW_TOKENS})
    step_cap: int = field(default=4, metadata={"help": "Most assistant answers in one user turn.", "min": 1, "max": MAX_STEP_CAP})
    partial_credit: float = field(
        default=0.0, metadata={"help": "Weight W of partial credit in the reward: 1 for a pass, else W × share of turns.",
                                 "min": 0.0, "max": 1.0}
    )
    dynamic_filtering: bool = field(default=True, metadata={"help": "Drop zero-variance groups and refill the batch."})
    max_groups_sampled: int = field(
        default=0, metadata={"help": "Cap on groups sampled per step when filtering (0: 4 × prompts-per-step).", "min": 0,
                               "max": 100_000}
    )
    beta: float = field(default=0.0, metadata={"help": "KL coefficient against the reference model (0: none).", "min": 0.0,
                                                       "max": 100.0})
    seed: int = field(default=0, metadata={"help": "Seed of prompt order and sampling.", "min": 0, "max": SEED_MAX})
    compact_tools: bool = field(default=True, metadata={"help": "List tools as compact signatures."})
    call_timeout: float = field(
        default=Budget.call_seconds,
        metadata={"help": "Wall-clock budget of one tool call in a rollout, seconds; a call over it ends its rollout (reward 0).",
                  "min": 0.0, "max": MAX_CALL_SECONDS},
    )
    vllm: str = field(
        default="off",
        metadata={"help": "Generate with TRL's vLLM integration (GPU): off (transformers), colocate, or server "
                          "(a `trl vllm-serve` at --vllm-server-url; one training process)."},
    )
    vllm_server_url: str = field(default="", metadata={"help": "Base URL of `trl vllm-serve` for --vllm server."})
    micro_batch: int = field(
        default=1,
        metadata={"help": "Episodes per forward/backward pass; a step accumulates prompts-per-step × generations / "
                          "micro-batch passes (training memory grows with it, not with the batch).", "min": 1, "max": 1024},
    )
    max_sequence_tokens: int = field(
        default=8192,
        metadata={"help": "Longest episode (prompt + whole conversation, tokens) trained on; a longer one stops the "
                          "run with a one-line error before its forward pass (capped at the model's context).", "min": 17,
                  "max": MAX_SEQUENCE_TOKENS},
    )
    transitions: bool = field(
        default=False,
        metadata={"help": "Train on single steps through the gold prefix (train.transitions): each prompt ends just "
                          "before an oracle step, reward 1 when the sampled call, verified by execution, reproduces "
                          "the step's effect."},
    )
    targets: str = field(
        default="",
        metadata={"help": "With --transitions: only the steps whose composition FROM>TO is listed (comma-separated, "
                          "e.g. get_stock_info>place_order); empty: every call step."},
    )
    gradient_checkpointing: bool = field(
        default=True,
        metadata={"help": "Recompute each layer's activations in the backward pass (one more forward pass of "
                          "compute; the activations of one layer are kept at a time instead of all)."},
    )

    def __post_init__(self) -> None:
        for name in ("steps", "prompts_per_step", "generations", "max_tokens", "step_cap", "micro_batch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}.")
        if self.generations < 2:
            raise ConfigError("generations must be at least 2: GRPO compares samples within a group.")
        if not 0.0 <= self.partial_credit <= 1.0:
            raise ConfigError(f"partial-credit must be in [0, 1], got {self.partial_credit}.")
        if (self.prompts_per_step * self.generations) % self.micro_batch:
            raise ConfigError(f"micro-batch ({self.micro_batch}) must divide prompts-per-step × generations "
                              f"({self.prompts_per_step * self.generations}).")
        if self.max_sequence_tokens < self.max_tokens + 16:
            raise ConfigError(f"max-sequence-tokens ({self.max_sequence_tokens}) leaves no room for a prompt and an "
                              f"answer of max-tokens ({self.max_tokens}).")
        if self.max_groups_sampled == 0:
            self.max_groups_sampled = 4 * self.prompts_per_step
        if self.max_groups_sampled < self.prompts_per_step:
            raise ConfigError(
                f"max-groups-sampled ({self.max_groups_sampled}) is below prompts-per-step ({self.prompts_per_step})."
            )
        if self.temperature <= 0:
            raise ConfigError(f"temperature must be above 0, got {self.temperature}: GRPO compares G sampled rollouts "
                              "of a prompt, and TRL divides the policy's logits by it.")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning-rate must be positive, got {self.learning_rate}.")
        Budget(call_seconds=self.call_timeout)  # its own one-line error when out of range
        if self.vllm not in VLLM_MODES:
            raise ConfigError(f"vllm must be one of {', '.join(VLLM_MODES)}, got {self.vllm!r}.")
        if self.vllm == "server" and not self.vllm_server_url:
            raise ConfigError("--vllm server needs --vllm-server-url (the address of `trl vllm-serve`).")
        if self.targets and not self.transitions:
            raise ConfigError("--targets goes with --transitions (whole episodes have no single target step).")
        if self.vllm_server_url and self.vllm != "server":
            raise ConfigError("--vllm-server-url is used only with --vllm server.")


def reward_of(verdict: Any, partial_credit: float) -> float:
    """The scalar reward of a verdict: 1 for a pass, else ``W × partial_credit``; 0 for a timeout."""
    if verdict.reward >= 1.0:
        return 1.0
    if getattr(verdict, "attribution", None) in ("timeout", "resource_limit"):
        return 0.0
    return partial_credit * float(verdict.partial_credit)


def ace_reward(prompts: Sequence[Any], completions: Sequence[Any], ace_reward: Sequence[float] | None = None, **kwargs: Any) -> list[float]:
    """TRL-native reward: the verifier's reward that ACE's rollout computed for each completion.

    >>> ace_reward(["t1", "t1"], ["...", "..."], ace_reward=[1.0, 0.0])
    [1.0, 0.0]
    """
    if ace_reward is None:
        raise ConfigError("ace_reward needs the rollout's `ace_reward` field: use it with ACE's rollout_func.")
    return [float(r) for r in ace_reward]


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
                    verdict = verify(task, row["turns"], rollout_id=row["rollout_id"])
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


class MetricsWriter:
    """Writes one JSON line per optimizer step (a TRL callback): the metrics file of ``--metrics-out``."""

    def __init__(self, path: Path | None, rollout: ACERollout):
        self.path = path
        self.rollout = rollout
        self._step_start = 0.0
        self.lines: list[dict[str, Any]] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        writer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                writer._step_start = time.perf_counter()

            def on_log(self, args, state, control, logs=None, **kwargs):
                if not logs or "loss" not in logs or not writer.rollout.records or not state.is_world_process_zero:
                    return
                writer.write(state.global_step, logs, time.perf_counter() - writer._step_start)

        return _Callback()

    def write(self, step: int, logs: dict[str, Any], seconds_step: float) -> None:
        rec = self.rollout.records[-1]
        fill = rec.fill.as_dict()
        line = {
            "step": step,
            "reward_mean": fill["reward_mean"],
            "reward_std": fill["reward_std"],
            "groups_sampled": fill["groups_sampled"],
            "groups_kept": fill["groups_kept"],
            "kept_fraction": fill["kept_fraction"],
            "capped": fill["capped"],
            "loss": float(logs["loss"]),
            "seconds_generate": round(rec.seconds_generate, 3),
            "seconds_verify": round(rec.seconds_verify, 3),
            "seconds_train": round(max(0.0, seconds_step - rec.seconds_generate - rec.seconds_verify), 3),
            **{k: fill[k] for k in ("groups_all_pass", "groups_all_fail", "groups_mixed") if k in fill},
        }
        self.lines.append(line)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")


def vllm_settings(config: GRPORunConfig, have_gpu: bool, have_vllm: bool) -> dict[str, Any]:
    """The ``GRPOConfig`` arguments of ``config.vllm`` (none for ``off``), or a one-line error why not here."""
    if config.vllm == "off":
        return {}
    if not have_gpu:
        raise ConfigError(f"--vllm {config.vllm} needs a CUDA GPU (TRL's vLLM integration); on CPU use --vllm off.")
    if not have_vllm:
        raise ConfigError(f"--vllm {config.vllm} needs vLLM in this environment: pip install 'trl[vllm]'.")
    try:
        processes = int(os.environ.get("WORLD_SIZE", "1") or 1)
    except ValueError:
        raise ConfigError(f"WORLD_SIZE must be a whole number of processes, not {os.environ['WORLD_SIZE']!r}") from None
    if config.vllm == "server" and processes > 1:
        raise ConfigError(f"--vllm server with {processes} training processes: TRL's server mode generates in "
                          "lockstep across processes, which multi-turn episodes do not keep; use --vllm colocate.")
    settings: dict[str, Any] = {
        "use_vllm": True,
        "vllm_mode": config.vllm,
        "max_completion_length": config.max_tokens,
        # The completions TRL trains on are re-rendered episodes, not vLLM's sampled ids, and ACE passes no
        # sampling log-probabilities, so there is nothing to correct against.
        "vllm_importance_sampling_correction": False,
    }
    if config.vllm == "server":
        settings["vllm_server_base_url"] = config.vllm_server_url
    return settings


def trim_padding(inputs: dict[str, Any]) -> dict[str, Any]:
    """One micro-batch of TRL's GRPO inputs without the columns that are padding in all of its rows.

    TRL pads the whole generation batch to its longest prompt (left) and longest
    completion (right) and then splits it; a micro-batch of short episodes would
    otherwise pay for the longest one's length, and carry an attention mask.
    Every (rows, completion length) tensor (ids, masks, old/reference/sampling
    log-probabilities, token-level ratios) is cut the same way.
    """
    prompt_mask, completion_mask = inputs["prompt_mask"], inputs["completion_mask"]
    rows, P, C = prompt_mask.size(0), prompt_mask.size(1), completion_mask.size(1)
    used_p = prompt_mask.bool().any(0)
    used_c = completion_mask.bool().any(0)
    start = int(used_p.int().argmax()) if bool(used_p.any()) else P
    end = C - int(used_c.flip(0).int().argmax()) if bool(used_c.any()) else 1
    if start == 0 and end == C:
        return inputs
    out = dict(inputs)
    for key, value in inputs.items():
        if not hasattr(value, "dim") or value.dim() != 2 or value.size(0) != rows:
            continue
        if key in ("prompt_ids", "prompt_mask"):
            out[key] = value[:, start:]
        elif value.size(1) == C:
            out[key] = value[:, :end]
    return out


def bounded_grpo_trainer() -> type:
    """TRL's ``GRPOTrainer`` with log-probabilities computed only on the policy's own tokens.

    Two overrides, both small: ``_compute_loss`` trims a micro-batch's padding
    (:func:`trim_padding`) and remembers which completion tokens carry loss
    (``completion_mask × env_mask``); ``_get_per_token_logps_and_entropies`` marks
    every other position ``-100`` before calling the model's fused head, so the
    bounded head (:func:`train.logprobs.install_bounded_lm_head`) projects only
    the policy's tokens.  Other positions get log-probability 0; TRL masks them
    out of the loss and the metrics anyway.  Multimodal or MoE inputs go to TRL's
    own method.
    """
    import torch
    from trl import GRPOTrainer

    class BoundedGRPOTrainer(GRPOTrainer):
        _ace_loss_mask = None

        def _compute_loss(self, model, inputs):
            inputs = trim_padding(inputs)
            mask = inputs["completion_mask"]
            if "tool_mask" in inputs:
                mask = mask * inputs["tool_mask"]
            self._ace_loss_mask = mask
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self._ace_loss_mask = None

        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               batch_size=None, compute_entropy=False, compute_aux_loss=False,
                                               **extra):
            if compute_aux_loss or any(v is not None for v in extra.values()):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                    compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
            loss_mask = self._ace_loss_mask
            if loss_mask is not None and tuple(loss_mask.shape) != (input_ids.size(0), logits_to_keep):
                loss_mask = None
            batch_size = batch_size or input_ids.size(0)
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), batch_size):
                ids = input_ids[start:start + batch_size]
                attention = attention_mask[start:start + batch_size]
                labels = ids.masked_fill(attention == 0, -100)
                labels[:, :-logits_to_keep] = -100
                if loss_mask is not None:
                    keep = loss_mask[start:start + batch_size].bool()
                    labels[:, -logits_to_keep:] = labels[:, -logits_to_keep:].masked_fill(~keep, -100)
                with self.accelerator.autocast():
                    outputs = model(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True)
                logps.append(outputs.log_probs[:, -logits_to_keep:])
                if compute_entropy:
                    entropies.append(outputs.entropy[:, -logits_to_keep:])
            return torch.cat(logps), (torch.cat(entropies) if compute_entropy else None), None

    return BoundedGRPOTrainer


def train_grpo(
    model_dir: Path,
    tasks: dict[str, Task],
    out: Path,
    config: GRPORunConfig,
    metrics_out: Path | None = None,
    report_to: Sequence[str] = (),
    on_checkpoint: Callable[[int, Path], None] | None = None,
    checkpoint_every: int = 0,
    policy_factory: Callable[[Any], Policy] | None = None,
) -> list[dict[str, Any]]:
    """Train ``model_dir`` with GRPO on ``tasks``; the result is saved to ``out`` (loadable as ``hf:out``).

    Returns the metrics lines.  ``on_checkpoint(step, folder)`` is called for
    every ``checkpoint_every`` steps (the CLI evaluates there and writes the
    result back to the graph).  ``policy_factory(trainer)`` replaces the policy
    that samples the rollouts (default: the trainer's own model; the memory
    benchmark uses the simulated agent to make episodes without generating).

    Memory: each forward/backward pass holds ``micro_batch`` episodes, with
    gradient checkpointing and the bounded head (log-probabilities of the policy's
    tokens only, a few MiB of logits at a time), so it grows with the longest
    episode, not with prompts-per-step × generations.
    """
    try:
        import torch
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
        from trl import GRPOConfig
    except ModuleNotFoundError as e:
        raise ConfigError("GRPO needs the train extra: pip install -e '.[train]'") from e

    if not tasks:
        raise ConfigError("no tasks to train on")
    vllm_args = vllm_settings(config, torch.cuda.is_available(), importlib.util.find_spec("vllm") is not None)
    set_torch_threads()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    template = tokenizer.chat_template if has_tool_support(tokenizer.chat_template) else ACE_CHAT_TEMPLATE
    if "{% generation %}" not in template and "{%- generation -%}" not in template:
        template = ACE_CHAT_TEMPLATE  # the loss mask needs generation blocks
    tokenizer.chat_template = template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    if policy_factory is None and config.vllm != "off":
        def policy_factory(trainer: Any) -> Policy:
            return TrainerVLLMPolicy(trainer, template, compact_tools=config.compact_tools)
    rollout = ACERollout(tasks, config, template, policy_factory=policy_factory)
    context = int(getattr(model.config.get_text_config(), "max_position_embeddings", 0) or 0)
    if context:
        rollout.max_sequence_tokens = min(config.max_sequence_tokens, context)
    metrics = MetricsWriter(metrics_out, rollout)
    if metrics_out is not None and int(os.environ.get("RANK", "0")) == 0:
        metrics_out.parent.mkdir(parents=True, exist_ok=True)
        metrics_out.write_text("", encoding="utf-8")
    ids = sorted(rollout.tasks)  # task ids, or step keys in transition mode
    random.Random(config.seed).shuffle(ids)
    B, G = config.prompts_per_step, config.generations
    rows = [{"prompt": t} for t in itertools.islice(itertools.cycle(ids), B * config.steps)]
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        # TRL scores log-probabilities at this temperature; the rollouts are sampled at it (either way).
        temperature=config.temperature,
        # One generation of B × G episodes per optimizer step, trained micro_batch episodes per forward/backward.
        per_device_train_batch_size=config.micro_batch,
        gradient_accumulation_steps=B * G // config.micro_batch,
        steps_per_generation=B * G // config.micro_batch,
        num_generations=G,
        max_steps=config.steps,
        learning_rate=config.learning_rate,
        beta=config.beta,
        loss_type="dapo",
        logging_steps=1,
        save_strategy="no",
        report_to=list(report_to),
        seed=config.seed,
        shuffle_dataset=False,
        bf16=False,
        fp16=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        gradient_checkpointing=config.gradient_checkpointing,
        # On CPU (also under `accelerate launch --multi_gpu --num_processes K` without GPUs) this makes
        # accelerate run K processes with the gloo backend.
        use_cpu=not torch.cuda.is_available(),
        **vllm_args,
    )
    callbacks: list[Any] = [metrics.callback()]
    if on_checkpoint is not None and checkpoint_every > 0:

        class _Checkpoints(TrainerCallback):
            def on_step_end(self, args_, state, control, **kwargs):
                if state.global_step % checkpoint_every == 0 and state.global_step < config.steps:
                    folder = out / f"checkpoint-{state.global_step}"
                    trainer.save_model(str(folder))
                    if state.is_world_process_zero:
                        tokenizer.save_pretrained(str(folder))
                        on_checkpoint(state.global_step, folder)

        callbacks.append(_Checkpoints())
    trainer = bounded_grpo_trainer()(
        model=model,
        reward_funcs=[ace_reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        rollout_func=rollout,
        callbacks=callbacks,
    )
    install_bounded_lm_head(trainer.model, temperature=trainer.temperature,
                            entropy_grad=bool(getattr(trainer, "_entropy_bonus_enabled", False)))
    if trainer.ref_model is not None:
        install_bounded_lm_head(trainer.ref_model, temperature=trainer.temperature, entropy=False)
    trainer.train()
    if trainer.accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        trainer.save_model(str(out))
        tokenizer.save_pretrained(str(out))
        (out / "ace_grpo.json").write_text(json.dumps(
            {"config": asdict(config), "tasks": len(tasks), "processes": trainer.accelerator.num_processes}, indent=2))
    if on_checkpoint is not None and trainer.accelerator.is_main_process:
        on_checkpoint(config.steps, out)
    return metrics.lines
