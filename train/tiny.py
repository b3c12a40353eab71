"""A tiny, randomly initialised Qwen2-style model with a BPE tokenizer, built offline.

For tests and smoke runs: nothing is downloaded.  The tokenizer is trained on
the fly on ACE's own prompts (the chat template, the default environment's
(BFCL's) tool docs and user turns), has ChatML's special tokens, and carries ACE's tool-aware template, so
the model goes through exactly the code paths of a real one (template, batched
generation, SFT, GRPO), in well under a second per step on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

from ace_env import twins
from ace_env.environments import DEFAULT
from ace_env.tasksets import load_task_set
from train.policies.template import ACE_CHAT_TEMPLATE

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _corpus(n_tasks: int = 40) -> list[str]:
    texts = [ACE_CHAT_TEMPLATE]
    for name, info in twins.all_functions().items():  # the default environment's functions, twins left out
        if not twins.is_twin(name):
            texts.append(json.dumps(info.doc))
    for task in list(load_task_set(f"{DEFAULT.name}:base").values())[:n_tasks]:  # its first base tasks
        for turn in task.turns:
            texts.extend(m.get("content", "") for m in turn.user)
            texts.extend(turn.ground_truth)
    return texts


def build_tiny_model(out: str | Path, seed: int = 0, hidden: int = 32, layers: int = 2, vocab: int = 1200) -> Path:
    """Write a tiny model folder loadable by ``--policy hf:<out>``; returns ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = ACE_CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(fast), hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192, tie_word_embeddings=True,
        eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    model.save_pretrained(out)
    return out
