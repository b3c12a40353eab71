"""Per-task output views: how a task shows a tool's result to the agent.

A task may declare ``output_views`` (a list in the task file).  Each view names
a tool, optionally which of its calls in a rollout it applies to (``calls``:
0-based occurrence indices of that tool's successful calls; absent = every
call), and a list of operations applied in order to the tool's return value
before it is rendered as text.  The tools' state is never touched: a view
changes only what the agent reads, so the ground truth's calls and arguments
stay canonical and the verifier still checks exact values.

The executor applies the views to every call (so the oracle, which is the
ground truth replayed through the executor, sees them too).  BFCL's own
package is never edited.

Operations (``op`` plus its fields), all deterministic:

``rename``      ``map``: {old key: new key}, at any depth.
``wrap``        ``key``: the value becomes ``{key: value}``.
``nest``        ``key``, ``fields``: those top-level fields move into ``{key: {...}}``.
``number_format`` ``keys`` (optional), ``format``: numbers under those keys
                (all when absent) become strings: ``format`` is a Python format
                spec applied to the number, e.g. ``"${:,.2f}"`` or ``"{:.2f} USD"``.
``scale``       ``keys``, ``factor``, ``suffix``: numbers under the keys are
                multiplied by ``factor`` (rounded to 6 digits) and the key gets
                ``suffix`` (``price`` → ``price_cents``).
``to_string``   ``keys`` (optional): scalars become strings.
``to_number``   ``keys``: digit-only strings become integers.
``prefix``      ``keys``, ``text``: values become ``f"{text}{value}"`` strings.
``date_format`` ``format``: ``YYYY-MM-DD`` strings are rewritten with strftime ``format``.
``listify``     ``keys``: scalars become one-element lists.
``perturb``     ``keys``, ``factor``: numbers are multiplied (a partly wrong, stale value).
``truncate``    ``keys``, ``keep``: lists keep their first ``keep`` items.
``mask``        ``keys``, ``keep``: strings keep their first ``keep`` characters, then ``…`` (incomplete).
``add``         ``fields``: extra top-level fields (a status flag, a note); with ``"first": true``
                they come before the result's own fields (read first, never cut off after a long list).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from ace_env.errors import ViewError

OPS = ("rename", "wrap", "nest", "number_format", "scale", "to_string", "to_number", "prefix",
       "date_format", "listify", "perturb", "truncate", "mask", "add")

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_views(views: Any) -> list[dict[str, Any]]:
    """The views of a task file, validated (a one-line error otherwise)."""
    if views is None:
        return []
    if not isinstance(views, list):
        raise ViewError("output_views must be a list of {tool, ops[, calls]} objects")
    for v in views:
        if not isinstance(v, dict) or not isinstance(v.get("tool"), str) or not isinstance(v.get("ops"), list):
            raise ViewError(f"output view {v!r} needs a 'tool' name and a list of 'ops'")
        for op in v["ops"]:
            if not isinstance(op, dict) or op.get("op") not in OPS:
                raise ViewError(f"output view of {v['tool']}: unknown op {op!r}; known: {', '.join(OPS)}")
    return views


def views_for(views: list[dict[str, Any]], tool: str, occurrence: int) -> list[dict[str, Any]]:
    """The operations that apply to the ``occurrence``-th successful call of ``tool``."""
    ops: list[dict[str, Any]] = []
    for v in views:
        if v["tool"] == tool and (v.get("calls") is None or occurrence in v["calls"]):
            ops.extend(v["ops"])
    return ops


def apply_ops(value: Any, ops: list[dict[str, Any]]) -> Any:
    """The value as the operations show it (the input is not modified)."""
    for op in ops:
        value = _APPLY[op["op"]](value, op)
    return value


def _keyed(value: Any, keys: Any, fn: Any) -> Any:
    """``fn`` applied to the values under ``keys`` (every scalar leaf when ``keys`` is None), any depth."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if (keys is None or k in keys) and not isinstance(v, dict):
                out[k] = [fn(x) for x in v] if isinstance(v, list) and keys is not None else \
                    (fn(v) if not isinstance(v, list) else _keyed(v, keys, fn))
            else:
                out[k] = _keyed(v, keys, fn)
        return out
    if isinstance(value, list):
        return [_keyed(v, keys, fn) for v in value]
    return fn(value) if keys is None else value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _rename(value: Any, op: dict[str, Any]) -> Any:
    m = op["map"]
    if isinstance(value, dict):
        return {m.get(k, k): _rename(v, op) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, op) for v in value]
    return value


