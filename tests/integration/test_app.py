"""The dashboard against a real Neo4j: every page through Streamlit's AppTest, then in a real browser.

Fixture data: the simulated agent of `ace demo` with its planted weaknesses
(ace_env/demo_weakness.toml) — 1,500 rollouts ingested as round 0, tasks
synthesized from its frontier, a curriculum step, and 1,500 rollouts on the
curriculum's mix as round 1 — built with the demo's own functions.  For the
environment selector, two more scopes (`two_environments`): the demo's τ² section
(1,000 simulated τ²-bench airline rollouts) and one scope holding both the BFCL
round 0 and those τ² rollouts.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import streamlit as st
from appserver import chromium_page, free_port, served_app, settle
from apptesting import ok, page
from neo4j import READ_ACCESS
from neo4j.exceptions import ClientError
from streamlit.testing.v1 import AppTest

from ace import demo
from ace.cli import main
from ace_env import bfcl
from ace_env.environments import BFCL, TAU2, environment_names
from ace_env.sim import DEMO_WEAKNESS
from ace_env.tasksets import load_task_set
from ace_graph import queries, transcripts
from ace_graph.config import ace_home
from ace_graph.errors import ConfigError
from ace_graph.ingest import ingest_file
from ace_graph.reports import GraphReports
from ace_graph.store import GraphStore

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
EXPERIMENT = "apptest"
SCOPE0 = f"{EXPERIMENT}/sim/round-0"
SCOPE1 = f"{EXPERIMENT}/sim/round-1"
PLANTED = [(c["from"], c["to"]) for c in tomllib.loads(DEMO_WEAKNESS.read_text())["composition"]]
TAU2_SCOPE = f"{EXPERIMENT}-tau2/sim/round-0"  # what demo.tau2_scope names it
MIXED_SCOPE = f"{EXPERIMENT}-mixed/sim/round-0"
TAU2_PLANTED = {(c["from"], c["to"]) for c in tomllib.loads(demo.TAU2_WEAKNESS.read_text())["composition"]}
PAGES = {  # URL path -> text the page must show
    "": "Five weakest compositions",
    "Skill_graph": "Fragile edges in view",
    "Weak_compositions": "Near-success rollouts",
    "Capability_history": "Compositions across checkpoints",
    "Synthesis": "Example tasks",
    "Training": "Evaluation per checkpoint",
    "Query_console": "Cypher",
    "Compare_policies": "Success per",
}


def _wipe(driver, database):
    with driver.session(database=database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def _clear_app_caches():
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database):
    """The fixture graph (two scopes of one experiment); returns the reports over it."""
    _wipe(neo4j_driver, neo4j_database)
    store = GraphStore(neo4j_driver, neo4j_database)
    run_dir = ace_home() / "runs" / EXPERIMENT
    run_dir.mkdir(parents=True, exist_ok=True)
    for old in run_dir.glob("*.jsonl"):
        old.unlink()
    seeds = bfcl.load_tasks("all")
    scope = demo.simulate_and_ingest(store, seeds, EXPERIMENT, "round-0", 1500, 1, DEMO_WEAKNESS)["scope"]
    synthesized = demo.synthesize_round(store, {t.id: t for t in seeds}, EXPERIMENT, scope, 1, 30, DEMO_WEAKNESS)["tasks"]
    demo.curriculum(store, EXPERIMENT, scope)
    scope1 = demo.round_one(store, seeds, synthesized, EXPERIMENT, 1500, 1, DEMO_WEAKNESS)["scope"]
    demo.curriculum(store, EXPERIMENT, scope1)
    assert (scope, scope1) == (SCOPE0, SCOPE1)
    _clear_app_caches()
    yield GraphReports(neo4j_driver, neo4j_database)
    _clear_app_caches()


@pytest.fixture(scope="module")
def two_environments(graph, neo4j_driver, neo4j_database, tmp_path_factory):
    """The fixture graph plus a τ² airline scope and a scope of both environments; returns the tool names
    of each environment (τ²: its agent tools of every domain), from the environments themselves, not the graph."""
    store = GraphStore(neo4j_driver, neo4j_database)
    folder = tmp_path_factory.mktemp("tau2")
    t = demo.tau2_scope(store, EXPERIMENT, 1000, 1, directory=folder)
    assert t["scope"] == TAU2_SCOPE and {tuple(p) for p in t["weaknesses"]["recovered"]} == TAU2_PLANTED
    tau2_tasks = load_task_set(demo.TAU2_TASKS, any_environment=True)
    # one scope, two files: an ingest verifies one environment's rollouts at a time
    bfcl_round_0 = next((ace_home() / "runs" / EXPERIMENT).glob("rollouts-round-0-*.jsonl"))
    ingest_file(store, bfcl_round_0, {t.id: t for t in bfcl.load_tasks("all")}, f"{EXPERIMENT}-mixed", "sim", "round-0")
    # the simulated agent's slips include reads τ²'s end state never sees: judged strictly, as the demo does
    both = ingest_file(store, t["file"], tau2_tasks, f"{EXPERIMENT}-mixed", "sim", "round-0", id_suffix="-tau2",
                       strict=True)
    assert both.to_dict()["created"] == 1000  # (the two files' rollout ids are alike: the suffix keeps them apart)
    _clear_app_caches()
    yield {"tau2": set(TAU2.tool_info(list(tau2_tasks.values()))), "bfcl": set(BFCL.tool_info([]))}
    _clear_app_caches()


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [e.value for e in at.info]
    parts += [h.value for h in at.header] + [h.value for h in at.subheader]
    return "\n".join(parts)


# --------------------------------------------------------------------------- pure helpers (no server)


def test_read_queries_exclude_every_write():
    names = queries.read_queries()
    assert "weak-compositions" in names and "view-rollout" in names
    for n in names:
        assert not n.startswith(("ingest-", "upsert-", "curriculum-upsert", "schema")), n
    # a header's Mode line wins over the name
    assert queries.load("view-scopes").mode == "read"
    assert queries.load("upsert-tasks").mode == "write"


def test_param_hints_and_coercion():
    q = queries.load("frontier")
    hints = q.hints
    assert queries.param_kind(hints["limit"]) == "int"
    assert queries.param_kind(hints["min_lift"]) == "float"
    assert queries.param_kind(hints["scope"]) == "string"
    assert queries.coerce_param("0.25", "float") == 0.25
    assert queries.coerce_param('["a"]', "list") == ["a"]
    with pytest.raises(ConfigError):
        queries.coerce_param("twenty", "int")


# --------------------------------------------------------------------------- views against Neo4j


def test_views_refuse_writes(graph, neo4j_driver, neo4j_database):
    with pytest.raises(ConfigError, match="writes"):
        graph.run("upsert-tasks", rows=[])
    # and the session the views use is read-only on the server's side too
    with neo4j_driver.session(database=neo4j_database, default_access_mode=READ_ACCESS) as session:
        with pytest.raises(ClientError):
            session.execute_read(lambda tx: tx.run("CREATE (:AppTestProbe)").consume())
    assert graph.run("view-graph-counts")[0]["skills"] == 26


def test_transcript_marks_the_first_failing_step(graph):
    near = graph.near_success(SCOPE0, "tool", "place_order", "get_order_details", 5)
    assert near
    row = graph.rollout(SCOPE0, near[0]["rollout"])
    t = transcripts.transcript(row, transcripts.TaskLibrary().get(row["task_id"]))
    failing_r = [s for s in t.rollout_steps if s.failing]
    failing_o = [s for s in t.oracle_steps if s.failing]
    assert len(failing_r) == 1 and len(failing_o) == 1
    assert failing_o[0].call.startswith("get_order_details(")
    assert t.failing_turn == row["failing_turn"] and t.attribution == row["attribution"]
    assert t.expected["name"] == "get_order_details" and t.differing


# --------------------------------------------------------------------------- AppTest, page by page


def test_overview_shows_planted_weak_compositions_and_level_selector(graph):
    at = ok(page("Overview.py", scope=SCOPE0, level="tool"))
    links = [p.proto.label for p in at.get("page_link")]
    assert len(links) == 5
    assert {tuple(lbl.split(". ", 1)[1].split(" → ")) for lbl in links} == set(PLANTED)
    assert at.metric[0].value == "1,500"
    at.sidebar.radio[0].set_value("skill").run()
    ok(at)
    skill_links = [p.proto.label for p in at.get("page_link")]
    assert skill_links and not any("get_order_details" in s for s in skill_links)
    assert at.query_params["level"] == "skill"


def test_the_level_chosen_on_one_page_is_kept_on_the_next(graph):
    """Sidebar navigation drops the URL's parameters; the session keeps the level, as it keeps the scope."""
    at = ok(page("Overview.py", scope=SCOPE0, level="tool"))
    assert at.session_state["ace_level"] == "tool"
    nxt = AppTest.from_file(str(APP / "pages/2_Skill_graph.py"), default_timeout=120)
    nxt.session_state["ace_scope"] = SCOPE0
    nxt.session_state["ace_level"] = at.session_state["ace_level"]
    ok(nxt.run())
    assert nxt.query_params["level"] == "tool" and nxt.query_params["scope"] == SCOPE0


