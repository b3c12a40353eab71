"""The names a named query is given, checked before it runs: a wrong name is an error, never an empty answer.

A read query's header says which of its parameters name something (``// Names: $scope scope,
$after node``; the kinds are :data:`ace_graph.queries.NAME_KINDS`).  :func:`check` looks each
such value up in the graph (scopes, experiments, policies, skills, tools, rollouts, tasks) or in
its enumeration (levels, environments) and refuses an unknown one in one line that lists the
nearest valid names (:func:`nearest`, difflib).  Two conveniences follow what the user typed:

- a rollout is accepted in its own id (``sim-1-52``) and in the full form the frontier and the
  near-success examples print (``demo/sim/round-0/sim-1-52``), which also gives the scope when
  none was passed (:func:`prepare`);
- where the query takes a ``$level`` the user did not set, names that are all tools choose the
  tool level and names that are all skills the skill level (:func:`check`).

``ace query`` and the dashboard's query console call :func:`check`; the stores' own calls
(:meth:`ace_graph.store.GraphReader.run`) do not, since they pass names they just read.
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any, Iterable, Mapping

from ace_env.environments import ENVIRONMENTS
from ace_graph import queries
from ace_graph.errors import ConfigError
from ace_graph.scopes import LEVELS, list_scopes

#: How many of the nearest valid names an error lists.
NEAREST = 5

#: Kinds whose valid values are a fixed enumeration, not the graph's contents.
ENUMERATIONS: dict[str, tuple[str, ...]] = {"level": LEVELS, "environment": tuple(sorted(ENVIRONMENTS))}

#: How an error calls each kind of name.
WHAT = {"scope": "scope", "experiment": "experiment", "policy": "policy", "skill": "skill", "tool": "tool",
        "rollout": "rollout", "task": "task", "level": "level", "environment": "environment"}


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def nearest(value: Any, valid: Iterable[str], n: int = NEAREST) -> list[str]:
    """The ``n`` valid names nearest to ``value``: the close matches first, then the next nearest."""
    text = value if isinstance(value, str) else str(value)
    pool = sorted(set(valid))
    out = get_close_matches(text, pool, n=n, cutoff=0.6)
    for name in get_close_matches(text, pool, n=n + len(out), cutoff=0.0):
        if len(out) >= n:
            break
        if name not in out:
            out.append(name)
    return out


def refusal(query: str, param: str, kind: str, value: Any, valid: Iterable[str], note: str = "") -> ConfigError:
    """The one-line error for ``value`` given as ``$param`` of ``query``: it names no ``kind`` in ``valid``."""
    valid = sorted(set(valid))
    what = WHAT.get(kind, kind)
    head = {"scope": f"{query}: {param}: scope {_short(value)} does not exist",
            "experiment": f"{query}: {param}: experiment {_short(value)} has no scopes",
            }.get(kind, f"{query}: {param}={_short(value)} is not a known {what}{note}")
    if kind in ENUMERATIONS:
        return ConfigError(f"{head}; valid {what}s: {', '.join(valid)}")
    if not valid:
        return ConfigError(f"{head}; the graph holds no {what} there yet")
    shown = ", ".join(nearest(value, valid))
    return ConfigError(f"{head}; nearest of {len(valid)}: {shown}")


def split_rollout(value: Any, scope: Any) -> tuple[Any, Any]:
    """(scope, rollout id) from a rollout given in its own id or in its full form ``E/P/C/ID``.

    A full form whose scope part is ``scope`` loses it; with no ``scope`` (None) a full form gives
    it.  Anything else is returned as it was (the check then says what is wrong)."""
    if not isinstance(value, str):
        return scope, value
    if isinstance(scope, str) and scope and value.startswith(scope + "/") and len(value) > len(scope) + 1:
        return scope, value[len(scope) + 1:]
    parts = value.split("/", 3)
    if scope is None and len(parts) == 4 and all(parts):
        return "/".join(parts[:3]), parts[3]
    return scope, value


def prepare(query: queries.Query, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with a full-form rollout split (its scope filled in when none was given); pure."""
    out = dict(params)
    for param, kind in query.names.items():
        if kind == "rollout" and param in out:
            scope, out[param] = split_rollout(out[param], out.get("scope"))
            if scope is not None:
                out["scope"] = scope
    return out


