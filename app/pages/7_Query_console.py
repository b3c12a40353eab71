"""Query console: run any read-only named query with its parameters, see the table and the exact Cypher."""

from __future__ import annotations

import json

import streamlit as st

from ace_env.environments import environment_names
from ace_graph import queries
from ace_graph.errors import AceError
from app import data, ui
from app.errors import Unavailable

ui.page("Query console", "Every named query whose header says it only reads (`Mode: read`), run in a read-access "
        "session: Neo4j refuses writes there. The Cypher below is the file's text, ready for Neo4j Browser.")
scope = ui.select_scope(ui.scopes())

names = queries.read_queries()
name = ui.choice("Named query", "q", names, "weak-compositions" if "weak-compositions" in names else names[0])
query = queries.load(name)
st.markdown(f"**{name}** — {query.description}")
hints = query.hints
context = {"scope": scope["key"], "experiment": scope["experiment"], "policy": scope["policy"],
           "environments": environment_names()}
if ui.environment() != "all":
    context["environment"] = ui.environment()
params, errors = {}, []
if query.params:
    cols = st.columns(min(4, len(query.params)))
    for i, p in enumerate(query.params):
        kind = queries.param_kind(hints.get(p, ""))
        default = context.get(p, queries.PARAM_DEFAULTS.get(p, ""))
        default_text = json.dumps(default) if isinstance(default, list) else str(default)
        text = cols[i % len(cols)].text_input(f"${p}", value=ui.qp(f"p_{p}", default_text), help=hints.get(p) or None)
        ui.set_qp(**{f"p_{p}": text if text != default_text else None})
        try:
            params[p] = queries.coerce_param(text, kind)
        except AceError as e:
            errors.append(f"${p}: {e}")
for e in errors:
    st.error(e)

if not errors:
    try:
        rows = data.run_named(name, json.dumps(params, sort_keys=True))
    except Unavailable as e:
        ui.show_unavailable(e)
    except AceError as e:
        st.error(str(e))
        rows = None
    if rows is not None:
        st.markdown(f"**{len(rows)} rows**")
        st.dataframe(data.frame(rows, list(query.columns) or None).map(
            lambda v: json.dumps(v, default=str) if isinstance(v, (list, dict)) else v),
            hide_index=True, width="stretch")

st.markdown("**Cypher** (paste into Neo4j Browser after the `:params` line)")
st.code(f":params {json.dumps(params, default=str)}", language="text")
st.code(query.text, language="cypher", wrap_lines=True)
