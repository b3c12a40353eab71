"""random: the baseline, one of the other strategies' edits applied at a random place of the same seed.

CoVERT-style oracle-preserving random augmentation: the edit (a re-formatted
result, look-alike entities, random distractors of any domain, a partial
result, an added step) is applied to a random adjacent pair of the seed, not
to the target, so the benchmark can compare aimed and unaimed synthesis.
Each edit is registered on its strategy (:func:`~synth.registry.register_edit`);
the baseline dispatches through the registry.
"""

from __future__ import annotations

import random
from typing import Any

from ace_env.environments import tool_catalogue_of
from ace_env.tasks import Task
from synth.checks.parts import adjacent_positions, flat_calls
from synth.registry import STRATEGIES, register, register_edit
from synth.strategies.ambiguity import format_view
from synth.strategies.build import build, pick_position
from synth.strategies.cascade import cascade_at
from synth.strategies.depth import depth_at
from synth.strategies.distractor import loads_empty, with_distractors
from synth.strategies.lookalike import lookalike_at


@register("random", targeted=False,
          definition="the untargeted baseline: one of the other strategies' edits at a random place of the same seed",
          needs="two adjacent calls anywhere in the seed")
def random_augmentation(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """One random edit of the same seed, not aimed at ``target`` (which the task still contains)."""
    if pick_position(seed, target, rng) is None:
        return None
    flat = flat_calls(seed)
    if len(flat) < 2:
        return None
    kinds = [name for name, spec in STRATEGIES.items() if spec.edit is not None]
    rng.shuffle(kinds)
    for kind in kinds:
        k = rng.randrange(len(flat) - 1)
        pair = (flat[k][3], flat[k + 1][3])
        extra = {"random_kind": kind, "applied_to": f"{pair[0]}>{pair[1]}"}
        edit = STRATEGIES[kind].edit
        inner = edit(seed, pair, k, strength, rng) if edit is not None else None
        task = _retag(inner, seed, target, strength, extra) if inner is not None else None
        # the baseline edits the seed at random but keeps its compositions (so the task
        # still has the target the benchmark compares on)
        if task is not None and adjacent_positions(task, target):
            return task
    return None


@register_edit("distractor")
def _random_distractors(seed: Task, pair: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    flat = flat_calls(seed)
    used = {n for _, _, _, n in flat}
    tools = tool_catalogue_of(seed)
    pool = [n for n, info in tools.functions().items()
            if info.class_name not in seed.involved_classes and n not in used and loads_empty(tools, info.class_name)]
    if not pool:
        return None
    chosen = rng.sample(sorted(pool), min(len(pool), 1 + round(strength * 2)))
    classes, tools, config, distractors = with_distractors(seed, chosen)
    return build(seed, "random", pair, strength, f"random distractors: {', '.join(chosen)}",
                 config=config, classes=classes, tools=tools, distractors=distractors,
                 extra={"added_distractors": chosen})


@register_edit("lookalike")
def _random_lookalikes(seed: Task, pair: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    made = lookalike_at(seed, k, strength, rng)
    if made is None:
        return None
    config, added = made
    return build(seed, "random", pair, strength, f"random look-alikes: {', '.join(added)}",
                 config=config, extra={"lookalikes": added})


@register_edit("ambiguity")
def _random_view(seed: Task, pair: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    view = format_view(seed, k, strength, rng)
    if view is None:
        return None
    ops, _ = view
    return build(seed, "random", pair, strength, f"random re-formatted result of {pair[0]}",
                 views=list(seed.output_views) + [{"tool": pair[0], "ops": ops}],
                 extra={"view": {"tool": pair[0], "ops": ops}})


@register_edit("cascade")
def _random_cascade(seed: Task, pair: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    return cascade_at(seed, pair, k, strength, rng)


@register_edit("depth")
def _random_depth(seed: Task, pair: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    return depth_at(seed, pair, k, strength, rng, strategy="random")


def _retag(inner: Task, seed: Task, target: tuple[str, str], strength: float, extra: dict[str, Any]) -> Task | None:
    """A task made by a strategy's edit, relabelled as the random baseline for ``target``."""
    keep = {k: v for k, v in inner.provenance.items()
            if k not in ("parents", "strategy", "target_edge", "strength", "note")}
    return build(seed, "random", target, strength, "random " + inner.provenance.get("note", "").removeprefix("random "),
                 turns=inner.turns, config=inner.initial_config, classes=inner.involved_classes,
                 tools=inner.tools, distractors=inner.distractors, views=inner.output_views,
                 extra={**keep, **extra})
