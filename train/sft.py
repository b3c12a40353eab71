"""SFT on oracle transcripts with TRL's ``SFTTrainer``: the warm start that makes tool calls appear.

Each selected task's ground truth is played as a conversation
(:func:`train.export.to_openai_sft`: the user turns, each oracle call as an
assistant tool call, its real output as a tool message, a closing answer per
turn), with the system prompt and the tools listed exactly as the rollout
engine shows them.  The closing answer is the turn's own tool results
(:func:`train.export.closing_text`), never a fixed phrase; the export marks it
``"weight": 0`` for OpenAI, but it is trained on here on purpose: it is how a
small model learns to end its turn (the engine ends a turn on an answer
without calls).  See docs/formats.md.  It is rendered with the policy's template (ACE's
tool-aware ChatML for models without one) and tokenized here, with the
template's ``{% generation %}`` mask, so the loss falls on assistant tokens only
(TRL turns ``assistant_masks`` into labels).  The result is a model folder that
``--policy hf:DIR`` loads, ACE's template included.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ace_env.environments import environment_of
from ace_env.errors import ConfigError
from ace_env.fields import SEED_MAX, check_bounds
from ace_env.tasks import Task
from train.engine import offered_schemas
from train.errors import ExportError
from train.export import to_openai_sft
from train.goldprefix import transcript
from train.logprobs import install_bounded_lm_head
from train.policies.base import MAX_SEQUENCE_TOKENS, PolicyError
from train.policies.hf import load_model

log = logging.getLogger(__name__)


@dataclass
class SFTRunConfig:
    """One SFT run."""

    model: str = field(default="smollm2-135m", metadata={"help": "Model folder or embedded name to start from."})
    out: str = field(default="runs/sft", metadata={"help": "Folder of the trained model (loadable as hf:OUT)."})
    epochs: float = field(default=1.0, metadata={"help": "Passes over the transcripts.", "min": 0.0, "max": 1000.0})
    learning_rate: float = field(default=5e-5, metadata={"help": "AdamW learning rate.", "min": 0.0, "max": 1.0})
    batch_size: int = field(default=1, metadata={"help": "Transcripts per optimizer step (per device).", "min": 1,
                                                "max": 4096})
    max_length: int = field(default=1024, metadata={"help": "Tokens kept per transcript (the start is kept).", "min": 16,
                                                  "max": MAX_SEQUENCE_TOKENS})
    seed: int = field(default=0, metadata={"help": "Seed of initialisation order and shuffling.", "min": 0, "max": SEED_MAX})
    compact_tools: bool = field(default=True, metadata={"help": "List tools compactly, as rollouts do."})
    micro_batch: int = field(
        default=1, metadata={"help": "Transcripts per forward/backward pass; a step accumulates batch-size / "
                                     "micro-batch passes (memory grows with it, not with the batch).", "min": 1,
                      "max": 4096})

    def __post_init__(self) -> None:
        check_bounds(self)
        for name in ("epochs", "learning_rate"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"SFTRunConfig.{name} must be above 0, not {getattr(self, name)}; "
                                  f"give e.g. {SFTRunConfig.__dataclass_fields__[name].default}")
        if self.batch_size % min(self.micro_batch, self.batch_size):
            raise ConfigError(f"micro-batch ({self.micro_batch}) must divide the batch size ({self.batch_size}): "
                              "a step accumulates batch-size / micro-batch passes")


def _oracle_row(task: Task) -> dict[str, Any]:
    """A BFCL task's oracle played as its own user turns (:func:`train.export.to_openai_sft`)."""
    return {"messages": to_openai_sft(task)["messages"], "tools": offered_schemas(task, 0)}


def _gold_transcript_row(task: Any) -> dict[str, Any]:
    """A task's gold-prefix transcript whole (:func:`train.goldprefix.transcript`: for τ², the ideal dialogue
    in the agent's view, its system prompt and tools), every gold agent message with loss."""
    tr = transcript(task)
    return {"messages": [dict(m) for m in tr.messages], "tools": tr.tools_for(0)}


#: The SFT transcript of a task, by its environment's task type; an environment not listed trains on its
#: gold-prefix transcript (:func:`_gold_transcript_row`).
SFT_ROWS: dict[type, Callable[[Any], dict[str, Any]]] = {Task: _oracle_row}


