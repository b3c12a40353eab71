"""What a scored gold-prefix step records, and a run's totals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

# --------------------------------------------------------------------------- scores


@dataclass
class StepScore:
    """How a policy did at one oracle step with the oracle's prefix in context."""

    task_id: str
    flat: int
    turn: int
    index: int
    tool: str | None
    prev_tool: str | None
    tokens: int = 0  # tokens of the gold answer (teacher forced)
    nll: float | None = None  # mean negative log-likelihood per gold token (None: the policy gives none)
    exact: bool | None = None  # greedy decoding writes exactly the gold answer (None: not measured)
    tool_right: bool | None = None
    passed: bool | None = None  # generated: the step's own call verified by execution (None: not generated)
    attribution: str | None = None  # what went wrong, when the step failed
    answer: str | None = None  # generated: the policy's message text (cut)

    @property
    def outcome(self) -> bool:
        """The step's verdict in the graph: verified by execution when generated, else exact match."""
        return bool(self.passed) if self.passed is not None else bool(self.exact)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Scoring:
    """The scores of a run, and what was left out."""

    scores: list[StepScore] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tasks (and steps) that could not be scored, with why
    seconds: float = 0.0
    forward_tokens: int = 0  # tokens through the model in teacher-forced passes
    prefix: str = "task-turns"  # what each step's prefix is (PREFIXES)

    def summary(self) -> dict[str, Any]:
        return summarize(self.scores) | {"skipped": len(self.skipped), "seconds": round(self.seconds, 3),
                                         "forward_tokens": self.forward_tokens, "prefix": self.prefix}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def summarize(scores: Iterable[StepScore]) -> dict[str, Any]:
    """``steps``, ``exact_match``, ``mean_nll``, ``tool_accuracy``, ``step_pass_rate`` (generated: the share
    of steps whose call verified by execution) and
    ``compositions`` (steps with a predecessor call: the composition observations)."""
    scores = list(scores)
    nll = [s.nll for s in scores if s.nll is not None]
    exact = [float(s.exact) for s in scores if s.exact is not None]
    tool = [float(s.tool_right) for s in scores if s.tool_right is not None]
    passed = [float(s.passed) for s in scores if s.passed is not None]
    return {
        "steps": len(scores),
        "compositions": sum(1 for s in scores if s.prev_tool is not None),
        "tasks": len({s.task_id for s in scores}),
        "exact_match": _mean(exact),
        "mean_nll": _mean(nll),
        "tool_accuracy": _mean(tool),
        "step_pass_rate": _mean(passed),
    }
