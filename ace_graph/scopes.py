"""Scopes (experiment/policy/checkpoint): list them, check one exists, delete one.

A scope that does not exist, or one of another experiment, is an error that
lists what exists, so a typo never quietly returns 0 rows.
"""

from __future__ import annotations

from typing import Any

from ace_graph.errors import ConfigError, ScopeError

LEVELS = ("skill", "tool")


def check_level(level: Any) -> str:
    """``level`` if it is one of :data:`LEVELS`, else a one-line error listing them."""
    if level not in LEVELS:
        raise ConfigError(f"unknown level {level!r}; valid levels: {', '.join(LEVELS)}")
    return level


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def list_scopes(store: Any, experiment: str | None = None) -> list[dict[str, Any]]:
    """Every stored scope (of one experiment, or all) with its totals and composition counts."""
    return store.run("scope-list", experiment=experiment)


def _known(store: Any, experiment: str | None = None) -> str:
    rows = list_scopes(store, experiment)
    if not rows:
        where = f" of experiment {experiment!r}" if experiment else ""
        return f"no scope{where} is stored yet (ingest rollouts with `ace ingest`)"
    keys = [r["key"] for r in rows]
    shown = ", ".join(keys[:20]) + (f", ... ({len(keys)} in all)" if len(keys) > 20 else "")
    return f"scopes{f' of {experiment}' if experiment else ''}: {shown}"


def incomplete_message(key: str) -> str:
    """The one-line refusal of a scope marked incomplete, with its fix (every reader says the same)."""
    return (f"scope {key!r} is incomplete: an ingest into it stopped part-way (or is still running), so its "
            f"counts and estimates may be half-fitted and are not data; rerun the ingest: "
            f"`ace ingest FILE... --scope {key}` with the same files (rollouts already stored are skipped)")


def require_scope(store: Any, key: Any, experiment: str | None = None,
                  allow_deleting: bool = False, allow_incomplete: bool = False) -> dict[str, Any]:
    """The stored scope ``key``; an error listing the scopes when it is unknown.

    With ``experiment``, a scope of another experiment is an error too (one
    experiment's curriculum or synthesis must not read another's evidence).
    A scope being deleted (a delete that stopped part-way) is an error too, so
    its remains are never read as data; only :func:`delete_scope` passes
    ``allow_deleting`` to finish it.  So is a scope marked incomplete (an
    ingest into it is running, or stopped before its estimate was written:
    ``cypher/ingest-scope-totals.cypher`` marks it, ``ingest-scope-complete``
    clears it), whose counts and estimates may be half-fitted; a rerun of the
    ingest completes it.  Deleting one passes ``allow_incomplete``.
    """
    if not isinstance(key, str):
        raise ScopeError(f"scope must be a string experiment/policy/checkpoint, got {type(key).__name__} "
                         f"{_short(key)}; pass it as -P scope=E/P/C or --scope E/P/C")
    parts = key.split("/")
    if len(parts) != 3 or not all(parts):
        raise ScopeError(f"scope {key!r} is not experiment/policy/checkpoint; {_known(store)}")
    if experiment is not None and parts[0] != experiment:
        raise ScopeError(
            f"scope {key!r} belongs to experiment {parts[0]!r}, not {experiment!r}; {_known(store, experiment)}"
        )
    for row in list_scopes(store, parts[0]):
        if row["key"] == key:
            if not allow_deleting and row["deleting"]:
                raise ScopeError(f"scope {key!r} is being deleted (a delete stopped part-way), so what is left of "
                                 f"it is not data; finish the delete with `ace scope delete {key} --yes`")
            if not allow_incomplete and row["incomplete"] and not row["deleting"]:
                raise ScopeError(incomplete_message(key))
            return row
    raise ScopeError(f"scope {key!r} does not exist; {_known(store)}")


def is_deleting(store: Any, key: str) -> bool:
    """Whether scope ``key`` is marked as being deleted (``cypher/scope-deleting.cypher``)."""
    rows = store.run("scope-deleting", scope=key)
    return bool(rows and rows[0]["deleting"])


def require_experiment(store: Any, experiment: str) -> list[dict[str, Any]]:
    """The scopes of ``experiment``; an error listing the experiments when it has none."""
    rows = list_scopes(store, experiment)
    if not rows:
        known = sorted({r["experiment"] for r in list_scopes(store)})
        listed = ", ".join(known) if known else "none yet (ingest rollouts with `ace ingest`)"
        raise ScopeError(f"experiment {experiment!r} has no scopes; experiments: {listed}")
    return rows


#: Rollouts (with their steps) or composition counts deleted per transaction by :func:`delete_scope`.
DELETE_BATCH = 1000


def delete_scope(store: Any, key: str, batch: int = DELETE_BATCH) -> dict[str, int]:
    """Delete a scope with its rollouts, steps and aggregates, in batches (one transaction each).

    The scope is first marked as being deleted (``cypher/scope-delete-mark.cypher``):
    from then on :func:`require_scope` refuses it to every reader, and a delete
    killed part-way is finished by calling this again (it deletes what is
    left).  Then the composition counts and the rollouts with their steps go in
    batches of ``batch`` (``CALL { ... } IN TRANSACTIONS``, so a scope of any
    size fits the server's transaction memory), and last the Scope node.
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"delete batch must be a whole number >= 1, got {batch!r}")
    require_scope(store, key, allow_deleting=True, allow_incomplete=True)
    store.write("scope-delete-mark", scope=key)
    # both run CALL { ... } IN TRANSACTIONS, which the runner sends in an auto-commit transaction
    compositions = store.write("scope-delete-compositions", scope=key, batch=batch)["compositions"]
    deleted = store.write("scope-delete", scope=key, batch=batch)
    scopes = store.write("scope-delete-finish", scope=key)["scopes"]
    return {"scopes": scopes, "rollouts": deleted["rollouts"], "steps": deleted["steps"], "compositions": compositions}
