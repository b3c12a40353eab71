"""``hf:<path-or-name>``: a local transformers model, batched generation on CPU or GPU.

The model's own chat template is used when it renders tools; otherwise ACE's
tool-aware ChatML template (:mod:`train.policies.template`).

A batch is generated together.  Prompt tokens seen before are not computed
again: their key/value states come from a :class:`~train.policies.kvcache.PrefixCache`
(the shared system prompt and tool listing, the G samples of a task, a
conversation's earlier steps).  Each prompt's new tokens are computed on top of
its cached prefix, one prompt at a time (no padding); the batch's states are
then left-padded into one cache and the answers decoded together.  With the
cache off (``cache_tokens=0``, or ``ACE_KV_CACHE_TOKENS=0``) the prompts are
left-padded and generated from scratch, as a plain ``generate`` call does.

Threads: on CPU, torch uses ``ACE_TORCH_THREADS`` threads (default **1**).  On
the 2-core machines this project runs on, with other work running, 1 thread
generated 6x faster than 2 (thread contention); set it higher on a machine
with idle cores.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
from typing import Any

from ace_env.errors import ConfigError
from train.models import resolve_model
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply
from train.policies.kvcache import LayerStates, PrefixCache, roomy_cache
from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support

log = logging.getLogger(__name__)

#: Default size of the prefix cache, in tokens (SmolLM2-135M keeps 46 KB per token in float32: 750 MB).
DEFAULT_CACHE_TOKENS = 16384


def _env_int(name: str, default: int, least: int) -> int:
    value = os.environ.get(name, str(default))
    try:
        n = int(value)
    except ValueError as e:
        raise ConfigError(f"{name} must be a whole number, not {value!r}") from e
    if n < least:
        raise ConfigError(f"{name} must be at least {least}, not {n}")
    return n


def torch_threads() -> int:
    return _env_int("ACE_TORCH_THREADS", 1, 1)


def cache_tokens() -> int:
    """Size of an hf: policy's prefix cache in tokens: ``ACE_KV_CACHE_TOKENS`` (0 turns it off)."""
    return _env_int("ACE_KV_CACHE_TOKENS", DEFAULT_CACHE_TOKENS, 0)


