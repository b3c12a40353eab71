"""Bounded memory in training: log-probabilities only where the loss needs them, a bounded block of logits at a
time, equal to the full-logits computation; sequences over the limit refused before the trainer's forward pass."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
import torch  # noqa: E402  (the train extra is part of setup: without it these tests fail, never skip)

from ace_env import bfcl
from ace_env.errors import ConfigError
from ace_env.sim import parse_weakness
from train import logprobs
from train.grpo import ACERollout, GRPORunConfig, bounded_grpo_trainer, check_sequence_length, trim_padding
from train.logprobs import chunk_rows, direct_token_logprobs, install_bounded_lm_head, token_logprobs
from train.policies.sim import SimPolicy
from train.policies.template import ACE_CHAT_TEMPLATE
from train.sft import SFTRunConfig
from train.tiny import build_tiny_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny-mem") / "model", hidden=48, layers=2)
    return folder, AutoTokenizer.from_pretrained(str(folder)), AutoModelForCausalLM


def _model(tiny, bounded=True, temperature=1.0):
    folder, _, auto = tiny
    torch.manual_seed(0)
    model = auto.from_pretrained(str(folder), dtype=torch.float32)
    model.eval()  # no dropout: the two computations must see the same network
    if bounded:
        assert install_bounded_lm_head(model, temperature=temperature, chunk_bytes=4 * model.config.vocab_size * 7)
    return model


def _batch(vocab, rows=3, length=40, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab, (rows, length), generator=g)
    attention = torch.ones_like(ids)
    attention[1, :6] = 0  # a left-padded row
    attention[2, -5:] = 0  # a right-padded row
    labels = ids.masked_fill(attention == 0, -100)
    labels[:, :12] = -100  # a prompt
    labels[0, 20:27] = -100  # a tool result inside the completion
    return ids, attention, labels


def test_chunked_logprobs_equal_the_full_logits_computation_and_their_gradients(tiny):
    """Values, entropy, top-1 and the gradients of every parameter, at temperature 0.7, blocks of 7 positions."""
    bounded, direct = _model(tiny, temperature=0.7), _model(tiny, bounded=False)
    ids, attention, labels = _batch(bounded.config.vocab_size)
    weights = torch.randn(labels[:, 1:].shape, generator=torch.Generator().manual_seed(2))

    out = bounded(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True)
    ref = direct_token_logprobs(direct, ids, attention, labels, temperature=0.7)
    mask = labels[:, 1:] != -100
    assert torch.equal(out.label_mask, mask)
    assert torch.allclose(out.log_probs, ref, atol=1e-5, rtol=0)
    assert torch.all(out.log_probs[~mask] == 0)

    with torch.no_grad():
        logits = direct(input_ids=ids, attention_mask=attention).logits[:, :-1].float() / 0.7
        p = torch.softmax(logits, -1)
        entropy = -(p * torch.log_softmax(logits, -1)).sum(-1)
        top1 = logits.argmax(-1) == labels[:, 1:]
    assert torch.allclose(out.entropy[mask], entropy[mask], atol=1e-5, rtol=0)
    assert torch.equal(out.is_top1[mask], top1[mask])

    (out.log_probs * weights).sum().backward()
    (ref * weights).sum().backward()
    for (name, a), (_, b) in zip(bounded.named_parameters(), direct.named_parameters()):
        assert a.grad is not None, name
        assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), name


def test_only_labelled_positions_are_projected_and_never_more_than_a_block_at_once(tiny, monkeypatch):
    model = _model(tiny)
    ids, attention, labels = _batch(model.config.vocab_size)
    seen = []
    real = logprobs._block

    def spy(hidden, *args):
        seen.append(hidden.shape[0])
        return real(hidden, *args)

    monkeypatch.setattr(logprobs, "_block", spy)
    out = model(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True)
    out.loss.backward()  # the backward recomputes each block: still never more than 7 rows
    labelled = int((labels[:, 1:] != -100).sum())
    assert max(seen) <= 7
    assert sum(seen[: len(seen) // 2]) == labelled  # forward: exactly the labelled positions, once
    assert sum(seen) == 2 * labelled  # + one recompute per block in the backward
    assert labelled < 0.7 * labels[:, 1:].numel()  # and that is well under every position


def test_block_size_follows_the_byte_budget():
    assert chunk_rows(49152, 32 * 2**20) == 170  # SmolLM2's vocabulary: 32 MiB of fp32 logits per block
    assert chunk_rows(10**9, 1) == 1
    with pytest.raises(ValueError):
        chunk_rows(0)
    hidden = torch.randn(0, 4, requires_grad=True)
    weight = torch.randn(9, 4, requires_grad=True)
    logp, _, top1 = token_logprobs(hidden, weight, None, torch.zeros(0, dtype=torch.long))
    assert logp.shape == (0,) and top1.shape == (0,)
    logp.sum().backward()  # an all-masked micro-batch is a differentiable zero, not an error
    assert torch.all(weight.grad == 0)
    assert hidden.grad is not None  # the backbone takes part too (DDP refuses parameters left out of the loss)


def test_a_micro_batch_with_no_loss_token_still_gives_every_parameter_a_gradient(tiny):
    model = _model(tiny)
    ids, attention, labels = _batch(model.config.vocab_size)
    out = model(input_ids=ids, attention_mask=attention, labels=torch.full_like(labels, -100), fused_lm_head=True)
    out.loss.backward()
    assert float(out.loss) == 0.0
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.all(param.grad == 0), name


def test_generation_and_plain_forwards_are_unchanged(tiny):
    bounded, direct = _model(tiny), _model(tiny, bounded=False)
    ids, attention, _ = _batch(bounded.config.vocab_size)
    assert torch.allclose(bounded(input_ids=ids, attention_mask=attention).logits,
                          direct(input_ids=ids, attention_mask=attention).logits)
    a = bounded.generate(ids[:1, :10], max_new_tokens=4, do_sample=False)
    b = direct.generate(ids[:1, :10], max_new_tokens=4, do_sample=False)
    assert torch.equal(a, b)


def test_grpo_scores_only_the_policys_tokens_and_matches_the_direct_computation(tiny):
    """The GRPO override: positions outside completion_mask × env_mask are not projected (log-prob 0); the others
    equal the full-logits computation at the sampling temperature."""
    model = _model(tiny, temperature=0.9)
    ids, attention, _ = _batch(model.config.vocab_size)
    keep = 28  # the completion: the last 28 tokens
    env_mask = torch.ones(ids.size(0), keep, dtype=torch.long)
    env_mask[:, 5:12] = 0  # a tool result
    fake = SimpleNamespace(_ace_loss_mask=env_mask, accelerator=SimpleNamespace(autocast=contextlib.nullcontext))
    method = bounded_grpo_trainer()._get_per_token_logps_and_entropies
    logps, entropies, _ = method(fake, model, ids, attention, keep, batch_size=2, compute_entropy=True)
    assert logps.shape == entropies.shape == (ids.size(0), keep)
    labels = ids.masked_fill(attention == 0, -100)
    labels[:, :-keep] = -100
    ref = direct_token_logprobs(_model(tiny, bounded=False), ids, attention, labels, temperature=0.9)[:, -keep:]
    scored = env_mask.bool() & (attention[:, -keep:] == 1)
    assert torch.allclose(logps[scored], ref[scored], atol=1e-5, rtol=0)
    assert torch.all(logps[~scored] == 0) and torch.all(entropies[~scored] == 0)


def test_a_micro_batch_loses_only_columns_that_are_padding_in_all_its_rows():
    inputs = {
        "prompt_ids": torch.tensor([[0, 0, 5, 6], [0, 4, 5, 6]]),
        "prompt_mask": torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]]),
        "completion_ids": torch.tensor([[7, 8, 0, 0, 0], [7, 8, 9, 0, 0]]),
        "completion_mask": torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]),
        "tool_mask": torch.tensor([[1, 0, 1, 1, 1], [1, 0, 1, 1, 1]]),
        "old_per_token_logps": torch.zeros(2, 5),
        "advantages": torch.tensor([0.5, -0.5]),
    }
    out = trim_padding(inputs)
    assert out["prompt_ids"].tolist() == [[0, 5, 6], [4, 5, 6]]
    assert out["completion_ids"].tolist() == [[7, 8, 0], [7, 8, 9]]
    assert out["tool_mask"].shape == out["old_per_token_logps"].shape == (2, 3)
    assert out["advantages"] is inputs["advantages"]
    assert trim_padding(out) is out  # nothing left to trim


WEAK = parse_weakness({"defaults": {"error": 0.0}, "tool": [{"name": "sort", "error": 0.5, "kind": "argument"}]})


def test_an_episode_over_the_sequence_limit_is_refused_in_one_line_before_training_sees_it(tiny):
    tasks = {t.id: t for t in bfcl.load_tasks("base")[:2]}
    config = GRPORunConfig(prompts_per_step=1, generations=2, dynamic_filtering=False)
    rollout = ACERollout(tasks, config, ACE_CHAT_TEMPLATE, policy_factory=lambda trainer: SimPolicy("sim:t", WEAK))
    rollout.max_sequence_tokens = 200  # the simulated agent plays whole oracle conversations: far longer
    first = sorted(tasks)[0]
    with pytest.raises(ConfigError) as err:
        rollout([first, first], SimpleNamespace(processing_class=tiny[1]))
    message = str(err.value)
    assert "\n" not in message and f"episode of task {first} is" in message
    assert "over the training limit of 200" in message and "--max-sequence-tokens" in message
    assert rollout.last_rows == []  # nothing was handed to the trainer
    check_sequence_length("t", 200, 200)  # at the limit is fine


def test_memory_settings_are_checked_where_they_are_given():
    with pytest.raises(ConfigError, match="micro-batch .3. must divide"):
        GRPORunConfig(prompts_per_step=2, generations=4, micro_batch=3)
    with pytest.raises(ConfigError, match="max-sequence-tokens"):
        GRPORunConfig(max_sequence_tokens=50, max_tokens=96)
    assert GRPORunConfig().micro_batch == 1 and GRPORunConfig().gradient_checkpointing
    with pytest.raises(Exception, match="micro-batch"):
        SFTRunConfig(batch_size=4, micro_batch=3)
    assert SFTRunConfig(batch_size=2, micro_batch=8).micro_batch == 8  # capped at the batch when training
