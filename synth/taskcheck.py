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
    from the user (``arg_sources == "user"``);
(h) it is not a near-duplicate of a task accepted earlier in the run (a
    :class:`Seen` passed as ``seen_fingerprints``): near means the user texts
    (word 3-shingles) and the oracles (calls, distractors and output views as
    tokens) are both at least :data:`NEAR_DUPLICATE` similar (Jaccard);
(i) within each turn, the text mentions the calls' distinctive values in the
    order the ground truth makes the calls (turns where the seed itself does
    not are exempt: ``provenance["exempt_order_turns"]``);
(j) value provenance (:func:`value_provenance`): every non-trivial argument
    value of the ground truth is in the user text up to its turn (a date also
    in another written form), in the executed output of an earlier call
    (found by replay, read canonically, without output views), one arithmetic
    step from numbers seen there, or the tool's documented default or enum
    value.  Nothing is exempt: seed tasks that fail are not used as seeds
    (:func:`seed_problems`, applied by the pipeline);
(k) a lookalike task's text does not contain the target's id;
(l) a cascade task's text does not describe the failure or the recovery (no
    "if ... fails / is missing / is declined", "retry", "fall back", ...);
(m) a cascade task damages the value passed on (:func:`cascade_problems`): a value ``b`` takes from the
    complete result of the check is nowhere in the partial result, and the partial result's flag is its
    first field;
(n) the user text reads as one request (:func:`coherence_problems`): no narrated or second-person framing,
    no self-contradicting instruction, no clause glued onto the request;
(o) no value is passed on in another unit than its consumer documents (:func:`synth.seedfix.unit_problems`:
    ``estimate_distance``'s km into ``estimate_drive_feasibility_by_mileage``'s miles, issue 34).

The checks (a)-(j), (n) and (o) are generic (:mod:`synth.checks.parts`, :mod:`synth.checks.values`,
:mod:`synth.checks.text`); (k)-(m) and the distractor's are declared by their strategy in the registry
(:mod:`synth.registry`) and run here, after the generic ones, exactly as declared.  Reason codes are short
stable strings (:data:`synth.checks.parts.REASONS`).
"""

from __future__ import annotations

import random
from typing import Any

from ace_env.perturb import alter_call
from ace_env.tasks import Task
from ace_env.verifier import ground_truth_rollout, verify
from synth.checks.parts import (
    ALTER_TRIES,
    DUPLICATE,
    EMPTY_ACCEPTED,
    GT_ERROR,
    GT_REJECTED,
    NEAR_DUPLICATE_REASON,
    NO_TARGET,
    TARGET_ALTER_ACCEPTED,
    TARGET_ALTER_SKIPPED,
    TARGET_DROP_ACCEPTED,
    TEXT_ORDER,
    UNIT_MISMATCH,
    VALUE_MISSING,
    VALUE_UNOBTAINABLE,
    Seen,
    TaskCheck,
    execution_problems,
    flat_calls,
    oracle_of,
    target_step,
    task_fingerprint,
)
from synth.checks.text import text_problems
from synth.checks.values import _values_missing, text_order_problems, value_provenance
from synth.registry import Candidate, Synthesis, run_checks, spec_of
from synth.seedfix import unit_problems

#: Rejection reason of a drafted task whose gold no longer makes its target's two calls in a row.
TARGET_LOST = "target_lost"


def copy_check(task: Task, seen_fingerprints: set[str] | None) -> TaskCheck | None:
    """The rejection of a duplicate (f) or near-duplicate (h) of a task accepted earlier, or None for a new task.

    It reads only the task's parts (fingerprint, user text, oracle tokens), never executes it: the pipeline
    asks it before a candidate's ground truth is executed (copies are most candidates), and
    :func:`check_task` asks it first."""
    if seen_fingerprints is None:
        return None
    fp = task_fingerprint(task)
    if fp in seen_fingerprints:
        return TaskCheck(False, [DUPLICATE], [], fp)
    if isinstance(seen_fingerprints, Seen):
        twin = seen_fingerprints.near(task)
        if twin is not None:
            return TaskCheck(False, [NEAR_DUPLICATE_REASON], [f"near-duplicate of {twin}"], fp)
    return None


def check_task(task: Task, seen_fingerprints: set[str] | None = None) -> TaskCheck:
    """Verify a synthesized task (see the module docstring for the rules).

    A duplicate or near-duplicate is reported alone, without running the other checks.
    """
    reasons: list[str] = []
    notes: list[str] = []
    copy = copy_check(task, seen_fingerprints)
    if copy is not None:
        return copy
    fp = task_fingerprint(task)
    oracle = oracle_of(task)
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


    order = text_order_problems(task)
    if order:
        reasons.append(TEXT_ORDER)
        notes.extend(order[:2])
    # the checks the task's strategy declares (synth.registry), in their declared order
    for reason, details in run_checks(spec_of(task), Candidate(task, oracle), clean=not problems):
        if reason not in reasons:
            reasons.append(reason)
        notes.extend(details)
    for reason, detail in text_problems(task):
        if reason not in reasons:
            reasons.append(reason)
        notes.append(detail)

    if not problems:
        missing = _values_missing(task, oracle)
        if missing:
            reasons.append(VALUE_MISSING)
            notes.extend(missing[:3])
        lacking = value_provenance(task, oracle)
        if lacking:
            reasons.append(VALUE_UNOBTAINABLE)
            notes.extend(str(u) for u in lacking[:3])
        units = unit_problems(task)
        if units:
            reasons.append(UNIT_MISMATCH)
            notes.extend(units[:2])

    valid = not reasons
    if valid and isinstance(seen_fingerprints, Seen):
        seen_fingerprints.accept(task, fp)
    elif valid and seen_fingerprints is not None:
        seen_fingerprints.add(fp)
    return TaskCheck(valid, reasons, notes, fp)


def recheck(synthesis: Synthesis, task: Any, seen: set[str]) -> list[str]:
    """Why a written task of any environment fails task verification again (``ace synth check``; empty: it
    passes): on the ``rounds`` schedule every rule of :func:`check_task`; otherwise a task seen before in the
    file (same id), the target (its provenance's ``target_edge``) no longer in a row, the environment's generic
    checks.  (The checks a strategy declares read its draft, which a task file does not keep.)"""
    if synthesis.schedule == "rounds":
        return check_task(task, seen).reasons
    if task.id in seen:
        return [DUPLICATE]
    seen.add(task.id)
    a, _, b = str(task.provenance.get("target_edge") or "").partition(">")
    if not (a and b) or not synthesis.has_target(task, (a, b)):
        return [TARGET_LOST]
    return list(synthesis.check(task))
