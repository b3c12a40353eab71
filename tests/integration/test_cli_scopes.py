"""Scopes through the CLI against the real server: listed, checked, explained, deleted; one vocabulary."""

from __future__ import annotations

import io
import json

import pytest

from ace.cli import main
from ace.stages import simulate_to_file
from ace_env import bfcl
from ace_env.sim import parse_weakness
from ace_graph.frontier import FrontierConfig, frontier
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore

SCOPE = "cl/sim/round-0"
OTHER = "other/sim/round-0"
WEAKNESS = {
    "defaults": {"error": 0.01},
    "composition": [{"from": "get_zipcode_based_on_city", "to": "estimate_distance", "error": 0.7},
                    {"from": "place_order", "to": "get_order_details", "error": 0.7}],
}


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database, tmp_path_factory):
    """Scope cl/sim/round-0 from a folder of two files (1,600 rollouts) and other/sim/round-0 (300)."""
    with neo4j_driver.session(database=neo4j_database) as s:
        s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    tasks = bfcl.load_tasks("base")
    spec = parse_weakness(WEAKNESS)
    root = tmp_path_factory.mktemp("scopes")
    folder = root / "parts"
    folder.mkdir()
    simulate_to_file(tasks, 800, spec, 1, folder / "a.jsonl", prefix="a")
    simulate_to_file(tasks, 800, spec, 2, folder / "b.jsonl", prefix="b")
    simulate_to_file(tasks, 300, spec, 3, root / "other.jsonl")
    return {"store": GraphStore(neo4j_driver, neo4j_database), "folder": folder, "other": root / "other.jsonl"}


