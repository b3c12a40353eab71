"""What every task check reads: reason codes, the verdict (:class:`TaskCheck`), the ground truth's calls and
target step, execution of the ground truth, fingerprints and the near-duplicate memory of a run (:class:`Seen`)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ace_env.calls import Call, parse_call
from ace_env.executor import OK
from ace_env.oracle import Oracle, replay_oracle
from ace_env.tasks import Task

GT_ERROR = "gt_error"
GT_REJECTED = "gt_rejected"
EMPTY_ACCEPTED = "empty_accepted"
NO_TARGET = "no_target"
TARGET_DROP_ACCEPTED = "target_drop_accepted"
TARGET_ALTER_ACCEPTED = "target_alter_accepted"
DUPLICATE = "duplicate"
VALUE_MISSING = "value_missing_from_text"
NEAR_DUPLICATE_REASON = "near_duplicate"
TEXT_ORDER = "text_order_differs"
VALUE_UNOBTAINABLE = "value_not_obtainable"
LOOKALIKE_ID_IN_TEXT = "lookalike_id_in_text"
CASCADE_RECOVERY_IN_TEXT = "cascade_recovery_in_text"
LOOKALIKE_NOT_SHOWN = "lookalike_not_in_shown_result"
DISTRACTOR_NOT_NEW = "distractor_already_offered"
TEMPLATE_TEXT = "template_text"
SPLICED_TEXT = "spliced_text"
QUOTE_MISMATCH = "quote_differs_from_ground_truth"
EMPTY_TURN_ACTIONABLE = "empty_turn_asks_for_action"
DEFERRED_TURN = "seed_turn_deferred"
CASCADE_MISSES_VALUE = "cascade_misses_value_passed_on"
INCOHERENT_TEXT = "incoherent_text"
#: A value passed on in another unit than its consumer documents (km into a parameter in miles; issue 34).
UNIT_MISMATCH = "unit_mismatch"
#: A distractor whose wrong way neither the task's text nor the twin's doc states.
DISTRACTOR_UNSTATED = "distractor_wrong_way_unstated"
#: A distractor whose decision request says a word of the right tool's or the twin's name (issue 34).
DISTRACTOR_NAMED = "distractor_request_names_tool"
#: A distractor whose twin, executed in place of the right tool on this state, shows all the right tool shows.
DISTRACTOR_MOOT = "distractor_twin_moot"
REASONS = (
    GT_ERROR,
    GT_REJECTED,
    EMPTY_ACCEPTED,
    NO_TARGET,
    TARGET_DROP_ACCEPTED,
    TARGET_ALTER_ACCEPTED,
    DUPLICATE,
    VALUE_MISSING,
    NEAR_DUPLICATE_REASON,
    TEXT_ORDER,
    VALUE_UNOBTAINABLE,
    LOOKALIKE_ID_IN_TEXT,
    CASCADE_RECOVERY_IN_TEXT,
    LOOKALIKE_NOT_SHOWN,
    DISTRACTOR_NOT_NEW,
    TEMPLATE_TEXT,
    SPLICED_TEXT,
    QUOTE_MISMATCH,
    EMPTY_TURN_ACTIONABLE,
    DEFERRED_TURN,
    CASCADE_MISSES_VALUE,
    INCOHERENT_TEXT,
    UNIT_MISMATCH,
    DISTRACTOR_UNSTATED,
    DISTRACTOR_NAMED,
    DISTRACTOR_MOOT,
)
#: Text and oracle similarity (both) at or above which two tasks of a run are near-duplicates.
NEAR_DUPLICATE = 0.85
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
    """Canonical fingerprint of (initial_config, ground truth, tools, distractors, output views)."""
    blob = canonical_json(
        {
            **({"views": task.output_views} if task.output_views else {}),
            "config": task.initial_config,
            "gt": [t.ground_truth for t in task.turns],
            "tools": sorted(task.tools),
            "distractors": sorted(task.distractors),
        }
    )
    return hashlib.sha256(blob.encode()).hexdigest()


#: Oracles of recently built or checked tasks, keyed by what decides them: a strategy's build and the task
#: check execute a candidate's ground truth once, not twice (the oracle is read, never changed).
_RECENT_ORACLES: dict[tuple[str, bool], Oracle] = {}


def oracle_of(task: Task) -> Oracle:
    """The task's oracle (:func:`ace_env.oracle.replay_oracle`), reused when the same content was replayed recently."""
    key = (task_fingerprint(task), task.long_context)
    oracle = _RECENT_ORACLES.get(key)
    if oracle is None:
        oracle = replay_oracle(task)
        if len(_RECENT_ORACLES) >= 512:
            _RECENT_ORACLES.pop(next(iter(_RECENT_ORACLES)))
        _RECENT_ORACLES[key] = oracle
    return oracle if oracle.task_id == task.id else replace(oracle, task_id=task.id)


def user_text_upto(task: Task, turn: int) -> str:
    parts = []
    for t in task.turns[: turn + 1]:
        parts.extend(m.get("content", "") or "" for m in t.user if m.get("role") == "user")
    return "\n".join(parts)


class Seen(set):
    """Fingerprints of the tasks accepted so far in a run, plus what near-duplicate detection needs."""

    def __init__(self) -> None:
        super().__init__()
        self.signatures: list[tuple[str, frozenset[str], frozenset[str]]] = []

    def near(self, task: Task) -> str | None:
        """The id of an accepted task this one nearly duplicates, if any.

        Two sets whose sizes differ by more than the threshold cannot be that similar (Jaccard is at most
        the smaller size over the larger), so those pairs are skipped before any intersection is taken,
        and the small oracle sets are compared before the text shingles.
        """
        text, oracle = _shingles(task), _oracle_tokens(task)
        nt, no = len(text), len(oracle)
        for tid, t2, o2 in self.signatures:
            if not (_sizes_allow(no, len(o2)) and _sizes_allow(nt, len(t2))):
                continue
            if _jaccard(oracle, o2) >= NEAR_DUPLICATE and _jaccard(text, t2) >= NEAR_DUPLICATE:
                return tid
        return None

    def accept(self, task: Task, fp: str) -> None:
        self.add(fp)
        self.signatures.append((task.id, _shingles(task), _oracle_tokens(task)))


def _sizes_allow(a: int, b: int) -> bool:
    """Whether sets of sizes a and b can reach the near-duplicate similarity at all."""
    return max(a, b) == 0 or min(a, b) >= NEAR_DUPLICATE * max(a, b)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _shingles(task: Task) -> frozenset[str]:
    words = re.findall(r"\w+", user_text_upto(task, len(task.turns) - 1).lower())
    return frozenset(" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2)))


def _oracle_tokens(task: Task) -> frozenset[str]:
    tokens = {f"call:{c}" for t in task.turns for c in t.ground_truth}
    tokens |= {f"distractor:{d}" for d in task.distractors}
    tokens |= {f"view:{v['tool']}:{op['op']}" for v in task.output_views for op in v["ops"]}
    return frozenset(tokens)