class _Known:
    """The valid names of each kind, read once per check from the graph (named read queries only)."""

    def __init__(self, store: Any):
        self.store = store
        self._cache: dict[tuple[str, Any], tuple[str, ...]] = {}

    def _get(self, key: tuple[str, Any], read) -> tuple[str, ...]:
        if key not in self._cache:
            self._cache[key] = tuple(read())
        return self._cache[key]

    def scope_rows(self) -> tuple[Any, ...]:
        return self._get(("scope-rows", None), lambda: list_scopes(self.store))

    def names(self, kind: str, context: Mapping[str, Any]) -> tuple[str, ...]:
        if kind in ENUMERATIONS:
            return ENUMERATIONS[kind]
        if kind == "scope":
            return tuple(r["key"] for r in self.scope_rows())
        if kind == "experiment":
            return tuple(sorted({r["experiment"] for r in self.scope_rows()}))
        if kind == "policy":
            return tuple(sorted({r["policy"] for r in self.scope_rows() if r["experiment"] == context["experiment"]}))
        if kind in ("skill", "tool"):
            return self._get(("nodes", kind), lambda: [r["name"] for r in self.store.run("known-nodes", level=kind)])
        if kind == "rollout":
            scope = context["scope"]
            return self._get(("rollout", scope), lambda: [r["name"] for r in self.store.run("known-rollouts", scope=scope)])
        if kind == "task":
            return self._get(("task", None), lambda: [r["name"] for r in self.store.run("known-tasks")])
        raise ConfigError(f"no way to check a name of kind {kind!r}")  # the header parser admits only NAME_KINDS


#: The order kinds are checked in: a kind read beside another comes after it.
_ORDER = ("level", "environment", "scope", "experiment", "policy", "skill", "tool", "node", "rollout", "task")


def _values(query: queries.Query, param: str, kind: str, value: Any) -> list[Any]:
    """The names ``value`` holds: one, or the items of a list where the parameter is a list."""
    is_list = queries.param_kind(query.hints.get(param, "")) == "list"
    if is_list:
        if isinstance(value, str):  # -P scopes=A,B
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)):
            return list(value)
        raise ConfigError(f"{query.name}: {param} must be a list of {WHAT[kind]} names, got {_short(value)}")
    return [value]


def check(store: Any, query: queries.Query, params: Mapping[str, Any], given: Iterable[str] | None = None) -> dict[str, Any]:
    """``params`` with every name its header declares checked; a one-line error for the first unknown one.

    ``given``: the parameters the user set (default: all); where ``$level`` is not among them, names that
    are all tools (or all skills) set it.  A full-form rollout is split (:func:`prepare`).  Returns the
    parameters to run the query with."""
    out = prepare(query, params)
    given = set(out) if given is None else set(given)
    known = _Known(store)
    nodes = [p for p, k in query.names.items() if k == "node" and isinstance(out.get(p), str)]
    if "level" in query.names and "level" not in given and nodes:
        for level in ("tool", "skill"):
            if all(out[p] in known.names(level, out) for p in nodes):
                out["level"] = level
                break
    for kind in _ORDER:
        for param in [p for p, k in query.names.items() if k == kind and p in out]:
            value = out[param]
            if value is None and query.example.get(param, "") is None:
                continue  # e.g. scope-list's experiment: null means every experiment
            actual = out.get("level") if kind == "node" else kind
            if actual not in ("skill", "tool") and kind == "node":
                continue  # the level itself was refused above
            for item in _values(query, param, kind, value):
                if not isinstance(item, str):
                    raise ConfigError(f"{query.name}: {param} must be a {WHAT[actual]} name (a string), "
                                      f"got {_short(item)}")
                valid = known.names(actual, out)
                if item in valid:
                    continue
                raise refusal(query.name, param, actual, item, valid, _note(known, query, param, actual, item, out))
    return out


def _note(known: _Known, query: queries.Query, param: str, kind: str, value: str, params: Mapping[str, Any]) -> str:
    """Why a name that exists elsewhere is not valid here (a tool given at skill level, a rollout of another scope)."""
    if kind in ("skill", "tool"):
        other = "tool" if kind == "skill" else "skill"
        if value in known.names(other, params):
            # Beside a name of this level, the other level cannot be the fix: say that they are mixed.
            mixed = [p for p, k in query.names.items() if k == "node" and p != param and isinstance(params.get(p), str)
                     and params[p] in known.names(kind, params) and params[p] not in known.names(other, params)]
            if mixed:
                return (f" ({value!r} is a {other} and {mixed[0]}={params[mixed[0]]!r} a {kind}: "
                        f"give both as {kind}s or both as {other}s)")
            hint = f": pass -P level={other}" if "level" in query.params else ""
            return f" ({value!r} is a {other}{hint})"
    if kind == "rollout":
        parts = value.split("/", 3)
        named = "/".join(parts[:3])
        if len(parts) == 4 and all(parts) and named != params.get("scope"):  # a full form of another scope
            return f" of scope {params.get('scope')} (its full form names scope {named}: give that --scope, or none)"
        return f" of scope {params.get('scope')}"
    if kind == "policy":
        return f" of experiment {params.get('experiment')}"
    return ""