def test_ingest_takes_a_folder_and_a_scope_and_prints_a_task_table(graph, capsys):
    assert main(["ingest", str(graph["folder"]), "--scope", SCOPE, "--tasks", "bfcl:base", "--show", "all"]) == 0
    out = capsys.readouterr().out
    assert "1600 rollouts read from 2 files, 1600 stored" in out
    assert "rollouts per task (all)" in out and "multi_turn_base_0 " in out
    # the old spelling of the scope still works
    assert main(["ingest", str(graph["other"]), "--experiment", "other", "--policy", "sim", "--checkpoint",
                 "round-0", "--tasks", "bfcl:base", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 300


def test_ingest_prints_markup_in_data_literally(graph, tmp_path, capsys):
    task = bfcl.load_tasks("base")[0]
    from ace_env.verifier import ground_truth_rollout

    f = tmp_path / "m.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in (
        {"rollout_id": "ok", "task_id": task.id, "turns": ground_truth_rollout(task)},
        {"rollout_id": "bad", "task_id": "[/red]", "turns": []},
        {"rollout_id": "bad2", "task_id": "[link=http://x]y[/link]", "turns": []},
    )) + "\n")
    assert main(["ingest", str(f), "--scope", "mk/sim/c", "--tasks", "bfcl:base", "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert "'[/red]'" in captured.err and "[link=http://x]y[/link]" in captured.err
    assert "1 rollouts read, 1 stored" in captured.out


def test_ingest_reports_progress_per_rollout(graph, tmp_path):
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    f = simulate_to_file(list(tasks.values()), 40, parse_weakness({}), 9, tmp_path / "p.jsonl", prefix="p")
    seen: list[int] = []
    ingest_file(graph["store"], f.out, tasks, "prog", "sim", "c", batch_size=1000, on_read=seen.append,
                seed_tasks=False)
    assert len(seen) == 40  # finer than a batch of 1,000


def test_scopes_lists_experiments_and_counts(graph, capsys):
    assert main(["scopes", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    assert {SCOPE, OTHER} <= set(rows)
    assert rows[SCOPE]["rollouts"] == 1600 and rows[OTHER]["rollouts"] == 300
    assert rows[SCOPE]["compositions_tool"] > 10 and rows[SCOPE]["compositions_skill"] > 10
    assert main(["scopes", "-e", "cl", "--json"]) == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)] == [SCOPE]
    assert main(["scopes"]) == 0
    out = capsys.readouterr().out
    assert SCOPE in out and OTHER in out and "compositions_tool" in out
    assert main(["scopes", "-e", "nope"]) == 1


def test_unknown_scope_or_level_lists_what_exists(graph, capsys):
    assert main(["query", "weak-compositions", "--scope", "cl/sim/round-9"]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and SCOPE in err and OTHER in err
    assert main(["query", "weak-compositions", "--scope", SCOPE, "-P", "level=tools"]) == 1
    assert "valid levels: skill, tool" in capsys.readouterr().err


def test_scope_flag_equals_param_and_frontier_api_equals_query(graph, capsys):
    assert main(["query", "frontier", "--scope", SCOPE, "-P", "level=tool", "--json"]) == 0
    by_flag = json.loads(capsys.readouterr().out)
    assert main(["query", "frontier", "-P", f"scope={SCOPE}", "-P", "level=tool", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_flag
    assert by_flag == frontier(graph["store"], SCOPE, FrontierConfig(level="tool"))
    assert {(r["from"], r["to"]) for r in by_flag} >= {("place_order", "get_order_details")}


def test_empty_result_says_which_threshold(graph, capsys):
    assert main(["query", "weak-compositions", "--scope", SCOPE, "-P", "min_support=100000", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    assert "0 rows: all" in captured.err and "tool compositions below min_support=100000" in captured.err  # tool: the default


def test_curriculum_and_synth_refuse_another_experiments_scope(graph, capsys, tmp_path):
    assert main(["curriculum", "step", "-e", "ux", "--scope", SCOPE]) == 1
    assert "belongs to experiment 'cl', not 'ux'" in capsys.readouterr().err
    assert main(["curriculum", "status", "-e", "ux", "--json"]) == 1  # nothing was stored, and --json says so
    assert main(["synth", "-e", "ux", "--scope", SCOPE, "--out", str(tmp_path / "t.jsonl")]) == 1
    assert "belongs to experiment 'cl', not 'ux'" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()
    assert main(["query", "capability-history", "-P", "experiment=ux", "-P", "policy=sim"]) == 1
    err = capsys.readouterr().err
    assert "experiment 'ux' has no scopes" in err and "cl" in err


def test_curriculum_step_summarises(graph, capsys):
    import re

    def two_rounds(experiment, scope, *flags):
        # round 1 sets the units up; round 2 (same evidence, allowed) moves many of them
        assert main(["curriculum", "step", "-e", experiment, "--scope", scope, "--level", "tool", "--json"]) == 0
        capsys.readouterr()
        assert main(["curriculum", "step", "-e", experiment, "--scope", scope, "--level", "tool",
                     "--allow-repeat", *flags]) == 0
        return capsys.readouterr().out

    summary = two_rounds("cl", SCOPE).splitlines()
    n = int(re.search(r"(\d+) decisions", summary[0]).group(1))
    assert n > 100 and len(summary) < 50  # the old command printed a row per decision
    assert "more; all decisions with --details or --json" in summary[-1]
    # the same evidence in a second experiment, with every decision printed
    assert main(["ingest", str(graph["folder"]), "--scope", "cl2/sim/round-0", "--tasks", "bfcl:base",
                 "--show", "none", "--json"]) == 0
    capsys.readouterr()
    details = two_rounds("cl2", "cl2/sim/round-0", "--details").splitlines()
    assert int(re.search(r"(\d+) decisions", details[0]).group(1)) == n
    assert len(details) > n


def test_scope_delete_asks_and_removes_aggregates(graph, capsys, monkeypatch):
    def count(query):
        with graph["store"].driver.session(database=graph["store"].database) as s:
            return s.run(query, scope=OTHER).single()[0]

    assert count("MATCH ()-[c:COMPOSES {scope: $scope}]->() RETURN count(c)") > 0
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["scope", "delete", OTHER]) == 1
    assert count("MATCH (r:Rollout {scope: $scope}) RETURN count(r)") == 300
    assert main(["scope", "delete", OTHER, "--yes", "--json"]) == 0
    out = capsys.readouterr().out
    d = json.loads(out[out.index("{"):])
    assert d["scopes"] == 1 and d["rollouts"] == 300 and d["compositions"] > 0
    for q in ("MATCH (r:Rollout {scope: $scope}) RETURN count(r)",
              "MATCH ()-[c:COMPOSES {scope: $scope}]->() RETURN count(c)",
              "MATCH (s:Scope {key: $scope}) RETURN count(s)"):
        assert count(q) == 0, q
    assert main(["scopes", "--json"]) == 0
    assert OTHER not in {r["key"] for r in json.loads(capsys.readouterr().out)}
    assert main(["scope", "delete", OTHER, "--yes"]) == 1
    assert SCOPE in capsys.readouterr().err
