"""Building blocks shared by the strategies: content-addressed ids, building and checking a task,
reading the seed's state before a call.

:func:`build` ends with the one expensive step of making a task: executing its ground truth.  Inside
:func:`deferred_execution` it leaves that step to the caller (:func:`executes`), so the pipeline can
first turn away a copy of a task it already holds, which the diversity rules decide without executing
anything, and execute only the tasks that are new.

A run draws the same seed many times (most draws give a copy).  Inside :func:`seed_memo`, what a strategy
derives from a seed and a position alone, whatever its generator draws (the results of the target's two
calls, whether a call only reads, which twins are real choices, the results of the calls a depth chain
adds), is computed once and kept until the block ends (:func:`memoized`, :func:`target_calls`); outside
it, everything is computed afresh.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import random
from dataclasses import replace
from typing import Any, Callable, Iterator, TypeVar

from ace_env.environments import tool_catalogue_of
from ace_env.executor import RolloutState, StepResult, copy_json
from ace_env.tasks import Task, Turn
from ace_env.toolcatalogue import ToolCatalogue
from ace_env.values import leaves
from synth.checks.parts import (
    adjacent_positions,
    canonical_json,
    execution_problems,
    flat_calls,
    oracle_of,
    task_fingerprint,
)
from synth.checks.text import repair_text
from synth.checks.values import text_order_problems


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
    if _DEFERRED.get():
        return task  # the caller executes it (:func:`executes`), after its own cheaper checks
    return task if executes(task) else None


#: Whether :func:`build` leaves the execution of the ground truth to its caller (:func:`deferred_execution`).
_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("deferred_execution", default=False)


@contextlib.contextmanager
def deferred_execution() -> Iterator[None]:
    """Inside, :func:`build` returns the assembled task without executing its ground truth; the caller must
    call :func:`executes` on it and drop it when that fails, as ``build`` would have returned None.

    Only for a strategy whose result ``build`` decides last (registered with ``build_last=True``): one that
    tries something else when ``build`` gives None (the random baseline) would go another way."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def executes(task: Task) -> bool:
    """Whether the task's ground truth executes with no error and no error output (what :func:`build` checks)."""
    return not execution_problems(oracle_of(task))


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


def class_of(tools: ToolCatalogue, name: str) -> str | None:
    """The class of tool ``name`` in ``tools`` (the task's environment's catalogue); None for one it lacks."""
    info = tools.functions().get(name)
    return info.class_name if info else None


def parsed_output(output: str) -> Any:
    try:
        return json.loads(output)
    except (ValueError, TypeError):
        return None


def effective(seed: Task, cls: str) -> Any:
    """A fresh instance of ``cls`` loaded from the seed's config (short context), made by the catalogue of the
    seed's environment."""
    return tool_catalogue_of(seed).instance(cls, copy_json(seed.initial_config.get(cls, {})))


T = TypeVar("T")

#: The run's memo (:func:`seed_memo`): (what, id of the seed, arguments) -> (the seed, the value); None outside.
_MEMO: contextvars.ContextVar[dict[tuple[Any, ...], tuple[Task, Any]] | None] = \
    contextvars.ContextVar("seed_memo", default=None)


@contextlib.contextmanager
def seed_memo() -> Iterator[None]:
    """Inside, :func:`memoized` values are computed once per seed object and arguments, and forgotten at the end.

    Keys are the seed objects themselves (each entry holds its seed, so an id is never reused while the
    entry lives): the seeds must not be changed in place inside the block (the pipeline never does)."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def memoized(what: str, seed: Task, args: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """``compute()``, kept inside :func:`seed_memo` under (what, seed, args); the caller must not change it."""
    memo = _MEMO.get()
    if memo is None:
        return compute()
    key = (what, id(seed), args)
    hit = memo.get(key)
    if hit is None or hit[0] is not seed:
        hit = memo[key] = (seed, compute())
    return hit[1]


def target_calls(seed: Task, k: int) -> tuple[StepResult, StepResult]:
    """The results of flat calls ``k`` and ``k + 1`` after the seed's ground truth up to ``k`` (fresh copies)."""

    def compute() -> tuple[StepResult, StepResult]:
        env = env_before(seed, k)
        flat = flat_calls(seed)
        return env.call(flat[k][2], flat[k][0]), env.call(flat[k + 1][2], flat[k + 1][0])

    ra, rb = memoized("target_calls", seed, (k,), compute)
    return replace(ra, arguments=copy_json(ra.arguments)), replace(rb, arguments=copy_json(rb.arguments))


def env_before(seed: Task, flat_index: int) -> RolloutState:
    """A rollout state that has executed the seed's ground truth up to (not including) a call."""
    env = RolloutState(seed)
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
