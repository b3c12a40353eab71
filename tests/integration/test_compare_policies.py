"""Policies side by side: the named query compare-policies, `ace query compare-policies`, and the dashboard's
Compare policies page (AppTest, then a real browser opened by URL).

Fixture data: two scopes of the simulated agent made the way a user makes them (`ace sim rollouts`, then
`ace ingest`), one per weakness setting: WEAK plants the demo's five weak compositions
(ace_env/demo_weakness.toml), MILD two of them (tests/integration/synth_weakness.toml), so two compositions
are weak in both and three only in WEAK.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import streamlit as st
from appserver import chromium_page, served_app, settle
from apptesting import ok
from apptesting import page as app_page
from streamlit.testing.v1 import AppTest

from ace.cli import main
from ace_graph.errors import ConfigError, ScopeError
from ace_graph.reports import GraphReports, side_by_side
from ace_graph.stats import MIN_SUPPORT, wilson

ROOT = Path(__file__).resolve().parents[2]
WEAK_FILE = ROOT / "ace_env" / "demo_weakness.toml"
MILD_FILE = Path(__file__).with_name("synth_weakness.toml")
WEAK, MILD = "compare/weak/round-0", "compare/mild/round-0"
PLANTED = {name: {(c["from"], c["to"]) for c in tomllib.loads(f.read_text())["composition"]}
           for name, f in ((WEAK, WEAK_FILE), (MILD, MILD_FILE))}


def _clear_app_caches():
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database, tmp_path_factory):
    """Two scopes of 800 simulated BFCL base rollouts each; the reports over them."""
    with neo4j_driver.session(database=neo4j_database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    folder = tmp_path_factory.mktemp("compare")
    for scope, weakness, seed in ((WEAK, WEAK_FILE, 1), (MILD, MILD_FILE, 2)):
        out = folder / f"{scope.split('/')[1]}.jsonl"
        assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "800", "--weakness", str(weakness),
                     "--seed", str(seed), "--out", str(out)]) == 0
        assert main(["ingest", str(out), "--scope", scope, "--tasks", "bfcl:base", "--show", "none"]) == 0
    _clear_app_caches()
    yield GraphReports(neo4j_driver, neo4j_database)
    _clear_app_caches()


# --------------------------------------------------------------------------- the query


def test_the_query_lines_up_each_scopes_own_figures(graph):
    rows = graph.compare([WEAK, MILD], "tool", MIN_SUPPORT, 500)
    assert rows and set(rows[0]) == {"kind", "from", "to", "scope", "n", "failures", "success", "ci_low", "ci_high"}
    comps = [r for r in rows if r["kind"] == "composition"]
    # every composition once per scope, the scopes in the order given
    assert [r["scope"] for r in comps] == [WEAK, MILD] * (len(comps) // 2)
    own = {s: {(r["from"], r["to"]): r for r in graph.run("composition-success", scope=s, level="tool")
               if r["kind"] == "composition"} for s in (WEAK, MILD)}
    expected = {e for s in own for e, r in own[s].items() if r["n"] >= MIN_SUPPORT}
    assert {(r["from"], r["to"]) for r in comps} == expected
    for r in comps:
        mine = own[r["scope"]].get((r["from"], r["to"]))
        assert (r["n"], r["failures"]) == ((mine["n"], mine["failures"]) if mine else (0, 0))
        low, high = wilson(r["n"] - r["failures"], r["n"])
        assert r["ci_low"] == pytest.approx(low, abs=1e-9) and r["ci_high"] == pytest.approx(high, abs=1e-9)
        assert r["success"] == (pytest.approx(1 - r["failures"] / r["n"]) if r["n"] else None)
    # weakest first: each composition's lowest success (where supported) never falls along the list
    worst = [min(c["success"] for c in (x for x in comps if (x["from"], x["to"]) == e) if c["n"] >= MIN_SUPPORT)
             for e in dict.fromkeys((r["from"], r["to"]) for r in comps)]
    assert worst == sorted(worst)
    # per tool: the same figures as each scope's capability profile
    caps = [r for r in rows if r["kind"] == "capability"]
    assert caps and all(r["from"] is None for r in caps)
    for s in (WEAK, MILD):
        profile = {r["key"]: r for r in graph.capability(s, "tool")}
        for r in (c for c in caps if c["scope"] == s and c["n"]):
            p = profile[r["to"]]
            assert (r["n"], r["n"] - r["failures"]) == (p["attempts"], p["successes"])
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((p["ci_low"], p["ci_high"]))


def test_side_by_side_tells_the_planted_difference(graph):
    rows = graph.compare([WEAK, MILD], "tool", MIN_SUPPORT, 500)
    wide = {(r["from"], r["to"]): r for r in side_by_side(rows, [WEAK, MILD])}
    only_weak = PLANTED[WEAK] - PLANTED[MILD]
    assert len(only_weak) == 3
    for edge in only_weak:  # planted in WEAK alone: MILD's success is higher, the interval clear of 0
        assert wide[edge]["change_low"] > 0, (edge, wide[edge])
    for edge in PLANTED[WEAK] & PLANTED[MILD]:  # planted in both: both fail often there
        assert all(c["success"] < 0.75 for c in wide[edge]["scopes"].values()), (edge, wide[edge])


def test_the_scopes_are_checked(graph):
    with pytest.raises(ConfigError, match="between 2 and"):
        graph.compare([WEAK], "tool")
    with pytest.raises(ConfigError, match="more than once"):
        graph.compare([WEAK, WEAK], "tool")
    with pytest.raises(ScopeError, match="does not exist"):
        graph.compare([WEAK, "compare/nobody/round-0"], "tool")
    with pytest.raises(ConfigError, match="valid levels"):
        graph.compare([WEAK, MILD], "tools")


def test_ace_query_compare_policies(graph, capsys):
    capsys.readouterr()
    assert main(["query", "compare-policies", "-P", f"scopes={WEAK},{MILD}", "-P", "level=tool", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == graph.compare([WEAK, MILD], "tool", MIN_SUPPORT, 20)
    assert main(["query", "compare-policies", "-P", f'scopes={json.dumps([MILD, WEAK])}', "--json"]) == 0
    assert {r["scope"] for r in json.loads(capsys.readouterr().out)} == {WEAK, MILD}
    for bad, message in (([f"scopes={WEAK}"], "between 2 and"), ([f"scopes={WEAK},no/such/scope"], "does not exist"),
                         ([], "needs parameter")):
        assert main(["query", "compare-policies", *[x for b in bad for x in ("-P", b)]]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("error:") == 1 and "Traceback" not in err, err


# --------------------------------------------------------------------------- the page, through AppTest


def page(**params: str) -> AppTest:
    return app_page("pages/8_Compare_policies.py", **params)


def test_the_page_opened_by_url_shows_both_scopes(graph):
    at = ok(page(policies=f"{WEAK},{MILD}", level="tool"))
    assert [m.label for m in at.metric] == [WEAK, MILD]
    comps, tools = (t.value for t in at.table)
    assert list(comps.columns[:2]) == [WEAK, MILD] and "weak in" in comps.columns
    edges = {tuple(e.split(" → ")) for e in comps.index}
    assert PLANTED[WEAK] <= edges  # "weak in some scope": the planted ones are there
    weak = {(w["from"], w["to"]) for w in graph.weak(WEAK, "tool", MIN_SUPPORT, limit=200)}
    weak |= {(w["from"], w["to"]) for w in graph.weak(MILD, "tool", MIN_SUPPORT, limit=200)}
    assert edges == weak
    wide = {(r["from"], r["to"]): r for r in side_by_side(graph.compare([WEAK, MILD], "tool", MIN_SUPPORT, 100),
                                                          [WEAK, MILD])}
    edge = ("place_order", "get_order_details")
    cell = wide[edge]["scopes"][MILD]
    assert comps.loc[" → ".join(edge), MILD].startswith(f"{cell['success']:.2f} [{cell['ci_low']:.2f}, ")
    assert comps.loc[" → ".join(edge), "weak in"] == WEAK
    assert "get_order_details" in tools.index and list(tools.columns[:2]) == [WEAK, MILD]
    # the same link keeps its values when the view changes
    at.radio[1].set_value("all").run()
    ok(at)
    assert len(at.table[0].value) > len(comps) and at.query_params["show"] == "all"
    assert at.query_params["policies"] == f"{WEAK},{MILD}"


def test_unknown_or_too_few_scopes_get_a_message_not_a_traceback(graph):
    at = ok(page(policies=f"{WEAK},compare/nobody/round-0", level="tool"))
    assert any("compare/nobody/round-0" in w.value and "ignored" in w.value for w in at.warning)
    assert any("at least two" in i.value for i in at.info) and not at.table
    at = ok(page(policies="![x](http://127.0.0.1:1/x.png),/etc/passwd,,," + "a" * 5000))
    (warning,) = (w.value for w in at.warning)  # named as code, never rendered (no image fetched), and cut short
    assert "`![x](http://127.0.0.1:1/x.png)`" in warning and "`/etc/passwd`" in warning and "a" * 81 not in warning
    assert "policies" not in at.query_params  # nothing valid named: no scope picked
    at = ok(page())  # no link: the two newest scopes
    assert len(at.metric) == 2 and set(at.query_params["policies"].split(",")) == {WEAK, MILD}


# --------------------------------------------------------------------------- a real browser


@pytest.fixture(scope="module")
def served(graph):
    with served_app() as url:
        yield url


def test_the_page_in_chromium_by_url(served, graph, tmp_path):
    wide = {(r["from"], r["to"]): r for r in side_by_side(graph.compare([WEAK, MILD], "tool", MIN_SUPPORT, 100),
                                                          [WEAK, MILD])}
    edge = ("get_zipcode_based_on_city", "estimate_distance")
    cells = {s: wide[edge]["scopes"][s] for s in (WEAK, MILD)}
    with chromium_page(1800) as pg:
        pg.goto(f"{served}/Compare_policies?policies={WEAK},{MILD}&level=tool")
        settle(pg, "Success per tool")
        assert pg.locator("[data-testid='stException']").count() == 0
        table = pg.locator("[data-testid='stTable']").first
        row = table.locator("tr").filter(has_text=" → ".join(edge)).first.inner_text()
        table = table.inner_text()
        for scope, cell in cells.items():
            assert scope in table
            assert f"{cell['success']:.2f} [{cell['ci_low']:.2f}, {cell['ci_high']:.2f}] · n {cell['n']}" in row, row
        shot = tmp_path / "Compare_policies.png"
        pg.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    keep = os.environ.get("ACE_APP_SCREENSHOTS")
    if keep:  # to look at it: ACE_APP_SCREENSHOTS=/some/dir
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / shot.name).write_bytes(shot.read_bytes())
