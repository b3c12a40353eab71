"""Drift: how far a selected task set's tool usage strays from the seed tasks'.

:func:`drift` is the total variation distance between the two sets' tool-call
distributions, checked against :attr:`train.curriculum.core.CurriculumConfig.max_drift`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from ace_graph.errors import ConfigError
from train.curriculum.core import CurriculumConfig
from train.curriculum.mix import Candidate, call_names


@dataclass
class DriftReport:
    """How far a selected set's tool usage is from the seed tasks' (total variation distance)."""

    tvd: float
    max_drift: float
    within_cap: bool
    over: list[tuple[str, float, float]]  # (tool, selected share, seed share), most over first
    under: list[tuple[str, float, float]]  # most under-represented first
    selected_calls: int
    seed_calls: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "tvd": self.tvd, "max_drift": self.max_drift, "within_cap": self.within_cap,
            "over": [{"tool": t, "selected": s, "seed": e} for t, s, e in self.over],
            "under": [{"tool": t, "selected": s, "seed": e} for t, s, e in self.under],
            "selected_calls": self.selected_calls, "seed_calls": self.seed_calls,
        }


def _tool_counts(tasks: Iterable[Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for t in tasks:
        if isinstance(t, Candidate):
            counts.update(dict(t.tool_counts))
        else:
            counts.update(call_names(t))
    return counts


def drift(
    selected_tasks: Iterable[Any],
    seed_tasks: Iterable[Any],
    max_drift: float | None = None,
    top: int = 5,
) -> DriftReport:
    """Total variation distance between the tool-call distributions of two task sets.

    ``TVD = 1/2 * sum_t |p_sel(t) - p_seed(t)|`` over ground-truth calls; 0
    means the same mix of tools, 1 means disjoint tools.  ``within_cap`` is
    ``tvd <= max_drift`` (default :attr:`CurriculumConfig.max_drift`).

    >>> from ace_env.tasks import Task, Turn
    >>> t = lambda i, calls: Task(i, "x", "x", [Turn([], calls)], {}, [], [])
    >>> r = drift([t("a", ["ls()", "ls()"])], [t("b", ["ls()", "cd(folder='x')"])])
    >>> r.tvd, r.within_cap, r.over[0][0], r.under[0][0]
    (0.5, False, 'ls', 'cd')
    """
    cap = CurriculumConfig().max_drift if max_drift is None else max_drift
    if not 0.0 < cap <= 1.0:
        raise ConfigError(f"max_drift={cap!r} must lie in (0, 1]; use e.g. 0.35")
    sel, seed = _tool_counts(selected_tasks), _tool_counts(seed_tasks)
    n_sel, n_seed = sum(sel.values()), sum(seed.values())
    if n_seed == 0:
        raise ConfigError("drift needs seed tasks with at least one ground-truth call")
    tools = sorted(set(sel) | set(seed))
    share = {t: ((sel[t] / n_sel) if n_sel else 0.0, seed[t] / n_seed) for t in tools}
    tvd = 0.5 * sum(abs(s - e) for s, e in share.values()) if n_sel else 1.0
    diffs = sorted(((t, s, e) for t, (s, e) in share.items()), key=lambda x: (-(x[1] - x[2]), x[0]))
    over = [x for x in diffs if x[1] > x[2]][:top]
    under = sorted((x for x in diffs if x[1] < x[2]), key=lambda x: (x[1] - x[2], x[0]))[:top]
    tvd = round(tvd, 12)
    return DriftReport(tvd, cap, tvd <= cap, over, under, n_sel, n_seed)
