"""Teacher forcing: one forward pass over a gold transcript scores every step of it (``hf:`` policies)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from train.goldprefix.scores import StepScore
from train.goldprefix.transcript import GoldStep, Transcript
from train.policies.base import PolicyError

# --------------------------------------------------------------------------- teacher forcing


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of 1 in an assistant-token mask, as (start, end)."""
    spans, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(mask)))
    return spans


def _name_tokens(tokenizer: Any, ids: list[int], tool: str) -> int:
    """How many leading tokens of a gold answer it takes to have written the tool's name (all if never)."""
    needle = f'"name": "{tool}"'
    for k in range(1, len(ids) + 1):
        if needle in tokenizer.decode(ids[:k]):
            return k
    return len(ids)


def _groups(tr: Transcript) -> list[tuple[list[dict[str, Any]], list[GoldStep]]]:
    """(tools, steps) per run of consecutive turns offered the same tools: each run is one forward pass."""
    out: list[tuple[list[dict[str, Any]], list[GoldStep]]] = []
    for step in tr.steps:
        tools = tr.tools_for(step.turn)
        if out and out[-1][0] == tools:
            out[-1][1].append(step)
        else:
            out.append((tools, [step]))
    return out


@dataclass
class _Forced:
    """One teacher-forced pass to make: a transcript's run of turns with the same tools, tokenized."""

    tr: Transcript
    steps: list[GoldStep]
    ids: list[int]  # the tokens through the model (up to the end of the last scored answer)
    span_of: dict[int, tuple[int, int]]  # message index -> (start, end) of its assistant tokens
    positions: list[int]  # the positions whose logits predict a gold answer's tokens, in step order


def _forced_inputs(policy: Any, tr: Transcript, context: int | None) -> tuple[list[_Forced], list[str]]:
    """The teacher-forced passes of a transcript (one per run of turns with the same tools), and the reasons of
    steps left out because the transcript is longer than the model's context."""
    tokenizer = policy.tokenizer
    passes: list[_Forced] = []
    skipped: list[str] = []
    for tools, steps in _groups(tr):
        last = steps[-1].message
        messages = tr.messages[: last + 1]
        enc = tokenizer.apply_chat_template(
            messages, tools=tools or None, chat_template=policy.template, tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True, compact_tools=policy.compact_tools,
        )
        ids, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
        spans = _spans(mask)
        assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        if len(spans) != len(assistant):
            raise PolicyError(f"task {tr.task.id}: the template marks {len(spans)} assistant spans for "
                              f"{len(assistant)} assistant messages; gold-prefix scoring needs {{% generation %}} "
                              "around each assistant message")
        span_of = dict(zip(assistant, spans))
        if context and len(ids) > context:
            keep = [s for s in steps if span_of[s.message][1] <= context]
            skipped += [f"task {tr.task.id}: step {s.turn}.{s.index} lies beyond the model's {context}-token "
                        "context" for s in steps if s not in keep]
            steps = keep
            ids = ids[:context]
        if not steps:
            continue
        positions: list[int] = []
        for s in steps:
            a, b = span_of[s.message]
            positions.extend(range(a - 1, b - 1))
        end = max(span_of[s.message][1] for s in steps)
        passes.append(_Forced(tr, steps, ids[:end], span_of, positions))
    return passes, skipped


