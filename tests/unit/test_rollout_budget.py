"""The rollout engine's tool calls under a time and memory budget: a runaway call ends only its rollout."""

from __future__ import annotations

import json
import time

import pytest

from ace.cli import main
from ace_env.bounded import BoundedVerifier
from ace_env.tasksets import load_task_set
from ace_env.verifier import RESOURCE_LIMIT, TIMEOUT
from ace_env.worker import Budget
from train.engine import RolloutConfig, RolloutEngine
from train.policies.sim import SimPolicy

MATH = "multi_turn_base_15"  # GorillaFileSystem + MathAPI: offers power() in every turn
POWER = "power(base=10, exponent=1000000000)"  # one C-level bigint operation: never returns


@pytest.fixture(scope="module")
def tasks():
    return load_task_set("bfcl:base")


@pytest.fixture()
def zero_weakness(tmp_path):
    path = tmp_path / "zero.toml"
    path.write_text("[defaults]\nerror = 0.0\n")
    return path


class Runaway(SimPolicy):
    """The perfect simulated agent, except that one conversation opens user turn ``turn`` with ``call``."""

    def __init__(self, weakness_path, victim: str, call: str, turn: int):
        inner = SimPolicy.from_spec(f"sim:{weakness_path}")
        super().__init__("scripted:runaway", inner.weakness)
        self.victim, self.call, self.turn = victim, call, turn

    def generate(self, conversations, config):
        out = super().generate(conversations, config)
        for conv, reply in zip(conversations, out):
            if conv.key == self.victim and conv.turn == self.turn and conv.messages[-1]["role"] == "user":
                reply.message["content"] = f"[{self.call}]"
        return out


def _batch(tasks):
    return [tasks[MATH], tasks["multi_turn_base_0"], tasks["multi_turn_base_1"]]


def test_a_hanging_call_ends_only_its_rollout_and_the_verifier_agrees(tasks, zero_weakness):
    batch = _batch(tasks)
    victim = f"{MATH}#1"
    config = RolloutConfig(n_per_task=2, batch_size=6, budget=Budget(call_seconds=1.0))
    # The calls come second in turn 1: the other rollouts' environments already hold state when the worker
    # is killed, and are rebuilt in the fresh one.
    start = time.monotonic()
    rows = list(RolloutEngine(Runaway(zero_weakness, victim, POWER, turn=1), config).run(batch))
    assert time.monotonic() - start < 20  # one 1 s budget and a restart, not a hung batch
    by_id = {r["rollout_id"]: r for r in rows}
    assert set(by_id) == {f"{t.id}#{g}" for t in batch for g in (0, 1)}
    hung = by_id.pop(victim)
    assert hung["meta"]["ended"] == TIMEOUT and "power" in hung["meta"]["ended_detail"]
    assert len(hung["turns"]) == 2 and hung["turns"][-1] == [POWER]  # the offending call is kept, last
    assert hung["messages"][-1]["role"] == "tool" and "budget" in hung["messages"][-1]["content"]

    # The other conversations went on, and exactly as they do when no call hangs (same tool results:
    # their environments were rebuilt to the same state).
    calm = {r["rollout_id"]: r for r in RolloutEngine(SimPolicy.from_spec(f"sim:{zero_weakness}"),
                                                      RolloutConfig(n_per_task=2, batch_size=6)).run(batch)}
    for rid, row in by_id.items():
        assert "ended" not in row["meta"]
        assert row["messages"] == calm[rid]["messages"], rid
        assert row["turns"] == calm[rid]["turns"]

    with BoundedVerifier(tasks, Budget(call_seconds=1.0)) as bv:
        verdicts = dict(zip([r["rollout_id"] for r in rows],
                            bv.verify_many([(r["task_id"], r["turns"], r["rollout_id"]) for r in rows])))
    assert verdicts[victim].attribution == TIMEOUT and verdicts[victim].reward == 0.0
    assert all(verdicts[rid].reward == 1.0 for rid in by_id)


def test_verify_cli_reports_the_timeout(tasks, zero_weakness, tmp_path, capsys):
    rows = list(RolloutEngine(Runaway(zero_weakness, f"{MATH}#0", POWER, turn=0),
                              RolloutConfig(budget=Budget(call_seconds=1.0))).run([tasks[MATH], tasks["multi_turn_base_1"]]))
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    main(["verify", "--tasks", "bfcl:base", "--rollouts", str(path), "--call-timeout", "1", "--json"])
    verdicts = {v["rollout_id"]: v for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert verdicts[f"{MATH}#0"]["attribution"] == TIMEOUT
    assert verdicts["multi_turn_base_1#0"]["reward"] == 1.0


def test_a_call_over_the_memory_budget_ends_its_rollout_as_resource_limit(tasks, zero_weakness):
    runaway = Runaway(zero_weakness, f"{MATH}#0", "square_root(number=2, precision=100000000)", turn=0)
    rows = list(RolloutEngine(runaway, RolloutConfig(budget=Budget(call_seconds=120, memory_mb=200)))
                .run([tasks[MATH], tasks["multi_turn_base_1"]]))
    by_task = {r["task_id"]: r for r in rows}
    assert by_task[MATH]["meta"]["ended"] == RESOURCE_LIMIT
    assert "ended" not in by_task["multi_turn_base_1"]["meta"]
    assert len(by_task["multi_turn_base_1"]["turns"]) == len(tasks["multi_turn_base_1"].turns)


def test_rollout_cli_takes_the_verifier_budget_flags(tmp_path, zero_weakness, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["rollout", "-p", f"sim:{zero_weakness}", "--tasks", "bfcl:base", "--limit", "2", "--out", str(out),
                 "--call-timeout", "2.5", "--memory-limit", "512", "--json"]) == 0
    totals = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert totals["rollouts"] == 2 and totals["over_budget"] == 0
    assert main(["rollout", "-p", f"sim:{zero_weakness}", "--tasks", "bfcl:base", "--out", str(out), "--force",
                 "--call-timeout", "-1"]) == 1
    assert "--call-timeout must be at least 0" in capsys.readouterr().err