def test_overview_scope_selector_changes_the_scope(graph):
    at = ok(page("Overview.py", scope=SCOPE0, level="tool"))
    checkpoint = next(s for s in at.sidebar.selectbox if s.label == "Checkpoint")
    checkpoint.set_value("round-1").run()
    ok(at)
    assert at.query_params["scope"] == SCOPE1
    rewarded1 = next(s for s in graph.scopes() if s["key"] == SCOPE1)["rewarded"]
    assert at.metric[1].value == f"{rewarded1:,}"


def test_skill_graph_filters(graph):
    at = ok(page("pages/2_Skill_graph.py", scope=SCOPE0, level="tool"))
    table = at.dataframe[0].value
    assert set(zip(table["from"], table["to"])) == set(PLANTED)
    assert next(m for m in at.metric if m.label == "Fragile (red)").value == "5"
    at2 = ok(page("pages/2_Skill_graph.py", scope=SCOPE0, level="tool", families="TravelAPI"))
    table2 = at2.dataframe[0].value
    assert set(zip(table2["from"], table2["to"])) == {("book_flight", "retrieve_invoice")}  # the one in TravelAPI
    at3 = ok(page("pages/2_Skill_graph.py", scope=SCOPE0, level="skill"))
    assert next(m for m in at3.metric if m.label == "Nodes shown").value == "26 / 26"


