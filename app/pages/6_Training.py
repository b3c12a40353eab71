"""Training: GRPO reward curves and kept-group fraction from the trainer's metrics files; evaluation per checkpoint."""

from __future__ import annotations

import altair as alt
import streamlit as st

from ace_graph.config import ace_home
from ace_graph.errors import AceError
from ace_graph.stats import wilson
from app import data, ui

ui.page("Training", "Reward curves and the share of GRPO groups kept by dynamic filtering, read from the trainer's "
        "metrics files; evaluation of each checkpoint, read from the graph.")
scope = ui.select_scope(ui.scopes())
exp, pol = scope["experiment"], scope["policy"]

st.subheader("Training runs")
# The page reads only the metrics files it lists (under the workspace's runs/, or given to `ace app --metrics`);
# a URL's `metrics` picks one of them by its label and is never a path.
files = data.metrics_files()
wanted = ui.qp("metrics")
if wanted is not None and wanted not in files:
    st.warning("The link's `metrics` value is not one of the training metrics files listed here, so it is "
               "ignored (the page opens no other file). Pick a run below.")
    ui.set_qp(metrics=None)
if not files:
    st.info(
        f"No training metrics found under `{ace_home() / 'runs'}`.\n\n"
        "A GRPO run writes one JSON line per step (`step`, `reward_mean`, `reward_std`, `groups_sampled`, "
        "`groups_kept`, `loss`, timings): `ace loop` under "
        f"`{ace_home() / 'runs' / exp}/round-K/grpo-metrics.jsonl`, listed here by itself; "
        "`ace train grpo ... --metrics-out FILE` (default `OUT/metrics.jsonl`) is listed when FILE is under "
        f"`{ace_home() / 'runs'}` and its name matches `*metrics*.jsonl`; a file elsewhere is shown when "
        "the dashboard is started with `ace app --metrics FILE`."
    )
else:
    names = list(files)
    run = ui.choice("Run", "metrics", names, names[-1],
                    help="The `*metrics*.jsonl` files under the workspace's runs/ (and those given to "
                         "`ace app --metrics`): one JSON object per line and step.")
    try:
        m = data.read_metrics(run)
    except AceError as e:  # gone, or swapped for something else, since it was listed
        st.warning(str(e))
        m = None
    if m is None:
        pass
    elif m.empty or "step" not in m.columns:
        st.warning(f"{run} has no lines with a `step` field.")
    else:
        left, right = st.columns(2)
        with left:
            if "reward_mean" in m.columns:
                base = alt.Chart(m).encode(x=alt.X("step:Q"))
                chart = base.mark_line(point=True).encode(y=alt.Y("reward_mean:Q", title="reward (mean ± std)"))
                if "reward_std" in m.columns:
                    band = m.assign(lo=m["reward_mean"] - m["reward_std"], hi=m["reward_mean"] + m["reward_std"])
                    chart = alt.Chart(band).mark_area(opacity=0.2).encode(x="step:Q", y="lo:Q", y2="hi:Q") + chart
                st.altair_chart(chart.properties(height=300, title="Reward"), width="stretch")
        with right:
            if "kept_group_fraction" in m.columns:
                st.altair_chart(alt.Chart(m).mark_line(point=True).encode(
                    x="step:Q", y=alt.Y("kept_group_fraction:Q", scale=alt.Scale(domain=[0, 1]),
                                        title="groups kept (non-zero reward variance)")).properties(
                    height=300, title="Kept-group fraction"), width="stretch")
        numeric = [c for c in m.columns if c != "step" and m[c].dtype.kind in "if"]
        other = st.multiselect("More series", numeric, default=[c for c in ("loss",) if c in numeric])
        if other:
            st.line_chart(m.set_index("step")[other], height=260)
        st.dataframe(m, hide_index=True, width="stretch", height=260)

st.subheader(f"Evaluation per checkpoint of {exp}/{pol}")
evals = [r for r in ui.call("scopes") if r["experiment"] == exp and r["policy"] == pol]
df = data.frame(evals, ["round", "checkpoint", "rollouts", "rewarded", "near_success"]).sort_values("round")
bounds = [wilson(s or 0, n or 0) for s, n in zip(df["rewarded"], df["rollouts"])]
df["success"] = (df["rewarded"] / df["rollouts"].where(df["rollouts"] > 0)).astype(float)
df["ci_low"], df["ci_high"] = [b[0] for b in bounds], [b[1] for b in bounds]
base = alt.Chart(df).encode(x=alt.X("round:O", title="round (checkpoint)"))
st.altair_chart((base.mark_rule().encode(y=alt.Y("ci_low:Q", title="full-task success (95% interval)",
                                                 scale=alt.Scale(domain=[0, 1])), y2="ci_high:Q")
                 + base.mark_line(point=True).encode(y="success:Q", tooltip=["checkpoint", "rollouts", "rewarded"]))
                .properties(height=260), width="stretch")
st.dataframe(df, hide_index=True, width="stretch")
st.caption("The tasks differ between checkpoints when the curriculum changes the mix, so compare per-skill and "
           "per-composition success on the Capability history page as well.")
