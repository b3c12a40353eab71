"""Perturbed rollouts: a task's ground truth with one deliberate mistake.

Used by the agreement test and the verifier benchmark (the same rollouts go
to BFCL's checker and to ACE's), and as the building block of the simulated
agent.  Every perturbation is deterministic given its ``random.Random``.

Kinds:

``drop``      remove one ground-truth call
``insert``    add a call of another offered tool (with the arguments of a
              ground-truth call of that tool where one exists)
``swap``      swap two neighbouring calls of a turn
``alter``     change one literal argument of one call
``early``     act in a turn that requires no call (the next turn's calls, or a
              read-only call), or move a call one turn earlier
``withheld``  call a tool that is not offered yet (miss_func)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.tasks import Task

KINDS = ("drop", "insert", "swap", "alter", "early", "withheld")


@dataclass
class Perturbed:
    task_id: str
    kind: str
    turns: list[list[str]]
    note: str


def _positions(turns: list[list[str]]) -> list[tuple[int, int]]:
    return [(t, i) for t, calls in enumerate(turns) for i in range(len(calls))]


def alter_value(value: Any, rng: random.Random) -> Any:
    """A different literal of the same kind (never equal to ``value``)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, 2, -1, 10])
    if isinstance(value, float):
        return round(value * rng.choice([1.5, 0.5, 2.0]) + 1.0, 2)
    if isinstance(value, str):
        if not value:
            return "x"
        if rng.random() < 0.5 and len(value) > 1:
            return value[:-1]
        return value + rng.choice(["_1", "s", " 2"])
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "x": 1}
    return None


def alter_call(call: str, rng: random.Random) -> str | None:
    """One argument of a call string changed, or None if it has no argument."""
    parsed = parse_call(call)
    if not isinstance(parsed, Call):
        return None
    kwargs = dict(parsed.kwargs)
    args = list(parsed.args)
    choices = [("kw", k) for k in kwargs] + [("pos", i) for i in range(len(args))]
    if not choices:
        return None
    where, key = rng.choice(choices)
    if where == "kw":
        kwargs[key] = alter_value(kwargs[key], rng)
    else:
        args[key] = alter_value(args[key], rng)
    return Call(parsed.name, tuple(args), kwargs).render()


def _read_only_call(task: Task, turn: int) -> str | None:
    offered = task.offered_tools(turn)
    for name in ("ls", "pwd", "get_current_time", "list_users", "get_available_stocks", "get_zipcode_based_on_city"):
        if name in offered:
            return {"ls": "ls()", "pwd": "pwd()"}.get(name, f"{name}()") if name in ("ls", "pwd") else None
    return None


def perturb(task: Task, kind: str, rng: random.Random) -> Perturbed | None:
    """One perturbed rollout of ``kind``, or None when the task has no place for it."""
    turns = [list(t.ground_truth) for t in task.turns]
    pos = _positions(turns)
    if kind == "drop" and pos:
        t, i = rng.choice(pos)
        removed = turns[t].pop(i)
        return Perturbed(task.id, kind, turns, f"dropped {removed} from turn {t}")
    if kind == "alter" and pos:
        rng.shuffle(pos)
        for t, i in pos:
            new = alter_call(turns[t][i], rng)
            if new is not None:
                old, turns[t][i] = turns[t][i], new
                return Perturbed(task.id, kind, turns, f"turn {t}: {old} -> {new}")
        return None
    if kind == "swap":
        spots = [(t, i) for t, calls in enumerate(turns) for i in range(len(calls) - 1) if calls[i] != calls[i + 1]]
        if not spots:
            return None
        t, i = rng.choice(spots)
        turns[t][i], turns[t][i + 1] = turns[t][i + 1], turns[t][i]
        return Perturbed(task.id, kind, turns, f"turn {t}: swapped steps {i} and {i + 1}")
    if kind == "insert" and turns:
        t = rng.randrange(len(turns))
        gt_by_name: dict[str, str] = {}
        for calls in turns:
            for c in calls:
                p = parse_call(c)
                if isinstance(p, Call):
                    gt_by_name.setdefault(p.name, c)
        offered = sorted(task.offered_tools(t))
        candidates = [n for n in offered if n in gt_by_name] or offered
        name = rng.choice(candidates)
        call = gt_by_name.get(name, f"{name}()")
        i = rng.randrange(len(turns[t]) + 1)
        turns[t].insert(i, call)
        return Perturbed(task.id, kind, turns, f"turn {t}: inserted {call} at step {i}")
    if kind == "early":
        empty = [t for t, calls in enumerate(turns) if not calls]
        if empty:
            t = rng.choice(empty)
            nxt = next((u for u in range(t + 1, len(turns)) if turns[u]), None)
            if nxt is not None and rng.random() < 0.5:
                turns[t] = [c for c in turns[nxt] if isinstance(parse_call(c), Call)
                            and parse_call(c).name in task.offered_tools(t)]
                if turns[t]:
                    return Perturbed(task.id, kind, turns, f"turn {t}: made turn {nxt}'s calls early")
            ro = _read_only_call(task, t)
            if ro is not None:
                turns[t] = [ro]
                return Perturbed(task.id, kind, turns, f"turn {t}: called {ro} in a turn that needs none")
        movable = [(t, 0) for t in range(1, len(turns)) if turns[t]]
        if not movable:
            return None
        t, _ = rng.choice(movable)
        call = turns[t].pop(0)
        turns[t - 1].append(call)
        return Perturbed(task.id, kind, turns, f"moved {call} from turn {t} to turn {t - 1}")
    if kind == "withheld":
        for t, turn in enumerate(task.turns):
            if not turn.tools_added:
                continue
            for name in turn.tools_added:
                call = next(
                    (c for calls in turns[t:] for c in calls
                     if isinstance(parse_call(c), Call) and parse_call(c).name == name),
                    None,
                )
                if call is None:
                    continue
                earlier = [u for u in range(t) if not task.turns[u].ground_truth] or list(range(t))
                if not earlier:
                    continue
                u = earlier[-1]
                turns[u].append(call)
                return Perturbed(task.id, kind, turns, f"turn {u}: called withheld {name} early")
        return None
    return None


def perturbed_set(tasks: list[Task], per_task: int = 3, seed: int = 0) -> list[Perturbed]:
    """``per_task`` perturbed rollouts per task, kinds cycling, seeded per task."""
    out = []
    for index, task in enumerate(tasks):
        rng = random.Random(seed * 1_000_003 + index)
        kinds = list(KINDS)
        rng.shuffle(kinds)
        made = 0
        for kind in kinds:
            if made >= per_task:
                break
            p = perturb(task, kind, rng)
            if p is not None:
                out.append(p)
                made += 1
    return out
