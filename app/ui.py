"""What every page shares: page setup, the empty and error states, and URL-backed selectors.

The scope, the page's filters and the selected edge live in the URL
(``st.query_params``), so a link reproduces a view; the scope and the level are
also kept in the session, so moving between pages keeps them.
"""

from __future__ import annotations

from typing import Any, Sequence

import streamlit as st

from ace_graph.errors import AceError
from app import data
from app.errors import Unavailable

START_HINT = """\
```
ace db start      # the managed Neo4j (or set NEO4J_URI for your own)
ace init          # schema, skill taxonomy, BFCL seed tasks
ace demo          # fills a scope with simulated rollouts
```"""


def page(title: str, caption: str = "") -> None:
    """Page config, title and caption."""
    st.set_page_config(page_title=f"ACE · {title}", layout="wide")
    st.title(title)
    if caption:
        st.caption(caption)


def show_unavailable(e: AceError) -> None:
    st.error(f"Cannot read the skill graph: {e}")
    st.markdown("Start Neo4j and fill the graph, then reload this page:\n\n" + START_HINT)
    st.stop()


def call(method: str, *args: Any, **kwargs: Any) -> Any:
    """A cached view; on an unreachable graph the page says what to run and stops."""
    try:
        return data.cached(method, *args, **kwargs)
    except Unavailable as e:
        show_unavailable(e)
    except AceError as e:
        st.error(str(e))
        st.stop()


def scopes() -> list[dict[str, Any]]:
    """All scopes, newest first; an empty graph gets a page that says how to fill it."""
    rows = call("scopes")
    if not rows:
        st.info(
            "The graph is reachable but holds no rollouts yet: there is no scope to show. "
            "Fill it with simulated rollouts (`ace demo`), or ingest your own "
            "(`ace ingest ROLLOUTS.jsonl --experiment E --policy P --checkpoint C`).\n\n" + START_HINT
        )
        st.stop()
    return rows


# --------------------------------------------------------------------------- URL-backed state


def qp(name: str, default: Any = None) -> Any:
    value = st.query_params.get(name)
    return default if value in (None, "") else value


def set_qp(**values: Any) -> None:
    for name, value in values.items():
        if value is None or value == "":
            if name in st.query_params:
                del st.query_params[name]
        else:
            st.query_params[name] = str(value)


def _index(options: Sequence[Any], value: Any, default: int = 0) -> int:
    try:
        return list(options).index(value)
    except ValueError:
        return default


def select_scope(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Experiment / policy / checkpoint selectors in the sidebar; the newest scope by default."""
    by_key = {r["key"]: r for r in rows}
    wanted = qp("scope") or st.session_state.get("ace_scope")
    if wanted and wanted not in by_key:
        st.sidebar.warning(f"Scope {wanted!r} is not in the graph; showing the newest.")
        wanted = None
    current = by_key[wanted] if wanted else rows[0]
    st.sidebar.header("Scope")
    experiments = sorted({r["experiment"] for r in rows})
    exp = st.sidebar.selectbox("Experiment", experiments, index=_index(experiments, current["experiment"]))
    policies = sorted({r["policy"] for r in rows if r["experiment"] == exp})
    pol = st.sidebar.selectbox("Policy", policies, index=_index(policies, current["policy"]))
    cands = [r for r in rows if r["experiment"] == exp and r["policy"] == pol]  # newest first
    checkpoints = [r["checkpoint"] for r in cands]
    ck = st.sidebar.selectbox(
        "Checkpoint", checkpoints, index=_index(checkpoints, current["checkpoint"]),
        format_func=lambda c: f"{c} (round {next(r['round'] for r in cands if r['checkpoint'] == c)})",
    )
    chosen = next(r for r in cands if r["checkpoint"] == ck)
    st.session_state["ace_scope"] = chosen["key"]
    set_qp(scope=chosen["key"])
    st.sidebar.caption(f"`{chosen['key']}` · {chosen['rollouts']:,} rollouts")
    return chosen


def select_level(label: str = "Level", where: Any = None) -> str:
    where = where or st
    levels = ["skill", "tool"]
    wanted = qp("level") or st.session_state.get("ace_level", "skill")
    level = where.radio(label, levels, index=_index(levels, wanted), horizontal=True)
    st.session_state["ace_level"] = level  # kept when moving to another page, like the scope
    set_qp(level=level)
    return level


def number(label: str, name: str, default: float, *, where: Any = None, **kwargs: Any) -> Any:
    """A number input initialised from (and written back to) the URL parameter ``name``."""
    where = where or st
    kind = type(default)
    try:
        value = kind(qp(name, default))
    except (TypeError, ValueError):
        value = default
    lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
    if lo is not None and value < lo or hi is not None and value > hi:
        value = default
    out = where.number_input(label, value=value, **kwargs)
    set_qp(**{name: out if out != default else None})
    return out


def choice(label: str, name: str, options: Sequence[Any], default: Any = None, *, where: Any = None, **kwargs):
    """A selectbox initialised from (and written back to) the URL parameter ``name``."""
    where = where or st
    options = list(options)
    if not options:
        return None
    start = _index(options, qp(name, default), _index(options, default, 0))
    out = where.selectbox(label, options, index=start, **kwargs)
    set_qp(**{name: out})
    return out


def pct(x: Any) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"
