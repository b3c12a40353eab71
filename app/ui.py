"""What every page shares: page setup, the empty and error states, and URL-backed selectors.

The scope, the page's filters and the selected edge live in the URL
(``st.query_params``), so a link reproduces a view; the scope, the level and the
environment are also kept in the session, so moving between pages keeps them.

The environment selector (all, BFCL, τ²-bench) comes with the scope list
(:func:`scopes`): it keeps the scopes of that environment (named query
``view-scope-environments``), and :func:`in_environment` keeps a page's rows to
that environment's tools and skills (``view-environment-members``) where a
scope holds rollouts of both.
"""

from __future__ import annotations

from typing import Any, Sequence

import streamlit as st

from ace_env.environments import DEFAULT, environment_named, environment_names
from ace_env.environments import ENVIRONMENTS as TOOL_ENVIRONMENTS
from ace_graph.errors import AceError
from ace_graph.scopes import incomplete_message
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
    """The scopes of the environment chosen in the sidebar (all of them by default), newest first, each with
    its ``environments``; an empty graph, or an environment without a scope, gets a page that says what to run.
    A scope marked incomplete (an ingest stopped part-way) is not listed: the sidebar names it with the fix."""
    rows = call("scopes")
    incomplete = call("incomplete_scopes")
    for key in incomplete:  # an ingest stopped part-way: not data, so no page shows it; say how to fix it
        (st.error if not rows else st.sidebar.warning)(incomplete_message(key))
    if not rows and incomplete:
        st.stop()
    if not rows:
        st.info(
            "The graph is reachable but holds no rollouts yet: there is no scope to show. "
            "Fill it with simulated rollouts (`ace demo`), or ingest your own "
            "(`ace ingest ROLLOUTS.jsonl --experiment E --policy P --checkpoint C`).\n\n" + START_HINT
        )
        st.stop()
    env = select_environment()
    envs = {r["key"]: r["environments"]
            for r in call("run", "view-scope-environments", environments=environment_names())}
    rows = [{**r, "environments": envs.get(r["key"], [])} for r in rows]
    if env != "all":
        rows = [r for r in rows if env in r["environments"]]
    if not rows:
        st.info(f"No scope holds {ENVIRONMENTS[env]} rollouts yet. Pick another environment in the sidebar, or "
                + (environment_named(env).fill_hint if env in TOOL_ENVIRONMENTS else DEFAULT.fill_hint))
        st.stop()
    return rows


# --------------------------------------------------------------------------- environments

#: The environment selector's choices: value -> label.  The values are the task sources and the names the
#: named queries view-scope-environments and view-environment-members give environments.
ENVIRONMENTS = {"all": "all environments", **{name: e.title for name, e in TOOL_ENVIRONMENTS.items()}}


def select_environment() -> str:
    """The environment selector at the top of the sidebar (URL parameter ``env``, kept in the session)."""
    options = list(ENVIRONMENTS)
    if st.session_state.get("ace_env_box") not in options:  # first run of this page: from the URL, else the session
        wanted = qp("env") or st.session_state.get("ace_env", "all")
        st.session_state["ace_env_box"] = wanted if wanted in options else "all"
    # a keyed widget with its value in the session (no index): its identity stays when the choice changes
    env = st.sidebar.selectbox("Environment", options, key="ace_env_box", format_func=ENVIRONMENTS.get,
                               help="Keep the scopes, tools and skills of one environment.")
    st.session_state["ace_env"] = env
    set_qp(env=None if env == "all" else env)
    return env


def environment() -> str:
    """The environment chosen on this page (``all`` before :func:`scopes` ran)."""
    return st.session_state.get("ace_env", "all")


def members(level: str) -> dict[str, str] | None:
    """The chosen environment's skills or tools (``level``) with their family or class; None for all."""
    env = environment()
    if env == "all":
        return None
    return {r["key"]: r["family"] for r in call("run", "view-environment-members", environment=env,
                                                   environments=environment_names())
            if r["level"] == level}


def _filters(scope: dict[str, Any] | None) -> bool:
    """Whether rows of ``scope`` (None: across scopes) need the environment's members to be kept to it."""
    env = environment()
    return env != "all" and not (scope is not None and scope.get("environments") == [env])


def in_environment(rows: list[dict[str, Any]], scope: dict[str, Any] | None, level: str,
                   columns: Sequence[str] = ("key",)) -> list[dict[str, Any]]:
    """``rows`` whose ``columns`` all name skills (tools) of the chosen environment (a column named
    ``family`` names a skill family or an API class of theirs).

    In a scope of that environment alone every row is one of its own (a tool BFCL has too, such as
    list_all_airports, included), so nothing is dropped; in a scope of both, and where there is no
    scope (``None``: rows across scopes), the environment's members decide.
    """
    if not _filters(scope):
        return rows
    found = members(level) or {}
    keys, families = set(found), set(found.values())
    return [r for r in rows if all(r[c] in (families if c == "family" else keys) for c in columns)]


def edges_in_environment(rows: list[dict[str, Any]], scope: dict[str, Any] | None, column: str,
                         level: str = "tool") -> list[dict[str, Any]]:
    """``rows`` whose ``column`` holds an edge ``"a>b"`` of two skills (tools) of the chosen environment."""
    if not _filters(scope):
        return rows
    pairs = [dict(zip(("from", "to"), (r[column] or "").split(">", 1))) for r in rows]
    kept = {id(p) for p in in_environment([p for p in pairs if len(p) == 2], scope, level, ("from", "to"))}
    return [r for r, p in zip(rows, pairs) if id(p) in kept]


def tasks_in_environment(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Task rows (with their ``source``) of the chosen environment: its seed tasks, and any synthesized task
    (source ``ace``; the rows given are about the environment's compositions already)."""
    env = environment()
    seed_sources = [e for e in ENVIRONMENTS if e != "all"]
    return rows if env == "all" else [r for r in rows if r.get("source") not in seed_sources or r["source"] == env]


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
        env = environment()
        if env == "all":
            st.sidebar.warning(f"Scope {wanted!r} is not in the graph; showing the newest.")
        else:
            st.sidebar.caption(f"Scope `{wanted}` is not a {ENVIRONMENTS[env]} scope; showing the newest that is.")
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
