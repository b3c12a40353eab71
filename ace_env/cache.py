"""Per-task caches of derived data (oracles, tags), keyed by the task's content fingerprint.

A :class:`TaskCache` keeps the most recently used entries in memory (LRU,
bounded) and every entry on disk under ``$ACE_HOME/cache/<kind>/<version>/``,
so a second process does not replay ground truth it has replayed before.

* The key is :meth:`ace_env.tasks.Task.fingerprint`, a hash of the task's whole
  content: a task edited in place gets a new key, never a stale entry.
* ``<version>`` joins ACE's version, the bfcl-eval version and a hash of the
  source files that compute the entry, so an upgrade or an edit of that code
  starts a fresh folder instead of reading entries it would compute differently.
* The files are ACE's own, in the user's workspace, written by this code: they
  are pickles, written atomically (a temporary file renamed into place).  An
  entry that cannot be read back (truncated, corrupt, written by other code)
  is rebuilt and overwritten, never trusted half-way.
* ``ACE_CACHE=off`` keeps the memory cache and turns the disk cache off
  (a fresh computation every process, as the determinism tests need).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import pickle
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Generic, Sequence, TypeVar

from ace_env.tasks import Task
from ace_env.workspace import ace_home

log = logging.getLogger(__name__)

T = TypeVar("T")

_MAGIC = "ace-task-cache/1"


def ace_version() -> str:
    """The installed ACE version (``0+unknown`` when run from a bare source tree)."""
    try:
        return importlib.metadata.version("ace")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def disk_enabled() -> bool:
    return os.environ.get("ACE_CACHE", "").strip().lower() not in ("off", "0", "no", "false")


class TaskCache(Generic[T]):
    """``get(task)`` returns ``build(task)``, computed at most once per task content.

    ``sources`` are the files whose code decides the value (hashed into the
    on-disk version); ``salt`` adds anything else it depends on.
    """

    def __init__(
        self,
        kind: str,
        build: Callable[[Task], T],
        maxsize: int,
        sources: Sequence[str | Path],
        salt: str = "",
    ):
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, not {maxsize}")
        self.kind = kind
        self.build = build
        self.maxsize = maxsize
        self._sources = tuple(Path(s) for s in sources)
        self._salt = salt
        self._version: str | None = None
        self._folder: tuple[tuple[str | None, str | None], Path] | None = None
        self._memory: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.disk_hits = self.builds = 0

    # ------------------------------------------------------------------ keys

    @property
    def version(self) -> str:
        """ACE version plus a hash of the computing code (and the salt)."""
        if self._version is None:
            h = hashlib.sha256(self._salt.encode())
            for path in self._sources:
                h.update(path.name.encode())
                h.update(path.read_bytes())
            self._version = f"{ace_version()}-{h.hexdigest()[:16]}"
        return self._version

    def folder(self) -> Path:
        # Resolved once per ACE_HOME value (ace_home() touches the file system on every call);
        # _store creates any missing folder below it.
        home = (os.environ.get("ACE_HOME"), os.environ.get("HOME"))
        if self._folder is None or self._folder[0] != home:
            self._folder = (home, ace_home() / "cache" / self.kind / self.version)
        return self._folder[1]

    def path(self, fingerprint: str) -> Path:
        return self.folder() / fingerprint[:2] / f"{fingerprint}.pickle"

    # ------------------------------------------------------------------ access

    def get(self, task: Task, fingerprint: str | None = None) -> T:
        """The entry of a task: from memory, else from disk, else built (and stored)."""
        fp = fingerprint or task.fingerprint()
        with self._lock:
            if fp in self._memory:
                self._memory.move_to_end(fp)
                self.hits += 1
                return self._memory[fp]
        value = self._load(fp) if disk_enabled() else None
        if value is None:
            value = self.build(task)
            self.builds += 1
            if disk_enabled():
                self._store(fp, value)
        else:
            self.disk_hits += 1
        with self._lock:
            self._memory[fp] = value
            self._memory.move_to_end(fp)
            while len(self._memory) > self.maxsize:
                self._memory.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget the in-memory entries (the disk cache stays)."""
        with self._lock:
            self._memory.clear()

    def __len__(self) -> int:
        return len(self._memory)

    def in_memory(self, task: Task, fingerprint: str | None = None) -> bool:
        """Whether the task's entry is held in memory now (no disk look-up, nothing built)."""
        fp = fingerprint or task.fingerprint()
        with self._lock:
            return fp in self._memory

    # ------------------------------------------------------------------ disk

    def _load(self, fp: str) -> T | None:
        path = self.path(fp)
        try:
            with open(path, "rb") as f:
                entry = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001 - any unreadable entry is rebuilt
            log.warning("cache entry %s is unreadable (%s: %s); rebuilding it", path, type(e).__name__, e)
            return None
        if not (isinstance(entry, tuple) and len(entry) == 4 and entry[:3] == (_MAGIC, self.kind, fp)):
            log.warning("cache entry %s is not a %s entry for its task; rebuilding it", path, self.kind)
            return None
        return entry[3]

    def _store(self, fp: str, value: T) -> None:
        _atomic_write(self.path(fp), pickle.dumps((_MAGIC, self.kind, fp, value), protocol=pickle.HIGHEST_PROTOCOL))


def _atomic_write(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:8]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:  # a read-only or full workspace: the cache is an optimisation only
        log.warning("could not write cache file %s (%s)", path, e)


def cached_pickle(
    kind: str,
    name: str,
    build: Callable[[], T],
    sources: Sequence[str | Path],
    salt: str = "",
) -> tuple[bytes, T]:
    """``build()``'s result and its pickle, kept in ``$ACE_HOME/cache/<kind>/<version>/<name>.pickle``.

    Read from that file when it unpickles, else built and written
    (atomically).  The caller keeps the bytes to hand out fresh copies later.
    """
    h = hashlib.sha256(salt.encode())
    for p in map(Path, sources):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    path = ace_home() / "cache" / kind / f"{ace_version()}-{h.hexdigest()[:16]}" / f"{name}.pickle"
    if disk_enabled():
        try:
            data = path.read_bytes()
            return data, pickle.loads(data)
        except FileNotFoundError:
            pass
        except Exception as e:  # noqa: BLE001 - any unreadable file is rebuilt
            log.warning("cache file %s is unreadable (%s: %s); rebuilding it", path, type(e).__name__, e)
    value = build()
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if disk_enabled():
        _atomic_write(path, data)
    return data, value


__all__ = ["TaskCache", "ace_version", "cached_pickle", "disk_enabled"]