def oracle_transcripts(tasks: Iterable[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows of {messages, tools, task_id}, reasons of tasks skipped)."""
    rows, skipped = [], []
    tasks = list(tasks)
    row_of = SFT_ROWS.get(environment_of(tasks).task_type, _gold_transcript_row)
    for task in tasks:
        try:
            row = row_of(task)
        except (ExportError, PolicyError) as e:
            skipped.append(str(e))
            continue
        rows.append({**row, "task_id": task.id})
    return rows, skipped


def tokenize(tokenizer: Any, template: str, rows: list[dict[str, Any]], max_length: int,
             compact_tools: bool = True, skipped: list[str] | None = None) -> list[dict[str, list[int]]]:
    """input_ids and assistant_masks (1 = the loss counts) of each transcript, cut at max_length.

    A transcript with no assistant token within ``max_length`` is left out (its
    reason goes to ``skipped``); without ``skipped`` it is an error.
    """
    out = []
    for row in rows:
        enc = tokenizer.apply_chat_template(
            row["messages"], tools=row["tools"], chat_template=template, tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True, compact_tools=compact_tools,
        )
        ids, mask = list(enc["input_ids"])[:max_length], list(enc["assistant_masks"])[:max_length]
        if 1 not in mask:
            reason = f"task {row['task_id']}: no assistant token within {max_length} tokens; raise --max-length"
            if skipped is None:
                raise PolicyError(reason)
            skipped.append(reason)
            continue
        out.append({"input_ids": ids, "assistant_masks": mask})
    return out


def train_sft(config: SFTRunConfig, tasks: Iterable[Task]) -> dict[str, Any]:
    """Train on the tasks' oracle transcripts and save; returns a report (examples, tokens, loss, seconds, out)."""
    rows, skipped = oracle_transcripts(tasks)
    if not rows:
        raise PolicyError(f"no task could be played as an oracle transcript ({(skipped or ['no tasks'])[0]})")
    return train_sft_rows(config, rows, skipped)


def mixed_precision_bf16(on_gpu: bool, gpu_has_bf16: bool) -> bool:
    """Whether SFT trains in bf16 mixed precision: on a GPU that has it, never on CPU (see train_sft_rows)."""
    return on_gpu and gpu_has_bf16


def train_sft_rows(config: SFTRunConfig, rows: list[dict[str, Any]], skipped: list[str] = ()) -> dict[str, Any]:
    """Train on conversations (rows of {messages, tools, task_id}) and save; the loss is on assistant turns.

    The user simulator is trained through here too, on its own role-swapped view
    (:func:`train.users.user_sim_rows`).
    """
    try:
        import torch
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ModuleNotFoundError as e:
        raise PolicyError("SFT needs the train extra: pip install -e '.[train]'") from e
    if not rows:
        raise PolicyError("nothing to train on: no conversations")
    tokenizer, model, template = load_model(config.model)
    context = int(getattr(model.config.get_text_config(), "max_position_embeddings", 0) or 0)
    if context and config.max_length > context:
        raise PolicyError(f"max length {config.max_length} is over the model's context of {context} tokens: "
                          f"lower --max-length to at most {context}")
    examples = tokenize(tokenizer, template, rows, config.max_length, config.compact_tools, skipped)
    if not examples:
        raise PolicyError(f"no transcript fits in {config.max_length} tokens ({skipped[0]})")
    out = Path(config.out)
    work = out.parent / f".{out.name}.trainer"
    on_gpu = torch.cuda.is_available()
    args = SFTConfig(
        output_dir=str(work),
        num_train_epochs=config.epochs,
        learning_rate=config.learning_rate,
        # Memory: micro_batch transcripts per forward/backward pass (gradients accumulated up to batch_size), each
        # layer's activations recomputed in the backward pass, and the bounded head (train.logprobs) scoring only
        # the assistant tokens, a few MiB of logits at a time.
        per_device_train_batch_size=min(config.micro_batch, config.batch_size),
        gradient_accumulation_steps=config.batch_size // min(config.micro_batch, config.batch_size),
        gradient_checkpointing=True,
        max_length=config.max_length,
        seed=config.seed,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not on_gpu,
        # TRL's SFTConfig turns bf16 mixed precision on by default, on CPU too; on CPUs without native
        # bf16 (these machines' AMD EPYC has no AVX-512) autocast emulates it: one step of SmolLM2 on
        # 900 tokens took 231 s instead of 15-18 s in fp32 (measured, 1 thread).
        bf16=mixed_precision_bf16(on_gpu, torch.cuda.is_bf16_supported() if on_gpu else False),
        fp16=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(examples), processing_class=tokenizer)
    install_bounded_lm_head(trainer.model)
    start = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - start
    if out.exists():
        shutil.rmtree(out)
    trainer.save_model(str(out))
    tokenizer.chat_template = template  # the template it was trained with travels with it
    tokenizer.save_pretrained(str(out))
    shutil.rmtree(work, ignore_errors=True)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    report = {
        "out": str(out),
        "examples": len(examples),
        "skipped": len(skipped),
        "tokens": sum(len(e["input_ids"]) for e in examples),
        "loss_tokens": sum(sum(e["assistant_masks"]) for e in examples),
        "steps": trainer.state.global_step,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "train_loss": result.training_loss,
        "seconds": round(seconds, 1),
        "precision": "bf16 mixed" if args.bf16 else "fp32",
        "config": asdict(config),
    }
    (out / "ace_sft.json").write_text(json.dumps(report, indent=2))
    return report