def test_weak_compositions_table_edge_and_transcript(graph):
    at = ok(page("pages/3_Weak_compositions.py", scope=SCOPE0, level="tool"))
    table = at.dataframe[0].value
    assert {tuple(e.split(" → ")) for e in table["edge"]} == set(PLANTED)
    first = table["edge"].iloc[0]
    assert at.header[0].value == first
    at2 = ok(page("pages/3_Weak_compositions.py", scope=SCOPE0, level="tool", edge="place_order>get_order_details"))
    assert at2.header[0].value == "place_order → get_order_details"
    body = texts(at2)
    assert "First failing step" in body and "get_order_details" in body
    assert "✗ first failing step" in body  # the transcript table marks it
    edge_box = next(s for s in at2.selectbox if s.label == "Edge")
    edge_box.set_value("cd>mv").run()
    ok(at2)
    assert at2.header[0].value == "cd → mv"
    assert at2.query_params["edge"] == "cd>mv"
    # the synthesized tasks aimed at an edge come from the plans' lineage
    aimed = graph.synthesized_for(EXPERIMENT, "cd", "mv", 100)
    ids = {r for df in (d.value for d in at2.dataframe) if "task_id" in df.columns and "plan" in df.columns
           for r in df["task_id"]}
    assert ids == {r["task_id"] for r in aimed}
    at3 = ok(page("pages/3_Weak_compositions.py", scope=SCOPE0, level="tool", show="all"))
    assert len(at3.dataframe[0].value) > len(table)


