"""Small statistics for capability and fragility, shared by Python and the Cypher library.

The same formulas are written out in ``cypher/*.cypher`` (analysts run those
unchanged); ``tests/integration/test_graph_queries.py`` checks that both agree.

*Capability* of a skill (or tool): successes / attempts over the oracle steps
a rollout reached, with a Wilson score interval.

*Fragility* of an edge a → b: how much more often b fails when it comes
directly after a than when it does not,

    p_after     = fail(b right after a) / n(b right after a)
    p_otherwise = (fail(b) - fail(b right after a)) / (n(b) - n(b right after a))
    fragility   = p_after - p_otherwise

with Newcombe's hybrid Wilson interval for the difference of two proportions.
A skill that is weak everywhere has p_after ≈ p_otherwise on every edge into
it, so it does not light up its edges; a weak *composition* does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959964


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def clopper_pearson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a proportion, two-sided at the level ``z`` gives; (0, 1) when n is 0.

    Unlike Wilson's, its coverage never falls below the nominal level, also at a
    handful of observations (Wilson's lower bound for 1 failure in 3 is 0.06, the
    exact one 0.008): for verdicts that must come from the data, not from a
    small-sample artefact of the interval.
    """
    # The beta quantile straight from scipy.special (scipy.stats' beta.ppf computes the same
    # number, measured identical, at ~40x the cost per call and twice the import time).
    from scipy.special import betaincinv, ndtr

    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], not {successes} of {n}")
    alpha = 2 * float(ndtr(-z))
    lo = float(betaincinv(successes, n - successes + 1, alpha / 2)) if successes > 0 else 0.0
    hi = float(betaincinv(successes + 1, n - successes, 1 - alpha / 2)) if successes < n else 1.0
    return lo, hi


#: Least times b must be reached right after a before the edge a→b is judged (the one default of every
#: composition query, the frontier, the estimator's probes and the dashboard).
MIN_SUPPORT = 20
#: How far above 0 the fragility's 95% lower bound must be (guards against testing many edges at once).
MIN_LIFT = 0.05
#: Share of the oracle's steps a failed rollout must match to count as a near-success (ingest, the gold-prefix
#: evaluation, the estimator's probes and the dashboard's "≥ 70%").
NEAR_SUCCESS = 0.7


@dataclass(frozen=True)
class Fragility:
    n_after: int
    fail_after: int
    n_otherwise: int
    fail_otherwise: int
    p_after: float
    p_otherwise: float
    fragility: float
    lower: float
    upper: float

    def significant(self, min_support: int = MIN_SUPPORT, min_lower: float = 0.0) -> bool:
        return self.n_after >= min_support and self.lower > min_lower


def fragility(n_ab: int, fail_ab: int, n_b: int, fail_b: int, z: float = Z95) -> Fragility:
    """Fragility of a → b from edge counts (n_ab, fail_ab) and b's totals (n_b, fail_b)."""
    if not (0 <= fail_ab <= n_ab <= n_b and 0 <= fail_b <= n_b and fail_ab <= fail_b):
        raise ValueError(f"inconsistent counts: n_ab={n_ab} fail_ab={fail_ab} n_b={n_b} fail_b={fail_b}")
    n0, f0 = n_b - n_ab, fail_b - fail_ab
    p1 = fail_ab / n_ab if n_ab else 0.0
    p0 = f0 / n0 if n0 else 0.0
    l1, u1 = wilson(fail_ab, n_ab, z)
    l0, u0 = wilson(f0, n0, z)
    d = p1 - p0
    lower = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    upper = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    return Fragility(n_ab, fail_ab, n0, f0, p1, p0, d, lower, upper)
