"""Every .cypher header states its Mode; read queries give the scope format and a :params line."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.frontier import FrontierConfig
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT


def test_every_file_declares_its_mode_and_read_queries_a_params_line():
    for name in queries.list_queries():
        q = queries.load(name)
        text = q.path.read_text()
        assert "// Mode: read" in text or "// Mode: write" in text, name
        if q.writes:
            continue
        assert set(q.example) == set(q.params), name  # ready to paste: every parameter has a value
        assert set(q.required) <= set(q.params), name
        line = next(x for x in text.splitlines() if x.startswith("// :params {"))
        assert line[3:] == q.params_line, name
        if "scope" in q.params:
            assert '"experiment/policy/checkpoint"' in text, name


def test_mode_not_the_name_decides(tmp_path):
    (tmp_path / "upsert-looks-like-a-write.cypher").write_text(
        "// Purpose: x\n// Parameters: $limit (int)\n// Columns: n\n// Mode: read\n// Required: none\n"
        "// :params {limit: 5}\nRETURN $limit AS n\n")
    (tmp_path / "harmless-name.cypher").write_text(
        "// Purpose: x\n// Parameters: none\n// Columns: none\n// Mode: write\nCREATE (:X)\n")
    (tmp_path / "no-mode.cypher").write_text("// Purpose: x\n// Parameters: none\n// Columns: none\nCREATE (:X)\n")
    (tmp_path / "no-mode-read.cypher").write_text("// Purpose: x\n// Parameters: none\n// Columns: n\nRETURN 1 AS n\n")
    assert not queries.load("upsert-looks-like-a-write", tmp_path).writes
    assert queries.load("upsert-looks-like-a-write", tmp_path).defaults == {"limit": 5}
    assert queries.load("harmless-name", tmp_path).writes
    for name in ("no-mode", "no-mode-read"):  # no Mode line: refused, whatever the name or the text
        with pytest.raises(ConfigError, match="Mode:"):
            queries.load(name, tmp_path)
    (tmp_path / "bad.cypher").write_text("// Purpose: x\n// Parameters: none\n// Columns: none\n// Mode: maybe\nRETURN 1\n")
    with pytest.raises(ConfigError, match="Mode: maybe"):
        queries.load("bad", tmp_path)
    (tmp_path / "stray.cypher").write_text(
        "// Purpose: x\n// Parameters: none\n// Columns: n\n// Mode: read\n// :params {oops: 1}\nRETURN 1 AS n\n")
    with pytest.raises(ConfigError, match="oops"):
        queries.load("stray", tmp_path)


def test_frontier_config_defaults_are_the_query_defaults():
    cfg = asdict(FrontierConfig())
    for name in ("frontier", "weak-compositions"):
        defaults = queries.load(name).defaults
        assert defaults == {k: v for k, v in cfg.items() if k in defaults}, name


def test_frontier_config_checks_its_fields():
    for bad in ({"level": "bogus"}, {"min_support": -5}, {"min_support": 2**63}, {"limit": 0},
                {"min_prereq": 1.5}, {"min_lift": float("nan")}):
        with pytest.raises(ConfigError):
            FrontierConfig(**bad)
    with pytest.raises(ConfigError, match="valid levels: skill, tool"):
        FrontierConfig(level="skil")
    assert FrontierConfig(level="tool", limit=50).params("weak-compositions") == {
        "level": "tool", "min_support": MIN_SUPPORT, "min_lift": MIN_LIFT, "limit": 50}