def test_capability_history(graph):
    at = ok(page("pages/4_Capability_history.py", scope=SCOPE1, level="tool"))
    assert "Curriculum of apptest" in texts(at)
    comps = next(m for m in at.multiselect if m.label.startswith("Compositions"))
    assert comps.value  # the weakest of the scope, present in both rounds
    before = len(at.get("vega_lite_chart"))
    assert before >= 3
    rnd = next(s for s in at.selectbox if s.label == "Decisions of round")
    assert rnd.value == 2
    rnd.set_value(1).run()
    ok(at)
    decisions = graph.curriculum_decisions(EXPERIMENT)
    shown = next(d.value for d in at.dataframe if "unit" in d.value.columns)
    assert len(shown) == sum(1 for d in decisions if d["round"] == 1)


def test_synthesis(graph):
    at = ok(page("pages/5_Synthesis.py", scope=SCOPE0))
    plans = graph.plans(EXPERIMENT)
    assert next(m for m in at.metric if m.label == "Plans").value == str(len(plans))
    tasks = at.dataframe[-1].value
    assert len(tasks) == 30 and all(t for t in tasks["text"])
    select = next(s for s in at.selectbox if s.label == "Strategy")
    strategies = [o for o in select.options if o != "(all)"]
    assert len(strategies) >= 2 and set(strategies) == set(tasks["strategy"])
    select.set_value(strategies[0]).run()
    ok(at)
    picked = at.dataframe[-1].value
    assert 0 < len(picked) < 30 and set(picked["strategy"]) == {strategies[0]}


def test_training_takes_a_listed_file_by_its_label_and_no_path(graph, tmp_path):
    """The page lists metrics files under runs/ and opens only those; a path in the URL is ignored
    (tests/integration/test_app_metrics.py has the hostile values and the empty state)."""
    rows = "\n".join(json.dumps({"step": i, "reward_mean": 0.1 * i, "reward_std": 0.05, "groups_sampled": 8,
                                 "groups_kept": 8 - i, "loss": 1.0 / (i + 1)}) for i in range(4)) + "\n"
    outside = tmp_path / "run-metrics.jsonl"
    outside.write_text(rows)
    listed = ace_home() / "runs" / "app-test-metrics" / "run-metrics.jsonl"
    listed.parent.mkdir(parents=True, exist_ok=True)
    listed.write_text(rows)
    try:
        at = ok(page("pages/6_Training.py", scope=SCOPE0, metrics="app-test-metrics/run-metrics.jsonl"))
        assert not at.warning
        table = next(d.value for d in at.dataframe if "kept_group_fraction" in d.value.columns)
        assert list(table["kept_group_fraction"]) == [1.0, 7 / 8, 6 / 8, 5 / 8]
        at2 = ok(page("pages/6_Training.py", scope=SCOPE0, metrics=str(outside)))
        assert any("ignored" in w.value for w in at2.warning)
        assert str(outside) not in next(s for s in at2.selectbox if s.label == "Run").options
    finally:
        listed.unlink()
        listed.parent.rmdir()


def test_training_finds_the_loops_metrics_by_default(graph):
    """`ace loop` writes runs/E/round-K/grpo-metrics.jsonl; the page lists it without being told where."""
    written = ace_home() / "runs" / "app-test-loop" / "round-0" / "grpo-metrics.jsonl"
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_text("".join(json.dumps({"step": i + 1, "reward_mean": 0.5, "reward_std": 0.1, "groups_sampled": 4,
                                           "groups_kept": 2, "loss": 0.3}) + "\n" for i in range(3)))
    try:
        at = ok(page("pages/6_Training.py", scope=SCOPE0))
        assert not any("No training metrics" in i.value for i in at.info)
        run = next(s for s in at.selectbox if s.label == "Run")
        label = "app-test-loop/round-0/grpo-metrics.jsonl"  # its path under runs/
        assert label in run.options  # other runs' files in this ACE_HOME may be listed too
        run.set_value(label).run()
        ok(at)
        table = next(d.value for d in at.dataframe if "kept_group_fraction" in d.value.columns)
        assert list(table["kept_group_fraction"]) == [0.5, 0.5, 0.5]
    finally:
        written.unlink()
        for folder in (written.parent, written.parent.parent):  # made here; removed when nothing else is in them
            if not any(folder.iterdir()):
                folder.rmdir()


