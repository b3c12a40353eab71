"""One rollout as every reader of rollout files hands it on (:mod:`ace_env.formats`, :mod:`ace_env.tau2.results`)."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from typing import Any

#: Unicode categories no rollout id may hold: control characters (newline, tab, ESC, DEL, C1), format
#: characters (bidirectional overrides, zero-width joiners), line and paragraph separators, surrogates.
NOT_IN_IDS = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def control_character(rollout_id: str) -> str | None:
    """The first character of ``rollout_id`` that no id may hold (:data:`NOT_IN_IDS`), or None: a newline or an
    escape sequence in an id would forge lines in every report that prints it."""
    return next((ch for ch in rollout_id if unicodedata.category(ch) in NOT_IN_IDS), None)


@dataclass
class Rollout:
    """One rollout: the calls made in each user turn of a task."""

    rollout_id: str
    task_id: str
    turns: list[list[Any]]
    line: int = 0
    meta: dict[str, Any] | None = None

    def digest(self) -> str:
        """What the file said of this rollout (its task, turns and meta; not its id or line) as a 128-bit hash.

        One id names one rollout: the same id again is the same rollout (a rerun, a file given twice) only
        when the digests agree (:func:`ace_env.formats.read_any` within a file, ``ace ingest`` within a scope).
        """
        try:
            text = json.dumps([self.task_id, self.turns, self.meta], sort_keys=True, separators=(",", ":"),
                              ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):  # keys of mixed types; what strict reading would refuse
            text = repr((self.task_id, self.turns, self.meta))
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
