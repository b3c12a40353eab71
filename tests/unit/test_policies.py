"""Policies, the tool template and the rollout engine (a tiny model built offline; no services)."""

from __future__ import annotations

import json
import socket

import pytest
import torch  # noqa: E402  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_env.bfcl import load_tasks
from ace_env.calls import parse_call
from ace_env.formats import read_any
from ace_env.verifier import verify
from train.engine import RolloutConfig, RolloutEngine, offered_schemas
from train.policies import GenerationConfig, PolicyError, load_policy, policy_name
from train.policies.base import Conversation
from train.policies.openai import OpenAIPolicy, parse_spec
from train.policies.sim import SimPolicy


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture()
def zero_weakness(tmp_path):
    path = tmp_path / "zero.toml"
    path.write_text("[defaults]\nerror = 0.0\n")
    return path


class CountingPolicy:
    """A real policy, wrapped to record the size of every batch it is asked for."""

    def __init__(self, inner):
        self.inner, self.spec, self.batches = inner, inner.spec, []

    def generate(self, conversations, config):
        self.batches.append(len(conversations))
        return self.inner.generate(conversations, config)

    def close(self):
        self.inner.close()


def test_bad_specs_are_one_line_errors():
    for spec in ("gpt4", "hf:", "openai:model", "openai:m@ftp://x", "vllm:x"):
        with pytest.raises(PolicyError):
            load_policy(spec)
    with pytest.raises(PolicyError, match="ace model prepare|config.json"):
        load_policy("hf:/nonexistent/model")


def test_policy_names_have_no_slash():
    assert policy_name("hf:/runs/exp/sft-1/") == "hf-sft-1"
    assert policy_name("openai:smol@http://127.0.0.1:8000/v1") == "openai-smol"
    assert policy_name("sim:ace_env/demo_weakness.toml") == "sim-demo_weakness"
    assert "/" not in policy_name("openai:org/model@http://x/v1")


def test_engine_with_a_perfect_sim_agent_passes_everything_in_batches(zero_weakness, tmp_path):
    tasks = load_tasks("base")[:6]
    policy = CountingPolicy(load_policy(f"sim:{zero_weakness}"))
    rows = list(RolloutEngine(policy, RolloutConfig(n_per_task=2, batch_size=4)).run(tasks))
    assert len(rows) == 12 and len({r["rollout_id"] for r in rows}) == 12
    by_id = {t.id: t for t in tasks}
    for r in rows:
        task = by_id[r["task_id"]]
        assert len(r["turns"]) == len(task.turns)
        assert [[parse_call(c) for c in t] for t in r["turns"]] == [
            [parse_call(c) for c in t.ground_truth] for t in task.turns]
        assert verify(task, r["turns"]).reward == 1.0
        users = [m for m in r["messages"] if m["role"] == "user"]
        assert len(users) == len(task.turns)
        # every executed call's result came back as a tool message
        assert sum(m["role"] == "tool" for m in r["messages"]) == sum(len(t) for t in r["turns"])
    assert max(policy.batches) == 4 and sum(policy.batches) < sum(len(r["messages"]) for r in rows)
    # the file is accepted unchanged by the readers `ace verify` and `ace ingest` use
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [x.turns for x in read_any(path)] == [r["turns"] for r in rows]
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(path)]) == 0


