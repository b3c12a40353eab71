"""The dependency-aware curriculum: which skills and compositions to train on next.

Units are skills (``"param_from_output"``) and compositions (adjacent pairs
``"a>b"``, skill level by default, tool level on request).  Every unit is in one
of three states::

    locked ──unlock──> active ──master──> mastered
       ^                 │ ^                 │
       └────fallback─────┘ └────regress──────┘

* A **skill** unlocks when every prerequisite skill (its predecessors in the
  prior-edge DAG) is unlocked and has smoothed success >= ``theta``; skills
  without prerequisites unlock as soon as they may leave ``locked``.
* A **composition** ``a>b`` unlocks when its prerequisite skills (``a``, ``b``
  and their direct prerequisites) are all unlocked with smoothed success >=
  ``theta``.
* An active unit whose smoothed success reaches ``theta`` is mastered; a
  mastered unit whose smoothed success falls under ``phi`` becomes active again.
* **Fallback**: an active composition whose smoothed success falls under
  ``phi`` is locked again and its mastered prerequisite skills become active,
  so training returns to the prerequisites.

Smoothed success is an exponential moving average: ``ema = momentum * observed
+ (1 - momentum) * ema`` (the first observation is taken as is).  A unit must
spend ``min_rounds`` rounds in a state before it may leave it.  Together they
keep a noisy, oscillating signal from flipping states every round.

Cycles in the prior edges are broken deterministically (see
:func:`topological_order`); skills are processed in topological order and
compositions by the depth of their endpoints, so decisions come out in the
order a teacher would make them.

A round's training tasks are picked by :func:`train.curriculum.mix.mix`, and
:func:`train.curriculum.drift.drift` measures how far they stray from the seed tasks.

>>> cfg = CurriculumConfig(min_rounds=1)
>>> st = CurriculumState.new(skills=["a", "b"], compositions=["a>b"], prior=[("a", "b")])
>>> st, ds = step(st, Observations(skills={"a": (10, 9)}), cfg)
>>> [(d.unit, d.to_state) for d in ds]
[('a', 'active'), ('b', 'active')]
>>> st, ds = step(st, Observations(skills={"a": (10, 9), "b": (10, 8)}), cfg)
>>> [(d.unit, d.to_state) for d in ds]
[('a', 'mastered'), ('b', 'mastered'), ('a>b', 'active')]
>>> ds[-1].reason
'unlocked: prerequisite skills >= theta 0.7 (a=0.900, b=0.800)'
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable, Mapping, Sequence

import networkx as nx

from ace_graph.errors import ConfigError

LOCKED, ACTIVE, MASTERED = "locked", "active", "mastered"
STATES = (LOCKED, ACTIVE, MASTERED)
SKILL, COMPOSITION = "skill", "composition"
KINDS = (SKILL, COMPOSITION)


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class CurriculumConfig:
    """Thresholds and damping of the curriculum; every field says what it does."""

    theta: float = field(default=0.7, metadata={"help": (
        "Unlock/mastery threshold: a unit's prerequisites must all reach this smoothed success "
        "for it to unlock, and an active unit that reaches it is mastered."), "min": 0.0, "max": 1.0})
    phi: float = field(default=0.4, metadata={"help": (
        "Fallback threshold: an active composition whose smoothed success drops below it sends "
        "training back to its prerequisite skills; a mastered unit below it is active again."), "min": 0.0, "max": 1.0})
    momentum: float = field(default=0.5, metadata={"help": (
        "Weight of the new observation in the exponential moving average (1.0 = no smoothing)."), "min": 0.0, "max": 1.0})
    min_rounds: int = field(default=2, metadata={"help": (
        "Rounds a unit must spend in a state before it may leave it (damps flapping)."), "min": 1, "max": 1000})
    min_attempts: int = field(default=1, metadata={"help": (
        "Observations with fewer attempts than this are ignored (too little evidence)."), "min": 1, "max": 1_000_000})
    replay_share: float = field(default=0.2, metadata={"help": (
        "Share of each round's mix drawn from the replay buffer, stratified by depth.")})
    depth_strata: tuple[int, ...] = field(default=(2, 4), metadata={"help": (
        "Upper bounds of the depth strata (oracle calls per task): (2, 4) means 1-2, 3-4, 5+.")})
    max_drift: float = field(default=0.35, metadata={"help": (
        "Largest total-variation distance between the selected set's tool usage and the seed "
        "tasks' that counts as within the cap.")})
    level: str = field(default="skill", metadata={"help": (
        "Granularity of units: 'skill' (skills and skill pairs) or 'tool' (tools and tool pairs).")})

    def __post_init__(self) -> None:
        def bad(name: str, why: str, fix: str) -> ConfigError:
            return ConfigError(f"CurriculumConfig.{name}={getattr(self, name)!r}: {why}; {fix}.")

        for name in ("theta", "phi", "momentum", "replay_share", "max_drift"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                raise bad(name, "must be a number", "pass a float")
        if not 0.0 < self.theta <= 1.0:
            raise bad("theta", "must lie in (0, 1]", "use e.g. 0.7")
        if not 0.0 <= self.phi < self.theta:
            raise bad("phi", f"must lie in [0, theta={self.theta}) or fallback and unlock would "
                             "fire on the same success", "use e.g. 0.4 with theta 0.7")
        if not 0.0 < self.momentum <= 1.0:
            raise bad("momentum", "is the weight of the new observation and must lie in (0, 1]",
                      "use 0.5, or 1.0 for no smoothing")
        if not isinstance(self.min_rounds, int) or self.min_rounds < 1:
            raise bad("min_rounds", "must be an integer >= 1", "use e.g. 2")
        if not isinstance(self.min_attempts, int) or self.min_attempts < 1:
            raise bad("min_attempts", "must be an integer >= 1", "use e.g. 1 or 5")
        if not 0.0 <= self.replay_share < 1.0:
            raise bad("replay_share", "must lie in [0, 1) so some of the mix targets active units",
                      "use e.g. 0.2")
        strata = tuple(self.depth_strata)
        if not strata or any(not isinstance(b, int) or b < 1 for b in strata) or list(strata) != sorted(set(strata)):
            raise bad("depth_strata", "must be strictly increasing positive integers", "use e.g. (2, 4)")
        object.__setattr__(self, "depth_strata", strata)
        if not 0.0 < self.max_drift <= 1.0:
            raise bad("max_drift", "is a total-variation distance and must lie in (0, 1]", "use e.g. 0.35")
        if self.level not in ("skill", "tool"):
            raise bad("level", "must be 'skill' or 'tool'", "pass level='skill'")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text."""
        return {f.name: f.metadata["help"] for f in fields(cls)}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}

    def stratum(self, depth: int) -> str:
        """The depth stratum label of a task with ``depth`` oracle calls ("1-2", "3-4", "5+")."""
        lo = 1
        for hi in self.depth_strata:
            if depth <= hi:
                return f"{lo}-{hi}" if hi > lo else f"{hi}"
            lo = hi + 1
        return f"{lo}+"

    def strata_labels(self) -> list[str]:
        labels, lo = [], 1
        for hi in self.depth_strata:
            labels.append(f"{lo}-{hi}" if hi > lo else f"{hi}")
            lo = hi + 1
        return labels + [f"{lo}+"]


