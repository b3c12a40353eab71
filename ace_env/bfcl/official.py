"""BFCL's official multi-turn checker, wrapped for side-by-side comparisons.

Used only by ACE's agreement tests and benchmarks on rollouts ACE generated
itself: the official checker runs call strings through ``eval`` and must never
see untrusted model output.  Each call gets a unique model name, so the
instances the checker keeps in its module globals never collide, and they are
removed afterwards so memory stays flat.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from ace_env import bfcl
from ace_env.calls import Call, parse_call
from ace_env.tasks import Task

_counter = itertools.count()


def _as_string(call: Any) -> str:
    if isinstance(call, str):
        return call
    parsed = parse_call(call)
    return parsed.render() if isinstance(parsed, Call) else str(call)


def official_check(task: Task, turns: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Run BFCL's ``multi_turn_checker`` on one rollout; returns its result dict."""
    entry = bfcl.raw_entry(task)
    if task.long_context and "long_context" not in entry["id"]:
        entry = {**entry, "id": f"multi_turn_long_context_{entry['id']}"}
    return official_check_entry(entry, [t.ground_truth for t in task.turns], turns)


def official_check_entry(entry: dict[str, Any], ground_truth: Sequence[Sequence[str]],
                         turns: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """BFCL's checker on a question entry as BFCL's files hold it (``id``, ``initial_config``,
    ``involved_classes``), its possible answer and one rollout; the category is read from the id."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    model_name = f"ace_official_{next(_counter)}"
    decoded = []
    for t in range(len(ground_truth)):
        calls = [_as_string(c) for c in (turns[t] if t < len(turns) else [])]
        decoded.append([calls] if calls else [])
    try:
        return multi_turn_checker(
            decoded,
            [list(g) for g in ground_truth],
            entry,
            entry["id"].rsplit("_", 1)[0],
            model_name,
        )
    finally:
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith(model_name + "_")]:
            del g[key]
