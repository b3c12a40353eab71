"""The composition estimator on counts: weak composition, weak tool, confounded pair, thin pair."""

from __future__ import annotations

import pytest

from ace_graph.errors import ConfigError
from ace_graph.estimate import AMBIGUOUS, COMPOSITION, OK, TOOL, Cell, EstimatorConfig, estimate, merge_cells


def _background(tasks: int = 40) -> list[Cell]:
    """Ordinary steps: several tools after several others, failing 2% of the time."""
    out = []
    tools = ["t1", "t2", "t3", "t4", "t5"]
    for k in range(tasks):
        for i, b in enumerate(tools):
            a = tools[(i + k) % len(tools)]
            if a != b:
                out.append(Cell(b, (a,), f"task{k}", 25, 1 if (k + i) % 2 else 0))
    return out


def _by_edge(cells):
    return {(e.from_, e.to): e for e in estimate(cells)}


def test_weak_composition_is_called_and_b_elsewhere_is_fine():
    cells = _background() + [
        Cell("b", ("a",), "ta", 200, 60),  # 30% right after a
        Cell("b", ("c",), "tc", 200, 4),  # 2% after c
        Cell("b", ("d",), "td", 200, 4),
    ]
    edges = _by_edge(cells)
    assert edges[("a", "b")].verdict == COMPOSITION
    assert edges[("a", "b")].effect_low > 0.3
    assert edges[("c", "b")].verdict == OK and edges[("d", "b")].verdict == OK


def test_tool_weak_everywhere_is_explained_by_the_tool():
    cells = _background() + [Cell("b", (p,), f"t{p}", 150, 45) for p in ("a", "c", "d", "e")]
    edges = _by_edge(cells)
    for p in ("a", "c", "d", "e"):
        e = edges[(p, "b")]
        assert e.verdict == TOOL, e
        assert e.tool_effect > 3 * e.effect and e.tool_low > 0.3


def test_confounded_pair_is_ambiguous_with_what_is_missing_then_resolved_by_probes():
    confounded = _background() + [Cell("b", ("a",), "ta", 200, 60), Cell("b", ("c",), "tc", 5, 0)]
    e = _by_edge(confounded)[("a", "b")]
    assert e.verdict == AMBIGUOUS
    assert e.missing.startswith("`b` seen 5 times without `a`")
    # probes: b reached without a fails at the base rate -> the composition
    fine = _by_edge(confounded + [Cell("b", ("z",), "probe1", 120, 2), Cell("b", (), "probe2", 60, 1)])
    assert fine[("a", "b")].verdict == COMPOSITION
    # ... or fails as often as after a -> b's own weakness
    weak = _by_edge(confounded + [Cell("b", ("z",), "probe1", 120, 36), Cell("b", (), "probe2", 60, 18)])
    assert weak[("a", "b")].verdict == TOOL


def test_a_pair_with_little_data_is_pulled_toward_no_effect():
    cells = _background() + [Cell("b", ("c",), "tc", 300, 6), Cell("b", ("a",), "ta", 4, 2)]
    e = _by_edge(cells)[("a", "b")]
    assert e.verdict != COMPOSITION
    assert e.effect < 2.0  # less than half the raw log-odds ratio of 50% vs 2% (~3.9)


def test_effects_are_non_negative_and_cells_merge():
    cells = merge_cells([Cell("b", ("a",), "t", 3, 1), Cell("b", ("a",), "t", 2, 0), Cell("b", (), None, 0, 0)])
    assert cells == [Cell("b", ("a",), "t", 5, 1)]
    assert all(e.effect >= 0 for e in estimate(_background()))


def test_bad_input_is_refused():
    with pytest.raises(ConfigError, match="no reached steps"):
        estimate([])
    with pytest.raises(ConfigError, match="failures outside"):
        estimate([Cell("b", (), None, 2, 3)])
    with pytest.raises(ConfigError, match="prior sds"):
        EstimatorConfig(pair_scale=0)
    with pytest.raises(ConfigError, match="max_iter"):
        EstimatorConfig(max_iter=0)


def test_a_composition_needs_b_seen_min_away_times_away_from_a():
    # 80 of 200 fail right after a; b away from a: 0 of 15 (exact upper bound 0.22 < 0.40), so the
    # data do separate the two, but on 15 steps: chance does that across a fit's ~100 edges
    cells = _background() + [Cell("b", ("a",), "ta", 200, 80), Cell("b", ("c",), "tc", 15, 0)]
    e = _by_edge(cells)[("a", "b")]
    assert e.verdict == AMBIGUOUS
    assert e.missing == "`b` seen 15 times without `a` (0 failed); a composition needs 20"
    e = {(x.from_, x.to): x for x in estimate(cells, EstimatorConfig(min_away=15))}[("a", "b")]
    assert e.verdict == COMPOSITION
    with pytest.raises(ConfigError, match="min_away"):
        EstimatorConfig(min_away=0)
