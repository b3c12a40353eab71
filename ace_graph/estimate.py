"""Tell a weak composition from a weak skill: a partially pooled logistic model of step failure.

Every reached oracle step is one observation: did it fail?  Its log-odds of
failing is modelled as

    logit P(fail) = mu + tool[b] + pair[a > b] + task[t]

``b`` being the step's tool (or skill), ``a`` the previous call's (so
``a > b`` is the composition the step completes; a step with no previous call
has no pair term) and ``t`` its task.  The effects are fitted together by
scikit-learn's L2-regularised logistic regression (a Gaussian prior on every
effect, a maximum a posteriori fit) on the counts per cell (task, a, b), each
cell entering twice with its failures and successes as sample weights.  The
prior scale differs per kind of effect (the columns are scaled, so one L2
penalty gives each group its own prior variance):

* a **pair** effect has a tight prior (``pair_scale``): a pair with little data
  is pulled toward "no composition effect";
* a **tool** effect has a wide one (``tool_scale``): a tool weak everywhere is
  explained by its own effect, once, instead of by a composition on every edge;
* a **task** effect (``task_scale``) soaks up tasks that are simply hard.

Uncertainty comes from the Laplace approximation (the inverse Hessian of the
penalised log-likelihood at the fit).  Each edge ``a > b`` then gets a verdict:

``composition``  the pair effect's lower bound clears ``margin``, b's own
                 effect (what b does away from a) is lower than the edge's, and
                 the data show it: b has been seen away from a at least
                 ``min_away`` times and its failure rate there has an exact
                 (Clopper-Pearson) upper bound under its rate right after a (a
                 prior alone never makes a composition);
``ambiguous``    the edge is weak (its combined tool + pair effect clears
                 ``margin``) but the data cannot say why: b's record away from
                 a is compatible both with b being fine and with b's own weakness
                 explaining the edge; ``missing`` says what evidence is lacking
                 ("estimate_distance seen 12 times without get_zipcode_based_on_city");
``tool``         the edge is weak and b's own effect explains it, and the data
                 show it: b fails away from a more often than steps do overall
                 (exact lower bound above the overall failure rate; Wilson's
                 would call 1 failure in 3 steps "shown");
``ok``           the edge is not weaker than the rest.

:func:`fit` and :func:`edge_estimates` are pure (unit-tested on counts);
:func:`estimate_scope` reads the cells of a scope's *view* (the scope plus the
probe scopes linked to it, ``cypher/scope-view.cypher``) from its stored steps
(``cypher/estimate-cells.cypher``), fits, and stores the estimate and verdict on
the scope's COMPOSES edges (``cypher/estimate-write.cypher``), where
``weak-compositions`` and ``frontier`` read them.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.stats import clopper_pearson

log = logging.getLogger(__name__)

COMPOSITION = "composition"
AMBIGUOUS = "ambiguous"
TOOL = "tool"
OK = "ok"
VERDICTS = (COMPOSITION, AMBIGUOUS, TOOL, OK)


@dataclass(frozen=True)
class Cell:
    """Reached steps of one unit (tool or skill) in one context: its previous units and its task."""

    unit: str
    prevs: tuple[str, ...]  # units of the previous call (empty: no previous call); one at tool level
    task: str | None
    n: int
    failures: int


@dataclass(frozen=True)
class EstimatorConfig:
    """Prior scales and decision thresholds of the estimator (log-odds units)."""

    tool_scale: float = 1.0
    """Prior sd of a tool's (or skill's) own effect.  A tool weak in k contexts costs one such
    effect against k composition effects, so a tool weak everywhere is explained by itself."""
    pair_scale: float = 1.0
    """Prior sd of a composition effect (>= 0): thin evidence is pulled toward no effect."""
    task_scale: float = 0.5
    """Prior sd of a task's effect (0 leaves tasks out of the model)."""
    z: float = 1.959964
    """Width of the intervals (1.96: 95% under the Laplace approximation)."""
    margin: float = 0.3
    """An effect counts only when its bound clears this many log-odds (0.3: odds x1.35)."""
    min_away: int = 20
    """Steps of b away from a a ``composition`` verdict needs.  With fewer, two thin samples (b right
    after a, b elsewhere) can differ by chance; across the ~100 edges of a fit some do, and a tool
    weak everywhere is then called a composition.  Such an edge is ``ambiguous`` instead, and
    probes (``ace diagnose``) supply the missing steps."""
    max_iter: int = 2000
    """lbfgs iterations of the fit."""

    def __post_init__(self) -> None:
        if self.tool_scale <= 0 or self.pair_scale <= 0 or self.task_scale < 0:
            raise ConfigError("tool_scale and pair_scale must be > 0 and task_scale >= 0 (prior sds in log-odds)")
        if self.z <= 0 or self.margin < 0:
            raise ConfigError("z must be > 0 and margin >= 0")
        if self.min_away < 1:
            raise ConfigError("min_away must be >= 1 step")
        if self.max_iter < 1:
            raise ConfigError("max_iter must be >= 1 iteration")


