"""Cached access to the graph for the dashboard's pages.

The driver is opened once per server process (``st.cache_resource``); every
view is cached for ``TTL`` seconds (``st.cache_data``), so a page renders
from memory while data is at most that old.  All data come from
``ace_graph.reports`` (named queries in ``cypher/``); the app holds no Cypher.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired

from ace_graph.config import ace_home, neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import AceError, ConfigError
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
    """A read-mode named query with JSON-encoded parameters (the query console): its scopes and every name it
    declares checked first."""
    return _call("console", name, **json.loads(params_json))


# --------------------------------------------------------------------------- files


def synth_task_files() -> list[Path]:
    """Synthesized task files ``ace demo`` / ``ace synth`` wrote under ACE_HOME/runs/: regular files only, as
    the metrics files (a symbolic link is not followed, so nothing outside runs/ is opened; a FIFO, socket or
    device is not listed, so no page waits on it or fails reading it)."""
    pattern = str(ace_home() / "runs" / "*" / "synth-*.jsonl")
    return [Path(p) for p in sorted(glob.glob(pattern)) if _regular(Path(p))]


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


#: The training metrics files the dashboard lists, under $ACE_HOME: `ace loop` writes
#: runs/E/round-K/grpo-metrics.jsonl; `ace train grpo --metrics-out` can point anywhere below runs/.
METRICS_GLOB = "runs/**/*metrics*.jsonl"
#: Metrics files given to `ace app --metrics FILE` (a JSON list of absolute paths), set by `ace app` for its server.
METRICS_ENV = "ACE_APP_METRICS"
#: Most metrics files listed from runs/ (in path order; a workspace with more lists the first ones).
MAX_METRICS_FILES = 2000


def _regular(path: Path) -> bool:
    """A regular file itself (not a symlink, FIFO, socket or device)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def given_metrics_files() -> list[Path]:
    """The files ``ace app --metrics`` named (checked there: regular files); the environment variable's
    entries that are not absolute paths of regular files are dropped."""
    try:
        given = json.loads(os.environ.get(METRICS_ENV) or "[]")
    except ValueError:
        log.warning("%s is not a JSON list; ignored", METRICS_ENV)
        return []
    if not isinstance(given, list):
        return []
    return [Path(p) for p in given if isinstance(p, str) and Path(p).is_absolute() and _regular(Path(p))]


def metrics_files() -> dict[str, Path]:
    """Every training metrics file the dashboard may read, by the label it is listed (and selected in a URL) by.

    The ``*metrics*.jsonl`` regular files under ``$ACE_HOME/runs`` (labelled by their path relative to it;
    symbolic links are neither followed nor listed), then the files given to ``ace app --metrics`` (labelled
    by their absolute path).  Nothing else is ever opened: the page takes no path from a URL or a text box,
    only one of these labels.
    """
    runs = ace_home() / "runs"
    pattern = METRICS_GLOB.rsplit("/", 1)[1]
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(runs, followlinks=False):  # (a missing runs/ yields nothing)
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if fnmatch.fnmatch(name, pattern) and _regular(path):
                found[str(path.relative_to(runs))] = path
        if len(found) >= MAX_METRICS_FILES:
            break
    for path in given_metrics_files():
        found.setdefault(str(path), path)
    return found


def metrics_file(label: str) -> Path:
    """The metrics file listed under ``label`` (:func:`metrics_files`); ConfigError for any other value."""
    path = metrics_files().get(label)
    if path is None:
        raise ConfigError(f"{label!r:.120} is not one of the training metrics files listed under "
                          f"{ace_home() / 'runs'} (or given to `ace app --metrics`)")
    return path


@st.cache_data(ttl=TTL, show_spinner=False)
def read_metrics(label: str) -> pd.DataFrame:
    """One listed training run's metrics (one JSON object per step), by its label in :func:`metrics_files`
    (any other value is a ConfigError, and nothing is opened); bad lines are skipped and logged."""
    path = metrics_file(label)
    # opened without following a link and without blocking, then checked again: a file swapped for a link,
    # a FIFO or a device since it was listed is refused, not read
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise ConfigError(f"{label!r:.120} cannot be read ({e.strerror}); not read") from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(f"{label!r:.120} is no longer a regular file; not read")
    rows = []
    with open(fd, encoding="utf-8") as f:
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
