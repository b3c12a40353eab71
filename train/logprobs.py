"""Log-probabilities of chosen tokens where the loss needs them, a bounded block of vocabulary logits at a time.

Why: a causal LM's head turns every position into a row of vocabulary logits
(49,152 columns for SmolLM2, fp32).  TRL 1.16 already replaces the full logits
with a fused, tiled head (``trl.trainer.utils.add_fused_lm_head``), but off
CUDA it scores *every* position of the batch (labelled or not) in tiles of
4,096 positions x 32,768 columns: a 512 MiB fp32 tile plus several temporaries
of the same size per tile, forward and backward.  For ACE's multi-turn episodes
most positions carry no loss (the prompt, user turns and tool results), so that
is both wasted work and a large, machine-independent memory floor.

:func:`install_bounded_lm_head` swaps TRL's fused head for one that projects
only the positions whose label is not ``-100`` (on every device), in blocks of
at most ``chunk_bytes`` of fp32 logits, each block under activation
checkpointing, so the backward pass recomputes a block's logits instead of
keeping them.  The output object and the ``model(..., labels=...,
fused_lm_head=True)`` calling convention are TRL's, so ``SFTTrainer`` and
``GRPOTrainer`` use it unchanged.  Heads that rescale or soft-cap their logits
keep TRL's head (it knows those transformations; this one does not).

The forward still runs through the model's own ``forward`` (so a DDP wrapper
sees the call, as with TRL's head); only the projection after the backbone
differs.
"""

from __future__ import annotations

import types
from typing import Any

#: Fp32 logits kept at once per block (forward, and again while its backward recomputes it).
DEFAULT_CHUNK_BYTES = 32 * 2**20

#: Config fields of heads that transform their logits (kept on TRL's fused head).
_SCALED_HEAD_FIELDS = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier",
                       "logits_scaling")


