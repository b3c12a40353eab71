"""Repairing a task whose ground truth uses a value nothing provides: add the lookup that provides it.

BFCL's ground truths often use a value the user never gave and no call
returned: an airport code for a city the user names (``SFO`` for "San
Francisco"), a user id for a name (``USR002`` for "Bob"), a zip code, a
ticker for a company name.  Where a lookup the task offers turns a name the
user text writes into exactly that value, :func:`repair_provenance` inserts
the lookup right before the first call that needs it (``get_nearest_airport_by_city(location='San Francisco')``),
so the value now comes from an earlier result; the replay confirms it.
Values no lookup provides (a fuel amount that depends on a level never read,
a message text the user never wrote) are not repaired: such a task is not used.
"""

from __future__ import annotations

import re

from ace_env.calls import Call
from ace_env.executor import RolloutState
from ace_env.tasks import Task, Turn
from synth.checks.parts import flat_calls, user_text_upto
from synth.checks.seeds import deferred_turns, seed_problems
from synth.checks.text import repair_text
from synth.checks.values import Produced, value_provenance
from synth.seedfix import repair_weekdays

#: Lookups that turn a name into an id: (tool, its one parameter).
RESOLVERS = (
    ("get_nearest_airport_by_city", "location"),
    ("get_zipcode_based_on_city", "city"),
    ("get_symbol_by_name", "name"),
    ("get_user_id", "user"),
)

_NAMES = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+){0,2}\b")

#: At most this many lookups are added to one task.
MAX_REPAIRS = 4


def _names(text: str) -> list[str]:
    """Capitalized words and runs of up to three of them (San Francisco, Bob, Zeta Corp), each run's
    sub-runs too, longest first."""
    out: list[str] = []
    for m in _NAMES.finditer(text):
        words = m.group(0).split()
        if text[m.end():m.end() + 1] == ".":  # 'Quasar Ltd.': the name's own abbreviation point
            out.append(m.group(0) + ".")
        for n in range(len(words), 0, -1):
            for i in range(len(words) - n + 1):
                out.append(" ".join(words[i:i + n]))
    return list(dict.fromkeys(out))


def _with_call(task: Task, turn: int, index: int, call: str) -> Task:
    turns = [Turn([dict(m) for m in t.user], list(t.ground_truth), list(t.tools_added)) for t in task.turns]
    turns[turn].ground_truth.insert(index, call)
    notes = list(task.provenance.get("repaired") or []) + [call]
    return Task(task.id, task.source, task.category, turns, task.initial_config, list(task.involved_classes),
                list(task.tools), task.long_context, {**task.provenance, "repaired": notes}, list(task.distractors),
                list(task.output_views))


def _lookup_for(task: Task, turn: int, index: int, value: object) -> str | None:
    """A lookup offered in the turn that returns ``value`` for a name the user text writes, run in the state
    the task has right before the call (turn, index)."""
    text = user_text_upto(task, turn)
    offered = task.offered_tools(turn)
    names = _names(text)
    env: RolloutState | None = None
    for tool, param in RESOLVERS:
        if tool not in offered:
            continue
        if env is None:  # the lookups only read: one environment serves every try
            env = RolloutState(task)
            for t, i, raw, _ in flat_calls(task):
                if (t, i) >= (turn, index):
                    break
                env.call(raw, t)
        for name in names:
            call = Call(tool, (), {param: name}).render()
            r = env.call(call, turn)
            if r.status == "ok" and Produced(r.output).has(value):
                return call
    return None


def text_repaired(task: Task) -> Task:
    """A copy of the task with the safe text repairs made (:func:`synth.taskcheck.repair_text`: glued sentences
    spaced, a quote made equal to the ground truth's value it nearly equals; :func:`synth.seedfix.repair_weekdays`:
    weekday words a written date contradicts dropped); the task itself when none is."""
    turns = [Turn([dict(m) for m in t.user], list(t.ground_truth), list(t.tools_added)) for t in task.turns]
    copy = Task(task.id, task.source, task.category, turns, task.initial_config, list(task.involved_classes),
                list(task.tools), task.long_context, dict(task.provenance), list(task.distractors),
                list(task.output_views))
    fixed = repair_text(copy) + repair_weekdays(copy)
    if not fixed:
        return task
    copy.provenance = {**copy.provenance, "text_repaired": fixed}
    return copy


def repair_provenance(task: Task) -> Task | None:
    """The task with lookups added until every ground-truth value has provenance, or None if it cannot be."""
    for _ in range(MAX_REPAIRS + 1):
        missing = value_provenance(task)
        if not missing:
            return task
        first = missing[0]
        if len(task.provenance.get("repaired") or []) >= MAX_REPAIRS:
            return None
        call = _lookup_for(task, first.turn, first.step, first.value)
        if call is None:
            return None
        task = _with_call(task, first.turn, first.step, call)
    return None


#: Seeds as used, by (id, the whole task's fingerprint): the seed itself, its repaired version, or None.
_USABLE: dict[tuple[str, str], Task | None] = {}


def usable_version(seed: Task) -> Task | None:
    """The seed as synthesis may use it: itself when it passes :func:`synth.taskcheck.seed_problems`, else
    its repaired version (:func:`repair_provenance`) when that passes, else None (not used)."""
    key = (seed.id, seed.fingerprint())  # the whole task, text included
    if key not in _USABLE:
        if len(_USABLE) >= 8192:
            _USABLE.pop(next(iter(_USABLE)))
        if not seed_problems(seed):
            _USABLE[key] = seed
        elif deferred_turns(seed):  # a request put off to a later turn: no lookup repairs that
            _USABLE[key] = None
        else:
            fixed = repair_provenance(text_repaired(seed))
            _USABLE[key] = fixed if fixed is not None and not seed_problems(fixed) else None
    return _USABLE[key]


__all__ = ["MAX_REPAIRS", "RESOLVERS", "repair_provenance", "text_repaired", "usable_version"]
