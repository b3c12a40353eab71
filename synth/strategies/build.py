"""Building blocks shared by the strategies: content-addressed ids, building and checking a task,
reading the seed's state before a call."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from ace_env import bfcl
from ace_env.executor import Environment, copy_json
from ace_env.tasks import Task, Turn
from synth.taskcheck import (
    adjacent_positions,
    canonical_json,
    execution_problems,
    flat_calls,
    leaves,
    oracle_of,
    repair_text,
    task_fingerprint,
    text_order_problems,
)


def task_id(strategy: str, turns: list[Turn], config: dict[str, Any], tools: list[str],
            distractors: list[str], views: list[dict[str, Any]] | None = None) -> str:
    blob = canonical_json(
        {
            **({"views": views} if views else {}),
            "turns": [{"user": t.user, "ground_truth": t.ground_truth, "tools_added": t.tools_added}
                      for t in turns],
            "config": config,
            "tools": tools,
            "distractors": distractors,
        }
    )
    return f"ace-{strategy}-{hashlib.sha1(blob.encode()).hexdigest()[:12]}"


def build(seed: Task, strategy: str, target: tuple[str, str], strength: float, note: str, *,
           turns: list[Turn] | None = None, config: dict[str, Any] | None = None,
           classes: list[str] | None = None, tools: list[str] | None = None,
           distractors: list[str] | None = None, extra: dict[str, Any] | None = None,
           views: list[dict[str, Any]] | None = None) -> Task | None:
    """A new task from the seed with the given parts replaced; None unless it executes cleanly."""
    turns = turns if turns is not None else copy_turns(seed.turns)
    config = config if config is not None else copy_json(seed.initial_config)
    classes = classes if classes is not None else list(seed.involved_classes)
    tools = tools if tools is not None else list(seed.tools)
    distractors = distractors if distractors is not None else list(seed.distractors)
    views = views if views is not None else list(seed.output_views)
    # a class configured but not involved (BFCL's base 96 configures TravelAPI) makes an invalid task file
    config = {cls: cfg for cls, cfg in config.items() if cls in classes}
    provenance = {
        "parents": [seed.id],
        "strategy": strategy,
        "target_edge": f"{target[0]}>{target[1]}",
        "strength": round(float(strength), 4),
        "note": note,
        **(extra or {}),
        **seed_exemptions(seed),
        **({"seed_repaired": list(seed.provenance["repaired"])} if seed.provenance.get("repaired") else {}),
    }
    probe = Task("", "ace", strategy, turns, config, classes, tools, seed.long_context, {}, distractors, views)
    repair_text(probe)  # a quote the text nearly shares with the ground truth made equal to it, glued sentences spaced
    task = Task(
        id=task_id(strategy, turns, config, tools, distractors, views),
        source="ace",
        category=strategy,
        turns=turns,
        initial_config=config,
        involved_classes=classes,
        tools=tools,
        long_context=seed.long_context,
        provenance=provenance,
        distractors=distractors,
        output_views=views,
    )
    if execution_problems(oracle_of(task)):
        return None
    return task


def seed_exemptions(seed: Task) -> dict[str, Any]:
    """What the seed itself does not satisfy of taskcheck's text rules (so the new task is not blamed for it)."""
    key = (seed.source, seed.id, task_fingerprint(seed), canonical_json([t.user for t in seed.turns]))
    if key not in _EXEMPT:
        if len(_EXEMPT) >= 4096:
            _EXEMPT.pop(next(iter(_EXEMPT)))
        _EXEMPT[key] = _compute_exemptions(seed)
    return copy_json(_EXEMPT[key])


#: Exemptions by seed content (bounded; a seed edited in place gets a new key).
_EXEMPT: dict[tuple[str, ...], dict[str, Any]] = {}


def _compute_exemptions(seed: Task) -> dict[str, Any]:
    """Only the text order is inherited from the seed; values are never exempt (a seed whose ground
    truth uses a value nothing provides is not used: :func:`synth.taskcheck.seed_problems`)."""
    turns = sorted({int(p.split()[1].rstrip(":")) for p in text_order_problems(seed)})
    turns = sorted(set(turns) | set(seed.provenance.get("exempt_order_turns") or []))
    return {"exempt_order_turns": turns}


def copy_turns(turns: list[Turn]) -> list[Turn]:
    return [Turn([dict(m) for m in t.user], list(t.ground_truth), list(t.tools_added)) for t in turns]


def pick_position(seed: Task, target: tuple[str, str], rng: random.Random) -> int | None:
    positions = adjacent_positions(seed, target)
    return rng.choice(positions) if positions else None


def add_user_text(turn: Turn, text: str, front: bool = False) -> None:
    """Add a sentence to the turn's (last) user message, or a new message if it has none."""
    for m in reversed(turn.user):
        if m.get("role") == "user":
            m["content"] = f"{text} {m['content']}" if front else f"{m['content'].rstrip()} {text}"
            return
    turn.user.append({"role": "user", "content": text})


def class_of(name: str) -> str | None:
    info = bfcl.functions().get(name)
    return info.class_name if info else None


def parsed_output(output: str) -> Any:
    try:
        return json.loads(output)
    except (ValueError, TypeError):
        return None


def effective(seed: Task, cls: str) -> Any:
    """A fresh instance of ``cls`` loaded from the seed's config (short context)."""
    inst = bfcl.api_class(cls)()
    if not bfcl.is_stateless(cls):
        inst._load_scenario(copy_json(seed.initial_config.get(cls, {})), long_context=False)
    return inst


def env_before(seed: Task, flat_index: int) -> Environment:
    """An environment that has executed the seed's ground truth up to (not including) a call."""
    env = Environment(seed)
    for k, (t, _, raw, _) in enumerate(flat_calls(seed)):
        if k >= flat_index:
            break
        env.call(raw, t)
    return env


def step_values(seed: Task, k: int) -> tuple[list[Any], list[Any]]:
    """Argument leaves and output leaves of flat calls ``k`` and ``k + 1``."""
    env = env_before(seed, k)
    flat = flat_calls(seed)
    args, outs = [], []
    for j in (k, k + 1):
        t, _, raw, _ = flat[j]
        r = env.call(raw, t)
        args.extend(leaves(r.arguments))
        outs.extend(leaves(parsed_output(r.output or "")))
    return args, outs


def gt_text(seed: Task) -> str:
    return "\n".join(c for t in seed.turns for c in t.ground_truth)
