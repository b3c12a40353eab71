"""Compositions: which pairs of steps an oracle strings together, and the prior edges they imply.

Two rules, each defined here once and used by the store, the curriculum, the
synthesis pipeline and the benchmarks:

**Adjacent pairs.**  Walk the oracle's steps in flat order (across turns).
Each call step pairs with the call step before it: ``a>b`` at tool level, and
every skill of ``a`` with every skill of ``b`` at skill level.  An abstain
pseudo-step (a turn that needs no call) pairs, at skill level only, with the
call before it, and is not itself a predecessor of anything.

**Prior-edge counts.**  A dependency edge ``(from, to, kind)`` (kind
``data_flow`` or ``precondition``, from the tagger's counterfactual replay) is
counted **once per task** whose oracle has some step of ``to`` depending on a
step of ``from`` with that kind.  The graph stores each task's edges on its
``Task`` node, and the stored count is recomputed from all stored tasks, so it
never depends on which caller upserted which subset last.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from ace_env.tasks import Task
from ace_graph.tagger import OracleStepTag, tag_task

TOOL, SKILL = "tool", "skill"
LEVELS = (TOOL, SKILL)


def pair_key(a: str, b: str) -> str:
    """The key of a composition: ``"a>b"``."""
    return f"{a}>{b}"


def adjacent_tool_pairs(tools: Sequence[str]) -> list[str]:
    """Adjacent pairs ``"a>b"`` of a sequence of called tools, sorted, unique."""
    return sorted({pair_key(a, b) for a, b in zip(tools, tools[1:])})


def adjacent_pairs(tags: Sequence[OracleStepTag]) -> tuple[list[str], list[str]]:
    """Adjacent pairs of an oracle's steps: (tool pairs, skill pairs), each sorted and unique."""
    tool_pairs = adjacent_tool_pairs([t.tool for t in tags if t.tool is not None])
    skill_pairs: set[str] = set()
    prev: OracleStepTag | None = None
    for tag in tags:
        if prev is not None:
            skill_pairs.update(pair_key(a, b) for a in prev.skills for b in tag.skills)
        if tag.tool is not None:
            prev = tag
    return tool_pairs, sorted(skill_pairs)


@dataclass(frozen=True, order=True)
class Dependency:
    """One dependency edge at one level: ``to`` depends on ``from_`` with ``kind``."""

    level: str
    from_: str
    to: str
    kind: str

    @property
    def key(self) -> str:
        """How the edge is written on a Task node: ``from|to|kind``."""
        return f"{self.from_}|{self.to}|{self.kind}"


def task_dependencies(tags: Sequence[OracleStepTag]) -> frozenset[Dependency]:
    """The dependency edges one task's oracle implies, each once, at tool and skill level."""
    out: set[Dependency] = set()
    for tag in tags:
        for dep, kind in zip(tag.depends_on, tag.dependency_kinds):
            src = tags[dep]
            if src.tool is not None and tag.tool is not None:
                out.add(Dependency(TOOL, src.tool, tag.tool, kind))
            out.update(Dependency(SKILL, a, b, kind) for a in src.skills for b in tag.skills)
    return frozenset(out)


@dataclass(frozen=True)
class PriorEdge:
    """A dependency edge between two tools seen in oracles.

    ``count`` is the number of tasks in which the edge occurs (the rule above);
    ``example_task`` the first of them in the order the tasks were given.
    """

    from_tool: str
    to_tool: str
    kind: str
    count: int
    example_task: str


def prior_edges(tasks: Iterable[Task], level: str = TOOL) -> list[PriorEdge]:
    """Dependency edges over the tasks' oracles at one level, most frequent first."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    counts: Counter[tuple[str, str, str]] = Counter()
    example: dict[tuple[str, str, str], str] = {}
    for task in tasks:
        for d in task_dependencies(tag_task(task)):
            if d.level == level:
                edge = (d.from_, d.to, d.kind)
                counts[edge] += 1
                example.setdefault(edge, task.id)
    ordered = sorted(counts, key=lambda e: (-counts[e], e))
    return [PriorEdge(f, t, k, counts[(f, t, k)], example[(f, t, k)]) for f, t, k in ordered]


__all__ = [
    "LEVELS",
    "SKILL",
    "TOOL",
    "Dependency",
    "PriorEdge",
    "adjacent_pairs",
    "adjacent_tool_pairs",
    "pair_key",
    "prior_edges",
    "task_dependencies",
]
