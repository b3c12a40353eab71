"""ACE dashboard: the entry page (Overview). Run it with `ace app`.

Headline counts of one scope, per-skill and per-family success with 95%
intervals, and the five weakest compositions, each linking to its evidence.
The sidebar's environment selector (every page has it) keeps one environment's
scopes and rows (:mod:`app.ui`).
"""

from __future__ import annotations

import altair as alt
import streamlit as st

from app import data, ui

ui.page("Overview", "Where the agent breaks when it chains tools: one scope (experiment / policy / checkpoint) at a glance.")
scope = ui.select_scope(ui.scopes())
key = scope["key"]
level = ui.select_level("Level of the profile and compositions", where=st.sidebar)

counts = ui.call("counts")
rollouts, rewarded, near = scope["rollouts"] or 0, scope["rewarded"] or 0, scope["near_success"] or 0
c = st.columns(6)
c[0].metric("Rollouts", f"{rollouts:,}")
c[1].metric("Rewarded (full task)", f"{rewarded:,}", ui.pct(rewarded / rollouts if rollouts else None), delta_color="off")
c[2].metric("Near-success", f"{near:,}", help="Failed after matching at least 70% of the oracle's steps.")
c[3].metric("Oracle steps reached", f"{scope['steps'] or 0:,}")
c[4].metric("Tasks in graph", f"{counts.get('tasks', 0):,}", f"{counts.get('synthesized_tasks', 0):,} synthesized",
            delta_color="off")
c[5].metric("Scopes", counts.get("scopes", 0))

st.subheader("Five weakest compositions")
st.caption("b fails significantly more often right after a than elsewhere (95% lower bound of the fragility above 0.05, "
           "at least 20 reached steps). Each links to its evidence.")
# (a scope of two environments: more rows are read, and the chosen environment's five kept)
weak = ui.in_environment(ui.call("weak", key, level, 20, 0.05, 5 if ui.environment() == "all" else 200),
                         scope, level, ("from", "to"))[:5]
if not weak:
    st.info(f"No composition in {key} is significantly weaker than its parts at {level} level "
            "(or none has 20 reached steps yet).")
for i, w in enumerate(weak, 1):
    cols = st.columns([5, 2, 2, 2])
    cols[0].page_link(
        "pages/3_Weak_compositions.py", label=f"{i}. {w['from']} → {w['to']}",
        query_params={"scope": key, "level": level, "edge": f"{w['from']}>{w['to']}"},
    )
    cols[1].markdown(f"success **{ui.pct(w['composition_success'])}** (n={w['n']})")
    cols[2].markdown(f"elsewhere {ui.pct(w['target_success_elsewhere'])}")
    cols[3].markdown(f"fragility {w['fragility']:+.2f} (≥ {w['fragility_low']:+.2f})")

left, right = st.columns([3, 2])
with left:
    st.subheader(f"Success per {level}")
    prof = data.frame(ui.in_environment(ui.call("capability", key, level), scope, level),
                      ["key", "family", "attempts", "successes", "success_rate", "ci_low", "ci_high"])
    if prof.empty:
        st.info("Nothing measured at this level in this scope.")
    else:
        order = prof.sort_values("success_rate")["key"].tolist()
        base = alt.Chart(prof).encode(y=alt.Y("key:N", sort=order, title=None))
        chart = base.mark_rule(color="#888").encode(
            x=alt.X("ci_low:Q", title="success rate (95% Wilson interval)", scale=alt.Scale(domain=[0, 1])),
            x2="ci_high:Q",
        ) + base.mark_point(filled=True, size=60).encode(
            x="success_rate:Q", color=alt.Color("family:N", legend=alt.Legend(orient="bottom", columns=3)),
            tooltip=["key", "family", "attempts", alt.Tooltip("success_rate:Q", format=".3f"),
                     alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f")],
        )
        st.altair_chart(chart.properties(height=max(260, 17 * len(prof))), width="stretch")
with right:
    st.subheader("Success per family" if level == "skill" else "Success per API class")
    fam = data.frame(ui.in_environment(ui.call("families", key, level), scope, level, ("family",)),
                     ["family", "members", "attempts", "successes", "success_rate", "ci_low", "ci_high"])
    st.dataframe(
        fam.drop(columns=["members", "successes"]), hide_index=True, width="stretch",
        column_config={
            "success_rate": st.column_config.ProgressColumn("success", min_value=0.0, max_value=1.0, format="%.3f"),
            "ci_low": st.column_config.NumberColumn("95% low", format="%.3f"),
            "ci_high": st.column_config.NumberColumn("95% high", format="%.3f"),
        },
    )
    st.caption(f"Graph: {counts.get('skills', 0)} skills, {counts.get('tools', 0)} tools, "
               f"{counts.get('plans', 0)} synthesis plans.")