def chunk_rows(vocab: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Positions per block so that one block's fp32 logits take at most ``chunk_bytes`` (at least 1).

    >>> chunk_rows(49152, 32 * 2**20)
    170
    """
    if vocab < 1 or chunk_bytes < 1:
        raise ValueError(f"vocab and chunk_bytes must be positive, got {vocab} and {chunk_bytes}")
    return max(1, chunk_bytes // (4 * vocab))


def _block(hidden: Any, weight: Any, bias: Any, targets: Any, inv_temperature: float, entropy: bool,
           entropy_grad: bool) -> tuple[Any, Any, Any]:
    import torch
    import torch.nn.functional as F

    logits = F.linear(hidden, weight, bias).float()
    if inv_temperature != 1.0:
        logits = logits * inv_temperature
    log_norm = torch.logsumexp(logits, dim=-1)
    chosen = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    ent = None
    if entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            ent = log_norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    with torch.no_grad():
        top1 = logits.argmax(-1) == targets  # the first maximum, as TRL's `is_top1`
    return chosen - log_norm, ent, top1


def token_logprobs(hidden: Any, weight: Any, bias: Any, targets: Any, temperature: float = 1.0,
                   rows: int | None = None, entropy: bool = False, entropy_grad: bool = False
                   ) -> tuple[Any, Any, Any]:
    """(log p(target), entropy or None, target-is-top-1) of each row of ``hidden`` [N, H] under ``hidden @ weight.T + bias``.

    The logits are built ``rows`` positions at a time (default: :func:`chunk_rows`);
    with gradients on, each block runs under activation checkpointing, so at most
    one block's logits (and their gradient) exist at any moment.  The entropy is
    computed without gradient unless ``entropy_grad``.
    """
    import torch
    from torch.utils.checkpoint import checkpoint

    n = hidden.shape[0]
    rows = rows or chunk_rows(weight.shape[0])
    inv_t = 1.0 / temperature
    if n == 0:
        # Still connected to the backbone and the head (zero gradients): DDP requires every parameter to take part,
        # and a micro-batch of fully masked episodes (GRPO's padding groups) scores nothing.
        anchor = hidden.sum() + weight.sum() + (bias.sum() if bias is not None else 0)
        empty = hidden.new_zeros((0,), dtype=torch.float32) + anchor * 0
        return empty, (empty.detach() if entropy else None), torch.zeros((0,), dtype=torch.bool, device=hidden.device)
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    parts = []
    for start in range(0, n, rows):
        args = (hidden[start:start + rows], weight, bias, targets[start:start + rows], inv_t, entropy, entropy_grad)
        parts.append(checkpoint(_block, *args, use_reentrant=False) if grad else _block(*args))
    logp = torch.cat([p[0] for p in parts])
    ent = torch.cat([p[1] for p in parts]) if entropy else None
    top1 = torch.cat([p[2] for p in parts])
    return logp, ent, top1


def plain_head(model: Any) -> bool:
    """Whether the model's logits are a plain ``lm_head(hidden)`` (no scaling, no soft-capping)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if any(getattr(config, name, None) is not None for name in _SCALED_HEAD_FIELDS):
        return False
    head = model.get_output_embeddings()
    return head is not None and hasattr(head, "weight")


def install_bounded_lm_head(model: Any, temperature: float = 1.0, entropy: bool = True,
                            chunk_bytes: int = DEFAULT_CHUNK_BYTES, entropy_grad: bool = False) -> bool:
    """Replace the fused head TRL put on ``model`` with the bounded one; False (nothing changed) for scaled heads.

    Calls without ``fused_lm_head=True`` (generation, plain forwards) go to the
    forward that was there before, unchanged.
    """
    import torch
    from trl.trainer.utils import FusedCausalLMOutput

    if not plain_head(model):
        return False
    previous = model.forward
    rows = chunk_rows(model.get_output_embeddings().weight.shape[0], chunk_bytes)

    def forward(self: Any, *args: Any, fused_lm_head: bool = False, labels: Any = None, shift_labels: Any = None,
                num_items_in_batch: Any = None, **kwargs: Any) -> Any:
        passthrough = {k: v for k, v in (("labels", labels), ("shift_labels", shift_labels),
                                         ("num_items_in_batch", num_items_in_batch)) if v is not None}
        if not fused_lm_head:
            return previous(*args, **passthrough, **kwargs)
        if kwargs.get("output_router_logits") or getattr(self.config.get_text_config(), "output_router_logits", False):
            # MoE load-balancing losses stay with TRL's head, which knows them.
            return previous(*args, fused_lm_head=True, **passthrough, **kwargs)
        kwargs["use_cache"] = False
        hidden = self.base_model(*args, **kwargs).last_hidden_state
        if shift_labels is None:
            hidden, labels = hidden[:, :-1], labels[:, 1:]
        else:
            labels = shift_labels
        head = self.get_output_embeddings()
        hidden, labels = hidden.to(head.weight.device), labels.to(head.weight.device)
        mask = labels != -100
        logp, ent, top1 = token_logprobs(hidden[mask], head.weight, head.bias, labels[mask], temperature, rows,
                                         entropy=entropy, entropy_grad=entropy_grad)
        log_probs = torch.zeros(mask.shape, dtype=logp.dtype, device=logp.device).masked_scatter(mask, logp)
        ent_full = None
        if ent is not None:
            ent_full = torch.zeros(mask.shape, dtype=ent.dtype, device=ent.device).masked_scatter(mask, ent)
        is_top1 = torch.zeros(mask.shape, dtype=torch.bool, device=mask.device).masked_scatter(mask, top1)
        count = mask.sum().clamp(min=1) if num_items_in_batch is None else num_items_in_batch
        return FusedCausalLMOutput(loss=-log_probs.sum() / count, log_probs=log_probs, entropy=ent_full,
                                   is_top1=is_top1, label_mask=mask)

    model.forward = types.MethodType(forward, model)
    return True


def direct_token_logprobs(model: Any, input_ids: Any, attention_mask: Any, labels: Any,
                          temperature: float = 1.0) -> Any:
    """Log p(label) at every shifted position from the model's full logits (the reference the tests compare with;
    never used in training: it builds [batch, length, vocab] logits)."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    logits = logits / temperature
    target = labels[:, 1:]
    mask = target != -100
    logp = torch.log_softmax(logits, dim=-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return logp.masked_fill(~mask, 0.0)
