"""Weak compositions and frontier: the table with intervals, then one edge's evidence down to the failing step."""

from __future__ import annotations

import altair as alt
import streamlit as st

from ace_graph.stats import MIN_LIFT, MIN_SUPPORT, NEAR_SUCCESS
from app import data, render, ui

ui.page("Weak compositions & frontier",
        "Pairs a → b where b fails more often right after a than elsewhere. Pick an edge (click a row, or the selector "
        "below) to see its near-success rollouts, one transcript beside the oracle's, and the tasks that contain it.")
scope = ui.select_scope(ui.scopes())
key = scope["key"]

f = st.columns([2, 2, 2, 3])
with f[0]:
    level = ui.select_level()
min_support = ui.number("Minimum support (n)", "min_support", MIN_SUPPORT, where=f[1], min_value=1, step=5)
min_lift = ui.number("Fragility lower bound above", "min_lift", MIN_LIFT, where=f[2], min_value=-1.0, max_value=1.0,
                     step=0.01, format="%.2f")
views = ["weak", "frontier", "all"]
labels = {"weak": "Weak (significant)", "frontier": "Frontier (strong prerequisites)", "all": "All observed"}
with f[3]:
    show = st.radio("Show", views, index=views.index(ui.qp("show", "weak")) if ui.qp("show") in views else 0,
                    format_func=labels.get, horizontal=True)
ui.set_qp(show=show if show != "weak" else None)

rows = ui.in_environment(ui.call("fragile", key, level, int(min_support), float(min_lift)), scope, level,
                         ("from", "to"))  # the environment chosen in the sidebar
if show == "weak":
    rows = [r for r in rows if r["significant"]]
elif show == "frontier":
    frontier = {(r["from"], r["to"]) for r in ui.call("frontier", key, level, int(min_support), float(min_lift), 0.6, 200)}
    rows = [r for r in rows if (r["from"], r["to"]) in frontier]
cols = ["edge", "from", "to", "n", "failures", "p_fail_after", "p_fail_otherwise", "fragility", "fragility_low",
        "fragility_high", "pmi"]
df = data.frame([{**r, "edge": f"{r['from']} → {r['to']}"} for r in rows], cols)

if df.empty:
    st.info(f"No composition to show in {key} at {level} level with these filters "
            f"(support ≥ {min_support}, lower bound > {min_lift}). Lower the filters or pick another scope.")
    st.stop()

st.markdown(f"**{len(df)} compositions** ({labels[show].lower()}), strongest evidence first. Click a row to open it.")
event = st.dataframe(
    df.drop(columns=["from", "to", "pmi"]), hide_index=True, width="stretch", height=min(420, 38 + 35 * len(df)),
    on_select="rerun", selection_mode="single-row", key="edge_table",
    column_config={
        "edge": st.column_config.TextColumn("from → to", width="large"),
        "p_fail_after": st.column_config.NumberColumn("P(fail | after a)", format="%.3f"),
        "p_fail_otherwise": st.column_config.NumberColumn("P(fail | otherwise)", format="%.3f"),
        "fragility": st.column_config.NumberColumn(format="%+.3f"),
        "fragility_low": st.column_config.NumberColumn("95% low", format="%+.3f"),
        "fragility_high": st.column_config.NumberColumn("95% high", format="%+.3f"),
    },
)
with st.expander("Fragility with 95% intervals (error bars), top 25", expanded=True):
    top = df.head(25)
    base = alt.Chart(top).encode(y=alt.Y("edge:N", sort=top["edge"].tolist(), title=None,
                                         axis=alt.Axis(labelLimit=260)))
    chart = (
        base.mark_rule(strokeWidth=2, color="#d62728").encode(
            x=alt.X("fragility_low:Q", title="fragility: P(fail | after a) − P(fail | otherwise), 95% interval"),
            x2="fragility_high:Q")
        + base.mark_point(filled=True, color="black", size=50).encode(
            x="fragility:Q", tooltip=["edge", "n", alt.Tooltip("fragility:Q", format="+.3f"),
                                      alt.Tooltip("fragility_low:Q", format="+.3f")])
        + alt.Chart(top).mark_rule(strokeDash=[4, 4], color="#888").encode(x=alt.datum(0))
    )
    st.altair_chart(chart.properties(height=max(220, 22 * len(top))), width="stretch")

