"""From a verified rollout to the rows the skill graph stores.

Statistics are kept over the *oracle's* steps, the skills a task demands.
For one rollout each oracle step is either reached and passed, reached and
failed (the first failing step, as the verifier attributed it), or never
reached because an earlier step failed (censored: it says nothing about that
step's skill).  Turns with empty ground truth count as one ``abstain`` step.

Edges link each reached step to its predecessor *call* (the previous oracle
call, in the same or an earlier turn; abstain steps are skipped as
predecessors), at two levels: skills and tools.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from ace_env.tasks import Task
from ace_graph.stats import NEAR_SUCCESS

SUCCESS = "success"
FAIL = "fail"


def _attributes(obj: Any, *names: str) -> dict[str, Any]:
    """``obj``'s attributes ``names``, by name (in that order)."""
    return {name: getattr(obj, name) for name in names}


@dataclass
class StepRow:
    """One reached oracle step of one rollout."""

    flat: int
    turn: int
    index: int
    tool: str | None
    skills: tuple[str, ...]
    outcome: str
    prev: int | None  # flat index of the predecessor call step, if any
    nll: float | None = None  # gold-prefix scoring: the gold answer's mean NLL per token (train.goldprefix)


@dataclass
class RolloutRecord:
    """Everything the store writes for one rollout."""

    id: str
    rollout_id: str
    scope: str
    task_id: str
    reward: float
    partial_credit: float
    step_match: float
    near_success: bool
    attribution: str | None
    failing_turn: int | None
    failing_step: int | None
    fail_tool: str | None
    fail_prev_tool: str | None
    fail_skills: tuple[str, ...]
    fail_prev_skills: tuple[str, ...]
    steps: list[StepRow]
    pairs: list[tuple[int, int]]  # (pred flat, flat) for every adjacent pair of oracle calls
    calls: str  # the rollout's turns as JSON, for analysts
    detail: str = ""
    task_key: str = ""  # the Task node's key, "source:id"
    reference_reward: float | None = None  # the benchmark's own recorded reward (τ²'s result files)
    stricter_because: tuple[str, ...] = ()  # ACE's rules stricter than the benchmark's that the rollout breaks
    digest: str | None = None  # what the rollout file said (ace_env.rollout.Rollout.digest): one id, one content

    def props(self) -> dict[str, Any]:
        """Node properties of the Rollout."""
        return {
            **_attributes(self, "rollout_id", "scope", "task_id", "reward", "partial_credit", "step_match",
                          "near_success", "attribution", "failing_turn", "failing_step", "fail_tool", "fail_prev_tool"),
            "fail_skills": list(self.fail_skills),
            "fail_prev_skills": list(self.fail_prev_skills),
            "n_steps": len(self.steps),
            "detail": self.detail[:500],
            **_attributes(self, "calls", "reference_reward"),
            "stricter_because": list(self.stricter_because),
            "digest": self.digest,
        }


def _predecessors(tags: tuple[Any, ...]) -> list[int | None]:
    """For every oracle step, the flat index of the previous call step (abstain steps skipped)."""
    out: list[int | None] = []
    last_call: int | None = None
    for tag in tags:
        out.append(last_call)
        if tag.tool is not None:
            last_call = tag.flat
    return out


def _ordered_outcomes(tags: tuple[Any, ...], verdict: Any) -> tuple[str | None, ...]:
    """The verifier's ordered reading: steps before the failing one passed, it failed, later ones are
    censored (None); every step passed in a rollout with no failing turn."""
    failing_flat: int | None = None
    if verdict.failing_turn is not None:
        in_turn = [t for t in tags if t.turn == verdict.failing_turn]
        j = min(verdict.failing_oracle_step or 0, len(in_turn) - 1)
        failing_flat = in_turn[j].flat
    return tuple(SUCCESS if failing_flat is None or t.flat < failing_flat else FAIL if t.flat == failing_flat
                 else None for t in tags)


