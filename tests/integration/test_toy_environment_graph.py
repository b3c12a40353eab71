"""The toy third environment (tests/toyenv.py) end to end through the command line, as BFCL and τ² run:
`ace sim rollouts` with a planted composition, `ace verify --json`, `ace ingest`, and `ace query
weak-compositions` finds the composition; nothing outside the toy's module is edited for it."""

from __future__ import annotations

import json

import pytest
import toyenv

from ace.cli import main

SCOPE = "toy-e2e/sim/round-0"


@pytest.fixture
def toy(monkeypatch):
    return toyenv.register(monkeypatch)


def test_the_toy_runs_from_simulation_to_a_weak_composition(toy, clean_db, neo4j_database, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", "toy", "--n", "400", "--seed", "1", "--out", str(out),
                 "--weakness", str(toyenv.composition_file(tmp_path))]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    planted = [r for r in rows if any(s["cause"] == "composition" for s in r["meta"]["slips"])]
    assert len(planted) >= 40
    capsys.readouterr()

    assert main(["verify", str(out), "--tasks", "toy", "--json"]) == 0
    verdicts = {v["rollout_id"]: v for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert len(verdicts) == 400
    for r in rows:  # a rollout without slips is rewarded; a planted slip fails it there, as the wrong tool
        v = verdicts[r["rollout_id"]]
        if not r["meta"]["slips"]:
            assert v["reward"] == 1.0, v
        else:
            first = r["meta"]["slips"][0]
            assert (v["reward"], v["failing_step"]) == (0.0, first["step"]), (r, v)
            assert v["attribution"] == ("wrong_tool" if first["kind"] == "wrong_tool" else "malformed_call")

    assert main(["ingest", str(out), "--scope", SCOPE, "--tasks", "toy", "--show", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["created"], report["invalid"]) == (400, 0)
    tools = {r["name"]: (r["class"], sorted(r["skills"])) for r in clean_db.execute_query(
        "MATCH (x:Tool)-[:EXERCISES]->(k:Skill) WHERE x.name IN $names "
        "RETURN x.name AS name, x.class AS class, collect(k.id) AS skills",
        names=list(toyenv.TOOLS), database_=neo4j_database).records}
    assert tools == {name: ("toy", sorted(skills)) for name, skills in toyenv.SKILLS.items()}

    assert main(["query", "weak-compositions", "--scope", SCOPE, "-P", "level=tool", "--json"]) == 0
    top = json.loads(capsys.readouterr().out)
    assert top and (top[0]["from"], top[0]["to"]) == toyenv.COMPOSITION, top
    assert top[0]["verdict"] == "composition"
    assert all((r["from"], r["to"]) != ("incr", "incr") for r in top)  # incr is weak only after put

    # rerun: the same rollouts are already stored
    assert main(["ingest", str(out), "--scope", SCOPE, "--tasks", "toy", "--show", "none", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["already_stored"] == 400


def test_the_toy_is_scored_through_the_gold_prefix(toy, clean_db, neo4j_database, tmp_path, capsys):
    """`ace eval --tasks toy --gold-prefix --generate` with a sim: policy planting put -> incr: every gold step
    scored with the gold before it (its entry's gold_prefix), stored as one gold-prefix rollout per task."""
    weakness = tmp_path / "w.toml"
    weakness.write_text('[defaults]\nerror = 0.0\n[[composition]]\nfrom = "put"\nto = "incr"\nerror = 1.0\n'
                        'kind = "wrong_tool"\n', encoding="utf-8")
    out = tmp_path / "toy.gold-prefix.jsonl"
    assert main(["eval", "--policy", f"sim:{weakness}", "--tasks", "toy", "--gold-prefix", "--generate",
                 "-e", "toy-gp", "-c", "0", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["steps"], result["rollouts"], result["rewarded"], result["prefix"]) == (9, 4, 3, "task-prompt")
    tools = {r["key"]: (r["attempts"], r["successes"]) for r in result["tools"]}
    assert tools == {"put": (4, 4), "incr": (3, 2), "get": (2, 2)}  # incr fails only after put
    failed = [json.loads(line) for line in out.read_text().splitlines() if not json.loads(line)["passed"]]
    assert [(r["task_id"], r["tool"], r["prev_tool"], r["attribution"]) for r in failed] == [
        ("toy:put_then_incr", "incr", "put", "wrong_tool")]