def test_engine_records_planted_slips_and_the_verifier_sees_them(tmp_path):
    weakness = tmp_path / "w.toml"
    weakness.write_text('[defaults]\nerror = 1.0\nkind = "malformed"\n')
    task = load_tasks("base")[0]
    rows = list(RolloutEngine(load_policy(f"sim:{weakness}")).run([task]))
    verdict = verify(task, rows[0]["turns"])
    assert verdict.attribution == "malformed_call" and rows[0]["meta"]["slips"]
    # the malformed call was never executed: its tool message is an error
    tool_msgs = [m for m in rows[0]["messages"] if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["content"].startswith("Error:")


def test_step_cap_ends_a_turn(zero_weakness):
    class Looping(SimPolicy):
        def generate(self, conversations, config):
            out = super().generate(conversations, config)
            for r in out:  # never says it is done
                if r.message["content"] == "Done.":
                    r.message["content"] = "[pwd()]"
            return out

    task = load_tasks("base")[0]
    policy = Looping("sim:loop", SimPolicy.from_spec(f"sim:{zero_weakness}").weakness)
    row = next(RolloutEngine(policy, RolloutConfig(step_cap=3)).run([task]))
    assert all(len(calls) <= 3 for calls in row["turns"])
    assert row["meta"]["capped_turns"] == len(task.turns)


def test_template_compact_listing_is_much_shorter_and_masks_assistant_tokens(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    task = load_tasks("base")[0]
    tools = offered_schemas(task, 0)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "list files"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"type": "function", "function": {"name": "ls", "arguments": {"a": True}}}]},
                {"role": "tool", "content": "x"}, {"role": "assistant", "content": "Done."}]
    compact = tok.apply_chat_template(messages, tools=tools, tokenize=False, compact_tools=True)
    full = tok.apply_chat_template(messages, tools=tools, tokenize=False, compact_tools=False)
    assert "- ls(a?: boolean): List the contents of the current directory." in compact
    assert json.dumps(tools[0]) in full and json.dumps(tools[0]) not in compact
    assert len(tok(compact).input_ids) * 3 < len(tok(full).input_ids)
    assert '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call><|im_end|>' in compact
    enc = tok.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True,
                                  return_assistant_tokens_mask=True, compact_tools=True)
    ids, mask = enc["input_ids"], enc["assistant_masks"]
    learned = tok.decode([i for i, m in zip(ids, mask) if m])
    assert learned == '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call><|im_end|>Done.<|im_end|>'


def test_hf_policy_generates_a_batch_and_the_engine_writes_verifiable_rollouts(tiny_model, tmp_path):
    policy = load_policy(f"hf:{tiny_model}")
    task = load_tasks("base")[1]
    convs = [Conversation([{"role": "user", "content": "hello"}], offered_schemas(task, 0)) for _ in range(3)]
    replies = policy.generate(convs, GenerationConfig(max_tokens=8))
    assert len(replies) == 3 and all(r.completion_tokens >= 1 and r.prompt_tokens > 50 for r in replies)
    assert len({r.message["content"] for r in replies}) == 1  # greedy: the same prompt, the same answer
    out = tmp_path / "r.jsonl"
    code = main(["rollout", "-p", f"hf:{tiny_model}", "--tasks", "bfcl:base", "--limit", "2", "-G", "2",
                 "--max-tokens", "8", "--step-cap", "2", "--out", str(out)])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and all(r["meta"]["completion_tokens"] > 0 for r in rows)
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(out)]) == 0
    assert main(["rollout", "-p", f"hf:{tiny_model}", "--tasks", "bfcl:base", "--out", str(out)]) == 1  # exists


def test_samples_of_one_task_generated_one_at_a_time_differ(tiny_model):
    """Sampling is seeded per call from the run's seed and the conversations in the batch: the G samples
    of a task generated in batches of one are not G copies of one sample (synthesis measures
    learnability from them)."""
    from train.engine import RolloutConfig, RolloutEngine

    policy = load_policy(f"hf:{tiny_model}")
    task = load_tasks("base")[1]
    config = RolloutConfig(n_per_task=4, step_cap=1, batch_size=1,
                           generation=GenerationConfig(temperature=1.0, max_tokens=12, seed=7))
    rows = list(RolloutEngine(policy, config).run([task]))
    firsts = [r["messages"][2]["content"] for r in rows]  # system, user, the first answer
    assert len(set(firsts)) > 1, firsts
    again = [r["messages"][2]["content"] for r in RolloutEngine(policy, config).run([task])]
    assert again == firsts  # and the same seed gives the same samples


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_policy_retries_then_stops_the_run():
    """An endpoint that does not answer is retried, then the run stops (issue 35, defect 3): an outage is not
    the model's failure, so no rollout is made of it (its reply is not an error the rollout would record)."""
    from train.errors import EndpointError

    spec = f"openai:m@http://127.0.0.1:{_closed_port()}/v1"
    cfg = parse_spec(spec)
    assert cfg.model == "m" and cfg.base_url.endswith("/v1")
    cfg.retries, cfg.backoff_s, cfg.timeout_s = 2, 0.01, 2
    policy = OpenAIPolicy(spec, cfg)
    with pytest.raises(EndpointError, match="did not answer after 3 attempt"):
        policy.generate([Conversation([{"role": "user", "content": "x"}], [])] * 2, GenerationConfig())
    # in the engine it ends the run, not one rollout: no row comes out
    with pytest.raises(EndpointError):
        next(RolloutEngine(policy).run(load_tasks("base")[:1]))
    policy.close()