# --------------------------------------------------------------------------- state


@dataclass
class UnitState:
    """One unit's standing: its state, smoothed success and rounds spent in the state."""

    key: str
    kind: str
    state: str = LOCKED
    ema: float | None = None
    rounds_in_state: int = 0
    last_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "state": self.state, "ema": self.ema,
                "rounds_in_state": self.rounds_in_state, "last_reason": self.last_reason}


@dataclass
class CurriculumState:
    """Every unit's state after ``round`` steps, plus the prior edges known so far."""

    round: int = 0
    units: dict[tuple[str, str], UnitState] = field(default_factory=dict)
    prior: tuple[tuple[str, str], ...] = ()

    @classmethod
    def new(
        cls,
        skills: Iterable[str] = (),
        compositions: Iterable[str] = (),
        prior: Iterable[tuple[str, str]] = (),
    ) -> "CurriculumState":
        """A fresh curriculum: every given unit locked, nothing observed yet."""
        st = cls(prior=_norm_prior(prior))
        for a, b in st.prior:
            st.unit(SKILL, a)
            st.unit(SKILL, b)
        for s in skills:
            st.unit(SKILL, s)
        for c in compositions:
            st.unit(COMPOSITION, c)
        return st

    def unit(self, kind: str, key: str) -> UnitState:
        """The unit, created locked when it is new (composition endpoints are added as skills)."""
        if kind not in KINDS:
            raise ConfigError(f"unit kind {kind!r} is not one of {KINDS}")
        u = self.units.get((kind, key))
        if u is None:
            if kind == COMPOSITION:
                a, sep, b = key.partition(">")
                if not sep or not a or not b:
                    raise ConfigError(f"composition key {key!r} must look like 'from>to'")
                self.unit(SKILL, a)
                self.unit(SKILL, b)
            u = self.units[(kind, key)] = UnitState(key, kind)
        return u

    def in_state(self, state: str, kind: str | None = None) -> list[str]:
        return sorted(k for (kd, k), u in self.units.items() if u.state == state and kind in (None, kd))

    def copy(self) -> "CurriculumState":
        return CurriculumState(self.round, {k: replace(u) for k, u in self.units.items()}, self.prior)

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "units": [u.to_dict() for _, u in sorted(self.units.items())],
            "prior": [list(e) for e in self.prior],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CurriculumState":
        st = cls(round=int(d.get("round", 0)), prior=_norm_prior(d.get("prior", ())))
        for u in d.get("units", ()):
            unit = st.unit(u["kind"], u["key"])
            unit.state = u.get("state", LOCKED)
            if unit.state not in STATES:
                raise ConfigError(f"unit {u['key']!r} has unknown state {unit.state!r}; expected one of {STATES}")
            unit.ema = None if u.get("ema") is None else float(u["ema"])
            unit.rounds_in_state = int(u.get("rounds_in_state", 0))
            unit.last_reason = u.get("last_reason") or ""
        return st


