"""TRL's GRPO trainer with log-probabilities bounded to the policy's tokens, and :func:`train_grpo`, one run."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ace_env.errors import ConfigError
from ace_env.tasks import Task
from train.grpo.config import GRPORunConfig, vllm_settings
from train.grpo.metrics import MetricsWriter
from train.grpo.rollout import ACERollout, check_mode
from train.logprobs import install_bounded_lm_head
from train.policies.base import Policy
from train.policies.hf import set_torch_threads
from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support
from train.policies.trainer_vllm import TrainerVLLMPolicy
from train.rewards import ace_reward


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
    check_mode(tasks.values(), config)  # before the model loads
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
    _end_processes(trainer.accelerator)
    return metrics.lines


def _end_processes(accelerator: Any) -> None:
    """Under ``accelerate launch`` (several processes), wait for every process, then close the process group.

    A process that exits with its gloo group still open may abort in its C++ teardown ("terminate called without
    an active exception", SIGABRT: seen once in CI on rank 1 after the model was saved), which fails the launch."""
    if accelerator.num_processes <= 1:
        return
    accelerator.wait_for_everyone()
    import torch.distributed as dist  # torch is imported lazily in this module (the train extra)

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
