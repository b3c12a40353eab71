"""Task verification: is a synthesized task a sound, non-duplicate training task?

:func:`check_task` accepts a task only if

(a) its ground truth executes cleanly: no oracle error and no output that is an
    error message (a JSON object with an ``"error"`` key, as BFCL's classes
    report failures);
(b) the verifier gives the ground truth reward 1.0;
(c) the verifier rejects the empty rollout;
(d) it rejects the ground truth with the target step removed (the ``to`` step
    of the first adjacent occurrence of ``provenance["target_edge"]``, or the
    step ``provenance["target_step"]`` names, as probes do);
(e) it rejects the ground truth with the target step's arguments altered
    (:func:`ace_env.perturb.alter_call`; a few deterministic draws, the check
    passes when one of them is rejected; skipped, with a note, when the step
    has no argument);
(f) it is not a duplicate: the canonical fingerprint of (initial_config,
    ground truth, tools, distractors) is not in ``seen_fingerprints`` (added
    there when the task is valid);
(g) the text carries every user-supplied value: each value a strategy asked
    the user to supply (``provenance["user_values"]``) appears, case-
    insensitively, in the user text up to the turn where the ground truth
    first uses it, and the tagger marks every argument carrying it as coming
    from the user (``arg_sources == "user"``).

Reason codes are short stable strings (the ``REASONS`` tuple).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import OK
from ace_env.perturb import alter_call
from ace_env.tasks import Task
from ace_env.verifier import Oracle, ground_truth_rollout, replay_oracle, verify
from ace_graph.tagger import tag_task

GT_ERROR = "gt_error"
GT_REJECTED = "gt_rejected"
EMPTY_ACCEPTED = "empty_accepted"
NO_TARGET = "no_target"
TARGET_DROP_ACCEPTED = "target_drop_accepted"
TARGET_ALTER_ACCEPTED = "target_alter_accepted"
DUPLICATE = "duplicate"
VALUE_MISSING = "value_missing_from_text"
REASONS = (
    GT_ERROR,
    GT_REJECTED,
    EMPTY_ACCEPTED,
    NO_TARGET,
    TARGET_DROP_ACCEPTED,
    TARGET_ALTER_ACCEPTED,
    DUPLICATE,
    VALUE_MISSING,
)
#: Notes (not failures).
TARGET_ALTER_SKIPPED = "target_alter_skipped"

#: How many deterministic alterations (e) tries.
ALTER_TRIES = 3


@dataclass
class TaskCheck:
    valid: bool
    reasons: list[str] = field(default_factory=list)  # failure codes (empty when valid)
    notes: list[str] = field(default_factory=list)  # skipped checks and details
    fingerprint: str = ""


# --------------------------------------------------------------------------- helpers


def flat_calls(task: Task) -> list[tuple[int, int, str, str]]:
    """Every ground-truth call as (turn, index, call string, function name), in order."""
    out = []
    for t, turn in enumerate(task.turns):
        for i, raw in enumerate(turn.ground_truth):
            parsed = parse_call(raw)
            out.append((t, i, raw, parsed.name if isinstance(parsed, Call) else ""))
    return out


def adjacent_positions(task: Task, target: tuple[str, str]) -> list[int]:
    """Flat indices ``k`` where call ``k`` is ``from`` and call ``k + 1`` is ``to``.

    Adjacency is over the flat list of ground-truth calls: the pair may span
    two turns (turns without calls in between are skipped).
    """
    flat = flat_calls(task)
    return [k for k in range(len(flat) - 1) if flat[k][3] == target[0] and flat[k + 1][3] == target[1]]


def parse_edge(edge: Any) -> tuple[str, str] | None:
    if isinstance(edge, (tuple, list)) and len(edge) == 2:
        return str(edge[0]), str(edge[1])
    if isinstance(edge, str) and ">" in edge:
        a, b = edge.split(">", 1)
        return a, b
    return None


def target_of(task: Task) -> tuple[str, str] | None:
    return parse_edge(task.provenance.get("target_edge"))


def target_step(task: Task) -> int | None:
    """Flat index of the task's target step: the ``to`` call of the first adjacent occurrence of
    ``provenance["target_edge"]``, or ``provenance["target_step"]`` when given (a probe, whose
    ``to`` call may on purpose not follow ``from``; it must be a ``to`` call)."""
    target = target_of(task)
    if target is None:
        return None
    explicit = task.provenance.get("target_step")
    if isinstance(explicit, int) and not isinstance(explicit, bool):
        flat = flat_calls(task)
        return explicit if 0 <= explicit < len(flat) and flat[explicit][3] == target[1] else None
    positions = adjacent_positions(task, target)
    return positions[0] + 1 if positions else None


def target_present(task: Task) -> bool:
    """Whether the ground truth contains the task's target composition as adjacent calls."""
    target = target_of(task)
    return target is not None and bool(adjacent_positions(task, target))


def error_output(output: str | None) -> bool:
    """An output that reports a failure: ``Error during execution`` or a JSON object with "error"."""
    if not output:
        return False
    if output.startswith("Error during execution"):
        return True
    if output.startswith("{") and '"error"' in output:
        try:
            value = json.loads(output)
        except ValueError:
            return False
        return isinstance(value, dict) and "error" in value
    return False


