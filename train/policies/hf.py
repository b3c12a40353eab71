"""``hf:<path-or-name>``: a local transformers model, batched generation on CPU or GPU.

The model's own chat template is used when it renders tools; otherwise ACE's
tool-aware ChatML template (:mod:`train.policies.template`).  Prompts of a
batch are left-padded and generated together.

Threads: on CPU, torch uses ``ACE_TORCH_THREADS`` threads (default **1**).  On
the 2-core machines this project runs on, with other work running, 1 thread
generated 6x faster than 2 (thread contention); set it higher on a machine
with idle cores.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from train.models import resolve_model
from train.policies.base import Conversation, GenerationConfig, PolicyError, Reply
from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support

log = logging.getLogger(__name__)


def torch_threads() -> int:
    value = os.environ.get("ACE_TORCH_THREADS", "1")
    try:
        n = int(value)
    except ValueError as e:
        raise PolicyError(f"ACE_TORCH_THREADS must be a whole number, not {value!r}") from e
    if n < 1:
        raise PolicyError(f"ACE_TORCH_THREADS must be at least 1, not {n}")
    return n


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


class HFPolicy:
    """A transformers causal LM as a policy."""

    def __init__(self, spec: str, path: str, compact_tools: bool = True, device: str | None = None):
        self._setup(spec, *load_model(path, device), compact_tools)

    @classmethod
    def from_model(cls, spec: str, tokenizer: Any, model: Any, template: str, compact_tools: bool = True) -> "HFPolicy":
        """A policy over a model already in memory (the GRPO trainer's, sampled while it trains)."""
        self = cls.__new__(cls)
        self._setup(spec, tokenizer, model, template, compact_tools)
        return self

    def _setup(self, spec: str, tokenizer: Any, model: Any, template: str, compact_tools: bool) -> None:
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
        texts = [self.render(c) for c in conversations]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        max_new = config.max_tokens
        if self.context and enc["input_ids"].shape[1] + max_new > self.context:
            max_new = self.context - enc["input_ids"].shape[1]
            if max_new < 1:
                return [
                    Reply({"role": "assistant", "content": ""}, n, 0, "error",
                          f"prompt of {n} tokens leaves no room in a {self.context}-token context")
                    for n in prompt_lens
                ]
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.stop_ids,
        }
        if config.temperature > 0:
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p)
            torch.manual_seed(config.seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self.model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1]:]
        replies = []
        for row, n_prompt in zip(new.tolist(), prompt_lens):
            n = 0
            finish = "length"
            for tok in row:
                n += 1
                if tok in self.stop_ids:
                    finish = "stop"
                    break
            text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
            replies.append(Reply({"role": "assistant", "content": text.strip()}, n_prompt, n, finish))
        return replies

    def close(self) -> None:
        self.model = None