def _wrap(value: Any, op: dict[str, Any]) -> Any:
    return {op["key"]: value}


def _nest(value: Any, op: dict[str, Any]) -> Any:
    if not isinstance(value, dict):
        return value
    inner = {k: v for k, v in value.items() if k in op["fields"]}
    if not inner:
        return value
    out = {k: v for k, v in value.items() if k not in op["fields"]}
    out[op["key"]] = inner
    return out


def _number_format(value: Any, op: dict[str, Any]) -> Any:
    fmt = op["format"]
    return _keyed(value, op.get("keys"), lambda x: fmt.format(x) if _is_number(x) else x)


def _scale(value: Any, op: dict[str, Any]) -> Any:
    keys, factor, suffix = op["keys"], op["factor"], op.get("suffix", "")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in keys and _is_number(v):
                scaled = round(v * factor, 6)
                out[k + suffix] = int(scaled) if float(scaled).is_integer() else scaled
            else:
                out[k] = _scale(v, op)
        return out
    if isinstance(value, list):
        return [_scale(v, op) for v in value]
    return value


def _to_string(value: Any, op: dict[str, Any]) -> Any:
    return _keyed(value, op.get("keys"), lambda x: str(x) if _is_number(x) else x)


def _to_number(value: Any, op: dict[str, Any]) -> Any:
    return _keyed(value, op.get("keys"),
                  lambda x: int(x) if isinstance(x, str) and x.isdigit() and not x.startswith("0") else x)


def _prefix(value: Any, op: dict[str, Any]) -> Any:
    return _keyed(value, op.get("keys"), lambda x: f"{op['text']}{x}" if isinstance(x, (str, int)) else x)


def _date_format(value: Any, op: dict[str, Any]) -> Any:
    def fmt(x: Any) -> Any:
        if isinstance(x, str) and _DATE.match(x):
            try:
                return _dt.date.fromisoformat(x).strftime(op["format"])
            except ValueError:
                return x
        return x

    return _keyed(value, op.get("keys"), fmt)


def _listify(value: Any, op: dict[str, Any]) -> Any:
    keys = op["keys"]
    if isinstance(value, dict):
        return {k: ([v] if k in keys and not isinstance(v, (list, dict)) else _listify(v, op)) for k, v in value.items()}
    if isinstance(value, list):
        return [_listify(v, op) for v in value]
    return value


def _perturb(value: Any, op: dict[str, Any]) -> Any:
    return _keyed(value, op.get("keys"), lambda x: round(x * op["factor"], 2) if _is_number(x) else x)


def _truncate(value: Any, op: dict[str, Any]) -> Any:
    keys, keep = op.get("keys"), int(op["keep"])
    if isinstance(value, dict):
        return {k: (v[:keep] if isinstance(v, list) and (keys is None or k in keys) else _truncate(v, op))
                for k, v in value.items()}
    if isinstance(value, list) and keys is None:
        return value[:keep]
    return value


def _mask(value: Any, op: dict[str, Any]) -> Any:
    keep = int(op["keep"])
    return _keyed(value, op.get("keys"), lambda x: x[:keep] + "…" if isinstance(x, str) and len(x) > keep else x)


def _add(value: Any, op: dict[str, Any]) -> Any:
    if not isinstance(value, dict):
        return value
    if op.get("first"):
        return {**op["fields"], **{k: v for k, v in value.items() if k not in op["fields"]}}
    return {**value, **op["fields"]}


_APPLY = {
    "rename": _rename, "wrap": _wrap, "nest": _nest, "number_format": _number_format, "scale": _scale,
    "to_string": _to_string, "to_number": _to_number, "prefix": _prefix, "date_format": _date_format,
    "listify": _listify, "perturb": _perturb, "truncate": _truncate, "mask": _mask, "add": _add,
}


class ViewState:
    """Counts each tool's successful calls in one rollout, so occurrence-specific views apply."""

    def __init__(self, views: list[dict[str, Any]]):
        self.views = views
        self.counts: dict[str, int] = {}

    def show(self, tool: str, result: Any) -> Any:
        """The result as this call of ``tool`` shows it (and count the call)."""
        n = self.counts.get(tool, 0)
        self.counts[tool] = n + 1
        if not self.views or not isinstance(result, (dict, list)):
            return result
        ops = views_for(self.views, tool, n)
        return apply_ops(result, ops) if ops else result


__all__ = ["OPS", "ViewError", "ViewState", "apply_ops", "check_views", "views_for"]