def set_torch_threads() -> int:
    import torch

    n = torch_threads()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def load_model(path: str, device: str | None = None):
    """(tokenizer, model, template) of a model folder."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ModuleNotFoundError as e:
        raise PolicyError("hf: policies need the train extra: pip install -e '.[train]'") from e
    set_torch_threads()
    folder = resolve_model(path)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).eval()
    template = tokenizer.chat_template if has_tool_support(tokenizer.chat_template) else ACE_CHAT_TEMPLATE
    return tokenizer, model, template


def sampling_seed(seed: int, conversations: list[Conversation]) -> int:
    """The torch seed of one sampled generate call: the run's seed mixed with which conversations, at
    which point, are in the batch.  Seeding every call with the run's seed alone would make the G samples
    of a task identical whenever they are generated one at a time (a batch of one, the same prompt)."""
    digest = hashlib.sha256(repr((seed, [(c.key, len(c.messages)) for c in conversations])).encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


class HFPolicy:
    """A transformers causal LM as a policy.

    ``cache_tokens``: size of the prefix cache (None: ``ACE_KV_CACHE_TOKENS``,
    default 16,384; 0: no cache).  The cache assumes the model's weights stay as
    they are for the policy's life (build a new policy after a training step).
    """

    def __init__(self, spec: str, path: str, compact_tools: bool = True, device: str | None = None,
                 cache_tokens: int | None = None):
        self._setup(spec, *load_model(path, device), compact_tools, cache_tokens)

    @classmethod
    def from_model(cls, spec: str, tokenizer: Any, model: Any, template: str, compact_tools: bool = True,
                   cache_tokens: int | None = None) -> "HFPolicy":
        """A policy over a model already in memory (the GRPO trainer's, sampled while it trains)."""
        self = cls.__new__(cls)
        self._setup(spec, tokenizer, model, template, compact_tools, cache_tokens)
        return self

    def _setup(self, spec: str, tokenizer: Any, model: Any, template: str, compact_tools: bool,
               max_cached: int | None) -> None:
        self.spec = spec
        self.compact_tools = compact_tools
        self.tokenizer, self.model, self.template = tokenizer, model, template
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        stops = {self.tokenizer.eos_token_id}
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            stops.add(im_end)
        self.stop_ids = sorted(i for i in stops if i is not None)
        self.context = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)
        max_cached = cache_tokens() if max_cached is None else max_cached
        self.cache = PrefixCache(max_cached) if max_cached > 0 and self._cache_reusable() else None
        # transformers 5 renamed generate's and forward's `past_key_values` to `cache` (in 5.2x).
        params = inspect.signature(self.model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def _cache_reusable(self) -> bool:
        """Whether states can be cut and joined per token: every layer a plain full-attention one."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        layers = DynamicCache(config=self.model.config).layers
        if layers and all(type(layer) is DynamicLayer for layer in layers):
            return True
        log.info("%s: no prefix cache (layers %s are not plain full attention)", self.spec,
                 sorted({type(layer).__name__ for layer in layers}))
        return False

    def render(self, conv: Conversation, add_generation_prompt: bool = True) -> str:
        """The prompt text of a conversation (tools listed as configured)."""
        return self.tokenizer.apply_chat_template(
            conv.messages,
            tools=conv.tools or None,
            chat_template=self.template,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            compact_tools=self.compact_tools,
        )

    def generate(self, conversations: list[Conversation], config: GenerationConfig) -> list[Reply]:
        import torch

        if not conversations:
            return []
        prompts = [self.tokenizer(self.render(c), add_special_tokens=False)["input_ids"] for c in conversations]
        width = max(len(p) for p in prompts)
        max_new = config.max_tokens
        if self.context and width + max_new > self.context:
            max_new = self.context - width
            if max_new < 1:
                return [
                    Reply({"role": "assistant", "content": ""}, len(p), 0, "error",
                          f"prompt of {len(p)} tokens leaves no room in a {self.context}-token context")
                    for p in prompts
                ]
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.stop_ids,
        }
        if config.temperature > 0:
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p)
            torch.manual_seed(sampling_seed(config.seed, conversations))
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            if self.cache is not None and min(len(p) for p in prompts) > 1:
                new = self._generate_cached(prompts, kwargs)
            else:
                enc = self.tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
                enc = {k: v.to(self.model.device) for k, v in enc.items()}
                new = self.model.generate(**enc, **kwargs)[:, width:].tolist()
        replies = []
        for row, prompt in zip(new, prompts):
            n = self._answer_length(row)
            finish = "stop" if row[n - 1] in self.stop_ids else "length"
            text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
            replies.append(Reply({"role": "assistant", "content": text.strip()}, len(prompt), n, finish))
        return replies

    def _answer_length(self, row: list[int]) -> int:
        """Tokens of a generated row up to and including its first stop token (all if none)."""
        for i, tok in enumerate(row):
            if tok in self.stop_ids:
                return i + 1
        return len(row)

    def _new_cache(self, states: LayerStates) -> Any:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for layer, (k, v) in enumerate(states):
            cache.update(k, v, layer)
        return cache

    def _prefill(self, ids: Any) -> LayerStates:
        """States of the tokens ``ids`` (1-D, on CPU): the cached prefix's, the rest computed now, all kept."""
        n, states = self.cache.longest_prefix(ids)
        self.cache.reused_tokens += n
        if n == len(ids):
            return states
        cache = self._new_cache(states)
        self.model(input_ids=ids[n:].unsqueeze(0).to(self.model.device), use_cache=True, logits_to_keep=1,
                   **{self._cache_arg: cache})
        self.cache.computed_tokens += len(ids) - n
        states = [(layer.keys, layer.values) for layer in cache.layers]
        self.cache.add(ids, states)
        return states

    def _generate_cached(self, prompts: list[list[int]], kwargs: dict[str, Any]) -> list[list[int]]:
        """Generated rows of a batch whose prompts' states (all but each last token) come from the cache."""
        import torch

        rows = [torch.tensor(p, dtype=torch.long) for p in prompts]
        # Each prompt's states but its last token's: generate computes that one and the answer.
        past = [self._prefill(r[:-1]) for r in rows]
        width = max(len(r) for r in rows)
        device = self.model.device
        input_ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, width - len(r):] = r
            mask[i, width - len(r):] = 1
        # Left-pad every prompt's states to width - 1 (padded slots are masked out).
        batch_states = []
        for layer in range(len(past[0])):
            k0, v0 = past[0][layer]
            keys = k0.new_zeros((len(rows), k0.shape[1], width - 1, k0.shape[3]))
            values = v0.new_zeros((len(rows), v0.shape[1], width - 1, v0.shape[3]))
            for i, states in enumerate(past):
                k, v = states[layer]
                keys[i, :, width - 1 - k.shape[2]:] = k[0]
                values[i, :, width - 1 - v.shape[2]:] = v[0]
            batch_states.append((keys, values))
        cache = roomy_cache(self.model.config, batch_states, kwargs["max_new_tokens"])
        del past, batch_states
        out = self.model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                  **{self._cache_arg: cache}, **kwargs)
        new = out[:, width:].cpu()
        # Keep each prompt with its answer: the conversation's next step starts with both.
        have = cache.get_seq_length()
        for i, r in enumerate(rows):
            start = width - len(r)
            n = min(self._answer_length(new[i].tolist()), have - width)
            ids = torch.cat([r, new[i, :n]])
            keep = len(ids)
            self.cache.add(ids, [(layer.keys[i:i + 1, :, start:start + keep].clone(),
                                  layer.values[i:i + 1, :, start:start + keep].clone()) for layer in cache.layers])
        return new.tolist()

    def close(self) -> None:
        self.model = None
        if self.cache is not None:
            self.cache.clear()
