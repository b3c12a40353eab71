"""Synthesis: the plans of one experiment, their validity and learnable-zone figures per round, example tasks."""

from __future__ import annotations

import altair as alt
import streamlit as st

from app import data, ui

ui.page("Synthesis", "Plans aimed at the frontier (target edge, strategy), how many of their tasks verified, how "
        "often the policy passed them, and the share in the learnable zone (sometimes but not always passed).")
scope = ui.select_scope(ui.scopes())
exp = scope["experiment"]

plans = data.frame(ui.edges_in_environment(ui.call("plans", exp), scope, "target"), ["plan", "round", "target", "strategy", "strength", "depth", "style",
                                           "status", "attempted", "valid", "validity", "pass_rate",
                                           "learnable_share", "tasks"])
if plans.empty:
    st.info(f"Experiment {exp!r} has no synthesis plans yet. Synthesize tasks aimed at its frontier with "
            f"`ace synth --experiment {exp} --n 200 --out tasks.jsonl` (or run `ace demo`).")
    st.stop()
plans["target"] = plans["target"].str.replace(">", " → ", regex=False)
c = st.columns(5)
c[0].metric("Plans", len(plans))
c[1].metric("Attempted", int(plans["attempted"].sum()))
c[2].metric("Valid", int(plans["valid"].sum()),
            ui.pct(plans["valid"].sum() / plans["attempted"].sum() if plans["attempted"].sum() else None),
            delta_color="off")
c[3].metric("Tasks stored", int(plans["tasks"].sum()))
c[4].metric("Strategies", plans["strategy"].nunique())

rows = []
for rnd, g in plans.groupby("round"):
    attempted, valid = g["attempted"].sum(), g["valid"].sum()
    rows.append({
        "round": rnd, "attempted": attempted, "valid": valid,
        "validity": valid / attempted if attempted else None,
        "pass_rate": (g["pass_rate"] * g["valid"]).sum() / valid if valid else None,
        "learnable_share": (g["learnable_share"] * g["valid"]).sum() / valid if valid else None,
    })
figs = data.frame(rows, ["round", "attempted", "valid", "validity", "pass_rate", "learnable_share"])
long = figs.melt(id_vars=["round"], value_vars=["validity", "pass_rate", "learnable_share"], var_name="figure")
left, right = st.columns(2)
with left:
    st.altair_chart(alt.Chart(long).mark_bar().encode(
        x=alt.X("round:O", title="round"), xOffset="figure:N",
        y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), title="share"),
        color=alt.Color("figure:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["round", "figure", alt.Tooltip("value:Q", format=".3f")]).properties(
        height=260, title="Validity, pass rate, learnable share per round (valid-weighted)"), width="stretch")
with right:
    by_strategy = plans.groupby("strategy", as_index=False).agg(plans=("plan", "count"), valid=("valid", "sum"),
                                                               attempted=("attempted", "sum"), tasks=("tasks", "sum"))
    by_strategy["validity"] = by_strategy["valid"] / by_strategy["attempted"].where(by_strategy["attempted"] > 0)
    st.markdown("**By strategy**")
    st.dataframe(by_strategy, hide_index=True, width="stretch",
                 column_config={"validity": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f")})

st.subheader("Plans")
st.dataframe(plans[["plan", "round", "target", "strategy", "status", "attempted", "valid", "validity", "pass_rate",
                    "learnable_share", "tasks"]], hide_index=True, width="stretch", column_config={
    "plan": st.column_config.TextColumn(width="medium"),
    "validity": st.column_config.NumberColumn(format="%.2f"),
    "pass_rate": st.column_config.NumberColumn(format="%.2f"),
    "learnable_share": st.column_config.NumberColumn("learnable", format="%.2f")})

st.subheader("Example tasks")
tasks = data.frame(ui.edges_in_environment(ui.call("synthesized", exp, 500), scope, "target_edge"), ["task_id", "plan", "strategy", "target_edge", "round", "parents"])
strategies = ["(all)"] + sorted(tasks["strategy"].dropna().unique().tolist())
f = st.columns(2)
strat = ui.choice("Strategy", "strategy", strategies, "(all)", where=f[0])
targets = ["(all)"] + sorted(tasks["target_edge"].dropna().unique().tolist())
target = ui.choice("Target edge", "target", targets, "(all)", where=f[1], format_func=lambda e: e.replace(">", " → "))
view = tasks
if strat != "(all)":
    view = view[view["strategy"] == strat]
if target != "(all)":
    view = view[view["target_edge"] == target]
view = view.head(50).copy()
view["parents"] = [", ".join(p) for p in view["parents"]]
view["target_edge"] = view["target_edge"].str.replace(">", " → ", regex=False)
view["text"] = [data.task_text(t)[:400] or "(task file not found under ACE_HOME/runs)" for t in view["task_id"]]
st.dataframe(view[["task_id", "strategy", "target_edge", "round", "parents", "text"]], hide_index=True,
             width="stretch", column_config={"task_id": st.column_config.TextColumn(width="small"),
                                             "parents": st.column_config.TextColumn(width="small"),
                                             "text": st.column_config.TextColumn(width="large")})
