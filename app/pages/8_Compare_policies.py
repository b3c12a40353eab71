"""Compare policies: two or more scopes' weak compositions and per-skill (per-tool) success side by side.

Opened by URL with ``?policies=E/P/C,E/P/C``: scope keys (experiment/policy/checkpoint), so two checkpoints
of one policy (before and after training) compare as well as two policies; each value must be a stored
scope of the chosen environment, and one that is not is named as ignored.  Figures come from the named
query ``compare-policies`` (cypher/compare-policies.cypher) and each scope's ``weak-compositions``.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ace_graph.reports import MAX_COMPARED, side_by_side
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT
from app import data, ui

ui.page("Compare policies",
        "Two or more scopes (policies, or checkpoints of one policy before and after training) side by side: "
        "each composition's and each skill's success with its 95% Wilson interval, and where each scope's weak "
        "compositions lie. Link a view with ?policies=E/P/C,E/P/C.")
rows = ui.scopes()
keys = [r["key"] for r in rows]  # newest first, of the environment chosen in the sidebar
env = ui.environment()
where = "" if env == "all" else f" {ui.ENVIRONMENTS[env]}"

given = [k.strip() for k in str(ui.qp("policies", "")).split(",") if k.strip()]
unknown = [k for k in dict.fromkeys(given) if k not in keys]
if unknown:
    shown = ", ".join(f"`{k[:80]}`" if all(c.isprintable() and c != "`" for c in k) else "(a value)" for k in unknown[:5])
    st.warning(f"Not a stored{where} scope, so ignored: {shown}"
               + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
               + ". `policies` takes scope keys experiment/policy/checkpoint, as listed below.")
by_key = {r["key"]: r for r in rows}


def shared(a: str, b: str) -> bool:
    """Whether two scopes hold an environment in common (a scope whose environment is unknown shares any)."""
    ea, eb = set(by_key[a]["environments"]), set(by_key[b]["environments"])
    return not ea or not eb or bool(ea & eb)


wanted = [k for k in dict.fromkeys(given) if k in keys][:MAX_COMPARED]
if len(wanted) < 2 and not given and len(keys) >= 2:
    # no choice in the link: the scope chosen on another page (else the newest) and the newest one beside it
    # that holds the same environment
    first = st.session_state.get("ace_scope") if st.session_state.get("ace_scope") in by_key else keys[0]
    others = [k for k in keys if k != first]
    wanted = [first, next((k for k in others if shared(first, k)), others[0])]
picked = st.multiselect(f"Scopes to compare (2 to {MAX_COMPARED})", keys, default=wanted,
                        max_selections=MAX_COMPARED,
                        help="experiment/policy/checkpoint; the first is the reference of `change`.")
ui.set_qp(policies=",".join(picked) or None)
if len(picked) < 2:
    st.info(f"Pick at least two scopes to compare ({len(keys)}{where} scope{'s' if len(keys) != 1 else ''} stored).")
    st.stop()

f = st.columns([2, 2, 2, 3])
with f[0]:
    level = ui.select_level()
min_support = ui.number("Minimum support (n in some scope)", "min_support", MIN_SUPPORT, where=f[1], min_value=1,
                        max_value=1_000_000, step=5)
limit = ui.number("Most rows", "limit", 100, where=f[2], min_value=1, max_value=1000, step=10)
views = ["weak", "all"]
labels = {"weak": "Weak in some scope", "all": "All reached"}
with f[3]:
    show = st.radio("Compositions", views, index=views.index(ui.qp("show")) if ui.qp("show") in views else 0,
                    format_func=labels.get, horizontal=True)
ui.set_qp(show=show if show != "weak" else None)

apart = [(a, b) for i, a in enumerate(picked) for b in picked[i + 1:] if not shared(a, b)]
if apart:
    a, b = apart[0]
    st.warning(f"`{a}` and `{b}` hold rollouts of different environments ({', '.join(by_key[a]['environments'])}; "
               f"{', '.join(by_key[b]['environments'])}): a composition of one is never reached in the other. "
               "Compare scopes of one environment (the sidebar keeps one).")
compared = ui.call("compare", tuple(picked), level, int(min_support), int(limit))
weak_in: dict[tuple[str, str], list[str]] = {}
for key in picked:
    for w in ui.call("weak", key, level, int(min_support), MIN_LIFT, 200):
        weak_in.setdefault((w["from"], w["to"]), []).append(key)


def success_text(cell: dict | None) -> str:
    if not cell or not cell["n"]:
        return "not reached"
    return f"{cell['success']:.2f} [{cell['ci_low']:.2f}, {cell['ci_high']:.2f}] · n {cell['n']}, {cell['failures']} failed"


def change_text(row: dict) -> str:
    if row.get("change") is None:
        return "—"
    return f"{row['change']:+.2f} [{row['change_low']:+.2f}, {row['change_high']:+.2f}]"


def table(items: list[dict], first: str, extra: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """One row per composition (skill): its name, each scope's success with interval and n, the change."""
    out = []
    for r in items:
        line = {first: r["to"] if r["from"] is None else f"{r['from']} → {r['to']}"}
        for key in picked:
            line[key] = success_text(r["scopes"].get(key))
        if len(picked) == 2:
            line[f"change ({picked[1]} − {picked[0]})"] = change_text(r)
        if extra is not None:
            line["weak in"] = ", ".join(extra.get((r["from"], r["to"]), [])) or "—"
        out.append(line)
    return pd.DataFrame(out)