def test_query_console(graph):
    at = ok(page("pages/7_Query_console.py", scope=SCOPE0))
    q = next(s for s in at.selectbox if s.label == "Named query")
    assert not any(o.startswith(("ingest-", "upsert-", "schema", "curriculum-upsert")) for o in q.options)
    level = next(t for t in at.text_input if t.label == "$level")
    level.set_value("tool").run()
    ok(at)
    result = at.dataframe[0].value
    assert set(PLANTED) <= set(zip(result["from"], result["to"]))
    assert any("MATCH (sc:Scope {key: $scope})" in c.value for c in at.code)
    limit = next(t for t in at.text_input if t.label == "$limit")
    limit.set_value("lots").run()
    assert any("not a valid int" in e.value for e in at.error)


# --------------------------------------------------------------------------- the environment selector


def _links(at: AppTest) -> list[tuple[str, str]]:
    """The Overview's weakest compositions, as (from, to)."""
    return [tuple(p.proto.label.split(". ", 1)[1].split(" → ")) for p in at.get("page_link")]


def _environment_box(at: AppTest):
    return next(s for s in at.sidebar.selectbox if s.label == "Environment")


def test_scopes_know_their_environments(two_environments, graph, capsys):
    names = environment_names()  # the registry's, not spelled here
    envs = {r["key"]: r["environments"] for r in graph.run("view-scope-environments", environments=names)}
    assert envs == {SCOPE0: ["bfcl"], SCOPE1: ["bfcl"], TAU2_SCOPE: ["tau2"], MIXED_SCOPE: ["bfcl", "tau2"]}
    assert main(["query", "view-scope-environments", "--json"]) == 0  # `ace query` fills in the registry's names
    assert {r["key"]: r["environments"] for r in json.loads(capsys.readouterr().out)} == envs
    tau2 = {r["key"] for r in graph.run("view-environment-members", environment="tau2", environments=names) if r["level"] == "tool"}
    bfcl_tools = {r["key"] for r in graph.run("view-environment-members", environment="bfcl", environments=names) if r["level"] == "tool"}
    assert {a for pair in TAU2_PLANTED for a in pair} <= tau2 <= two_environments["tau2"]
    assert {a for pair in PLANTED for a in pair} <= bfcl_tools <= two_environments["bfcl"]


