"""The name checker's pure parts, and every read query declaring what its parameters name."""

from __future__ import annotations

import pytest

from ace_graph import names, queries
from ace_graph.errors import ConfigError

TOOLS = ["place_order", "get_order_details", "get_stock_info", "cancel_order", "mv", "cd", "grep"]


def test_every_read_query_parameter_that_is_not_a_number_or_a_switch_says_what_it_names():
    # so a new query is covered by tests/integration/test_query_names.py's walk without editing it
    for name in queries.read_queries():
        q = queries.load(name)
        for param in q.params:
            hint = q.hints.get(param, "")
            if queries.param_kind(hint) in ("int", "float") or hint.startswith("bool"):
                assert param not in q.names, (name, param)
                continue
            assert param in q.names, f"{name}: ${param} ({hint}) names something; declare it on a Names: line"
    assert queries.load("failed-after").names == {"scope": "scope", "level": "level", "after": "node", "skill": "node"}


def test_nearest_puts_close_matches_first_and_always_offers_some():
    assert names.nearest("plac_order", TOOLS)[0] == "place_order"
    assert len(names.nearest("plac_order", TOOLS)) == names.NEAREST
    assert len(names.nearest("zzzzzzzz", TOOLS, n=3)) == 3  # nothing close: still the nearest three
    assert names.nearest("x", []) == []


def test_a_refusal_is_one_line_with_the_nearest_names():
    e = names.refusal("failed-after", "after", "tool", "plac_order\nDROP", TOOLS)
    text = str(e)
    assert "\n" not in text and text.startswith("failed-after: after='plac_order\\nDROP' is not a known tool")
    assert "nearest of 7: place_order" in text
    assert str(names.refusal("q", "level", "level", "tools", ["skill", "tool"])).endswith("valid levels: skill, tool")
    assert "holds no rollout" in str(names.refusal("q", "rollout", "rollout", "r-1", [], " of scope a/b/c"))
    assert str(names.refusal("q", "scopes", "scope", "a/b/x", ["a/b/c"])) == (
        "q: scopes: scope 'a/b/x' does not exist; nearest of 1: a/b/c")
    assert str(names.refusal("q", "experiment", "experiment", "ux", ["cl", "other"])).startswith(
        "q: experiment: experiment 'ux' has no scopes; nearest of 2: ")
    long = str(names.refusal("q", "scope", "scope", "x" * 500, ["a/b/c"]))
    assert len(long) < 200


def test_a_rollout_is_split_from_its_full_form():
    assert names.split_rollout("sim-1-52", "demo/sim/round-0") == ("demo/sim/round-0", "sim-1-52")
    assert names.split_rollout("demo/sim/round-0/sim-1-52", "demo/sim/round-0") == ("demo/sim/round-0", "sim-1-52")
    assert names.split_rollout("demo/sim/round-0/sim-1-52", None) == ("demo/sim/round-0", "sim-1-52")
    assert names.split_rollout("demo/sim/round-0/a/b", None) == ("demo/sim/round-0", "a/b")  # ids may hold '/'
    # another scope's full form stays whole, so the check can say it is not of this scope
    assert names.split_rollout("demo/sim/round-1/sim-1-52", "demo/sim/round-0") == (
        "demo/sim/round-0", "demo/sim/round-1/sim-1-52")
    assert names.split_rollout("a/b", None) == (None, "a/b")
    assert names.split_rollout(5, None) == (None, 5)


def test_prepare_gives_the_scope_a_full_form_rollout_names():
    q = queries.load("view-rollout")
    assert names.prepare(q, {"rollout": "demo/sim/round-0/sim-1-52"}) == {
        "scope": "demo/sim/round-0", "rollout": "sim-1-52"}
    assert names.prepare(q, {"rollout": "sim-1-52"}) == {"rollout": "sim-1-52"}
    other = queries.load("weak-compositions")
    assert names.prepare(other, {"scope": "a/b/c"}) == {"scope": "a/b/c"}


HEADER = "// Purpose: x\n// Parameters: $scope (string), $level (string), $a (string)\n// Columns: n\n// Mode: read\n"


@pytest.mark.parametrize("line, message", [
    ("// Names: $nope scope", "does not declare"),
    ("// Names: $a wizard", "not one of"),
    ("// Names: scope is a scope", r"not `\$param kind"),
])
def test_a_names_line_is_checked_when_the_file_loads(tmp_path, line, message):
    (tmp_path / "q.cypher").write_text(HEADER + line + "\nRETURN $scope + $level + $a AS n\n")
    with pytest.raises(ConfigError, match=message):
        queries.load("q", tmp_path)


def test_a_kind_read_beside_another_parameter_needs_it(tmp_path):
    (tmp_path / "q.cypher").write_text(
        "// Purpose: x\n// Parameters: $a (string)\n// Columns: n\n// Mode: read\n// Names: $a node\nRETURN $a AS n\n")
    with pytest.raises(ConfigError, match=r"beside \$level"):
        queries.load("q", tmp_path)
    (tmp_path / "r.cypher").write_text(HEADER + "// Names: $scope scope,\n//   $a node, $level level\nRETURN $scope + $level + $a AS n\n")
    assert queries.load("r", tmp_path).names == {"scope": "scope", "a": "node", "level": "level"}
