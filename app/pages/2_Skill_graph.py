"""The skill dependency graph (or the tool graph) of one scope, drawn with pyvis."""

from __future__ import annotations

import streamlit as st

from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from app import data, network, ui

ui.page("Skill graph", "Node colour = success rate in the scope; edge width = support; red edges are fragile "
        "(hover for the fragility's lower bound); dashed edges are prior dependencies from the oracles.")
scope = ui.select_scope(ui.scopes())
key = scope["key"]

st.sidebar.header("Filters")
level = ui.select_level("Nodes", where=st.sidebar)
nodes, edges = ui.call("graph", key, level, 1)
if ui.environment() != "all":  # the environment chosen in the sidebar: its nodes, and any the scope reached
    own = ui.members(level) or {}
    nodes = [n for n in ui.in_environment(nodes, scope, level) if n["key"] in own or n["attempts"]]
    edges = ui.in_environment(edges, scope, level, ("from", "to"))
families = sorted({n["family"] or "(none)" for n in nodes})
wanted = [f for f in (ui.qp("families") or "").split(",") if f in families]
chosen = st.sidebar.multiselect("Families" if level == "skill" else "API classes", families, default=wanted,
                                placeholder="all")
ui.set_qp(families=",".join(chosen) or None)
min_support = ui.number("Minimum support", "min_support", MIN_SUPPORT, where=st.sidebar, min_value=1, step=5)
min_frag = ui.number("Minimum fragility lower bound (observed edges)", "min_frag", 0.0, where=st.sidebar,
                     min_value=-1.0, max_value=1.0, step=0.05, format="%.2f")
min_lift = MIN_LIFT
show_prior = st.sidebar.toggle("Prior edges", value=ui.qp("prior", "0") == "1")
ui.set_qp(prior="1" if show_prior else None)
only_connected = st.sidebar.toggle("Hide nodes without a shown edge", value=ui.qp("connected", "1" if level == "tool" else "0") == "1")
ui.set_qp(connected="1" if only_connected else "0")

fam_of = {n["key"]: n["family"] or "(none)" for n in nodes}
keep = {n["key"] for n in nodes if not chosen or fam_of[n["key"]] in chosen}
shown_edges = [
    e for e in edges
    if e["from"] in keep and e["to"] in keep and (
        (e["edge_kind"] == "composes" and e["n"] >= min_support and e["fragility_low"] >= min_frag)
        or (e["edge_kind"] != "composes" and show_prior))
]
if only_connected:
    keep = {k for e in shown_edges for k in (e["from"], e["to"])}
shown_nodes = [n for n in nodes if n["key"] in keep]
fragile = [e for e in shown_edges if e["edge_kind"] == "composes" and e["fragility_low"] > min_lift]

c = st.columns(4)
c[0].metric("Nodes shown", f"{len(shown_nodes)} / {len(nodes)}")
c[1].metric("Observed compositions", sum(e["edge_kind"] == "composes" for e in shown_edges))
c[2].metric("Fragile (red)", len(fragile))
c[3].metric("Prior edges", sum(e["edge_kind"] != "composes" for e in shown_edges))
if not shown_nodes:
    st.info("No node passes these filters.")
    st.stop()
height = 700 if len(shown_nodes) <= 40 else 1100  # room for the labels of a large graph
st.iframe(network.html_cached(shown_nodes, shown_edges, min_lift, height), height=height + 45)
st.markdown(network.legend_html(), unsafe_allow_html=True)

st.subheader("Fragile edges in view")
fdf = data.frame(sorted(fragile, key=lambda e: -e["fragility_low"]),
                 ["from", "to", "n", "failures", "p_fail_after", "fragility", "fragility_low"])
if fdf.empty:
    st.info("No fragile composition among the edges shown.")
else:
    st.dataframe(fdf, hide_index=True, width="stretch", column_config={
        "p_fail_after": st.column_config.NumberColumn("P(fail | after)", format="%.3f"),
        "fragility": st.column_config.NumberColumn(format="%+.3f"),
        "fragility_low": st.column_config.NumberColumn("95% low", format="%+.3f")})