@dataclass
class Fit:
    """A fitted model: effects with their Laplace covariance."""

    config: EstimatorConfig
    intercept: float
    index: dict[tuple[str, ...], int]  # ("tool", b) / ("pair", a, b) / ("task", t) -> column
    coef: Any  # numpy array, effects in log-odds (unscaled)
    cov: Any  # numpy array, covariance of coef (unscaled)
    cells: int
    steps: int
    seconds: float

    def effect(self, *key: str) -> tuple[float, float]:
        """(mean, sd) of one effect; (0, prior sd) for an effect the data never touched."""
        j = self.index.get(key)
        if j is None:
            prior = {"tool": self.config.tool_scale, "pair": self.config.pair_scale, "task": self.config.task_scale}
            return 0.0, prior[key[0]]
        return float(self.coef[j]), math.sqrt(max(float(self.cov[j, j]), 0.0))

    def combined(self, a: str, b: str) -> tuple[float, float]:
        """(mean, sd) of tool[b] + pair[a > b]: how much weaker b is right after a than the base rate."""
        ja, jb = self.index.get(("pair", a, b)), self.index.get(("tool", b))
        mean = (float(self.coef[ja]) if ja is not None else 0.0) + (float(self.coef[jb]) if jb is not None else 0.0)
        var = 0.0
        for j in (ja, jb):
            if j is not None:
                var += float(self.cov[j, j])
        if ja is not None and jb is not None:
            var += 2 * float(self.cov[ja, jb])
        return mean, math.sqrt(max(var, 0.0))


@dataclass
class EdgeEstimate:
    """The estimate and verdict of one edge a > b."""

    from_: str
    to: str
    n: int  # b reached right after a (in the view)
    failures: int
    n_without: int  # b reached not right after a (in the view)
    failures_without: int
    effect: float  # composition effect (log-odds)
    effect_low: float
    effect_high: float
    tool_effect: float  # b's own effect (log-odds)
    tool_low: float
    tool_high: float
    combined_low: float  # lower bound of tool + pair
    verdict: str
    missing: str = ""
    base_rate: float = 0.0  # failure rate of all steps of the view (what the `tool` verdict compares with)

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d["from"] = d.pop("from_")
        return d


# --------------------------------------------------------------------------- cells


def merge_cells(cells: Iterable[Cell]) -> list[Cell]:
    """Sum cells with the same (unit, prevs, task)."""
    acc: dict[tuple[str, tuple[str, ...], str | None], list[int]] = defaultdict(lambda: [0, 0])
    for c in cells:
        k = (c.unit, tuple(sorted(set(c.prevs))), c.task)
        acc[k][0] += c.n
        acc[k][1] += c.failures
    return [Cell(u, p, t, n, f) for (u, p, t), (n, f) in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or ""))
            if n > 0]


