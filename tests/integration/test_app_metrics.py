"""The Training page reads only the metrics files it lists (issue 35, defect 1).

It lists the `*metrics*.jsonl` regular files under the workspace's runs/ (links not followed) and the files
given to `ace app --metrics`; a URL's `metrics` only picks one of those by its label.  `?metrics=/etc/passwd`
or `?metrics=/**/*.jsonl` used to go straight into a recursive glob and a file open.
"""

from __future__ import annotations

import builtins
import glob
import json
import os
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ace.cli import main
from ace.cli.appcmd import metrics_inputs
from ace_graph.errors import ConfigError
from app import data

APP = Path(__file__).resolve().parents[2] / "app"
SCOPE = "metrics/sim/round-0"
LABEL = "e/round-0/grpo-metrics.jsonl"


def _lines(kept: list[int]) -> str:
    return "".join(json.dumps({"step": i, "reward_mean": 0.5, "reward_std": 0.1, "groups_sampled": 8,
                               "groups_kept": k, "loss": 0.3}) + "\n" for i, k in enumerate(kept))


@pytest.fixture(scope="module")
def graph(neo4j_driver, neo4j_database, tmp_path_factory):
    """One small scope, so the Training page has a scope to show."""
    with neo4j_driver.session(database=neo4j_database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    out = tmp_path_factory.mktemp("metrics") / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "40", "--seed", "3", "--out", str(out)]) == 0
    assert main(["ingest", str(out), "--scope", SCOPE, "--tasks", "bfcl:base", "--show", "none"]) == 0


@pytest.fixture
def home(graph, tmp_path, monkeypatch):
    """A workspace whose runs/ holds one metrics file (and a link to a file outside it); beside runs/, a
    secret that looks like a metrics file; every file open and glob of the page recorded."""
    ws = tmp_path / "home"
    run = ws / "runs" / LABEL
    run.parent.mkdir(parents=True)
    run.write_text(_lines([8, 4]))
    secret = tmp_path / "secret-metrics.jsonl"
    secret.write_text(_lines([1, 1, 1]))
    (ws / "runs" / "e" / "linked-metrics.jsonl").symlink_to(secret)
    (ws / "runs" / "outside").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.setattr(data, "ace_home", lambda: ws)
    monkeypatch.delenv(data.METRICS_ENV, raising=False)
    opened: list[str] = []
    real_open, real_os_open, real_glob = builtins.open, os.open, glob.glob

    def spy_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    def spy_glob(pattern, *args, **kwargs):
        opened.append(f"glob:{pattern}")
        return real_glob(pattern, *args, **kwargs) if str(pattern).startswith(str(ws)) else []  # never walk /

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setattr(glob, "glob", spy_glob)
    st.cache_data.clear()
    yield {"ws": ws, "run": run, "secret": secret, "opened": opened}
    st.cache_data.clear()


def page(**params: str) -> AppTest:
    at = AppTest.from_file(str(APP / "pages" / "6_Training.py"), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def kept(at: AppTest) -> list[float]:
    return list(next(d.value for d in at.dataframe if "kept_group_fraction" in d.value.columns)["kept_group_fraction"])


@pytest.mark.parametrize("value", ["/etc/passwd", "/**/*.jsonl", "../secret-metrics.jsonl", "outside/secret-metrics.jsonl",
                                   "e/linked-metrics.jsonl", "SECRET", "e/round-0/../../../secret-metrics.jsonl"])
def test_a_url_never_names_a_file_to_read(home, value):
    value = value.replace("SECRET", str(home["secret"]))
    at = page(scope=SCOPE, metrics=value)
    assert any("ignored" in w.value for w in at.warning), value
    run = next(s for s in at.selectbox if s.label == "Run")
    assert run.options == [LABEL] and run.value == LABEL  # the one file under runs/, links neither listed nor followed
    assert kept(at) == [1.0, 0.5]
    opened = home["opened"]
    assert not [p for p in opened if "passwd" in p or "secret" in p or p.startswith("glob:/**")], opened
    assert at.query_params["metrics"] == LABEL


def test_the_listed_file_is_picked_by_its_label(home):
    other = home["ws"] / "runs" / "e" / "round-1" / "grpo-metrics.jsonl"
    other.parent.mkdir()
    other.write_text(_lines([8, 8, 2]))
    at = page(scope=SCOPE, metrics="e/round-1/grpo-metrics.jsonl")
    assert not at.warning
    assert kept(at) == [1.0, 1.0, 0.25]
    run = next(s for s in at.selectbox if s.label == "Run")
    run.set_value(LABEL).run()
    assert not at.exception and kept(at) == [1.0, 0.5] and at.query_params["metrics"] == LABEL


def test_no_metrics_says_how_to_get_them(home):
    home["run"].unlink()
    at = page(scope=SCOPE)
    assert any("No training metrics found" in i.value and "ace app --metrics" in i.value for i in at.info)
    assert not [s for s in at.selectbox if s.label == "Run"]


def test_files_given_to_ace_app_are_listed_by_their_path(home, monkeypatch):
    monkeypatch.setenv(data.METRICS_ENV, json.dumps(metrics_inputs([home["secret"]])))
    at = page(scope=SCOPE, metrics=str(home["secret"]))
    assert not at.warning and kept(at) == [0.125, 0.125, 0.125]
    # what the variable holds is checked again: a relative path or a FIFO is not listed
    fifo = home["ws"] / "fifo-metrics.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setenv(data.METRICS_ENV, json.dumps(["secret-metrics.jsonl", str(fifo)]))
    assert list(data.metrics_files()) == [LABEL]
    with pytest.raises(ConfigError, match="not one of"):
        data.read_metrics(str(fifo))


def test_ace_app_takes_only_regular_files(tmp_path):
    good = tmp_path / "m.jsonl"
    good.write_text("{}\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(good)
    assert metrics_inputs([good, link]) == [str(good)]  # a link is its target, once
    os.mkfifo(tmp_path / "fifo")
    for bad, message in ((tmp_path / "fifo", "not a regular file"), (tmp_path, "not a regular file"),
                         (tmp_path / "missing", "No such file")):
        with pytest.raises(ConfigError, match=message):
            metrics_inputs([bad])
