"""Copy-on-write views of a pristine τ² database: a rollout costs about a millisecond, not a 7 MB reload.

Airline's ``FlightDB`` (7 MB) and retail's ``RetailDB`` (2.8 MB) are pydantic models whose tables are
``dict[str, Model]``.  Any full copy costs as much as a reload (airline: ``model_copy(deep=True)`` 0.9 s,
``deepcopy`` 1.3 s, ``FlightDB.load`` 1.1 s).  :func:`cow_copy` gives each table a :class:`CowDict`: a
real ``dict`` (pydantic serialises it through the C dict API, so τ²'s ``get_hash`` sees the true
state) that starts as a shallow copy of the pristine table and deep-copies a record the first time it
is fetched by key or replaced.  Every write in airline and retail goes through a key
(``db.reservations[rid]``, ``__setitem__``); whole-table scans (``.values()``, ``.items()``) serve only
read-only searches, so they may share pristine records.  The tests and the benchmark check that the
pristine database's hash never changes.

:func:`cow_diff` compares two views of the same pristine database on their touched records only.
"""

from __future__ import annotations

import copy
from typing import Any

# pydantic models are told apart by their methods, so importing this module (as ace_env.tasksets does,
# through ace_env.tau2.tasks) does not import pydantic


def _is_model(value: Any) -> bool:
    return hasattr(value, "model_copy") and hasattr(value, "model_dump")


def _copy(value: Any) -> Any:
    return value.model_copy(deep=True) if _is_model(value) else copy.deepcopy(value)


class CowDict(dict):
    """A dict over a pristine table that copies a record on first access by key; ``owned`` holds those keys."""

    __slots__ = ("owned",)

    def __init__(self, base: dict):
        super().__init__(base)  # shallow: pointers only
        self.owned: set = set()

    def _own(self, key: Any) -> None:
        if key not in self.owned and dict.__contains__(self, key):
            dict.__setitem__(self, key, _copy(dict.__getitem__(self, key)))
            self.owned.add(key)

    def __getitem__(self, key: Any) -> Any:
        self._own(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._own(key)
        return dict.get(self, key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.owned.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.owned.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self._own(key)
        self.owned.add(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._own(key)
        self.owned.add(key)
        return dict.setdefault(self, key, default)

    def popitem(self) -> Any:
        raise TypeError("CowDict.popitem would hand out a pristine record")

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self.owned.update(dict.keys(self))
        dict.clear(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return {k: copy.deepcopy(v, memo) for k, v in dict.items(self)}


def cow_copy(db: Any) -> Any:
    """A view of ``db`` that looks pristine and copies what it touches; ``db`` itself is never written."""
    fields = {}
    for name in type(db).model_fields:
        value = getattr(db, name)
        fields[name] = CowDict(value) if isinstance(value, dict) else _copy(value)
    return type(db).model_construct(**fields)


def _dump(value: Any) -> Any:
    return value.model_dump() if _is_model(value) else value


_MISSING = object()


def cow_diff(a: Any, b: Any, limit: int = 5) -> list[str]:
    """Where two copy-on-write views of the same pristine database differ (``table[key]``), at most
    ``limit`` places; empty when they are equal.  Untouched records are the shared pristine objects,
    so only records either view touched are compared (the same verdict as comparing full hashes)."""
    out: list[str] = []
    for name in type(a).model_fields:
        ta, tb = getattr(a, name), getattr(b, name)
        if not (isinstance(ta, CowDict) and isinstance(tb, CowDict)):
            if _dump(ta) != _dump(tb):  # a table replaced wholesale (update_db): compare it all
                out.append(name)
            continue
        for key in ta.owned | tb.owned:
            va, vb = dict.get(ta, key, _MISSING), dict.get(tb, key, _MISSING)
            if va is vb:
                continue
            if va is _MISSING or vb is _MISSING or _dump(va) != _dump(vb):
                out.append(f"{name}[{key!r}]")
                if len(out) >= limit:
                    return out
    return out
