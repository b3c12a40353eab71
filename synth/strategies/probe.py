"""Probes: tasks that separate a weak composition a > b from a weak tool b.

When ``b`` almost always comes right after ``a`` in the data, rollouts cannot
say whether ``b`` fails because of the composition or on its own
(``ace_graph.estimate`` calls such an edge ``ambiguous``).  ACE can make the
missing evidence.  Two kinds of probe, each built from a seed task whose
ground truth makes the two calls adjacently:

``without``  ``b`` reached without ``a`` right before it.  Preferably ``a`` is
             dropped and the values ``b`` took from its output are given by
             the user ("You don't need to look these up: cityA is 83214, ...");
             if ``a`` cannot be dropped (``b`` needs its side effects), a
             read-only call of the same API (``pwd``, ``get_current_time``,
             ...) that the user asks for goes between them, so ``b``'s input
             comes through, but from another tool's turn.
``with``     ``a`` then ``b`` with the link kept: the seed's calls up to ``b``'s
             turn (later turns cut, so the rollout budget goes to the pair).

Every probe is re-executed and must pass :func:`synth.taskcheck.check_task`
(ground truth accepted, empty rollout rejected, the probed ``b`` step's removal
and alteration rejected, user values present in the text), like every ACE task.
``provenance`` carries ``strategy = "probe"``, ``target_edge = "a>b"``, the
``probe`` kind and ``target_step`` (the flat index of the probed ``b`` call).

:func:`probe` has the shape of the strategies in ``synth.strategies``
(``(seed, target, strength, rng) -> Task | None``); register it there under
``"probe"``.
"""

from __future__ import annotations

import functools
import hashlib
import random
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.environments import tool_catalogue_of
from ace_env.executor import copy_json
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task, Turn
from ace_env.toolcatalogue import ToolCatalogue
from ace_graph.tagger import tag_task
from synth.checks.parts import adjacent_positions, canonical_json, execution_problems, flat_calls
from synth.registry import register
from synth.strategies.build import seed_exemptions
from synth.taskcheck import check_task

WITHOUT = "without"
WITH = "with"
KINDS = (WITHOUT, WITH)

_READ_ONLY_PREFIXES = ("get_", "list_", "view_", "display", "check_", "pwd", "ls")

_GIVEN_TEXT = [
    "You don't need to look anything up for this step: {values}.",
    "I already have what you need for it: {values}.",
    "Here are the values to use: {values}.",
]
_BETWEEN_TEXT = [
    "Before that, please call {tool} once to check the current state.",
    "Just before you do it, run {tool} so we can see where things stand.",
]


def _copy_turns(turns: list[Turn]) -> list[Turn]:
    return [Turn([dict(m) for m in t.user], list(t.ground_truth), list(t.tools_added)) for t in turns]


def _add_user_text(turn: Turn, text: str) -> None:
    for m in reversed(turn.user):
        if m.get("role") == "user":
            m["content"] = f"{m['content'].rstrip()} {text}"
            return
    turn.user.append({"role": "user", "content": text})


def _probe_id(turns: list[Turn], config: dict[str, Any], tools: list[str], distractors: list[str]) -> str:
    blob = canonical_json({
        "turns": [{"user": t.user, "ground_truth": t.ground_truth, "tools_added": t.tools_added} for t in turns],
        "config": config, "tools": tools, "distractors": distractors,
    })
    return f"ace-probe-{hashlib.sha1(blob.encode()).hexdigest()[:12]}"


def _flat_index(turns: list[Turn], turn: int, index: int) -> int:
    return sum(len(t.ground_truth) for t in turns[:turn]) + index


def _make(seed: Task, target: tuple[str, str], kind: str, strength: float, turns: list[Turn],
          b_turn: int, b_index: int, note: str, extra: dict[str, Any] | None = None) -> Task | None:
    """A probe task; None unless its ground truth executes cleanly and passes check_task."""
    config = copy_json(seed.initial_config)
    provenance = {
        "parents": [seed.id],
        "strategy": "probe",
        "target_edge": f"{target[0]}>{target[1]}",
        "probe": kind,
        "target_step": _flat_index(turns, b_turn, b_index),
        "strength": round(float(strength), 4),
        "note": note,
        **seed_exemptions(seed),  # what the seed itself breaks of taskcheck's text rules is not the probe's fault
        **(extra or {}),
    }
    task = Task(
        id=_probe_id(turns, config, list(seed.tools), list(seed.distractors)),
        source="ace",
        category="probe",
        turns=turns,
        initial_config=config,
        involved_classes=list(seed.involved_classes),
        tools=list(seed.tools),
        long_context=seed.long_context,
        provenance=provenance,
        distractors=list(seed.distractors),
    )
    flat = flat_calls(task)
    step = provenance["target_step"]
    if step >= len(flat) or flat[step][3] != target[1]:
        return None
    if kind == WITHOUT and step > 0 and flat[step - 1][3] == target[0]:
        return None  # b still right after a
    if kind == WITH and (step == 0 or flat[step - 1][3] != target[0]):
        return None
    if execution_problems(replay_oracle(task)):
        return None
    if not check_task(task).valid:
        return None
    return task


