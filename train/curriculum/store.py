"""The curriculum in Neo4j: load and save its state, read a scope's evidence.

Storage (see ``cypher/curriculum-upsert.cypher``)::

    (:Curriculum {experiment, round, last_scope, config, prior})
      -[:HAS_UNIT]->(:CurriculumUnit {id: "experiment|key", key, kind, state, ema, rounds_in_state})
      -[:DECIDED]->(:CurriculumDecision {id: "experiment|round|key", round, unit, from, to, reason, scope})

Every query is a named file in ``cypher/``, run through the store
(:class:`ace_graph.store.GraphStore`, whose ``run`` and ``write`` go through
the one runner, :func:`ace_graph.queries.run`); values go in as parameters and
nothing here opens a connection.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from train.curriculum.core import (
    COMPOSITION,
    SKILL,
    CurriculumConfig,
    CurriculumState,
    Decision,
    Observations,
)
from train.errors import CurriculumConflictError, CurriculumStoreError


def load_state(store: Any, experiment: str) -> CurriculumState:
    """The stored curriculum of ``experiment`` (a fresh one at round 0 when none is stored)."""
    rows = store.run("curriculum-status", experiment=experiment)
    if not rows:
        return CurriculumState()
    units = [
        {
            "key": r["key"],
            "kind": r["kind"],
            "state": r["state"],
            "ema": r["ema"],
            "rounds_in_state": r["rounds_in_state"] or 0,
            "last_reason": r["last_reason"] or "",
        }
        for r in rows
        if r["key"] is not None
    ]
    # composition keys re-create their endpoint skills; load skills first so they keep their state
    units.sort(key=lambda u: (u["kind"] != SKILL, u["key"]))
    return CurriculumState.from_dict({"round": rows[0]["round"] or 0, "units": units})


def scopes_read(store: Any, experiment: str) -> list[str]:
    """Every scope whose evidence has fed one of the experiment's rounds, oldest first."""
    rows = store.run("curriculum-status", experiment=experiment)
    return list(rows[0]["scopes"] or []) if rows else []


def last_scope(store: Any, experiment: str) -> str | None:
    """The scope whose evidence fed the experiment's latest round, if any."""
    rows = store.run("curriculum-status", experiment=experiment)
    return (rows[0]["last_scope"] or None) if rows else None


def save(
    store: Any,
    experiment: str,
    state: CurriculumState,
    decisions: Sequence[Decision],
    config: CurriculumConfig | None = None,
    scope: str = "",
    previous_round: int | None = None,
) -> dict[str, int]:
    """Store ``state`` (all units) and ``decisions`` as the experiment's round ``state.round``.

    The write happens only when the stored round is ``previous_round``
    (default ``state.round - 1``, or 0 for a fresh state); otherwise
    :class:`CurriculumConflictError` is raised and nothing is written.
    """
    if not experiment:
        raise CurriculumStoreError("the experiment name is empty; pass --experiment NAME")
    if previous_round is None:
        previous_round = max(state.round - 1, 0)
    cfg = config or CurriculumConfig()
    params = {
        "experiment": experiment,
        "previous_round": previous_round,
        "round": state.round,
        "scope": scope,
        "config": json.dumps(cfg.to_dict(), sort_keys=True),
        "prior": [f"{a}>{b}" for a, b in state.prior],
        "units": [
            {"key": u.key, "kind": u.kind, "state": u.state, "ema": u.ema, "rounds_in_state": u.rounds_in_state}
            for _, u in sorted(state.units.items())
        ],
        "decisions": [d.to_dict() for d in decisions],
    }
    result = store.write("curriculum-upsert", **params)
    if not result:
        raise CurriculumConflictError(
            f"the curriculum of {experiment!r} is no longer at round {previous_round}: another step "
            "advanced it meanwhile. Nothing was written; run the step again on the current state."
        )
    return result


def observations_from_graph(store: Any, scope_key: str, level: str = "skill") -> Observations:
    """The scope's evidence: per-skill (or tool) and per-composition (attempts, successes), and the prior edges.

    Skill success comes from ``capability-profile``; composition success from
    the scope's ``COMPOSES`` counts (success = 1 - failures / n), read by
    ``composition-success``, which also returns the prior edges.
    """
    if level not in ("skill", "tool"):
        raise CurriculumStoreError(f"level {level!r} is not 'skill' or 'tool'")
    profile = store.run("capability-profile", scope=scope_key, level=level)
    if not profile:
        raise CurriculumStoreError(
            f"scope {scope_key!r} has no {level} measurements: it does not exist or nothing was "
            "ingested into it. Ingest rollouts first (`ace ingest ... -e E -p P -c C`), then pass "
            "--scope E/P/C."
        )
    skills = {r["key"]: (int(r["attempts"]), int(r["successes"])) for r in profile}
    compositions: dict[str, tuple[int, int]] = {}
    prior: list[tuple[str, str]] = []
    for r in store.run("composition-success", scope=scope_key, level=level):
        if r["kind"] == COMPOSITION:
            compositions[f"{r['from']}>{r['to']}"] = (int(r["n"]), int(r["n"]) - int(r["failures"]))
        elif r["kind"] == "prior":
            prior.append((r["from"], r["to"]))
    return Observations(skills=skills, compositions=compositions, prior=sorted(prior))
