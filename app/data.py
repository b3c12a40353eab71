"""Cached access to the graph for the dashboard's pages.

The driver is opened once per server process (``st.cache_resource``); every
view is cached for ``TTL`` seconds (``st.cache_data``), so a page renders
from memory while data is at most that old.  All data come from
``ace_graph.reports`` (named queries in ``cypher/``); the app holds no Cypher.
"""

from __future__ import annotations

import glob
import json
import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from ace_graph.config import ace_home, neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import AceError
from ace_graph.reports import GraphReports
from ace_graph.transcripts import TaskLibrary, Transcript, transcript
from app.errors import QueryFailed, Unavailable

log = logging.getLogger(__name__)

TTL = int(os.environ.get("ACE_APP_TTL", "30"))


@st.cache_resource(show_spinner=False)
def _driver() -> Any:
    settings = neo4j_settings()
    return get_driver(settings), settings.database


def reports() -> GraphReports:
    """The read-only reports over the configured Neo4j; Unavailable when it cannot be reached."""
    try:
        driver, database = _driver()
    except AceError as e:
        raise Unavailable(str(e)) from e
    return GraphReports(driver, database)


def frame(rows: list[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """Rows as a DataFrame (with the given columns even when there are no rows)."""
    df = pd.DataFrame(rows)
    if columns is not None:
        for c in columns:
            if c not in df.columns:
                df[c] = None
        df = df[columns]
    return df


def _call(method: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return getattr(reports(), method)(*args, **kwargs)
    except AceError:
        raise
    except (ServiceUnavailable, SessionExpired) as e:
        _driver.clear()
        raise Unavailable(f"Neo4j went away: {e}. Check `ace db status`; start it with `ace db start`.") from e
    except Neo4jError as e:
        raise QueryFailed(f"Neo4j: {e.message or e} ({e.code})") from e


@st.cache_data(ttl=TTL, show_spinner=False)
def cached(method: str, *args: Any, **kwargs: Any) -> Any:
    """``GraphReports.<method>(*args, **kwargs)``, cached for TTL seconds."""
    return _call(method, *args, **kwargs)


@st.cache_data(ttl=TTL, show_spinner=False)
def run_named(name: str, params_json: str) -> list[dict[str, Any]]:
    """A read-mode named query with JSON-encoded parameters (the query console)."""
    return _call("run", name, **json.loads(params_json))


# --------------------------------------------------------------------------- files


def synth_task_files() -> list[Path]:
    """Synthesized task files ``ace demo`` / ``ace synth`` wrote under ACE_HOME/runs/."""
    pattern = str(ace_home() / "runs" / "*" / "synth-*.jsonl")
    return [Path(p) for p in sorted(glob.glob(pattern))]


@st.cache_resource(show_spinner=False)
def _library(files: tuple[str, ...]) -> TaskLibrary:
    return TaskLibrary([Path(f) for f in files])


def task_library() -> TaskLibrary:
    return _library(tuple(str(p) for p in synth_task_files()))


@st.cache_data(ttl=TTL, show_spinner=False)
def rollout_transcript(scope: str, rollout: str) -> Transcript | None:
    row = _call("rollout", scope, rollout)
    if row is None:
        return None
    return transcript(row, task_library().get(row["task_id"]))


def task_text(task_id: str) -> str:
    task = task_library().get(task_id)
    if task is None:
        return ""
    return " / ".join(" ".join(m.get("content", "") for m in t.user if m.get("role") == "user") for t in task.turns)


#: Where the GRPO trainer's per-step metrics (JSONL, `--metrics-out`) are looked for.
#: Where training metrics are looked for by default, under $ACE_HOME: `ace loop` writes
#: runs/E/round-K/grpo-metrics.jsonl; `ace train grpo --metrics-out` can point anywhere below runs/.
METRICS_GLOB = "runs/**/*metrics*.jsonl"


def metrics_files(pattern: str | None = None) -> list[Path]:
    pattern = pattern or str(ace_home() / METRICS_GLOB)
    return [Path(p) for p in sorted(glob.glob(pattern, recursive=True)) if Path(p).is_file()]


@st.cache_data(ttl=TTL, show_spinner=False)
def read_metrics(path: str) -> pd.DataFrame:
    """One training run's metrics (one JSON object per step); bad lines are skipped and logged."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                log.warning("%s: line %d is not JSON; skipped", path, i)
                continue
            if isinstance(row, dict):
                rows.append(row)
    df = pd.DataFrame(rows)
    if {"groups_kept", "groups_sampled"} <= set(df.columns):
        df["kept_group_fraction"] = df["groups_kept"] / df["groups_sampled"].where(df["groups_sampled"] > 0)
    return df
