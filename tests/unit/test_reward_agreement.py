"""One reward: GRPO's rollouts, the exported TRL reward and evaluation give every rollout the same number.

The same rollouts (the simulated agent's, and scripted ones that pass only under the benchmark's looser
checker or go over the call budget) are scored three ways: by GRPO's ``rollout_func``
(:class:`train.grpo.ACERollout`), by :func:`train.rewards.verifier_reward` on the row ``ace export --format trl``
writes for the task, and by the verifier evaluation ingests with (:func:`train.evaluation.evaluate`'s rules: the benchmark's, so it
differs from the strict reward exactly on the rollout only BFCL's looser checker passes).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import train.evaluation as evaluation
from ace_env import bfcl
from ace_env.environments import verifier_for
from ace_env.sim import parse_weakness
from ace_env.worker import Budget
from train.engine import RolloutConfig
from train.export import to_trl
from train.grpo import ACERollout, GRPORunConfig
from train.policies.base import Reply
from train.policies.sim import DONE_TEXT, SimPolicy
from train.policies.template import ACE_CHAT_TEMPLATE
from train.rewards import reward_of, verifier_reward
from train.tiny import build_tiny_model

WEAK = parse_weakness({"defaults": {"error": 0.0}, "tool": [
    {"name": "echo", "error": 1.0, "kind": "argument"},
    {"name": "sort", "error": 0.5, "kind": "argument"},
]})
SIM_TASKS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"]
SLOW = "multi_turn_base_15"  # its tools include power: a huge exponent goes over a 1 s call budget
CALL_SECONDS = 1.0


class Scripted:
    """Answers each turn with the gold calls, plus a first-turn extra: an unoffered tool (a pass only for the
    benchmark's looser checker) or a call over the budget."""

    spec = "scripted"

    def __init__(self, tasks, extra):
        self.tasks, self.extra = tasks, extra

    def generate(self, conversations, config):
        replies = []
        for conv in conversations:
            made = 0
            for m in reversed(conv.messages):
                if m.get("role") == "user":
                    break
                made += m.get("role") == "assistant"
            calls = list(conv.task.turns[conv.turn].ground_truth)
            if conv.turn == 0:
                calls = [self.extra.get(conv.task.id, "")] + calls if self.extra.get(conv.task.id) else calls
            replies.append(Reply({"role": "assistant", "content": f"[{calls[made]}]" if made < len(calls) else DONE_TEXT}))
        return replies

    def close(self):
        pass


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")))


@pytest.fixture(scope="module")
def tasks():
    wanted = set(SIM_TASKS) | {SLOW, "multi_turn_base_3"}
    return {t.id: t for t in bfcl.load_tasks("base") if t.id in wanted}


def _grpo_rows(tasks, tokenizer, policy, prompts, weight):
    config = GRPORunConfig(prompts_per_step=len(prompts), generations=2, dynamic_filtering=False, partial_credit=weight,
                           call_timeout=CALL_SECONDS)
    rollout = ACERollout(tasks, config, ACE_CHAT_TEMPLATE, policy_factory=lambda trainer: policy)
    out = rollout([p for p in prompts for _ in range(2)], SimpleNamespace(processing_class=tokenizer))
    assert len(rollout.last_rows) == len(out["ace_reward"]) == 2 * len(prompts)
    return list(zip(rollout.last_rows, out["ace_reward"]))


def _completion(row):
    """The rollout as a TRL completion: every message after the first user turn (user messages open the next)."""
    first_user = next(i for i, m in enumerate(row["messages"]) if m["role"] == "user")
    return row["messages"][first_user + 1:]


def _evaluation_rewards(tasks, rows, monkeypatch):
    """What ``evaluate`` stores for these rollouts: the verifier it ingests with, under its settings."""
    seen = {}

    def ingest_file(store, out, by_id, *args, **kwargs):
        seen.update(kwargs)
        return SimpleNamespace(scope="s", read=0, to_dict=dict)

    monkeypatch.setattr(evaluation, "rollout_to_file", lambda *a, **k: {"rollouts": 1, "errors": 0})
    monkeypatch.setattr(evaluation, "ingest_file", ingest_file)
    monkeypatch.setattr(evaluation, "_tables", lambda *a, **k: {})
    config = RolloutConfig(budget=Budget(call_seconds=CALL_SECONDS))
    evaluation.evaluate(None, "sim:x", list(tasks.values()), "e", "n", "c", config, None)
    with verifier_for(tasks, seen["budget"], None, strict=seen.get("strict", False)) as verifier:
        results = verifier.verify_many([(r["task_id"], r["turns"], r["rollout_id"]) for r in rows])
    return [reward_of(v) for v in results]


@pytest.mark.parametrize("weight,partial", [(0.0, False), (1.0, True)])
def test_grpo_export_and_evaluation_agree_on_every_rollout(tasks, tiny_tokenizer, monkeypatch, weight, partial):
    offered = {c.split("(")[0] for turn in tasks["multi_turn_base_3"].turns for c in turn.ground_truth}
    assert "get_stock_info" not in offered
    scripted = Scripted(tasks, {"multi_turn_base_3": "get_stock_info(symbol='AAPL')",
                                SLOW: "power(base=10, exponent=1000000000)"})
    scored = (_grpo_rows(tasks, tiny_tokenizer, SimPolicy("sim:test", WEAK), SIM_TASKS, weight)
              + _grpo_rows(tasks, tiny_tokenizer, scripted, ["multi_turn_base_3", SLOW], weight))
    rows = [row for row, _ in scored]
    grpo = [reward for _, reward in scored]
    exported = [verifier_reward([None], [_completion(row)], task=[to_trl(tasks[row["task_id"]])["task"]],
                                partial=partial, budget=Budget(call_seconds=CALL_SECONDS))[0] for row in rows]
    assert exported == grpo
    if not partial:  # evaluation counts passes (the reward without partial credit) by the benchmark's rules:
        # the same as GRPO's but on rollouts only BFCL's looser checker passes (the scripted one among them)
        evaluated = _evaluation_rewards(tasks, rows, monkeypatch)
        differ = [(i, e, g) for i, (e, g) in enumerate(zip(evaluated, grpo)) if e != g]
        assert differ and all((e, g) == (1.0, 0.0) for _, e, g in differ)
        assert "multi_turn_base_3" in {rows[i]["task_id"] for i, _, _ in differ}
        assert evaluated.count(1.0) > grpo.count(1.0) >= 1
    # the cases that tell definitions apart are there: a pass, a fail, a looser-checker-only pass, a timeout
    by_task = {row["task_id"]: (row, reward) for row, reward in scored}
    loose_row = by_task["multi_turn_base_3"][0]
    assert loose_row["verdict"]["reward"] == 0.0
    with verifier_for(tasks, Budget(call_seconds=CALL_SECONDS), None, strict=False) as loose:
        assert next(iter(loose.verify_many([(loose_row["task_id"], loose_row["turns"], None)]))).reward == 1.0
    slow_row, slow_reward = by_task[SLOW]
    assert slow_reward == 0.0 and slow_row["verdict"]["attribution"] == "timeout"
    assert 1.0 in grpo and any(0.0 < r < 1.0 for r in grpo) == partial