def _render(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _without_dropped(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    """Drop ``a``; the values ``b`` took from its output come from the user."""
    flat = flat_calls(seed)
    t_a, i_a = flat[k][0], flat[k][1]
    t_b, i_b = flat[k + 1][0], flat[k + 1][1]
    if t_a != t_b and len(seed.turns[t_a].ground_truth) == 1:
        return None  # a's turn would be left asking for nothing the ground truth does
    tags = tag_task(seed)
    tag_b = next(t for t in tags if t.tool is not None and (t.turn, t.index) == (t_b, i_b))
    call_b = parse_call(flat[k + 1][2])
    if not isinstance(call_b, Call):
        return None
    out_a = replay_oracle(seed).turns[t_a].steps[i_a].output or ""
    given = []
    for param, source in sorted(tag_b.arg_sources.items()):
        if source == "output" and param in call_b.kwargs:
            value = call_b.kwargs[param]
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value) in out_a:
                given.append((param, value))
    if not given:
        return None  # b's input did not come from a's output: dropping a breaks nothing visible
    turns = _copy_turns(seed.turns[: t_b + 1])
    del turns[t_a].ground_truth[i_a]
    if t_a == t_b:
        i_b -= 1
    values = ", ".join(f"{p} is {_render(v)}" for p, v in given)
    _add_user_text(turns[t_b], rng.choice(_GIVEN_TEXT).format(values=values))
    return _make(seed, target, WITHOUT, strength, turns, t_b, i_b,
                 f"{target[0]} dropped; {target[1]}'s input ({', '.join(p for p, _ in given)}) given by the user",
                 {"pattern": "input_from_user", "user_values": [v for _, v in given]})


@functools.cache
def _read_only_calls(tools: ToolCatalogue, cls: str) -> tuple[str, ...]:
    """Functions of an API class (of ``tools``, the seed's environment's catalogue) that take no required argument
    and only read state."""
    out = []
    for name, info in sorted(tools.functions().items()):
        if info.class_name != cls or not name.startswith(_READ_ONLY_PREFIXES):
            continue
        if info.doc.get("parameters", {}).get("required"):
            continue
        out.append(name)
    return tuple(out)


def _without_between(seed: Task, target: tuple[str, str], k: int, strength: float, rng: random.Random) -> Task | None:
    """Keep ``a`` but put a read-only call of the same API, asked for by the user, right before ``b``."""
    flat = flat_calls(seed)
    t_b, i_b = flat[k + 1][0], flat[k + 1][1]
    tools = tool_catalogue_of(seed)
    info = tools.functions().get(target[1])
    if info is None:
        return None
    offered = seed.offered_tools(t_b)
    pool = [n for n in _read_only_calls(tools, info.class_name) if n in offered and n not in target]
    rng.shuffle(pool)
    for name in pool[:4]:
        turns = _copy_turns(seed.turns[: t_b + 1])
        turns[t_b].ground_truth.insert(i_b, Call(name).render())
        _add_user_text(turns[t_b], rng.choice(_BETWEEN_TEXT).format(tool=name))
        task = _make(seed, target, WITHOUT, strength, turns, t_b, i_b + 1,
                     f"read-only {name} put between {target[0]} and {target[1]}",
                     {"pattern": "call_between", "between": name})
        if task is not None:
            return task
    return None


def probe_without(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """A probe where ``b`` is reached without ``a`` right before it (see the module docstring)."""
    positions = adjacent_positions(seed, target)
    rng.shuffle(positions)
    for k in positions[:3]:
        task = _without_dropped(seed, target, k, strength, rng) or _without_between(seed, target, k, strength, rng)
        if task is not None:
            return task
    return None


def probe_with(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """A probe where ``a`` is followed by ``b`` with the link kept (the seed up to ``b``'s turn)."""
    positions = adjacent_positions(seed, target)
    if not positions:
        return None
    k = rng.choice(positions)
    flat = flat_calls(seed)
    t_b, i_b = flat[k + 1][0], flat[k + 1][1]
    turns = _copy_turns(seed.turns[: t_b + 1])
    return _make(seed, target, WITH, strength, turns, t_b, i_b,
                 f"{target[0]} then {target[1]}, the seed cut after {target[1]}'s turn", {"pattern": "kept"})


@register("probe", targeted=False,
          definition="tasks that separate a weak composition from a weak tool: b without a, and a then b",
          needs="an ambiguous edge (used by ace diagnose)")
def probe(seed: Task, target: tuple[str, str], strength: float, rng: random.Random) -> Task | None:
    """Either kind of probe (``without`` with probability ``strength``, else ``with``; the other as fallback)."""
    kinds = [probe_without, probe_with] if rng.random() < strength else [probe_with, probe_without]
    for fn in kinds:
        task = fn(seed, tuple(target), strength, rng)
        if task is not None:
            return task
    return None


__all__ = ["KINDS", "WITH", "WITHOUT", "probe", "probe_with", "probe_without"]
