"""Synthesis plans: which composition to attack, how, and in whose voice.

A plan names a target edge (a tool-level composition ``from → to`` pulled from
the graph's frontier), a strategy and its strength, the composition depth it
aims for, the domain (the API classes of its seeds), a user phrasing style and
the seed tasks that contain the target.  ``make_plans`` builds N plans whose
(target, strategy, style) triples never repeat: diversity is constructed by
walking targets round-robin and rotating strategies and styles against them,
not left to sampling.  ``reflect`` updates plans from their round statistics
(AReaL-SEA's reflection step).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from synth.registry import depth_of
from synth.strategies.text import voice

#: Phrasing styles applied to a synthesized task's first user message.
STYLES = ("plain", "terse", "polite", "stepwise")


@dataclass
class PlanStats:
    attempted: int = 0
    synthesized: int = 0
    valid: int = 0
    rollouts: int = 0
    passed: int = 0
    learnable: int = 0
    rejections: dict[str, int] = field(default_factory=dict)
    attributions: dict[str, int] = field(default_factory=dict)

    def __add__(self, other: "PlanStats") -> "PlanStats":
        """Two rounds' statistics as one (counts summed, rejection and attribution counts merged)."""
        def merged(x: dict[str, int], y: dict[str, int]) -> dict[str, int]:
            return {k: x.get(k, 0) + y.get(k, 0) for k in {**x, **y}}

        return PlanStats(self.attempted + other.attempted, self.synthesized + other.synthesized,
                         self.valid + other.valid, self.rollouts + other.rollouts, self.passed + other.passed,
                         self.learnable + other.learnable, merged(self.rejections, other.rejections),
                         merged(self.attributions, other.attributions))

    @property
    def validity(self) -> float:
        return self.valid / self.attempted if self.attempted else 0.0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.rollouts if self.rollouts else 0.0

    @property
    def learnable_share(self) -> float:
        return self.learnable / self.valid if self.valid else 0.0


@dataclass
class Plan:
    id: str
    round: int
    target: tuple[str, str]
    strategy: str
    strength: float
    depth: int
    domain: tuple[str, ...]
    style: str
    seeds: list[str]
    evidence: dict[str, Any] = field(default_factory=dict)
    status: str = "active"
    stats: PlanStats = field(default_factory=PlanStats)  # the current round's (reflection reads them)
    history: list[str] = field(default_factory=list)
    earlier: PlanStats = field(default_factory=PlanStats)  # the plan's earlier rounds of this run, summed

    def next_round(self) -> None:
        """Start a round: this round's statistics join the earlier ones and start again from zero."""
        self.earlier = self.earlier + self.stats
        self.stats = PlanStats()

    @property
    def totals(self) -> PlanStats:
        """The statistics of every round the plan ran in (what the graph stores)."""
        return self.earlier + self.stats

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.target[0], self.target[1], self.strategy, self.style)

    def to_row(self) -> dict[str, Any]:
        """Properties for the Plan node in Neo4j: the statistics are over every round it ran in, so
        ``valid`` counts the tasks it produced (``(:Plan)-[:PRODUCED]->(:Task)``) in this run."""
        s = self.totals
        return {
            "id": self.id,
            "round": self.round,
            "target": f"{self.target[0]}>{self.target[1]}",
            "from_tool": self.target[0],
            "to_tool": self.target[1],
            "strategy": self.strategy,
            "strength": self.strength,
            "depth": self.depth,
            "domain": list(self.domain),
            "style": self.style,
            "status": self.status,
            "seeds": self.seeds[:20],
            "attempted": s.attempted,
            "valid": s.valid,
            "validity": round(s.validity, 4),
            "pass_rate": round(s.pass_rate, 4),
            "learnable_share": round(s.learnable_share, 4),
            "history": self.history[-10:],
        }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["target"] = list(self.target)
        d["domain"] = list(self.domain)
        return d


def apply_style(text: str, style: str, rng: random.Random | None = None) -> str:
    """A user message in a phrasing style drawn from the grammar (:func:`synth.strategies.text.voice`);
    the request itself (and its values) is unchanged."""
    return voice(text, style, rng or random.Random(f"{style}:{text}"))