def _norm_prior(edges: Iterable[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({(str(a), str(b)) for a, b in edges if a != b}))


@dataclass
class Observations:
    """One round's evidence: (attempts, successes) per skill and per composition ``a>b``.

    ``prior`` optionally replaces the state's prior edges (prerequisite ``a``
    of dependent ``b`` for each pair ``(a, b)``).
    """

    skills: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    compositions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    prior: Sequence[tuple[str, str]] | None = None


@dataclass(frozen=True)
class Decision:
    """One state change, with the numbers that caused it."""

    round: int
    unit: str
    kind: str
    from_state: str
    to_state: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "unit": self.unit, "kind": self.kind,
                "from": self.from_state, "to": self.to_state, "reason": self.reason}


# --------------------------------------------------------------------------- graph order


def topological_order(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """Order nodes so every kept edge points forward; return (order, dropped edges).

    Kahn's order, smallest name first (networkx's lexicographical topological
    sort), taken as far as it goes.  When only nodes on or after a cycle
    remain, the one with the fewest incoming edges from them (then the
    smallest name) loses those edges and comes next, and the sort goes on.
    The result depends only on the sets of nodes and edges, never on their
    input order.
    """
    edge_set = {(a, b) for a, b in edges if a != b}
    rest = nx.DiGraph()
    rest.add_nodes_from(sorted(set(nodes) | {n for e in edge_set for n in e}))
    rest.add_edges_from(sorted(edge_set))
    order: list[str] = []
    dropped: set[tuple[str, str]] = set()
    while rest:
        cyclic = {n for c in nx.strongly_connected_components(rest) if len(c) > 1 for n in c}
        blocked = cyclic.union(*(nx.descendants(rest, n) for n in cyclic))
        free = [n for n in rest if n not in blocked]
        order.extend(nx.lexicographical_topological_sort(rest.subgraph(free)))
        rest.remove_nodes_from(free)
        if rest:  # only cycles (and what follows them) remain: break one
            node = min(rest, key=lambda n: (rest.in_degree(n), n))
            cut = {(p, node) for p in rest.predecessors(node)}
            rest.remove_edges_from(cut)
            dropped |= cut
    return order, dropped


def _prerequisites(state: CurriculumState) -> tuple[dict[str, list[str]], dict[str, int]]:
    skills = [k for (kind, k) in state.units if kind == SKILL]
    order, dropped = topological_order(skills, state.prior)
    preds: dict[str, set[str]] = defaultdict(set)
    for a, b in state.prior:
        if (a, b) not in dropped:
            preds[b].add(a)
    return {s: sorted(preds[s]) for s in order}, {s: i for i, s in enumerate(order)}


def composition_prerequisites(key: str, skill_prereqs: Mapping[str, Sequence[str]]) -> list[str]:
    """The endpoint skills of ``a>b`` and their direct prerequisites, sorted."""
    a, _, b = key.partition(">")
    return sorted({a, b, *skill_prereqs.get(a, ()), *skill_prereqs.get(b, ())})


# --------------------------------------------------------------------------- step


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def step(
    state: CurriculumState,
    observations: Observations,
    config: CurriculumConfig | None = None,
) -> tuple[CurriculumState, list[Decision]]:
    """Advance the curriculum by one round; the input state is not modified.

    Returns the new state and the decisions taken, in processing order:
    skills in topological order, then compositions by endpoint depth.
    """
    cfg = config or CurriculumConfig()
    st = state.copy()
    st.round += 1
    if observations.prior is not None:
        st.prior = _norm_prior(observations.prior)
    for a, b in st.prior:  # every skill named by a prior edge is a unit
        st.unit(SKILL, a)
        st.unit(SKILL, b)

    # 1. smoothed success
    for kind, obs in ((SKILL, observations.skills), (COMPOSITION, observations.compositions)):
        for key, (attempts, successes) in sorted(obs.items()):
            if attempts < 0 or successes < 0 or successes > attempts:
                raise ConfigError(
                    f"observation for {kind} {key!r}: {successes} successes of {attempts} attempts is impossible"
                )
            u = st.unit(kind, key)
            if attempts < cfg.min_attempts:
                continue
            rate = successes / attempts
            u.ema = rate if u.ema is None else cfg.momentum * rate + (1 - cfg.momentum) * u.ema
    for u in st.units.values():
        u.rounds_in_state += 1

    prereqs, depth = _prerequisites(st)
    decisions: list[Decision] = []

    def move(u: UnitState, to: str, reason: str) -> None:
        decisions.append(Decision(st.round, u.key, u.kind, u.state, to, reason))
        u.state, u.rounds_in_state, u.last_reason = to, 0, reason

    def settled(u: UnitState) -> bool:
        return u.rounds_in_state >= cfg.min_rounds

    def ema_of(skill: str) -> float | None:
        u = st.units.get((SKILL, skill))
        return None if u is None else u.ema

    def gate(needed: Sequence[str]) -> tuple[bool, str]:
        # every prerequisite must itself be unlocked (topological order) and at theta
        values = [(s, ema_of(s)) for s in needed]
        ok = all(v is not None and v >= cfg.theta for _, v in values) and all(
            st.units[(SKILL, s)].state != LOCKED for s in needed
        )
        return ok, ", ".join(f"{s}={_fmt(v)}" for s, v in values)

    def common(u: UnitState, needed: Sequence[str], what: str) -> None:
        if u.state == LOCKED:
            ok, detail = gate(needed)
            if ok:
                move(u, ACTIVE, f"unlocked: {what} >= theta {cfg.theta} ({detail})" if needed
                     else "unlocked: no prerequisites")
        elif u.state == MASTERED and u.ema is not None and u.ema < cfg.phi:
            move(u, ACTIVE, f"regressed: smoothed success {_fmt(u.ema)} < phi {cfg.phi}")

    # 2. skills, in topological order
    for skill in sorted(prereqs, key=lambda s: depth[s]):
        u = st.units[(SKILL, skill)]
        if not settled(u):
            continue
        if u.state == ACTIVE and u.ema is not None and u.ema >= cfg.theta:
            move(u, MASTERED, f"mastered: smoothed success {_fmt(u.ema)} >= theta {cfg.theta}")
        else:
            common(u, prereqs[skill], "prerequisite skills")

    # 3. compositions, shallow endpoints first
    def comp_order(key: str) -> tuple[int, int, str]:
        a, _, b = key.partition(">")
        da, db = depth.get(a, 0), depth.get(b, 0)
        return (max(da, db), min(da, db), key)

    for key in sorted((k for (kind, k) in st.units if kind == COMPOSITION), key=comp_order):
        u = st.units[(COMPOSITION, key)]
        if not settled(u):
            continue
        needed = composition_prerequisites(key, prereqs)
        if u.state == ACTIVE and u.ema is not None and u.ema >= cfg.theta:
            move(u, MASTERED, f"mastered: smoothed success {_fmt(u.ema)} >= theta {cfg.theta}")
        elif u.state == ACTIVE and u.ema is not None and u.ema < cfg.phi:
            move(u, LOCKED, f"fallback: smoothed success {_fmt(u.ema)} < phi {cfg.phi}; "
                            f"training returns to {', '.join(needed)}")
            for s in needed:
                su = st.units[(SKILL, s)]
                if su.state == MASTERED and settled(su):
                    move(su, ACTIVE, f"fallback from {key} (smoothed success {_fmt(u.ema)} < phi "
                                     f"{cfg.phi}); {s} at {_fmt(su.ema)}")
        else:
            common(u, needed, "prerequisite skills")
    return st, decisions