def test_the_environment_selector_keeps_one_environments_rows(two_environments):
    tau2, bfcl_tools = two_environments["tau2"], two_environments["bfcl"]
    at = ok(page("Overview.py", scope=MIXED_SCOPE, level="tool"))
    assert _environment_box(at).value == "all"
    both = _links(at)
    assert {x for pair in both for x in pair} & (tau2 - bfcl_tools)  # the scope of both: τ² tools among them
    _environment_box(at).set_value("tau2").run()
    ok(at)
    assert at.query_params["env"] == "tau2" and at.query_params["scope"] == MIXED_SCOPE
    assert set(_links(at)) == TAU2_PLANTED
    families = at.dataframe[0].value["family"]
    assert len(families) and all(f.startswith("tau2") for f in families), list(families)
    _environment_box(at).set_value("bfcl").run()
    ok(at)
    assert set(_links(at)) == set(PLANTED)
    assert not set(at.dataframe[0].value["family"]) & {"tau2", "tau2:airline"}

    # a scope of the other environment gives way to the newest scope of the chosen one
    at = ok(page("Overview.py", scope=TAU2_SCOPE, level="tool", env="bfcl"))
    assert at.query_params["scope"] in (SCOPE0, SCOPE1, MIXED_SCOPE) and set(_links(at)) <= set(PLANTED)
    checkpoints = {s.label: s.options for s in at.sidebar.selectbox}
    assert f"{EXPERIMENT}-tau2" not in checkpoints["Experiment"]
    at = ok(page("Overview.py", scope=SCOPE0, level="tool", env="tau2"))
    assert at.query_params["scope"] in (TAU2_SCOPE, MIXED_SCOPE) and set(_links(at)) == TAU2_PLANTED
    assert {s.label: s.options for s in at.sidebar.selectbox}["Experiment"] == sorted(
        [f"{EXPERIMENT}-mixed", f"{EXPERIMENT}-tau2"])

    # the other pages that list tools, on the scope of both
    weak = ok(page("pages/3_Weak_compositions.py", scope=MIXED_SCOPE, level="tool", show="all", env="tau2"))
    edges = [tuple(e.split(" → ")) for e in weak.dataframe[0].value["edge"]]
    assert TAU2_PLANTED <= set(edges) and {x for pair in edges for x in pair} <= tau2
    weak = ok(page("pages/3_Weak_compositions.py", scope=MIXED_SCOPE, level="tool", show="all", env="bfcl"))
    edges = [tuple(e.split(" → ")) for e in weak.dataframe[0].value["edge"]]
    assert set(PLANTED) <= set(edges) and {x for pair in edges for x in pair} <= bfcl_tools
    graph_page = ok(page("pages/2_Skill_graph.py", scope=MIXED_SCOPE, level="tool", env="tau2"))
    fragile = graph_page.dataframe[0].value
    assert set(zip(fragile["from"], fragile["to"])) == TAU2_PLANTED
    # every node drawn for the τ² scope is a τ² tool (the graph holds BFCL's too, never reached there)
    graph_page = ok(page("pages/2_Skill_graph.py", scope=TAU2_SCOPE, level="tool", env="tau2", connected="0"))
    shown, total = next(m for m in graph_page.metric if m.label == "Nodes shown").value.split(" / ")
    assert shown == total and 10 <= int(total) <= len(tau2)


def test_compare_policies_keeps_to_one_environment(two_environments):
    """Scopes of two environments are compared with a warning; the environment chosen lists its scopes only."""
    at = ok(page("pages/8_Compare_policies.py", policies=f"{SCOPE0},{TAU2_SCOPE}", level="tool"))
    assert any("different environments" in w.value for w in at.warning)
    assert [m.label for m in at.metric] == [SCOPE0, TAU2_SCOPE]
    at = ok(page("pages/8_Compare_policies.py", policies=f"{SCOPE0},{TAU2_SCOPE},{SCOPE1}", level="tool", env="bfcl"))
    assert any(TAU2_SCOPE in w.value and "ignored" in w.value for w in at.warning)
    assert [m.label for m in at.metric] == [SCOPE0, SCOPE1]  # before and after the curriculum's round
    assert not any("different environments" in w.value for w in at.warning)
    edges = {tuple(e.split(" → ")) for e in at.table[0].value.index}
    assert set(PLANTED) <= edges and not edges & TAU2_PLANTED


def _choose_environment(pg, label: str) -> None:
    pg.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Environment").click()
    pg.get_by_role("option", name=label, exact=True).click()


def test_the_environment_selector_in_chromium(served, two_environments):
    """Choosing τ²-bench in the sidebar shows only τ² tools; BFCL multi-turn only BFCL ones."""
    tau2, bfcl_tools = two_environments["tau2"], two_environments["bfcl"]
    with chromium_page(1600) as pg:
        pg.goto(f"{served}/?scope={MIXED_SCOPE}&level=tool")
        settle(pg, "Five weakest compositions")
        for label, env, own, planted in (("τ²-bench", "tau2", tau2, TAU2_PLANTED),
                                         ("BFCL multi-turn", "bfcl", bfcl_tools, set(PLANTED))):
            _choose_environment(pg, label)
            pg.wait_for_url(f"**env={env}**", timeout=60_000)
            settle(pg, "Five weakest compositions")
            shown = pg.get_by_test_id("stPageLink-NavLink").all_inner_texts()
            pairs = {tuple(t.strip().split(". ", 1)[1].split(" → ")) for t in shown}
            assert pairs == planted, (label, shown)
            assert {x for pair in pairs for x in pair} <= own
            assert pg.locator("[data-testid='stException']").count() == 0


