"""The seeds that may be copied: a seed whose text breaks a text rule, whose ground truth uses a value nothing
provides, passes a value on in another unit than documented, sends a message to another person or id than the
text names, writes a date beside a weekday the calendar contradicts (:mod:`synth.seedfix`), or whose turn defers
its action is repaired or not used (:func:`seed_problems`)."""

from __future__ import annotations

from ace_env.tasks import Task
from synth.checks.parts import DEFERRED_TURN, VALUE_UNOBTAINABLE
from synth.checks.text import text_problems
from synth.checks.values import value_provenance
from synth.seedfix import seedfix_problems

_SEED_PROBLEMS: dict[tuple[str, str], tuple[str, ...]] = {}


def deferred_turns(task: Task) -> list[str]:
    """Turns that hold a tool back (BFCL miss_func: ``tools_added`` in a later turn) or whose ground truth is
    empty while a later turn's is not (BFCL miss_param, and miss_func's request turn).

    Such a turn is a request put off to a later turn ("I have updated some more functions ... What about
    now?"), not a turn that asks for nothing actionable; as a seed it breaks the text rule "a turn whose
    ground truth is empty asks for nothing actionable", so a seed with one is not used.  BFCL's base and
    long-context variants of the same task remain, so no base task is lost.
    """
    out = [f"turn {t}: adds tools held back before it ({', '.join(turn.tools_added)})"
           for t, turn in enumerate(task.turns) if turn.tools_added]
    for t, turn in enumerate(task.turns):
        if not turn.ground_truth and any(later.ground_truth for later in task.turns[t + 1:]):
            out.append(f"turn {t}: empty ground truth, the request is made in a later turn")
    return out


def seed_problems(seed: Task) -> tuple[str, ...]:
    """Why a task may not be used as a seed (empty when it may): a turn puts a request off to a later turn
    (:func:`deferred_turns`: BFCL miss_func and miss_param), its ground truth uses a value nothing provides
    (:func:`value_provenance`), its text breaks a text rule, or it has an error the reviewers caught
    (:func:`synth.seedfix.seedfix_problems`: a unit mismatch, a message to the wrong person or id, a weekday the
    date contradicts)."""
    key = (seed.id, seed.fingerprint())  # the whole task: a text repair alone makes another key
    if key not in _SEED_PROBLEMS:
        if len(_SEED_PROBLEMS) >= 8192:
            _SEED_PROBLEMS.pop(next(iter(_SEED_PROBLEMS)))
        deferred = [f"{DEFERRED_TURN}: {d}" for d in deferred_turns(seed)]
        _SEED_PROBLEMS[key] = tuple(deferred) if deferred else tuple(
            [f"{VALUE_UNOBTAINABLE}: {u}" for u in value_provenance(seed)]
            + [f"{reason}: {d}" for reason, d in text_problems(seed)]
            + [f"{reason}: {d}" for reason, d in seedfix_problems(seed)])
    return _SEED_PROBLEMS[key]


def usable_seed(seed: Task) -> bool:
    """Whether a task may seed synthesis (:func:`seed_problems` finds nothing)."""
    return not seed_problems(seed)
