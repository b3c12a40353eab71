"""Real agents' τ²-bench result files into the skill graph: one scope per (experiment, model, checkpoint), τ²'s
recorded reward stored beside ACE's verdict, nothing stored from a bad file, and no failure charged to a read."""

from __future__ import annotations

import json
from pathlib import Path

from ace import demo
from ace.cli import main
from ace_env.tau2.results import read_results_cached
from ace_env.tau2.verify import is_write, tool_kinds
from ace_graph.store import GraphStore

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "tau2-results"


def _q(db, database, cypher, **params):
    return [dict(r) for r in db.execute_query(cypher, database_=database, **params).records]


def test_real_files_ingest_as_two_checkpoints_of_one_policy(clean_db, neo4j_database, tmp_path, capsys):
    base, sft = RESULTS / "gpt-4.1_airline_1trial.json", RESULTS / "gpt-4.1-sft_airline_1trial.json"
    # the policy comes from the file (info.agent_info.llm) unless -p names it
    assert main(["ingest", str(base), "-e", "real", "-c", "base", "--show", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "real/gpt-4.1/base"
    assert main(["ingest", str(sft), "-e", "real", "-p", "gpt-4.1", "-c", "sft", "--round", "1", "--show", "none",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 20
    rows = _q(clean_db, neo4j_database, "MATCH (r:Rollout) RETURN r.scope AS scope, r.rollout_id AS id, "
              "r.reward AS reward, r.reference_reward AS ref, r.stricter_because AS stricter")
    assert len(rows) == 40 and all(r["reward"] == r["ref"] for r in rows)
    doc = json.loads(sft.read_text())
    assert {r["id"] for r in rows if r["scope"] == "real/gpt-4.1/sft"} == {s["id"] for s in doc["simulations"]}
    assert sum(r["reward"] for r in rows if r["scope"] == "real/gpt-4.1/base") == 10  # τ²: 10 of 20
    assert sum(r["reward"] for r in rows if r["scope"] == "real/gpt-4.1/sft") == 13  # τ²: 13 of 20
    assert any(r["stricter"] for r in rows if r["reward"] == 1.0)  # listed, not counted
    # a failed step is a gold write (or the abstain step of a task that needs none): never a read
    failed = _q(clean_db, neo4j_database, "MATCH (r:Rollout)-[:HAS_STEP]->(s:Step {outcome: 'fail'}) "
                "RETURN s.tool AS tool, r.attribution AS why")
    assert failed and all(f["tool"] is None or is_write("airline", _Call(f["tool"])) for f in failed), failed
    # the scopes' capability history: the two checkpoints in order
    capsys.readouterr()
    assert main(["query", "capability-history", "-P", "experiment=real", "-P", "policy=gpt-4.1", "-P", "level=tool",
                 "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert {h["checkpoint"] for h in history} == {"base", "sft"}


class _Call:
    def __init__(self, name):
        self.name, self.requestor = name, "assistant"


def test_telecom_is_ingested_with_the_users_calls_as_the_users(clean_db, neo4j_database, capsys):
    path = RESULTS / "gpt-4.1_telecom_1trial.json"
    assert main(["ingest", str(path), "-e", "real", "-c", "base", "--show", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 40
    rows = _q(clean_db, neo4j_database, "MATCH (r:Rollout {scope: 'real/gpt-4.1/base'}) "
              "RETURN r.reward AS reward, r.reference_reward AS ref, r.calls AS calls")
    assert sum(r["reward"] for r in rows) == 18 and all(r["reward"] == r["ref"] for r in rows)
    assert any('"requestor": "user"' in r["calls"] for r in rows)


def test_a_bad_file_stores_nothing(clean_db, neo4j_database, tmp_path, capsys):
    doc = json.loads((RESULTS / "gpt-4.1_airline_1trial.json").read_text())
    doc["simulations"][-1]["messages"].append({"role": "user", "tool_calls": [{"name": "x", "requestor": "robot"}]})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["ingest", str(bad), "-e", "real", "-c", "base", "--show", "none"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "requestor 'robot'" in err
    assert _q(clean_db, neo4j_database, "MATCH (r:Rollout) RETURN count(r) AS n")[0]["n"] == 0


def test_pooled_real_agents_list_weak_compositions_none_charged_to_what_tau2_passes(clean_db, neo4j_database):
    """One agent's file is too small for any composition to stand out; every shared file in one scope lists
    compositions, each at a write of its domain, and every failure behind them is a conversation τ² failed
    (so none is charged to a harmless read, to call order, or to any other rule τ² does not check)."""
    store = GraphStore(clean_db, neo4j_database)
    files = sorted(RESULTS.glob("*.json"))
    pooled = demo.pooled_agents(store, "real", files)
    assert pooled["with_reference"] == pooled["agree"] == 250
    assert pooled["weak"], pooled
    for w in pooled["weak"]:
        assert w["verdict"] in ("composition", "ambiguous") and w["n"] >= 3 and w["failures"] > 0, w
        behind = _q(clean_db, neo4j_database,
                    "MATCH (r:Rollout {scope: $scope})-[:HAS_STEP]->(s:Step {outcome: 'fail', tool: $to}) "
                    "WHERE s.prev_tool = $frm RETURN r.reference_reward AS ref, r.task_id AS task",
                    scope=pooled["scope"], to=w["to"], frm=w["from"])
        assert len(behind) == w["failures"], (w, behind)
        assert all(b["ref"] == 0.0 for b in behind), (w, behind)
    # no failing step anywhere in the pooled scope belongs to a conversation τ² passed, and none is a read
    failed = _q(clean_db, neo4j_database, "MATCH (r:Rollout {scope: $scope})-[:HAS_STEP]->(s:Step {outcome: 'fail'}) "
                "RETURN s.tool AS tool, r.reference_reward AS ref, r.task_id AS task", scope=pooled["scope"])
    assert failed and all(f["ref"] == 0.0 for f in failed)
    kinds = {d: tool_kinds(d) for d in {read_results_cached(f).domain for f in files}}
    charged = [(f["tool"], kinds[_domain(f["task"])].get(("assistant", f["tool"]))) for f in failed if f["tool"]]
    assert charged and all(kind in ("write", "generic") for _, kind in charged), charged  # never a read

def _domain(task_id: str) -> str:
    return task_id.split(":")[1]
