"""Gold-prefix scoring: the NLL and exact match of every oracle step from one forward pass, checked
against a direct computation; predecessors are the oracle's; the simulated agent slips where planted."""

from __future__ import annotations

import random

import pytest
import torch  # the train extra is part of setup: without it these tests fail, never skip

from ace_env.sim import gold_prefix_step, parse_weakness, previous_gold_call
from ace_env.tasksets import load_task_set
from ace_graph.outcomes import _predecessors
from ace_graph.tagger import tag_task
from train.engine import offered_schemas
from train.goldprefix import records, score_tasks, summarize, teacher_forced, transcript
from train.policies import GenerationConfig, load_policy
from train.policies.hf import HFPolicy


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    path = build_tiny_model(tmp_path_factory.mktemp("gp") / "tiny", seed=3)
    return HFPolicy(f"hf:{path}", str(path), cache_tokens=0)


@pytest.fixture(scope="module")
def base():
    return load_task_set("bfcl:base")


def _direct(policy: HFPolicy, tr, step) -> tuple[float, bool, int]:
    """Mean NLL and greedy exact match of a step's gold answer, computed the slow way: the prompt as a
    policy is asked it (rendered with the generation prompt), the gold answer tokens after it."""
    conv = tr.conversation(step)
    prompt = policy.tokenizer(policy.render(conv), add_special_tokens=False)["input_ids"]
    full = policy.tokenizer.apply_chat_template(
        tr.messages[: step.message + 1], tools=conv.tools or None, chat_template=policy.template, tokenize=True,
        return_dict=True, compact_tools=True)["input_ids"]
    full = list(full)
    assert full[: len(prompt)] == prompt, "the gold transcript must extend the prompt a policy is asked"
    target = full[len(prompt):]
    if target and target[-1] != policy.tokenizer.convert_tokens_to_ids("<|im_end|>"):
        target = target[:-1]  # the template's newline after <|im_end|> is not the assistant's
    ids = torch.tensor([prompt + target])
    with torch.no_grad():
        logits = policy.model(input_ids=ids).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    n = len(prompt)
    nll = [-logp[n - 1 + k, tok].item() for k, tok in enumerate(target)]
    exact = all(int(logp[n - 1 + k].argmax()) == tok for k, tok in enumerate(target))
    return sum(nll) / len(nll), exact, len(target)


def test_teacher_forced_nll_equals_a_direct_computation_for_every_step(tiny, base):
    for task_id in ("multi_turn_base_0", "multi_turn_base_3"):
        tr = transcript(base[task_id])
        scores, forward, skipped = teacher_forced(tiny, tr)
        assert not skipped and forward > 0
        assert sorted(scores) == [s.flat for s in tr.steps]
        for step in tr.steps:
            nll, exact, n = _direct(tiny, tr, step)
            got = scores[step.flat]
            assert got.tokens == n
            assert got.nll == pytest.approx(nll, rel=1e-4, abs=1e-4)
            assert got.exact == exact


def test_exact_match_is_what_greedy_decoding_writes(tiny, base):
    """A random tiny model never writes the gold call: exact is False, and greedy generation agrees."""
    tr = transcript(base["multi_turn_base_0"])
    scores, _, _ = teacher_forced(tiny, tr)
    step = tr.steps[1]
    reply = tiny.generate([tr.conversation(step)], GenerationConfig(max_tokens=40))[0]
    gold = tiny.tokenizer.apply_chat_template(tr.messages[: step.message + 1], tools=offered_schemas(tr.task, 0),
                                              chat_template=tiny.template, tokenize=False)
    assert scores[step.flat].exact is (reply.message["content"] in gold and reply.finish_reason == "stop"
                                       and "<tool_call>" in reply.message["content"])


def test_steps_carry_the_oracles_predecessor_and_every_step_is_reached(base):
    task = base["multi_turn_base_1"]
    tr = transcript(task)
    tags = tag_task(task)
    assert [s.prev for s in tr.steps] == _predecessors(tags)
    assert [s.tool for s in tr.steps] == [t.tool for t in tags]
    # the conversation of a step ends right before its gold answer, with the oracle's outputs in it
    conv = tr.conversation(tr.steps[2])
    assert conv.messages[-1]["role"] == "tool" and conv.state["gold_step"] == (tr.steps[2].turn, tr.steps[2].index)
    run = score_tasks(load_policy("sim:"), [task], generate=True)
    for s in run.scores:  # fail every step: all are still reached, each with its own predecessor
        s.passed = False
    (rec, _), = list(records(run.scores, {task.id: task}, "e/p/c"))
    assert [r.flat for r in rec.steps] == [s.flat for s in tr.steps]
    assert [r.prev for r in rec.steps] == [s.prev for s in tr.steps]
    assert {r.outcome for r in rec.steps} == {"fail"} and rec.reward == 0.0


