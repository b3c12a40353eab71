"""depth: turns or calls from compatible seeds spliced next to the target pair."""

from __future__ import annotations

import functools
import random

from ace_env import bfcl
from ace_env.calls import Call, parse_call
from ace_env.tasks import Task
from ace_env.verifier import replay_oracle
from synth.strategies.build import build, copy_turns, pick_position
from synth.strategies.registry import register
from synth.taskcheck import adjacent_positions, flat_calls, leaves, user_text_upto, value_in_text

_JOIN_AFTER = ["{orig} After that: {extra}", "{orig} Once that's done: {extra}", "{orig} And one more thing: {extra}"]
_JOIN_BEFORE = ["Before anything else: {extra} {orig}", "{extra} Next: {orig}", "First: {extra} Then: {orig}"]


def _derivable(task: Task, spliced: set[tuple[int, int]]) -> bool:
    """Every non-trivial argument value of the spliced calls is in the user text or an earlier output."""

    oracle = replay_oracle(task)
    outputs: list[str] = []
    for t, turn in enumerate(oracle.turns):
        text = None
        for i, step in enumerate(turn.steps):
            if (t, i) in spliced:
                text = text if text is not None else user_text_upto(task, t)
                for v in leaves(step.arguments):
                    trivial = v is None or isinstance(v, bool) or (isinstance(v, (int, float)) and -2 <= v <= 2) \
                        or (isinstance(v, str) and len(v.strip()) < 3)
                    if trivial or value_in_text(v, text):
                        continue
                    if not any(str(v) in out for out in outputs):
                        return False
            outputs.append(step.output)
    return True


@functools.cache
def _donor_turns(classes: frozenset[str]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(seed id, user text, calls) of base-task turns whose classes fit inside ``classes``."""
    out = []
    for task in bfcl.load_tasks("base"):
        if not set(task.involved_classes) <= classes:
            continue
        for turn in task.turns:
            texts = [m["content"] for m in turn.user if m.get("role") == "user" and m.get("content")]
            if texts and 1 <= len(turn.ground_truth) <= 3:
                out.append((task.id, " ".join(texts), tuple(turn.ground_truth)))
    return tuple(out)


def depth_at(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random,
              strategy: str = "depth") -> Task | None:
    extra_needed = max(1, min(3, round(strength * 3)))
    flat = flat_calls(seed)
    donors = [d for d in _donor_turns(frozenset(seed.involved_classes)) if d[0] != seed.id]
    rng.shuffle(donors)
    turns = copy_turns(seed.turns)
    t_from, i_from = flat[k][0], flat[k][1]
    t_to, i_to = flat[k + 1][0], flat[k + 1][1]
    added = 0
    used: list[str] = []
    before = 0  # calls inserted before ``from`` in its turn
    tried = 0
    current = None
    for donor_id, text, calls in donors:
        if added >= extra_needed or tried >= 40:
            break
        if added + len(calls) > extra_needed:
            continue
        offered = set(seed.tools)
        if any(not isinstance(parse_call(c), Call) or parse_call(c).name not in offered for c in calls):
            continue
        tried += 1
        trial = copy_turns(turns)
        after = rng.random() < 0.6
        if after:
            pos = i_to + 1 + (before if t_to == t_from else 0)
            trial[t_to].ground_truth[pos:pos] = list(calls)
            t_ins = t_to
            tgt = trial[t_to]
            joined = rng.choice(_JOIN_AFTER)
        else:
            pos = i_from + before
            trial[t_from].ground_truth[pos:pos] = list(calls)
            t_ins = t_from
            tgt = trial[t_from]
            joined = rng.choice(_JOIN_BEFORE)
        for m in reversed(tgt.user):
            if m.get("role") == "user":
                m["content"] = joined.format(orig=m["content"].strip(), extra=text.strip())
                break
        note = f"depth +{added + len(calls)}: spliced {len(calls)} call(s) from {donor_id}"
        task = build(seed, strategy, target, strength, note, turns=trial,
                      extra={"donors": used + [donor_id], "added_calls": added + len(calls)})
        if task is None or not adjacent_positions(task, target):
            continue
        start = pos
        if not _derivable(task, {(t_ins, start + x) for x in range(len(calls))}):
            continue
        turns = trial
        current = task
        used.append(donor_id)
        added += len(calls)
        if not after:
            before += len(calls)
    return current


@register("depth")
def depth(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    k = pick_position(seed, target, rng)
    if k is None:
        return None
    return depth_at(seed, target, k, strength, rng)