def cells_from_records(records: Iterable[tuple[Any, tuple[Any, ...]]], level: str = "tool") -> list[Cell]:
    """Cells from rollout records (``ace_graph.outcomes.RolloutRecord`` with the task's oracle tags).

    The same observations the aggregates count: every reached step, at tool
    level its tool (steps without a tool skipped), at skill level each of its
    skills; the previous call's tool or skills are its context.
    """
    if level not in ("tool", "skill"):
        raise ConfigError(f"level must be 'tool' or 'skill', not {level!r}")
    out = []
    for rec, tags in records:
        for step in rec.steps:
            tag = tags[step.flat]
            prev = tags[step.prev] if step.prev is not None else None
            units = (tag.tool,) if level == "tool" else tuple(tag.skills)
            if level == "tool" and tag.tool is None:
                continue
            prevs = ((prev.tool,) if prev is not None and prev.tool else ()) if level == "tool" else \
                (tuple(prev.skills) if prev is not None else ())
            for u in units:
                out.append(Cell(u, prevs, rec.task_id, 1, int(step.outcome == "fail")))
    return merge_cells(out)


# --------------------------------------------------------------------------- fit


def fit(cells: Sequence[Cell], config: EstimatorConfig | None = None) -> Fit:
    """Fit the model on cells: penalised maximum likelihood by scipy's L-BFGS-B, Laplace covariance."""
    import numpy as np
    from scipy import sparse
    from scipy.optimize import minimize

    config = config or EstimatorConfig()
    t0 = time.perf_counter()
    cells = [c for c in cells if c.n > 0]
    if not cells:
        raise ConfigError("no reached steps to estimate from (is the scope empty?)")
    if any(c.failures < 0 or c.failures > c.n for c in cells):
        raise ConfigError("a cell has failures outside [0, n]")
    index: dict[tuple[str, ...], int] = {}
    prior: list[float] = []

    def col(key: tuple[str, ...], sd: float) -> int:
        j = index.get(key)
        if j is None:
            j = index[key] = len(prior)
            prior.append(sd)
        return j

    rows, cols = [], []
    for i, c in enumerate(cells):
        feats = [col(("tool", c.unit), config.tool_scale)]
        feats += [col(("pair", a, c.unit), config.pair_scale) for a in c.prevs]
        if c.task is not None and config.task_scale > 0:
            feats.append(col(("task", c.task), config.task_scale))
        rows += [i] * len(feats)
        cols += feats
    k = len(prior)
    X = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cells), k))
    Xt = X.T.tocsr()
    n = np.array([c.n for c in cells], dtype=float)
    f = np.array([c.failures for c in cells], dtype=float)
    inv_var = 1.0 / np.asarray(prior) ** 2
    base = min(max(f.sum() / n.sum(), 1e-4), 1 - 1e-4)

    def objective(theta: Any) -> tuple[float, Any]:
        mu, beta = theta[0], theta[1:]
        eta = mu + X @ beta
        nll = float(np.sum(n * np.logaddexp(0.0, eta) - f * eta)) + 0.5 * float(np.sum(inv_var * beta * beta))
        r = n / (1.0 + np.exp(-eta)) - f
        grad = np.concatenate([[r.sum()], Xt @ r + inv_var * beta])
        return nll, grad

    # composition effects only add failures (>= 0): otherwise a tool's effect could be moved
    # onto all its pairs at once, and no prior could tell the two stories apart
    bounds = [(None, None)] + [(0.0, None) if key[0] == "pair" else (None, None) for key in index]
    theta0 = np.zeros(k + 1)
    theta0[0] = math.log(base / (1 - base))
    res = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": config.max_iter, "ftol": 1e-12, "gtol": 1e-7})
    if not res.success:
        log.warning("estimator fit did not converge: %s", res.message)
    mu, beta = float(res.x[0]), res.x[1:]
    # Laplace: inverse Hessian of the penalised negative log-likelihood.  Task columns are
    # eliminated first (their block is diagonal), so only tools, pairs and the intercept are inverted.
    eta = mu + X @ beta
    p = 1.0 / (1.0 + np.exp(-eta))
    w = n * p * (1 - p)
    is_task = np.array([key[0] == "task" for key in index])
    keep = np.flatnonzero(~is_task)
    tasks = np.flatnonzero(is_task)
    Xa = sparse.hstack([sparse.csr_matrix(np.ones((len(cells), 1))), X[:, keep]]).tocsr()
    Wd = sparse.diags(w)
    A = (Xa.T @ Wd @ Xa).toarray()
    A[1:, 1:] += np.diag(inv_var[keep])
    if len(tasks):
        Xk = X[:, tasks]
        D = np.asarray((Xk.T @ Wd @ Xk).diagonal()).ravel() + inv_var[tasks]
        B = (Xa.T @ Wd @ Xk).toarray()
        A -= (B / D) @ B.T
    cov_keep = np.linalg.inv(A)[1:, 1:]
    cov = np.zeros((k, k))
    cov[np.ix_(keep, keep)] = cov_keep
    if len(tasks):
        cov[tasks, tasks] = 1.0 / D
    fitted = Fit(config, mu, index, beta, cov, len(cells), int(n.sum()), time.perf_counter() - t0)
    log.debug("fitted %d effects on %d cells (%d steps) in %.2f s", k, len(cells), int(n.sum()), fitted.seconds)
    return fitted