def test_a_planted_composition_slips_at_its_rate_and_nowhere_else(base):
    spec = parse_weakness({"defaults": {"error": 0.0},
                           "composition": [{"from": "get_stock_info", "to": "place_order", "error": 0.7}]})
    tasks = [t for t in base.values() if any("place_order" in c for turn in t.turns for c in turn.ground_truth)]
    hits = total = other_fail = 0
    for task in tasks:
        for t, turn in enumerate(task.turns):
            for i, gt in enumerate(turn.ground_truth):
                made, slip = gold_prefix_step(task, t, i, spec, random.Random(t * 31 + i))
                planted = gt.startswith("place_order") and previous_gold_call(task, t, i) == "get_stock_info"
                if planted:
                    total += 1
                    hits += slip is not None
                else:
                    other_fail += slip is not None
    assert total >= 10 and 0.4 <= hits / total <= 0.95 and other_fail == 0


def test_the_sim_policy_recovers_its_planted_composition_through_the_gold_prefix(base):
    spec_file = "tests/integration/synth_weakness.toml"  # book_flight>retrieve_invoice, get_stock_info>place_order
    run = score_tasks(load_policy(f"sim:{spec_file}"), list(base.values()), generate=True)
    planted = {("book_flight", "retrieve_invoice"), ("get_stock_info", "place_order")}
    at = [s for s in run.scores if (s.prev_tool, s.tool) in planted]
    away = [s for s in run.scores if (s.prev_tool, s.tool) not in planted and s.tool is not None]
    rate = 1 - summarize(at)["step_pass_rate"]
    rest = 1 - summarize(away)["step_pass_rate"]
    assert len(at) >= 15 and rate > 0.35 and rest < 0.06
    # the same steps, a different seed: slips are drawn per step, not copied
    again = score_tasks(load_policy(f"sim:{spec_file}"), list(base.values()), generate=True,
                        config=GenerationConfig(seed=9))
    assert [s.passed for s in again.scores] != [s.passed for s in run.scores]


def test_shared_prefix_scoring_gives_every_steps_scores_of_one_pass_per_task(tiny, base):
    """teacher_forced_shared (the evidence benchmark's cheaper cell) computes the prefixes tasks share once and
    returns, for every step, the tokens, exact match, tool match and NLL that one whole pass per task gives."""
    from ace_env.tasksets import load_task_set
    from train.goldprefix import teacher_forced_shared

    miss = load_task_set("bfcl:miss_func")  # turns offered other tools: several passes in one task
    tasks = [base[f"multi_turn_base_{i}"] for i in range(8)] + [next(iter(miss.values()))]
    transcripts = [transcript(t) for t in tasks]
    shared, forward, skipped = teacher_forced_shared(tiny, transcripts)
    assert not skipped
    whole = 0
    for tr in transcripts:
        one, n, _ = teacher_forced(tiny, tr)
        whole += n
        for flat, want in one.items():
            got = shared[(tr.task.id, flat)]
            assert (got.tokens, got.exact, got.tool_right) == (want.tokens, want.exact, want.tool_right)
            assert got.nll == pytest.approx(want.nll, rel=1e-5, abs=1e-6)
    assert len(shared) == sum(len(tr.steps) for tr in transcripts)
    assert forward < 0.8 * whole  # the eight base tasks share their system prompt and tools: computed less often
    run = score_tasks(tiny, tasks, share_prefix=True)
    assert run.forward_tokens == forward and len(run.scores) == len(shared)
    assert [(s.task_id, s.flat, s.prev_tool) for s in run.scores] == \
        [(s.task_id, s.flat, s.prev_tool) for s in score_tasks(tiny, tasks).scores]


def test_shared_prefix_scoring_sees_the_same_logits_as_one_pass_per_task(tiny, base, monkeypatch):
    """Below the scores: at every scored position the shared-prefix path's logits equal one whole pass's, and so
    does the model's top token (what exact match reads), whether or not it is the gold one."""
    import train.goldprefix.forced as gp

    seen: dict[str, list] = {}
    real = gp._forced_scores

    def spy(tokenizer, p, logits):
        seen.setdefault(p.tr.task.id, []).append(logits.detach().clone())
        return real(tokenizer, p, logits)

    monkeypatch.setattr(gp, "_forced_scores", spy)
    trs = [transcript(base[f"multi_turn_base_{i}"]) for i in range(4)]
    gp.teacher_forced_shared(tiny, trs)
    shared, seen = seen, {}
    for tr in trs:
        gp.teacher_forced(tiny, tr)
    assert shared.keys() == seen.keys()
    for task_id, (got,) in shared.items():
        (want,) = seen[task_id]
        assert got.shape == want.shape and got.shape[0] > 10
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)
        assert torch.equal(got.argmax(-1), want.argmax(-1))