def long(items: list[dict], name: str) -> pd.DataFrame:
    """The rows as (name, scope, success, ci_low, ci_high, n) for the chart, scopes reached only."""
    return data.frame([{name: r["to"] if r["from"] is None else f"{r['from']} → {r['to']}", "scope": key,
                        **{k: cell[k] for k in ("success", "ci_low", "ci_high", "n")}}
                       for r in items for key, cell in r["scopes"].items() if cell["n"]],
                      [name, "scope", "success", "ci_low", "ci_high", "n"])


def chart(df: pd.DataFrame, name: str, title: str) -> alt.Chart:
    order = list(dict.fromkeys(df[name]))
    base = alt.Chart(df).encode(
        y=alt.Y(f"{name}:N", sort=order, title=None, axis=alt.Axis(labelLimit=300)),
        yOffset=alt.YOffset("scope:N", sort=picked),
        color=alt.Color("scope:N", sort=picked, title=None, scale=alt.Scale(scheme="tableau10"),
                        legend=alt.Legend(orient="top", labelLimit=400)))
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", title=title, scale=alt.Scale(domain=[0, 1])), x2="ci_high:Q")
    dots = base.mark_point(filled=True, size=45).encode(
        x="success:Q", tooltip=[name, "scope", "n", alt.Tooltip("success:Q", format=".3f"),
                                alt.Tooltip("ci_low:Q", format=".3f"), alt.Tooltip("ci_high:Q", format=".3f")])
    return (bars + dots).properties(height=alt.Step(max(6, 40 // len(picked))))  # each scope's band per row


summary = st.columns(len(picked))
for col, key in zip(summary, picked):
    r = by_key[key]
    col.metric(key, f"{r['rewarded'] / r['rollouts']:.1%}" if r["rollouts"] else "—",
               help="Full-task success: the share of the scope's rollouts that were rewarded.")
    col.caption(f"full-task success of {r['rollouts']:,} rollouts · "
                f"{sum(key in v for v in weak_in.values())} weak compositions at {level} level")

comps = ui.in_environment(side_by_side(compared, picked, "composition"), None, level, ("from", "to"))
if show == "weak":
    comps = [r for r in comps if (r["from"], r["to"]) in weak_in]
st.subheader(f"Compositions ({level} level), weakest first")
if not comps:
    st.info(f"No composition to show at {level} level with these filters (support ≥ {min_support}"
            + (", weak in some scope" if show == "weak" else "") + "). Lower the support, or show all reached.")
else:
    st.caption("Each cell: success of b right after a, its 95% Wilson interval, how often the scope reached it and "
               "failed there. `weak in`: the scopes whose weak-compositions list it."
               + (" `change`: the second scope's success minus the first's, with a 95% Newcombe interval."
                  if len(picked) == 2 else ""))
    st.table(table(comps, "composition", weak_in).set_index("composition"))
    st.altair_chart(chart(long(comps[:25], "composition"), "composition",
                          "success right after a (95% interval), first 25"), width="stretch")

skills = ui.in_environment(side_by_side(compared, picked, "capability"), None, level, ("to",))
st.subheader(f"Success per {level}, weakest first")
if not skills:
    st.info(f"No {level} reached at least {min_support} times in these scopes.")
else:
    st.table(table(skills, level).set_index(level))
    st.altair_chart(chart(long(skills[:25], level), level, f"success of the {level} (95% interval), first 25"),
                    width="stretch")
