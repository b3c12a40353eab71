"""Scopes (experiment/policy/checkpoint): list them, check one exists, delete one.

A scope that does not exist, or one of another experiment, is an error that
lists what exists, so a typo never quietly returns 0 rows.
"""

from __future__ import annotations

from typing import Any

from ace_graph import queries
from ace_graph.errors import ConfigError

LEVELS = ("skill", "tool")


class ScopeError(ConfigError):
    """A scope that does not exist or does not belong where it was used."""


def check_level(level: Any) -> str:
    """``level`` if it is one of :data:`LEVELS`, else a one-line error listing them."""
    if level not in LEVELS:
        raise ConfigError(f"unknown level {level!r}; valid levels: {', '.join(LEVELS)}")
    return level


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


def require_scope(store: Any, key: str, experiment: str | None = None) -> dict[str, Any]:
    """The stored scope ``key``; an error listing the scopes when it is unknown.

    With ``experiment``, a scope of another experiment is an error too (one
    experiment's curriculum or synthesis must not read another's evidence).
    """
    parts = (key or "").split("/")
    if len(parts) != 3 or not all(parts):
        raise ScopeError(f"scope {key!r} is not experiment/policy/checkpoint; {_known(store)}")
    if experiment is not None and parts[0] != experiment:
        raise ScopeError(
            f"scope {key!r} belongs to experiment {parts[0]!r}, not {experiment!r}; {_known(store, experiment)}"
        )
    for row in list_scopes(store, parts[0]):
        if row["key"] == key:
            return row
    raise ScopeError(f"scope {key!r} does not exist; {_known(store)}")


def require_experiment(store: Any, experiment: str) -> list[dict[str, Any]]:
    """The scopes of ``experiment``; an error listing the experiments when it has none."""
    rows = list_scopes(store, experiment)
    if not rows:
        known = sorted({r["experiment"] for r in list_scopes(store)})
        listed = ", ".join(known) if known else "none yet (ingest rollouts with `ace ingest`)"
        raise ScopeError(f"experiment {experiment!r} has no scopes; experiments: {listed}")
    return rows


def delete_scope(store: Any, key: str) -> dict[str, int]:
    """Delete a scope with its rollouts, steps and aggregates (``cypher/scope-delete.cypher``)."""
    require_scope(store, key)
    query = queries.load("scope-delete")

    def work(tx: Any) -> dict[str, int]:
        return tx.run(query.text, scope=key).single().data()

    with store.driver.session(database=store.database) as session:
        return session.execute_write(work)
