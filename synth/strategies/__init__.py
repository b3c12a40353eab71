"""Adversarial, oracle-preserving synthesis strategies aimed at one composition.

A strategy turns a seed task into a NEW task aimed at ``target = (from_tool,
to_tool)``, two calls adjacent in the seed's ground truth (adjacency is over
the flat list of calls, so a pair may span two turns).  One module each:

``ambiguity``   (:mod:`.ambiguity`) the ``from`` step's result, which feeds the
                ``to`` step, is shown re-formatted (units, number and date
                formats, key names, nesting, wrappers) by a per-task output
                view; the ground truth's arguments stay canonical.
``lookalike``   (:mod:`.lookalike`) the value ``from`` passes to ``to`` is shown among
                near-identical values of sibling records in ``from``'s result (an
                output view); the text names the record's attribute, never the value.
``cascade``     (:mod:`.cascade`) the upstream call (made once, for one entity)
                returns a partial result (truncated, stale, cut short); the ground
                truth checks again and recovers; the text states the goal only.
``depth``       (:mod:`.depth`) 1-3 reads added after ``to``, each consuming the
                output of the call before it in the chain.
``distractor``  (:mod:`.distractor`) wrong-way twins of the decision tool
                (:mod:`ace_env.twins`: near names, adjacent or opposite effects,
                executable), new to the seed, offered from the decision step's
                turn and declared wrong.
``random``      (:mod:`.baseline`) one of those edits at a random place of the seed.
``probe``       (:mod:`.probe`) tasks that separate a weak composition from a weak
                tool for an ``ambiguous`` edge: ``b`` reached without ``a``, and
                ``a`` then ``b`` with the link kept (``ace diagnose`` uses them).

Strategies are registered by name in :mod:`synth.registry` (duplicates refused);
:func:`generate` seeds item ``index`` of a run with ``seed + index``, so any
task regenerates exactly.  Shared helpers: :mod:`.build` (ids, building and
replaying a task), :mod:`.fs` (file-system configs), :mod:`.text` (the seeded
grammar that composes a turn's text).  Every produced task is re-executed and
returned only when its ground truth runs with no error and no error output.
"""

from __future__ import annotations

from synth.registry import STRATEGIES, Strategy, generate, get, item_rng, register, synthesize

# Importing a strategy module registers it; the order is the registry's order.
from synth.strategies import ambiguity, baseline, cascade, depth, distractor, lookalike, probe  # noqa: F401
from synth.strategies.build import task_id

__all__ = ["STRATEGIES", "Strategy", "generate", "get", "item_rng", "register", "synthesize", "task_id"]
