"""The workspace folder, ``ACE_HOME`` (default ``~/.ace``).

Everything ACE writes lives under it: the managed Neo4j server (artifacts,
data, logs, the generated password), caches, models and runs.  It sits in the
bottom layer because the environment's on-disk caches live there too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ace_env.errors import ConfigError


def ace_home() -> Path:
    """The workspace folder (created on first use, owner-only)."""
    home = Path(os.environ.get("ACE_HOME", Path.home() / ".ace")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    try:
        home.chmod(0o700)
    except OSError:  # a shared or read-only mount: leave its mode alone
        pass
    return home


def check_writable_kind(path: str | Path, what: str = "--out") -> Path:
    """Refuse to write over anything but a regular file or a folder: one rule for every ``--out``.

    Writers replace their target (a temporary file renamed over it) or open it
    for writing; over a device node (``/dev/null``, ``/dev/full``), a FIFO or a
    socket either is wrong, and as root a rename over ``/dev/null`` breaks the
    machine.  A symlink is judged by what it points to.  A missing path is fine.
    Writers call this before any work and again just before the rename.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode  # follows a symlink: a link to /dev/null is a device too
    except FileNotFoundError:
        return path  # nothing there (or a dangling link, which the rename replaces)
    except OSError as e:
        raise ConfigError(f"cannot write {what} {str(path)!r}: {e.strerror or e}") from e
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    link = " (through a symlink)" if path.is_symlink() else ""
    raise ConfigError(f"{what} {str(path)!r} is {kind}{link}; ACE writes only regular files and folders, "
                      "never replaces a special file: give another path")


def check_name(value: str, what: str = "name") -> str:
    """A name that becomes a path component (a scope part, a folder under ``$ACE_HOME/runs``) must be plain.

    Refused: empty, ``.`` and ``..`` (a folder above, so ``-e .. --name ..`` wrote outside
    ``runs/``), and any name holding ``/``, ``\\`` or a NUL.
    """
    if not isinstance(value, str) or not value.strip() or value in (".", "..") or any(c in value for c in "/\\\0"):
        raise ConfigError(f"{what} {value!r} is not a plain name (it names a folder and a scope): not empty, not "
                          "'.' or '..', no '/' or '\\'; use letters, digits, '-', '_' and '.'")
    return value
