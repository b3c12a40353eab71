"""A task's gold agent steps as the skill graph's tagger reads them: what an environment's ``steps`` hook
(:class:`~ace_env.environments.ToolEnvironment`) gives for the tagger's ``gold-actions`` method.

The tagger (:mod:`ace_graph.tagger`) reads, per task, the user's words and each gold agent action run in
order (its name, arguments, output and whether it errored); and, to find state preconditions, the gold run
again without one action (counterfactual replay).  An environment gives both through one function,
``steps(task, removed)``: ``removed`` None for the gold run, an action's index for the run without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class GoldStep:
    """One gold agent action and what running it returned."""

    name: str  # the tool
    arguments: Mapping[str, Any]
    output: str  # the tool's output, as text
    error: bool  # whether the call errored


@dataclass(frozen=True)
class GoldSteps:
    """A task's gold agent actions run in order, and the words of its user.

    ``steps`` is empty for a task that needs no call (the tagger makes it one ``abstain`` step); in a run
    without action ``removed`` it holds None at that index.
    """

    user: str  # all the user says or knows (τ²: the scenario)
    steps: tuple[GoldStep | None, ...]


__all__ = ["GoldStep", "GoldSteps"]
