"""``ace eval --tasks tau2:airline``: a real (tiny, offline) model plays τ²'s agent against the scripted user;
the dialogues are verified, ingested into a scope with their oracle steps, and labelled exact."""

from __future__ import annotations

import json

import pytest
import torch  # noqa: F401  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_env.tau2.tasks import load_tasks
from ace_graph.store import GraphStore

SCOPE = "tau2eval/tiny/step-0"
TERMINATIONS = {"user_stop", "agent_stop", "max_turns", "too_many_errors", "agent_error", "user_error"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tau2-tiny") / "model", seed=3)


def stored(driver, database, scope):
    """Every stored rollout of the scope with its oracle steps in order (tool, outcome)."""
    return {r["id"]: r for r in driver.execute_query(
        "MATCH (r:Rollout {scope: $scope}) OPTIONAL MATCH (r)-[:HAS_STEP]->(s:Step) WITH r, s ORDER BY s.flat "
        "RETURN r.rollout_id AS id, r.reward AS reward, r.reward_method AS reward_method, r.tau2_reward AS tau2_reward, "
        "r.communicate_ok AS communicate_ok, r.communicate_method AS communicate_method, r.judged_nl AS judged_nl, "
        "r.judged_by AS judged_by, r.judged_verdicts AS judged_verdicts, r.attribution AS attribution, "
        "collect([s.tool, s.outcome]) AS steps", scope=scope, database_=database).records}


def test_tau2_eval_of_a_tiny_model_ingests_a_scope_with_its_steps(clean_db, neo4j_database, tiny, tmp_path, capsys):
    out = tmp_path / "tau2.jsonl"
    code = main(["eval", "-p", f"hf:{tiny}", "--tasks", "tau2:airline", "--limit", "2", "-e", "tau2eval",
                 "-c", "step-0", "--name", "tiny", "--max-tokens", "8", "--max-turns", "6", "--out", str(out),
                 "--temperature", "1.0", "--json"])  # sampled: the random model's greedy answer is empty
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    tasks = {t.id: t for t in load_tasks("airline")[:2]}
    assert result["scope"] == SCOPE and result["environment"] == "tau2" and result["reward_method"] == "exact"
    assert result["tasks"] == 2 and result["rollouts"] == 2
    assert result["steps"] == sum(max(len(t.agent_actions), 1) for t in tasks.values())
    assert result["rollout"]["user"] == "scripted" and result["rollout"]["judge"] is None
    assert result["judged"]["rollouts_judged"] == 0 and result["judged"]["nl_pass_rate"] is None
    assert result["judged"]["rollouts_with_assertions"] == 2  # airline: every task has NL assertions
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rollout_id"] for r in rows] == ["tau2:airline:0#0", "tau2:airline:1#0"]
    for r in rows:
        assert r["meta"]["termination"] in TERMINATIONS and r["meta"]["dialogue_turns"] <= 6
        assert r["messages"][0] == {"role": "assistant", "content": "Hi! How can I help you today?"}
        assert r["meta"]["checks"]["communicate"]["method"] == "exact"
        assert r["meta"]["checks"]["nl_assertions"]["method"] is None  # no --judge: not checked
    # the agent answered and the scripted user spoke again: real dialogues, not one empty answer
    assert any(r["meta"]["dialogue_turns"] > 2 and r["meta"]["agent_replies"] >= 2 for r in rows)
    graph = stored(clean_db, neo4j_database, SCOPE)
    assert set(graph) == {r["rollout_id"] for r in rows}
    passed = 0
    for r in rows:
        g = graph[r["rollout_id"]]
        task = tasks[r["task_id"]]
        # the verifier at ingest (the row's calls replayed, every gold agent step needed) is at least as strict
        # as the final-state check in the dialogue's own worker
        assert g["reward"] <= r["meta"]["state_reward"]
        assert g["reward_method"] == "exact"
        assert (g["judged_nl"], g["judged_by"], g["judged_verdicts"]) == (None, None, None)
        assert g["communicate_ok"] == r["meta"]["checks"]["communicate"]["ok"]
        assert g["tau2_reward"] == r["meta"]["checks"]["tau2_reward"]["value"] == \
            (0.0 if g["communicate_ok"] is False else r["meta"]["state_reward"])
        # the oracle steps observed, in the gold's order (one tool-less step for a task without any): τ²'s rules
        # judge the end state, so a gold read never made is not observed, and a failure where no gold step is at
        # fault (a value not said, a stop) fails no step
        gold = [a.name for a in task.agent_actions] or [None]
        observed = [s for s in g["steps"] if s[1] is not None]
        tools = [s[0] for s in observed]
        outcomes = [s[1] for s in observed]
        it = iter(gold)
        assert all(any(t == x for x in it) for t in tools), (tools, gold)  # a subsequence of the gold
        if g["reward"] == 1.0:
            assert set(outcomes) <= {"success"}
            passed += 1
        else:
            assert "fail" not in outcomes[:-1] and g["attribution"]
    assert result["rewarded"] == passed and result["pass_rate"] == passed / 2
    store = GraphStore(clean_db, neo4j_database)
    tools = {r["key"] for r in store.run("capability-profile", scope=SCOPE, level="tool")}
    # (τ²'s rules observe only the gold steps the model made: a tiny model may make none)
    assert tools <= {n for t in tasks.values() for n in t.tool_names}, tools
    # a second checkpoint is a scope of its own; capability-history shows both
    assert main(["eval", "-p", f"hf:{tiny}", "--tasks", "tau2:airline", "--limit", "1", "-e", "tau2eval",
                 "-c", "step-1", "--name", "tiny", "--max-tokens", "8", "--max-turns", "4", "--json"]) == 0
    capsys.readouterr()
    scopes = {s["checkpoint"]: s["rollouts"] for s in store.run("scopes", experiment="tau2eval")}
    assert scopes == {"step-0": 2, "step-1": 1}
    # evaluating into a scope that holds rollouts is refused before any work (its labels would be another run's)
    assert main(["eval", "-p", f"hf:{tiny}", "--tasks", "tau2:airline", "--limit", "1", "-e", "tau2eval",
                 "-c", "step-1", "--name", "tiny", "--json"]) == 1
    assert "already holds rollouts" in capsys.readouterr().err
