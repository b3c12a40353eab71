"""A round's training mix: tasks on the curriculum's active units, plus a replay buffer.

:func:`mix` picks a round's training tasks (mostly tasks on active units, plus
a replay buffer stratified by oracle depth); each task is described by the
units its oracle exercises (:func:`candidate`).  The state it reads is
:mod:`train.curriculum.core`'s.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ace_env.calls import Call, parse_call
from ace_env.environments import environment_of
from ace_graph.compositions import adjacent_pairs, adjacent_tool_pairs
from ace_graph.errors import ConfigError
from ace_graph.tagger import tag_task
from train.curriculum.core import ACTIVE, COMPOSITION, SKILL, CurriculumConfig, CurriculumState


@dataclass(frozen=True)
class Candidate:
    """What the curriculum needs to know about one task."""

    task_id: str
    skills: frozenset[str]
    compositions: frozenset[str]
    depth: int
    tool_counts: tuple[tuple[str, int], ...] = ()
    task: Any = field(default=None, compare=False, repr=False)


def call_names(task: Any) -> list[str]:
    """The tool names of a task's ground-truth calls, in order (unparsable calls left out); for an environment
    whose gold agent actions the tagger reads (its entry's ``steps``: τ², the toy), those actions' tools."""
    steps = environment_of([task]).steps
    if steps is not None:
        return [s.name for s in steps(task, None).steps if s is not None]
    names = []
    for turn in task.turns:
        for raw in turn.ground_truth:
            c = parse_call(raw)
            if isinstance(c, Call):
                names.append(c.name)
    return names


def candidate(task: Any, level: str = "skill") -> Candidate:
    """Describe a task by the units its oracle exercises (runs the tagger at skill level)."""
    if isinstance(task, Candidate):
        return task
    names = call_names(task)
    if level == "tool":
        units = set(names)
        pairs = set(adjacent_tool_pairs(names))
    else:
        tags = tag_task(task)
        units = {s for t in tags for s in t.skills}
        pairs = set(adjacent_pairs(tags)[1])
    return Candidate(task.id, frozenset(units), frozenset(pairs), task.n_steps,
                     tuple(sorted(Counter(names).items())), task)


@dataclass
class Mix:
    """A round's training mix: focus tasks on active units, then the stratified replay."""

    focus: list[Candidate]
    replay: list[Candidate]
    replay_by_stratum: dict[str, int]

    @property
    def tasks(self) -> list[Candidate]:
        return self.focus + self.replay

    @property
    def task_ids(self) -> list[str]:
        return [c.task_id for c in self.tasks]


def mix(
    state: CurriculumState,
    candidate_tasks: Iterable[Any],
    n: int,
    rng: random.Random,
    config: CurriculumConfig | None = None,
) -> Mix:
    """Pick ``n`` tasks for the next round (fewer when there are fewer candidates).

    ``round(n * replay_share)`` come from a replay buffer: the tasks that touch
    no active unit (or, when there are none, the tasks not picked for focus),
    split as evenly as possible over the depth strata (so
    short, easy tasks are never drowned by long ones); the rest are the tasks
    with the most active compositions (then active skills).  Ties and strata
    are drawn with ``rng`` after sorting by task id, so the mix depends only on
    the candidates' content and the generator's seed.
    """
    cfg = config or CurriculumConfig()
    if n < 0:
        raise ConfigError(f"mix size n={n} must be >= 0")
    cands = sorted({c.task_id: c for c in (candidate(t, cfg.level) for t in candidate_tasks)}.values(),
                   key=lambda c: c.task_id)
    active_comps = set(state.in_state(ACTIVE, COMPOSITION))
    active_skills = set(state.in_state(ACTIVE, SKILL))

    def score(c: Candidate) -> tuple[int, int]:
        return (len(c.compositions & active_comps), len(c.skills & active_skills))

    n = min(n, len(cands))
    rng.shuffle(cands)
    cands.sort(key=score, reverse=True)  # stable: random order among equals
    focus_pool = [c for c in cands if score(c) != (0, 0)]
    n_focus = min(len(focus_pool), n - round(n * cfg.replay_share))
    focus = focus_pool[:n_focus]
    chosen = {c.task_id for c in focus}
    # The replay buffer holds tasks on no active unit (mastered or not yet
    # unlocked material); when every task touches an active unit (early rounds),
    # it holds the active ones that did not make the focus cut instead.
    replay_pool = sorted((c for c in cands if score(c) == (0, 0)), key=lambda c: c.task_id)
    if not replay_pool:
        replay_pool = sorted((c for c in cands if c.task_id not in chosen), key=lambda c: c.task_id)
    n_replay = min(len(replay_pool), n - n_focus)

    strata: dict[str, list[Candidate]] = {label: [] for label in cfg.strata_labels()}
    for c in replay_pool:
        strata[cfg.stratum(c.depth)].append(c)
    for bucket in strata.values():
        rng.shuffle(bucket)
    replay: list[Candidate] = []
    taken = {label: 0 for label in strata}
    labels = [lb for lb in strata if strata[lb]]
    rng.shuffle(labels)  # who gets the remainder when n_replay is not a multiple
    while len(replay) < n_replay:
        for lb in labels:
            if len(replay) < n_replay and taken[lb] < len(strata[lb]):
                replay.append(strata[lb][taken[lb]])
                taken[lb] += 1
    return Mix(focus, replay, {lb: k for lb, k in taken.items()})