# --------------------------------------------------------------------------- a real browser


@pytest.fixture(scope="module")
def served(graph, two_environments):  # every scope stored before the server caches a view
    with served_app() as url:
        yield url


def test_every_page_in_chromium(served, graph, tmp_path):
    shots = []
    with chromium_page(2000) as pg:
        for path, text in PAGES.items():
            pg.goto(f"{served}/{path}?scope={SCOPE0}&level=tool")
            settle(pg, text)
            assert pg.locator("[data-testid='stException']").count() == 0, path
            if path == "Skill_graph":  # the pyvis canvas is drawn inside its iframe
                frame = pg.frame_locator("iframe").first
                frame.locator("#mynetwork canvas").wait_for(timeout=60_000)
                pg.wait_for_timeout(6000)  # the layout settles, then physics stops
            shot = tmp_path / f"{path or 'Overview'}.png"
            pg.screenshot(path=str(shot))
            shots.append(shot)

        # click an edge in the weak-compositions table and see its transcript
        pg.goto(f"{served}/Weak_compositions?scope={SCOPE0}&level=tool")
        settle(pg, "Near-success rollouts")
        order = [f"{r['from']} → {r['to']}" for r in graph.fragile(SCOPE0, "tool", 20, 0.05) if r["significant"]]
        target = order.index("place_order → get_order_details")
        assert target != 0  # the default edge is another one
        grid = pg.locator("[data-testid='stDataFrame']").first
        box = grid.bounding_box()
        pg.mouse.click(box["x"] + 18, box["y"] + 35 * (target + 1) + 17)
        pg.get_by_role("heading", name="place_order → get_order_details").wait_for(timeout=60_000)
        settle(pg, "First failing step")
        assert "edge=place_order%3Eget_order_details" in pg.url or "edge=place_order>get_order_details" in pg.url
        assert pg.get_by_text("✗ first failing step").count() >= 1
        assert pg.locator("table.ace-tx").inner_text().count("get_order_details(") >= 2
        assert pg.locator("[data-testid='stException']").count() == 0
        shot = tmp_path / "Weak_compositions-clicked.png"
        pg.screenshot(path=str(shot), full_page=True)
        shots.append(shot)
    assert all(s.stat().st_size > 20_000 for s in shots)
    keep = os.environ.get("ACE_APP_SCREENSHOTS")
    if keep:  # to look at them (or refresh docs/): ACE_APP_SCREENSHOTS=/some/dir
        Path(keep).mkdir(parents=True, exist_ok=True)
        for s in shots:
            (Path(keep) / s.name).write_bytes(s.read_bytes())


# --------------------------------------------------------------------------- no server, empty graph (run last)


def test_missing_server_says_what_to_run(graph, monkeypatch):
    monkeypatch.setenv("NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    _clear_app_caches()
    try:
        at = ok(page("Overview.py"))
        assert any("Cannot read the skill graph" in e.value for e in at.error)
        assert "ace db start" in texts(at)
    finally:
        monkeypatch.undo()
        _clear_app_caches()


def test_empty_graph_says_what_to_run(graph, neo4j_driver, neo4j_database):
    _wipe(neo4j_driver, neo4j_database)
    _clear_app_caches()
    for name in ["Overview.py"] + sorted(str(p.relative_to(APP)) for p in (APP / "pages").glob("*.py")):
        at = ok(page(name))
        assert any("holds no rollouts yet" in i.value and "ace demo" in i.value for i in at.info), name