def edge_estimates(model: Fit, cells: Sequence[Cell]) -> list[EdgeEstimate]:
    """The estimate and verdict of every edge a > b the cells contain (see the module docstring)."""
    cfg = model.config
    z, m = cfg.z, cfg.margin
    n_unit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    n_edge: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for c in cells:
        n_unit[c.unit][0] += c.n
        n_unit[c.unit][1] += c.failures
        for a in set(c.prevs):
            n_edge[(a, c.unit)][0] += c.n
            n_edge[(a, c.unit)][1] += c.failures
    total = sum(c.n for c in cells)
    base = sum(c.failures for c in cells) / total if total else 0.0  # failure rate of all steps
    out = []
    for (a, b), (n1, f1) in sorted(n_edge.items()):
        eff, sd = model.effect("pair", a, b)
        tool, tsd = model.effect("tool", b)
        comb, csd = model.combined(a, b)
        lo, hi = eff - z * sd, eff + z * sd
        tlo, thi = tool - z * tsd, tool + z * tsd
        clo = comb - z * csd
        n0, f0 = n_unit[b][0] - n1, n_unit[b][1] - f1
        missing = ""
        # identified: b has been seen away from a often enough that its failure rate there is
        # measurably lower (exact upper bound) than right after a -- from the data, not the priors
        away_low, away_high = clopper_pearson(f0, n0, z)
        identified = n0 >= cfg.min_away and n1 > 0 and away_high < f1 / n1
        if lo > m and thi < comb - m and identified:
            verdict = COMPOSITION
        elif clo <= m:
            verdict = OK
        elif tlo > m and n0 > 0 and away_low > base:
            verdict = TOOL  # b is weak away from a too (shown by the data): its own effect explains the edge
        else:
            verdict = AMBIGUOUS
        if verdict == AMBIGUOUS:
            missing = f"`{b}` seen {n0} times without `{a}` ({f0} failed)"
            if n0 < cfg.min_away and lo > m:
                missing += f"; a composition needs {cfg.min_away}"
            if n1 < 20:
                missing += f"; `{a}` then `{b}` seen only {n1} times"
        out.append(EdgeEstimate(a, b, n1, f1, n0, f0, eff, lo, hi, tool, tlo, thi, clo, verdict, missing, base))
    return out


def estimate(cells: Sequence[Cell], config: EstimatorConfig | None = None) -> list[EdgeEstimate]:
    """Fit and give every edge its verdict."""
    cells = merge_cells(cells)
    return edge_estimates(fit(cells, config), cells)


# --------------------------------------------------------------------------- the graph


@dataclass
class ScopeEstimate:
    """What :func:`estimate_scope` did."""

    scope: str
    level: str
    view: list[str]
    cells: int
    steps: int
    edges: int
    verdicts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    estimates: list[EdgeEstimate] = field(default_factory=list)

    def by_edge(self) -> dict[tuple[str, str], EdgeEstimate]:
        return {(e.from_, e.to): e for e in self.estimates}


