"""Adversarial, oracle-preserving synthesis strategies aimed at one composition.

A strategy turns a seed task into a NEW task aimed at ``target = (from_tool,
to_tool)``, two calls that are adjacent in the seed's ground truth (adjacency
is over the flat list of calls, so a pair may span two turns):

``ambiguity``   look-alike entities next to the ones the target steps use
                (files, stock symbols and orders, users, tweets, tickets,
                bookings and cards), added to ``initial_config``; the ground
                truth is unchanged, the right value must be carried from the
                ``from`` step to the ``to`` step.
``distractor``  1-3 functions of other BFCL classes whose names and
                descriptions resemble the target tools, offered as
                distractors (calling one fails verification).
``cascade``     an upstream precondition fails (funds too low, logged out,
                a card declined, a file missing or truncated); the ground
                truth notices and recovers with calls whose values the user
                text states.
``depth``       turns or calls from compatible seeds spliced before the
                ``from`` step or after the ``to`` step, taking the composition
                from 2 up to 5 calls.
``random``      the baseline: one of the edits above applied to a random
                place of the same seed, not aimed at the target.

Every produced task is re-executed (:func:`ace_env.verifier.replay_oracle`) and
returned only when its ground truth runs with no error and no error output.
Ids are content-addressed, so the same inputs (and rng seed) give the same id.
"""

from __future__ import annotations

# Importing a strategy module registers it; the order is the registry's order.
from synth.strategies import ambiguity, baseline, cascade, depth, distractor  # noqa: F401
from synth.strategies.build import task_id
from synth.strategies.registry import STRATEGIES, Strategy, generate, get, item_rng, register, synthesize

__all__ = ["STRATEGIES", "Strategy", "generate", "get", "item_rng", "register", "synthesize", "task_id"]
