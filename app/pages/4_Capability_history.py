"""Capability history: success per skill (tool) and per composition across checkpoints, and the curriculum's decisions."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ace_graph.stats import MIN_LIFT, MIN_SUPPORT, wilson
from app import data, ui

ui.page("Capability history", "Success across the checkpoints (rounds) of one experiment and policy, with 95% Wilson "
        "intervals, and what the curriculum decided in each round.")
scope = ui.select_scope(ui.scopes())
exp, pol = scope["experiment"], scope["policy"]
level = ui.select_level("Level", where=st.sidebar)


def with_interval(df: pd.DataFrame, n: str, successes: pd.Series) -> pd.DataFrame:
    bounds = [wilson(s, k) for s, k in zip(successes, df[n])]
    df["ci_low"], df["ci_high"] = [b[0] for b in bounds], [b[1] for b in bounds]
    return df


def lines(df: pd.DataFrame, series: str, title: str) -> alt.Chart:
    base = alt.Chart(df).encode(
        x=alt.X("round:O", title="round (checkpoint)"), color=alt.Color(f"{series}:N", title=None,
                                                                       legend=alt.Legend(orient="bottom", columns=2)))
    band = base.mark_area(opacity=0.15).encode(y=alt.Y("ci_low:Q", title=title, scale=alt.Scale(domain=[0, 1])),
                                               y2="ci_high:Q")
    line = base.mark_line(point=True).encode(
        y="success_rate:Q", tooltip=[series, "checkpoint", "n", alt.Tooltip("success_rate:Q", format=".3f"),
                                     alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f")])
    return (band + line).properties(height=360)


hist = data.frame(ui.in_environment(ui.call("capability_history", exp, pol, level), scope, level),
                  ["round", "checkpoint", "key", "attempts", "success_rate"])
st.subheader(f"Success per {level} across checkpoints of {exp}/{pol}")
rounds = sorted(hist["round"].dropna().unique().tolist())
if hist.empty:
    st.info("Nothing measured yet for this experiment and policy.")
else:
    hist = hist.rename(columns={"attempts": "n"})
    hist = with_interval(hist, "n", (hist["success_rate"] * hist["n"]).round())
    latest = hist[hist["round"] == hist["round"].max()].sort_values("success_rate")
    keys = sorted(hist["key"].unique())
    wanted = [k for k in (ui.qp("keys") or "").split(",") if k in keys] or latest["key"].head(5).tolist()
    picked = st.multiselect(f"{level.capitalize()}s (default: the five weakest at the latest checkpoint)", keys,
                            default=wanted)
    ui.set_qp(keys=",".join(picked) if picked != latest["key"].head(5).tolist() else None)
    if len(rounds) < 2:
        st.caption(f"Only one checkpoint ({rounds[0] if rounds else '-'}) so far: each line is a single point.")
    st.altair_chart(lines(hist[hist["key"].isin(picked)], "key", "success rate"), width="stretch")

st.subheader("Compositions across checkpoints")
min_support = ui.number("Minimum support in some checkpoint", "min_support", MIN_SUPPORT, min_value=1, step=5)
comp = data.frame(ui.in_environment(ui.call("composition_history", exp, pol, level, int(min_support)), scope, level,
                                    ("from", "to")),
                  ["round", "checkpoint", "from", "to", "n", "failures", "success_rate"])
if comp.empty:
    st.info("No composition reaches that support in any checkpoint.")
else:
    comp["edge"] = comp["from"] + " → " + comp["to"]
    comp = with_interval(comp, "n", comp["n"] - comp["failures"])
    weak_now = [f"{w['from']} → {w['to']}" for w in ui.call("weak", scope["key"], level, int(min_support), MIN_LIFT, 5)]
    edges = sorted(comp["edge"].unique())
    default = [e for e in weak_now if e in edges] or comp.sort_values("success_rate")["edge"].drop_duplicates().head(5).tolist()
    wanted = [e for e in (ui.qp("edges") or "").split("|") if e in edges] or default
    picked = st.multiselect("Compositions (default: the weakest in the selected scope)", edges, default=wanted)
    ui.set_qp(edges="|".join(picked) if picked != default else None)
    st.altair_chart(lines(comp[comp["edge"].isin(picked)], "edge", "composition success"), width="stretch")

st.subheader(f"Curriculum of {exp}")
decisions = data.frame(ui.call("curriculum_decisions", exp), ["round", "unit", "kind", "from", "to", "reason", "scope"])
status = data.frame(ui.call("curriculum", exp), ["kind", "key", "state", "ema", "rounds_in_state", "round",
                                                   "last_round", "last_from", "last_to", "last_reason"])
if decisions.empty and status.dropna(subset=["key"]).empty:
    st.info(f"The curriculum of {exp!r} has not run yet (`ace curriculum step --experiment {exp} --scope SCOPE`).")
else:
    left, right = st.columns([2, 3])
    with left:
        counts = decisions.groupby(["round", "to"]).size().reset_index(name="decisions")
        st.altair_chart(alt.Chart(counts).mark_bar().encode(
            x=alt.X("round:O"), y="decisions:Q", color=alt.Color("to:N", title="moved to"),
            tooltip=["round", "to", "decisions"]).properties(height=300, title="Decisions per round"), width="stretch")
    with right:
        rounds_d = sorted(decisions["round"].unique().tolist(), reverse=True)
        rnd = ui.choice("Decisions of round", "cround", rounds_d, rounds_d[0] if rounds_d else None)
        st.dataframe(decisions[decisions["round"] == rnd].drop(columns=["round"]), hide_index=True, width="stretch",
                     height=300)
    st.markdown("**Units now** (state, smoothed success, rounds in that state)")
    st.dataframe(status.dropna(subset=["key"]).drop(columns=["round"]), hide_index=True, width="stretch", height=300)