def record(
    task: Task,
    tags: tuple[Any, ...],
    verdict: Any,
    scope: str,
    rollout_id: str,
    turns: list[list[Any]],
    near_success_threshold: float = NEAR_SUCCESS,
) -> RolloutRecord:
    """Build the stored record of one verified rollout.

    ``tags`` are the task's oracle step tags (``ace_graph.tagger.tag_task``),
    ``verdict`` the verifier's (``ace_env.verifier.verify``).
    """
    preds = _predecessors(tags)
    outcomes = getattr(verdict, "step_outcomes", None)
    if outcomes is None or len(outcomes) != len(tags):
        outcomes = _ordered_outcomes(tags, verdict)
    # Each observed step; an edge counts only where the agent really made its predecessor (τ²: a gold read
    # never made is not observed, and says nothing about the pair after it).
    steps = []
    for tag, prev in zip(tags, preds):
        if outcomes[tag.flat] is None:
            continue
        made_prev = prev if prev is not None and outcomes[prev] == SUCCESS else None
        steps.append(StepRow(tag.flat, tag.turn, tag.index, tag.tool, tuple(tag.skills), outcomes[tag.flat],
                             made_prev))
    failing_flat = next((f for f, o in enumerate(outcomes) if o == FAIL), None)
    fail_tag = tags[failing_flat] if failing_flat is not None else None
    fail_prev = preds[failing_flat] if failing_flat is not None else None
    if fail_prev is not None and outcomes[fail_prev] != SUCCESS:
        fail_prev = None  # the agent never made the step before: the failure is not evidence about that pair
    prev_tag = tags[fail_prev] if fail_prev is not None else None
    try:
        calls = json.dumps(turns, default=str)
    except (ValueError, RecursionError):  # e.g. an int over 4,300 digits in an argument
        calls = '"(not renderable as JSON)"'
    if len(calls) > 20_000:
        calls = calls[:20_000] + "...(truncated)"
    return RolloutRecord(
        id=f"{scope}/{rollout_id}",
        rollout_id=rollout_id,
        scope=scope,
        task_id=task.id,
        reward=verdict.reward,
        partial_credit=verdict.partial_credit,
        step_match=verdict.step_match,
        near_success=verdict.reward < 1.0 and verdict.step_match >= near_success_threshold,
        attribution=verdict.attribution,
        failing_turn=verdict.failing_turn,
        failing_step=verdict.failing_step,
        fail_tool=fail_tag.tool if fail_tag else None,
        fail_prev_tool=prev_tag.tool if prev_tag else None,
        fail_skills=tuple(fail_tag.skills) if fail_tag else (),
        fail_prev_skills=tuple(prev_tag.skills) if prev_tag else (),
        steps=steps,
        pairs=[(p, t.flat) for t, p in zip(tags, preds) if p is not None],
        calls=calls,
        detail=verdict.detail,
        task_key=f"{task.source}:{task.id}",
        reference_reward=getattr(verdict, "reference_reward", None),
        stricter_because=tuple(getattr(verdict, "stricter_because", ())),
    )


@dataclass
class NodeStat:
    attempts: int = 0
    failures: int = 0
    as_pred: int = 0
    as_succ: int = 0


@dataclass
class EdgeStat:
    n: int = 0
    failures: int = 0
    cooc: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class Aggregates:
    """Counts of one batch of rollouts, at skill and tool level, ready to add to the graph."""

    rollouts: int = 0
    rewarded: int = 0
    near_success: int = 0
    steps: int = 0
    pairs: dict[str, int] = field(default_factory=lambda: {"skill": 0, "tool": 0})
    nodes: dict[str, dict[str, NodeStat]] = field(
        default_factory=lambda: {"skill": defaultdict(NodeStat), "tool": defaultdict(NodeStat)}
    )
    edges: dict[str, dict[tuple[str, str], EdgeStat]] = field(
        default_factory=lambda: {"skill": defaultdict(EdgeStat), "tool": defaultdict(EdgeStat)}
    )

    def add(self, rec: RolloutRecord, tags: tuple[Any, ...], max_examples: int = 5) -> None:
        self.rollouts += 1
        self.rewarded += rec.reward == 1.0
        self.near_success += rec.near_success
        self.steps += len(rec.steps)
        levels = {"skill": lambda t: tuple(t.skills), "tool": lambda t: (t.tool,) if t.tool else ()}
        for level, keys in levels.items():
            nodes, edges = self.nodes[level], self.edges[level]
            for step in rec.steps:
                tag = tags[step.flat]
                for k in keys(tag):
                    nodes[k].attempts += 1
                    nodes[k].failures += step.outcome == FAIL
                if step.prev is None:
                    continue
                for a in keys(tags[step.prev]):
                    for b in keys(tag):
                        e = edges[(a, b)]
                        e.n += 1
                        e.failures += step.outcome == FAIL
                        if step.outcome == FAIL and rec.near_success and len(e.examples) < max_examples:
                            e.examples.append(rec.id)
            for p, q in rec.pairs:
                for a in keys(tags[p]):
                    for b in keys(tags[q]):
                        edges[(a, b)].cooc += 1
                        nodes[a].as_pred += 1
                        nodes[b].as_succ += 1
                        self.pairs[level] += 1

    def node_rows(self, level: str) -> list[dict[str, Any]]:
        return [
            {"key": k, "attempts": s.attempts, "failures": s.failures, "as_pred": s.as_pred, "as_succ": s.as_succ}
            for k, s in sorted(self.nodes[level].items())
        ]

    def edge_rows(self, level: str) -> list[dict[str, Any]]:
        return [
            {"from": a, "to": b, "n": e.n, "failures": e.failures, "cooc": e.cooc, "examples": e.examples}
            for (a, b), e in sorted(self.edges[level].items())
        ]

    def totals(self) -> dict[str, int]:
        return {**_attributes(self, "rollouts", "rewarded", "near_success", "steps"),
                "pairs_skill": self.pairs["skill"], "pairs_tool": self.pairs["tool"]}


def aggregate(records: Iterable[tuple[RolloutRecord, tuple[Any, ...]]]) -> Aggregates:
    agg = Aggregates()
    for rec, tags in records:
        agg.add(rec, tags)
    return agg
