"""One GRPO run's settings (the CLI's flags are its fields) and what they ask of TRL's vLLM integration."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ace_env.errors import ConfigError
from ace_env.fields import SEED_MAX
from ace_env.worker import MAX_CALL_SECONDS, Budget
from train.engine import MAX_STEP_CAP
from train.policies.base import MAX_NEW_TOKENS, MAX_SEQUENCE_TOKENS

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