def execution_problems(oracle: Oracle) -> list[str]:
    """Oracle errors and error-message outputs, one line each."""
    problems = list(oracle.errors)
    for t, turn in enumerate(oracle.turns):
        for i, step in enumerate(turn.steps):
            if step.status == OK and error_output(step.output):
                problems.append(f"turn {t} step {i}: {step.call}: {step.output[:200]}")
    return problems


def executes_cleanly(task: Task) -> tuple[bool, Oracle]:
    oracle = replay_oracle(task)
    return not execution_problems(oracle), oracle


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def task_fingerprint(task: Task) -> str:
    """Canonical fingerprint of (initial_config, ground truth, tools, distractors)."""
    blob = canonical_json(
        {
            "config": task.initial_config,
            "gt": [t.ground_truth for t in task.turns],
            "tools": sorted(task.tools),
            "distractors": sorted(task.distractors),
        }
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def user_text_upto(task: Task, turn: int) -> str:
    parts = []
    for t in task.turns[: turn + 1]:
        parts.extend(m.get("content", "") or "" for m in t.user if m.get("role") == "user")
    return "\n".join(parts)


def value_in_text(value: Any, text: str) -> bool:
    """Literal, case-insensitive presence of a value in text (numbers also as 1,234.5)."""
    low = text.lower()
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in low
    if isinstance(value, (int, float)):
        forms = {str(value)}
        if float(value).is_integer():
            forms |= {str(int(value)), f"{int(value):,}"}
        else:
            forms |= {f"{value:,}", f"{value:.2f}", f"{value:,.2f}"}
        return any(f in low for f in forms)
    if isinstance(value, (list, tuple)):
        return all(value_in_text(v, text) for v in value)
    return False


def leaves(value: Any) -> list[Any]:
    """Every scalar inside nested dicts and lists."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v)]
    return [value]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def _values_missing(task: Task, oracle: Oracle) -> list[str]:
    required = list(task.provenance.get("user_values") or [])
    if not required:
        return []

    tags = tag_task(task)
    missing = []
    for value in required:
        uses = []  # (turn, source) of every argument carrying the value
        for tag in tags:
            if tag.tool is None:
                continue
            step = oracle.turns[tag.turn].steps[tag.index]
            for param, arg in step.arguments.items():
                if any(_same(leaf, value) for leaf in leaves(arg)):
                    uses.append((tag.turn, tag.arg_sources.get(param)))
        if not uses:
            continue  # not used by the ground truth: nothing to carry
        first = min(t for t, _ in uses)
        if not value_in_text(value, user_text_upto(task, first)):
            missing.append(f"{value!r} not in the user text up to turn {first}")
        elif any(src != "user" for _, src in uses):
            missing.append(f"{value!r}: the tagger does not read it from the user text")
    return missing


# --------------------------------------------------------------------------- the check


def check_task(task: Task, seen_fingerprints: set[str] | None = None) -> TaskCheck:
    """Verify a synthesized task (see the module docstring for the rules)."""
    reasons: list[str] = []
    notes: list[str] = []
    oracle = replay_oracle(task)
    problems = execution_problems(oracle)
    if problems:
        reasons.append(GT_ERROR)
        notes.extend(problems[:3])
    n = len(task.turns)
    gt = ground_truth_rollout(task)
    if verify(task, gt, oracle=oracle).reward != 1.0:
        reasons.append(GT_REJECTED)
    if verify(task, [[] for _ in range(n)], oracle=oracle).reward != 0.0:
        reasons.append(EMPTY_ACCEPTED)

    step = target_step(task)
    if step is None:
        reasons.append(NO_TARGET)
    else:
        flat = flat_calls(task)
        t, i, raw, _ = flat[step]
        dropped = [list(c) for c in gt]
        del dropped[t][i]
        if verify(task, dropped, oracle=oracle, fast_forward=False).reward != 0.0:
            reasons.append(TARGET_DROP_ACCEPTED)
        alterations = []
        for seed in range(ALTER_TRIES):
            new = alter_call(raw, random.Random(seed))
            if new is not None and new != raw and new not in alterations:
                alterations.append(new)
        if not alterations:
            notes.append(TARGET_ALTER_SKIPPED)
        else:
            rejected = False
            for new in alterations:
                altered = [list(c) for c in gt]
                altered[t][i] = new
                if verify(task, altered, oracle=oracle, fast_forward=False).reward == 0.0:
                    rejected = True
                    break
            if not rejected:
                reasons.append(TARGET_ALTER_ACCEPTED)

    fp = task_fingerprint(task)
    if seen_fingerprints is not None and fp in seen_fingerprints:
        reasons.append(DUPLICATE)

    if not problems:
        missing = _values_missing(task, oracle)
        if missing:
            reasons.append(VALUE_MISSING)
            notes.extend(missing[:3])

    valid = not reasons
    if valid and seen_fingerprints is not None:
        seen_fingerprints.add(fp)
    return TaskCheck(valid, reasons, notes, fp)


__all__ = [
    "REASONS",
    "TaskCheck",
    "adjacent_positions",
    "check_task",
    "error_output",
    "execution_problems",
    "executes_cleanly",
    "flat_calls",
    "target_present",
    "target_step",
    "task_fingerprint",
]