def test_prefix_cache_finds_the_longest_common_prefix_supersedes_and_evicts():
    from train.policies.kvcache import PrefixCache

    def states(ids):  # one layer; each token's "state" is its position and value, so slices are checkable
        k = torch.stack([torch.arange(len(ids), dtype=torch.float), torch.tensor(ids, dtype=torch.float)], -1)
        return [(k.view(1, 1, len(ids), 2), -k.view(1, 1, len(ids), 2))]

    cache = PrefixCache(max_tokens=12)
    a, b = [1, 2, 3, 4, 5], [1, 2, 9, 9]
    cache.add(torch.tensor(a), states(a))
    cache.add(torch.tensor(b), states(b))
    n, got = cache.longest_prefix(torch.tensor([1, 2, 3, 7]))
    assert n == 3 and torch.equal(got[0][0], states(a)[0][0][:, :, :3]) and torch.equal(got[0][1], -got[0][0])
    n, got = cache.longest_prefix(torch.tensor([1, 2, 9, 9, 9]))
    assert n == 4 and got[0][0][0, 0, :, 1].tolist() == [1, 2, 9, 9]
    assert cache.longest_prefix(torch.tensor([5, 1])) == (0, [])
    # a sequence extending a kept one replaces it; one covered by a longer one adds nothing
    c = a + [6]
    cache.add(torch.tensor(c), states(c))
    cache.add(torch.tensor(a[:2]), states(a[:2]))
    assert len(cache) == 2 and cache.tokens == 10
    # over the budget, the least recently used goes: c (b was touched by the covered add since)
    cache.add(torch.tensor([8, 8, 8]), states([8, 8, 8]))
    assert cache.tokens == 7 and cache.longest_prefix(torch.tensor([1, 2, 3]))[0] == 2
    with pytest.raises(ValueError):
        cache.add(torch.tensor([4, 4]), states([4]))


def test_cached_states_are_those_a_full_forward_pass_computes(tiny_model):
    from transformers import DynamicCache

    policy = load_policy(f"hf:{tiny_model}")
    tools = offered_schemas(load_tasks("base")[1], 0)
    first = Conversation([{"role": "system", "content": "s"}, {"role": "user", "content": "list the files"}], tools)
    ids = [torch.tensor(policy.tokenizer(policy.render(c), add_special_tokens=False)["input_ids"])
           for c in (first, Conversation(first.messages[:1] + [{"role": "user", "content": "cd to /tmp"}], tools))]
    policy._prefill(ids[0])
    reused = policy.cache.reused_tokens
    got = policy._prefill(ids[1])  # shares the system prompt and tool listing with the first
    assert policy.cache.reused_tokens - reused > 100
    full = DynamicCache(config=policy.model.config)
    with torch.inference_mode():
        policy.model(input_ids=ids[1].unsqueeze(0), use_cache=True, **{policy._cache_arg: full})
    assert len(got) == len(full.layers)
    for (k, v), layer in zip(got, full.layers):
        assert k.shape == layer.keys.shape
        assert torch.allclose(k, layer.keys, atol=1e-5) and torch.allclose(v, layer.values, atol=1e-5)


def test_batched_cached_generation_gives_the_greedy_answers_of_one_at_a_time(tiny_model):
    """The engine with the prefix cache (shared prefixes, G samples, growing conversations) against a plain loop."""
    cached = load_policy(f"hf:{tiny_model}")
    plain = type(cached).from_model("hf:plain", cached.tokenizer, cached.model, cached.template, cache_tokens=0)
    assert plain.cache is None
    tasks = load_tasks("base")[:3]
    gen = GenerationConfig(max_tokens=12)
    rows = {}
    for name, policy, batch in (("cached", cached, 4), ("plain", plain, 1)):
        engine = RolloutEngine(policy, RolloutConfig(n_per_task=2, step_cap=2, batch_size=batch, generation=gen))
        rows[name] = sorted((r["rollout_id"], r["turns"], r["messages"], r["meta"]["prompt_tokens"],
                             r["meta"]["completion_tokens"]) for r in engine.run(tasks))
    assert rows["cached"] == rows["plain"]
    assert all(len([m for m in r[2] if m["role"] == "user"]) > 1 for r in rows["cached"])  # multi-turn prompts
    # the cache did the work: most prompt tokens were reused, not computed
    assert cached.cache.reused_tokens > 3 * cached.cache.computed_tokens