def _forced_scores(tokenizer: Any, p: _Forced, logits: Any) -> dict[int, StepScore]:
    """The scores of a pass's steps from the logits at its positions (one row per position, in order)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    gold = torch.tensor([p.ids[q + 1] for q in p.positions], device=logp.device)
    token_nll = (-logp.gather(1, gold[:, None])[:, 0]).tolist()
    hits = (logp.argmax(dim=-1) == gold).tolist()
    scores: dict[int, StepScore] = {}
    at = 0
    for s in p.steps:
        a, b = p.span_of[s.message]
        n = b - a
        nll, hit = token_nll[at:at + n], hits[at:at + n]
        at += n
        named = _name_tokens(tokenizer, p.ids[a:b], s.tool) if s.tool else 1
        scores[s.flat] = StepScore(p.tr.task.id, s.flat, s.turn, s.index, s.tool, None, tokens=n,
                                   nll=sum(nll) / n, exact=all(hit), tool_right=all(hit[:named]))
    return scores


def teacher_forced(policy: Any, tr: Transcript, context: int | None = None) -> tuple[dict[int, StepScore], int, list[str]]:
    """NLL, exact match and tool-name match of every step of a transcript under an ``hf:`` policy.

    One forward pass per run of turns with the same tools (one for most tasks), logits kept only at the
    positions that predict a gold answer's tokens.  Returns (scores by flat index, tokens through the
    model, reasons of steps left out because the transcript is longer than the model's context).
    """
    import torch

    model = policy.model
    passes, skipped = _forced_inputs(policy, tr, context if context is not None else policy.context)
    scores: dict[int, StepScore] = {}
    forward = 0
    for p in passes:
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([p.ids], device=model.device),
                        logits_to_keep=torch.tensor(p.positions, device=model.device))
            scores.update(_forced_scores(policy.tokenizer, p, out.logits[0]))
        forward += len(p.ids)
    return scores, forward, skipped


def _cut(cache: Any, length: int) -> None:
    """Cut a key/value cache back to its first ``length`` tokens (``crop`` of a negative count: the one form
    every transformers version reads the same way)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _common(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def teacher_forced_shared(policy: Any, transcripts: list[Transcript],
                          context: int | None = None) -> tuple[dict[tuple[str, int], StepScore], int, list[str]]:
    """What :func:`teacher_forced` gives for each transcript, computing each token prefix that several passes
    share (the system prompt and tool listing of tasks offered the same tools, at least) once.

    The passes are sorted by their tokens, so passes that share a prefix are neighbours; the shared prefixes
    form a tree, walked depth first: a node's key/value states are computed on top of its parent's, each pass's
    own tokens on top of its deepest node, and the cache is cut back after each child.  A prefix never reaches
    a pass's first scored position, so every logit comes from the pass's own forward, at the same positions,
    over the same keys and values as in one whole pass: the scores equal :func:`teacher_forced`'s up to float
    rounding.  Returns (scores by (task id, flat index), tokens through the model, reasons of steps left out).
    """
    import torch
    from transformers import DynamicCache

    model, tokenizer = policy.model, policy.tokenizer
    context = context if context is not None else policy.context
    passes: list[_Forced] = []
    skipped: list[str] = []
    for tr in transcripts:
        got, why = _forced_inputs(policy, tr, context)
        passes += got
        skipped += why
    passes.sort(key=lambda p: p.ids)
    cap = [p.positions[0] for p in passes]  # a shared prefix ends before the pass's first scored position
    near = [min(_common(passes[i].ids, passes[i + 1].ids), cap[i], cap[i + 1]) for i in range(len(passes) - 1)]
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    scores: dict[tuple[str, int], StepScore] = {}
    forward = 0

    def extend(cache: Any, ids: list[int], logits_to_keep: Any) -> Any:
        nonlocal forward
        forward += len(ids)
        return model(input_ids=torch.tensor([ids], device=model.device), use_cache=True,
                     logits_to_keep=logits_to_keep, **{cache_arg: cache})

    def walk(lo: int, hi: int, cache: Any, done: int) -> None:
        """Score passes[lo:hi], which share their first ``done`` tokens (in ``cache``)."""
        if hi - lo == 1:
            p = passes[lo]
            rest = torch.tensor([q - done for q in p.positions], device=model.device)
            out = extend(cache, p.ids[done:], rest)
            for flat, score in _forced_scores(tokenizer, p, out.logits[0]).items():
                scores[(p.tr.task.id, flat)] = score
            _cut(cache, done)
            return
        shared = min(near[lo:hi - 1])
        if shared > done:
            extend(cache, passes[lo].ids[done:shared], 1)
        start = lo
        for i in range(lo, hi):
            if i == hi - 1 or near[i] == shared:  # the children: runs whose neighbours share more than this node
                walk(start, i + 1, cache, shared)
                start = i + 1
        _cut(cache, done)

    if passes:
        with torch.inference_mode():
            walk(0, len(passes), DynamicCache(config=model.config), 0)
    return scores, forward, skipped
