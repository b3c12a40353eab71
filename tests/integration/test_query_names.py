"""Every name a named query is given is checked against the real graph: a wrong one is one error line.

The walk below covers every read query's ``Names:`` declarations, so a new query (or a new named
parameter) is covered without touching this file.
"""

from __future__ import annotations

import json

import pytest
from simgraph import simulated_graph

from ace.cli import main
from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.reports import GraphReports

SCOPE, LATER = "nm/sim/round-0", "nm/sim/round-1"
PAIR = ("place_order", "get_order_details")
WEAKNESS = {"defaults": {"error": 0.01},
            "composition": [{"from": PAIR[0], "to": PAIR[1], "error": 0.7, "kind": "argument"}]}


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database, tmp_path_factory):
    """Two scopes of one experiment (400 and 200 simulated rollouts on BFCL base, one planted composition)."""
    store, _, _ = simulated_graph(neo4j_driver, neo4j_database, tmp_path_factory, WEAKNESS,
                                  [(SCOPE, 1, 400), (LATER, 2, 200)])
    return store


def _valid(store) -> dict[str, object]:
    """A valid value of every kind of name, read from the fixture graph."""
    rollout = store.run("known-rollouts", scope=SCOPE)[0]["name"]
    return {"scope": SCOPE, "experiment": "nm", "policy": "sim", "level": "tool", "node": PAIR[0], "tool": PAIR[0],
            "skill": "result_extraction", "rollout": rollout, "task": "bfcl:multi_turn_base_0", "environment": "bfcl"}


def _wrong(kind: str, value: str) -> str:
    return {"level": "tools", "environment": "bfcll"}.get(kind, value + "x")


def _argv(name: str, params: dict) -> list[str]:
    return ["query", name, *[x for k, v in params.items() for x in ("-P", f"{k}={json.dumps(v)}")], "--json"]


def test_a_wrong_name_in_every_named_parameter_is_one_error_line(graph, capsys):
    valid = _valid(graph)
    covered = []
    for name in queries.read_queries():
        q = queries.load(name)
        if not q.names:
            continue
        good = {p: valid[k] for p, k in q.names.items()}
        good = {p: ([v] if queries.param_kind(q.hints[p]) == "list" else v) for p, v in good.items()}
        if name == "compare-policies":
            good["scopes"] = [SCOPE, LATER]
        assert main(_argv(name, good)) == 0, (name, capsys.readouterr().err)
        capsys.readouterr()
        for param, kind in q.names.items():
            right = valid["tool" if kind == "node" else kind]
            bad = _wrong(kind, right)
            value = good[param][:-1] + [bad] if isinstance(good[param], list) else bad
            assert main(_argv(name, {**good, param: value})) == 1, (name, param)
            out = capsys.readouterr()
            lines = out.err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error:"), (name, param, out.err)
            assert param in lines[0] and repr(bad) in lines[0] and right in lines[0], (name, param, lines[0])
            assert out.out == "", (name, param)
            covered.append(f"{name}.{param}")
    # the walk reached the parameters the issue named, and every query that names something
    assert {"failed-after.after", "failed-after.skill", "view-rollout.rollout", "near-success.from",
            "view-synth-for-edge.to", "compare-policies.scopes", "view-environment-members.environment", "view-environment-members.environments",
            "view-scope-environments.environments"} <= set(covered)
    assert len(covered) == sum(len(queries.load(n).names) for n in queries.read_queries()) > 50


def test_failed_after_takes_tool_names_and_says_so_for_a_skill_level(graph, capsys):
    argv = ["query", "failed-after", "--scope", SCOPE, "-P", f"after={PAIR[0]}", "-P", f"skill={PAIR[1]}", "--json"]
    assert main(argv) == 0  # no level given: tool names choose the tool level
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["failing_tool"] == PAIR[1] and r["previous_tool"] == PAIR[0] for r in rows)
    assert main([*argv, "-P", "level=skill"]) == 1
    err = capsys.readouterr().err
    assert f"'{PAIR[0]}' is a tool: pass -P level=tool" in err and err.count("\n") == 1
    assert main(["query", "failed-after", "--scope", SCOPE, "-P", "after=plac_order", "-P", f"skill={PAIR[1]}"]) == 1
    assert "nearest of" in (err := capsys.readouterr().err) and "place_order" in err
    # A tool beside a skill (found by the second walkthrough of issue 36): "pass -P level=skill" would
    # only move the error to the tool; the line says the two are mixed.
    assert main(["query", "failed-after", "--scope", SCOPE, "-P", f"after={PAIR[0]}", "-P", "skill=result_extraction"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass -P level" not in err
    assert f"'result_extraction' is a skill and after='{PAIR[0]}' a tool: give both as tools or both as skills" in err


def test_a_rollout_is_taken_in_its_short_and_its_full_form(graph, capsys):
    rid = graph.run("known-rollouts", scope=SCOPE)[0]["name"]
    assert main(["query", "view-rollout", "--scope", SCOPE, "-P", f"rollout={rid}", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert len(short) == 1 and short[0]["rollout"] == rid
    for argv in (["--scope", SCOPE, "-P", f"rollout={SCOPE}/{rid}"], ["-P", f"rollout={SCOPE}/{rid}"]):
        assert main(["query", "view-rollout", *argv, "--json"]) == 0, argv  # the full form gives the scope too
        assert json.loads(capsys.readouterr().out) == short
    assert main(["query", "view-rollout", "--scope", LATER, "-P", f"rollout={SCOPE}/{rid}"]) == 1
    assert "of scope nm/sim/round-1" in (err := capsys.readouterr().err)
    # Found by the second walkthrough of issue 36: say that the full form names another scope, and that a
    # value with slashes that is no full key (no id, no checkpoint) is not one.
    assert f"(its full form names scope {SCOPE}: give that --scope, or none)" in err and err.count("\n") == 1
    for broken in (f"{SCOPE}/", f"nm/sim/{rid}"):
        assert main(["query", "view-rollout", "-P", f"rollout={broken}"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"rollout={broken!r} is not a full rollout key E/P/C/ID" in err, err
    assert GraphReports(graph.driver, graph.database).rollout(SCOPE, f"{SCOPE}/{rid}")["rollout"] == rid


def test_the_console_path_checks_names_too(graph):
    reports = GraphReports(graph.driver, graph.database)
    assert reports.run_checked("capability-profile", scope=SCOPE, level="tool")
    with pytest.raises(ConfigError, match="nearest of"):
        reports.run_checked("capability-profile", scope="nm/sim/round-9", level="tool")


def test_a_query_table_fits_columns_and_json_keeps_every_column(graph, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["query", "weak-compositions", "--scope", SCOPE, "-P", "min_support=5"]) == 0  # level: tool
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert PAIR[0] in out and "left out to fit 80 columns" in out and "verdict" in out.split("left out")[1]
    assert main(["query", "weak-compositions", "--scope", SCOPE, "-P", "min_support=5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert (PAIR[0], PAIR[1]) in {(r["from"], r["to"]) for r in rows} and all("verdict" in r for r in rows)