def make_plans(
    frontier: list[dict[str, Any]],
    seeds_by_target: dict[tuple[str, str], list[str]],
    domains: dict[tuple[str, str], tuple[str, ...]],
    n: int,
    strategies: list[str],
    rng: random.Random,
    round_: int = 0,
    taken: set[tuple[str, str, str, str]] | None = None,
) -> list[Plan]:
    """Up to ``n`` plans over the frontier's edges, no two with the same (target, strategy, style).

    ``frontier`` rows come from the ``frontier`` query (tool level); edges
    without a seed task are skipped.  ``taken`` holds keys already used in
    earlier rounds, so replacement plans are new too.
    """
    taken = set(taken or ())
    targets = [(r["from"], r["to"]) for r in frontier if seeds_by_target.get((r["from"], r["to"]))]
    evidence = {(r["from"], r["to"]): {k: r.get(k) for k in ("n", "failures", "fragility", "fragility_low")}
                for r in frontier}
    plans: list[Plan] = []
    if not targets or not strategies:
        return plans
    # Lap by lap, every target gets one (strategy, style) pair; the pairs are
    # shifted by the target's index so targets differ within a lap, and over
    # len(strategies) * len(STYLES) laps each target runs through all pairs.
    combos = []
    n_s, n_y = len(strategies), len(STYLES)
    for lap in range(n_s * n_y):
        for ti, t in enumerate(targets):
            combos.append((t, strategies[(ti + lap) % n_s], STYLES[(ti + lap // n_s) % n_y]))
    seen: set[tuple[str, str, str, str]] = set()
    open_combos = []
    for target, strategy, style in combos:
        key = (target[0], target[1], strategy, style)
        if key in taken or key in seen:
            continue
        seen.add(key)
        open_combos.append((target, strategy, style))
    # Greedy order: the least used target first (every target before any repeats), then the least used
    # strategy (every strategy before any repeats where the targets allow), then the walk's order.
    by_target: dict[tuple[str, str], int] = {}
    by_strategy: dict[str, int] = {}
    ordered = []
    remaining = list(enumerate(open_combos))
    while remaining and len(ordered) < n:
        best = min(remaining, key=lambda ic: (by_target.get(ic[1][0], 0), by_strategy.get(ic[1][1], 0), ic[0]))
        remaining.remove(best)
        ordered.append(best[1])
        by_target[best[1][0]] = by_target.get(best[1][0], 0) + 1
        by_strategy[best[1][1]] = by_strategy.get(best[1][1], 0) + 1
    for target, strategy, style in ordered:
        depth = depth_of(strategy)  # declared with the strategy (synth.registry)
        plans.append(
            Plan(
                id=f"r{round_}-p{len(plans)}-{target[0]}-{target[1]}-{strategy}-{style}",
                round=round_,
                target=target,
                strategy=strategy,
                strength=round(0.4 + 0.2 * rng.random(), 3),
                depth=depth,
                domain=domains.get(target, ()),
                style=style,
                seeds=list(seeds_by_target[target]),
                evidence=evidence.get(target, {}),
            )
        )
        if len(plans) >= n:
            break
    return plans


def reflect(plan: Plan, min_validity: float = 0.3) -> str:
    """Update a plan from its round statistics; return what was decided and why.

    * mostly invalid tasks → lower the strength; a second bad round retires it;
    * the policy always passes (too easy) → raise the strength;
    * the policy never passes (too hard to learn from) → lower the strength;
    * otherwise (tasks land in the learnable zone) → keep.
    """
    s = plan.stats
    if s.attempted == 0:
        note = "keep: not attempted yet"
    elif s.validity < min_validity:
        if any(h.startswith("weaken: validity") for h in plan.history):
            plan.status = "retired"
            note = f"retire: validity {s.validity:.2f} < {min_validity} for a second round"
        else:
            plan.strength = round(max(0.1, plan.strength - 0.2), 3)
            note = f"weaken: validity {s.validity:.2f} < {min_validity}; strength -> {plan.strength}"
    elif s.rollouts and s.pass_rate >= 0.95:
        plan.strength = round(min(1.0, plan.strength + 0.2), 3)
        note = f"strengthen: pass rate {s.pass_rate:.2f} (too easy); strength -> {plan.strength}"
    elif s.rollouts and s.pass_rate <= 0.05:
        plan.strength = round(max(0.1, plan.strength - 0.2), 3)
        note = f"soften: pass rate {s.pass_rate:.2f} (no signal); strength -> {plan.strength}"
    else:
        note = f"keep: {s.learnable_share:.2f} of valid tasks in the learnable zone, pass rate {s.pass_rate:.2f}"
    plan.history.append(note)
    return note
