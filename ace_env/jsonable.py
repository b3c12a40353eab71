"""Report dataclasses as JSON: one helper instead of a hand-written ``to_dict`` per report.

:func:`jsonable` turns a dataclass into a dict of its fields, in their order, and every value inside into
what :func:`json.dumps` writes (nested dataclasses through their own ``to_dict`` when they have one, else
field by field; tuples, lists and sets as lists; paths as text).  A field's ``metadata`` says how it is
written, once, beside the field:

* ``"json": False`` leaves it out (an internal value, a large list a report only counts);
* ``"json_key": "name"`` writes it under another key (a name the JSON has always had);
* ``"round": n`` rounds a float to ``n`` digits.

A value computed from the fields (a property, a count) is given with ``extra``; it comes after the fields.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Report:
...     scope: str
...     seconds: float = field(default=0.0, metadata={"round": 2})
...     skipped_existing: int = field(default=0, metadata={"json_key": "already_stored"})
...     ids: tuple = field(default=(), metadata={"json": False})
>>> to_json(Report("e/p/c", 1.23456, 3, ("a",)), extra={"ids": 1})
'{"scope": "e/p/c", "seconds": 1.23, "already_stored": 3, "ids": 1}'
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import PurePath
from typing import Any, Iterable


def jsonable(value: Any, exclude: Iterable[str] = (), extra: dict[str, Any] | None = None) -> Any:
    """``value`` as JSON-ready data: a dataclass as a dict of its fields (less ``exclude``, then ``extra``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        skip = set(exclude)
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            if f.name in skip or not f.metadata.get("json", True):
                continue
            item = _inner(getattr(value, f.name))
            if "round" in f.metadata and isinstance(item, float):
                item = round(item, f.metadata["round"])
            out[f.metadata.get("json_key", f.name)] = item
        out.update({k: _inner(v) for k, v in (extra or {}).items()})
        return out
    return _inner(value)


def _inner(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        own = getattr(value, "to_dict", None)
        return own() if callable(own) else jsonable(value)
    if isinstance(value, dict):
        return {k: _inner(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_inner(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_inner(v) for v in value)
    if isinstance(value, PurePath):
        return str(value)
    return value


def to_json(value: Any, exclude: Iterable[str] = (), extra: dict[str, Any] | None = None, **dumps: Any) -> str:
    """:func:`jsonable` written by :func:`json.dumps` (``dumps`` passed on: ``indent``, ``sort_keys``, ...)."""
    return json.dumps(jsonable(value, exclude, extra), **dumps)
