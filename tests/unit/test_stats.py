"""Capability intervals and fragility: the numbers the frontier stands on."""

from __future__ import annotations

import random

import pytest

from ace_graph.stats import clopper_pearson, fragility, wilson


def test_wilson_known_values():
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-3) and hi == pytest.approx(0.9433, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(0, 50)
    assert lo == 0.0 and 0.05 < hi < 0.09


def test_clopper_pearson_known_values_and_scipy_stats_agree():
    # textbook exact 95% intervals
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(0.1871, abs=1e-4) and hi == pytest.approx(0.8129, abs=1e-4)
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.3085, abs=1e-4)
    assert clopper_pearson(10, 10)[1] == 1.0
    assert clopper_pearson(0, 0) == (0.0, 1.0)
    # the 1-in-3 case the verdicts rely on (Wilson's lower bound is 0.06)
    assert clopper_pearson(1, 3)[0] == pytest.approx(0.0084, abs=1e-4)
    # the quantiles come from scipy.special; scipy.stats' beta.ppf is the reference
    from scipy.stats import beta, norm

    alpha = 2 * norm.sf(1.96)
    for n in (1, 2, 7, 40, 333):
        for k in range(0, n + 1, max(1, n // 9)):
            lo, hi = clopper_pearson(k, n, 1.96)
            assert lo == (beta.ppf(alpha / 2, k, n - k + 1) if k else 0.0)
            assert hi == (beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0)
    with pytest.raises(ValueError):
        clopper_pearson(4, 3)


def test_fragility_separates_weak_composition_from_weak_tool():
    rng = random.Random(3)
    # Tool b fails 35% everywhere: after a, and after anything else.
    n_ab = 400
    fail_ab = sum(rng.random() < 0.35 for _ in range(n_ab))
    n_b = 2000
    fail_b = fail_ab + sum(rng.random() < 0.35 for _ in range(n_b - n_ab))
    weak_everywhere = fragility(n_ab, fail_ab, n_b, fail_b)
    assert abs(weak_everywhere.fragility) < 0.08
    assert not weak_everywhere.significant(min_support=20)

    # b fails 60% right after a and 2% otherwise: a weak composition.
    fail_ab = sum(rng.random() < 0.6 for _ in range(n_ab))
    fail_b = fail_ab + sum(rng.random() < 0.02 for _ in range(n_b - n_ab))
    weak_pair = fragility(n_ab, fail_ab, n_b, fail_b)
    assert weak_pair.significant(min_support=20)
    assert 0.45 < weak_pair.lower < weak_pair.fragility < weak_pair.upper


def test_fragility_needs_support():
    # 2 of 2 failed right after a: dramatic but not evidence.
    f = fragility(2, 2, 500, 12)
    assert f.fragility > 0.9
    assert not f.significant(min_support=20)
    assert f.lower < 0.5


def test_fragility_without_a_baseline_is_not_significant():
    # b only ever occurs right after a: nothing to compare with.
    f = fragility(100, 60, 100, 60)
    assert f.n_otherwise == 0 and f.lower <= 0


def test_fragility_rejects_inconsistent_counts():
    with pytest.raises(ValueError):
        fragility(10, 11, 20, 12)
    with pytest.raises(ValueError):
        fragility(30, 1, 20, 1)