# ---- the selected edge: from the table click, else the URL, else the strongest
edges = [f"{a}>{b}" for a, b in zip(df["from"], df["to"])]
picked = None
selected_rows = event.selection.rows if event is not None else []
if selected_rows and selected_rows[0] < len(edges):  # (a selection can outlive a filter change)
    picked = edges[selected_rows[0]]
    if picked != st.session_state.get("ace_table_pick"):
        st.session_state["ace_table_pick"] = picked
        ui.set_qp(edge=picked, rollout=None)
edge = ui.choice("Edge", "edge", edges, edges[0], format_func=lambda e: e.replace(">", " → "))
src, dst = edge.split(">", 1)
row = next(r for r in rows if r["from"] == src and r["to"] == dst)

st.divider()
st.header(f"{src} → {dst}")
m = st.columns(5)
m[0].metric("Reached after a (n)", row["n"])
m[1].metric("Failed there", row["failures"])
m[2].metric("Success of b right after a", ui.pct(1 - row["p_fail_after"]))
m[3].metric("Success of b elsewhere", ui.pct(1 - row["p_fail_otherwise"]))
m[4].metric("Fragility (95% low)", f"{row['fragility']:+.2f}", f"≥ {row['fragility_low']:+.2f}", delta_color="off")

tab_ns, tab_seed, tab_syn = st.tabs(["Near-success rollouts", "Seed tasks containing it", "Synthesized tasks aimed at it"])
with tab_ns:
    near = ui.call("near_success", key, level, src, dst, 50)
    if not near:
        st.info(f"No near-success rollout (≥ {NEAR_SUCCESS:.0%} of the oracle's steps matched, still failed) fails at this edge.")
    else:
        ndf = data.frame(near, ["rollout", "task_id", "attribution", "failing_turn", "failing_step", "step_match",
                                "detail"])
        st.dataframe(ndf, hide_index=True, width="stretch", height=min(300, 38 + 35 * len(ndf)),
                     column_config={"step_match": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                  format="%.2f")})
        ids = ndf["rollout"].tolist()
        rid = ui.choice("Rollout transcript", "rollout", ids, ids[0])
        t = data.rollout_transcript(key, rid)
        if t is None:
            st.warning(f"Rollout {rid} is not stored in {key}.")
        else:
            r = t.rollout
            st.markdown(f"**{rid}** on task `{r['task_id']}` · reward {r['reward']:.0f} · "
                        f"step match {r['step_match']:.2f} · partial credit {r['partial_credit']:.2f}")
            if t.failing_turn is not None:
                exp_call = (f"{t.expected['name']}({', '.join(f'{k}={v!r}' for k, v in t.expected['arguments'].items())})"
                            if t.expected else "no call")
                act_call = (f"{t.actual['name']}({', '.join(f'{k}={v!r}' for k, v in t.actual['arguments'].items())})"
                            if t.actual else "no call")
                st.error(
                    f"First failing step: turn {t.failing_turn}, attribution **{t.attribution}**: {t.detail}\n\n"
                    f"expected `{exp_call}`  \nactual `{act_call}`"
                    + (f"  \ndiffering arguments: {', '.join(t.differing)}" if t.differing else "")
                )
            if t.note:
                st.warning(t.note)
            st.markdown(render.transcript_html(t), unsafe_allow_html=True)
with tab_seed:
    seeds = ui.tasks_in_environment(ui.call("seed_tasks", level, src, dst, 50))
    if seeds:
        sdf = data.frame(seeds, ["task_id", "source", "category", "n_steps"])
        sdf["text"] = [data.task_text(t)[:300] for t in sdf["task_id"]]
        st.dataframe(sdf, hide_index=True, width="stretch", column_config={"text": st.column_config.TextColumn(width="large")})
    else:
        st.info("No stored task has this composition in its oracle.")
with tab_syn:
    if level != "tool":
        st.info("Synthesis plans target tool compositions; switch the level to `tool` to see the tasks aimed at an edge.")
    else:
        syn = ui.call("synthesized_for", scope["experiment"], src, dst, 100)
        if syn:
            ydf = data.frame(syn, ["task_id", "plan", "strategy", "round", "parents"])
            ydf["parents"] = [", ".join(p) for p in ydf["parents"]]
            ydf["text"] = [data.task_text(t)[:300] for t in ydf["task_id"]]
            st.dataframe(ydf, hide_index=True, width="stretch")
        else:
            st.info(f"No task of experiment {scope['experiment']!r} was synthesized for {src} → {dst} "
                    "(`ace synth` aims tasks at the frontier).")