def scope_view(store: Any, scope: str) -> list[str]:
    """The scope and the probe scopes linked to it (``(S)-[:PROBED_BY]->(P)``), the scope first."""
    return _view(store, scope)[0]


def _view(store: Any, scope: str) -> tuple[list[str], int]:
    """:func:`scope_view` and the number of rollouts the scope itself holds."""
    rows = store.run("scope-view", scope=scope)
    if not rows:
        raise ConfigError(f"scope {scope!r} is not in the graph (see `ace query scopes -P experiment=...`)")
    return [scope] + sorted(r["probe"] for r in rows if r["probe"]), int(rows[0]["rollouts"] or 0)


def estimate_scope(store: Any, scope: str, level: str = "tool", config: EstimatorConfig | None = None,
                   known: tuple[Sequence[Cell], int] | None = None) -> ScopeEstimate:
    """Fit the model on the scope's view and store estimate and verdict on the scope's COMPOSES edges.

    ``known`` = (cells, n): the cells of ``n`` rollouts the caller has just stored in the scope
    (:func:`cells_from_records` of them, as ``ace ingest`` keeps them).  They are used instead of
    reading the stored steps back only when they are the whole view: no probe scope is linked
    and the scope holds exactly ``n`` rollouts.  Otherwise the cells are read from the graph.
    """
    if level not in ("tool", "skill"):
        raise ConfigError(f"level must be 'tool' or 'skill', not {level!r}")
    config = config or EstimatorConfig()
    t0 = time.perf_counter()
    view, stored = _view(store, scope)
    if known is not None and view == [scope] and known[1] > 0 and stored == known[1]:
        cells = merge_cells(known[0])
    else:
        raw = store.run("estimate-cells", scopes=view, level=level)
        legacy = sum(int(r["n"]) for r in raw if r["legacy"])
        if legacy:
            # steps stored before ingest kept each step's previous call: their pairs are unknown, and a
            # fit without them would call every edge `ok`; the interval statistic stays in charge
            log.warning("scope %s: %d steps have no stored previous call (ingested by an older ACE); "
                        "not estimating; re-ingest the rollouts to get estimates", scope, legacy)
            return ScopeEstimate(scope, level, view, 0, 0, 0, {"legacy_steps": legacy}, time.perf_counter() - t0)
        cells = merge_cells(Cell(r["unit"], tuple(r["prevs"]), r["task"], int(r["n"]), int(r["failures"]))
                            for r in raw)
    if not cells:
        return ScopeEstimate(scope, level, view, 0, 0, 0, {}, time.perf_counter() - t0)
    model = fit(cells, config)
    edges = edge_estimates(model, cells)
    rows = [dict(e.row(), view=view) for e in edges]
    store.write("estimate-write", scope=scope, level=level, rows=rows,
                meta={"view": view, "config": [config.tool_scale, config.pair_scale, config.task_scale,
                                                config.z, config.margin, config.min_away]})
    counts: dict[str, int] = defaultdict(int)
    for e in edges:
        counts[e.verdict] += 1
    return ScopeEstimate(scope, level, view, len(cells), model.steps, len(edges), dict(counts),
                         time.perf_counter() - t0, edges)


def estimate_cypher_names() -> tuple[str, ...]:
    """The named queries this module runs (checked to exist by the tests)."""
    for name in ("scope-view", "estimate-cells", "estimate-write", "link-probe-scope"):
        queries.load(name)
    return ("scope-view", "estimate-cells", "estimate-write", "link-probe-scope")


__all__ = [
    "AMBIGUOUS",
    "COMPOSITION",
    "OK",
    "TOOL",
    "VERDICTS",
    "Cell",
    "EdgeEstimate",
    "EstimatorConfig",
    "Fit",
    "ScopeEstimate",
    "cells_from_records",
    "edge_estimates",
    "estimate",
    "estimate_scope",
    "fit",
    "merge_cells",
    "scope_view",
]
