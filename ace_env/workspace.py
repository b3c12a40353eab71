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


def check_out(path: str | Path, force: bool = False, directory: bool = False, what: str = "--out",
              marker: str | None = None) -> Path:
    """The one rule for every output path (``--out``, ``--metrics-out``), checked before any work.

    Refused, with a one-line error that says how to fix it:

    * anything but a regular file or a folder, even with ``force`` (:func:`check_writable_kind`);
    * a path that climbs out of a folder it names (``runs/eval/../../x``: ``..`` after a name);
    * the wrong kind: a folder where a file is written, a file where a folder is;
    * an existing file, or a folder that holds anything, unless ``force``;
    * with ``force``, a folder that is (or holds) the current folder, the home folder or the root, and,
      when ``marker`` is given, a folder without that marker file (only an earlier output is replaced);
    * a path that cannot be written (tested by creating and removing a probe file).

    Created: the missing folders above ``path`` (as ``mkdir -p`` would), once every check above has
    passed; ``path`` itself is left to its writer.  Accepted: an empty folder where a folder is written.
    """
    path = Path(path)
    parts = path.parts
    first_name = next((i for i, p in enumerate(parts) if p != ".."), len(parts))
    if ".." in parts[first_name:]:
        raise ConfigError(f"{what} {str(path)!r} climbs out of a folder it names ('..' after a folder name); names "
                          "such as --experiment, --name and --checkpoint must be plain (not '.' or '..'); give a "
                          "plain path")
    path = check_writable_kind(path, what)
    if path.exists() or path.is_symlink():
        if path.is_dir() and not directory:
            raise ConfigError(f"{what} {str(path)!r} is a folder; give a file name such as {str(path / 'out.jsonl')!r}")
        if directory and not path.is_dir():
            raise ConfigError(f"{what} {str(path)!r} is a file; give a folder")
        if not (directory and path.is_dir() and not any(path.iterdir())):
            if not force:
                raise ConfigError(f"{what} {str(path)!r} exists; pick another {what} or pass --force to replace it")
            if path.is_dir():
                _check_replaceable(path, what, marker)
    parent = path.parent
    missing = parent
    while not missing.exists() and missing != missing.parent:
        missing = missing.parent
    if not missing.is_dir():
        raise ConfigError(f"cannot write {what} {str(path)!r}: {str(missing)!r} is not a folder")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot write {what} {str(path)!r}: cannot create folder {str(parent)!r} "
                          f"({e.strerror or e})") from e
    probe = parent / f".{path.name}.ace-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as e:
        raise ConfigError(f"cannot write {what} {str(path)!r}: {e.strerror or e}") from e
    os.close(fd)
    os.unlink(probe)
    return path


def _check_replaceable(folder: Path, what: str, marker: str | None) -> None:
    """``--force`` replaces a folder only when it holds none of the current, home and root folders (and,
    with ``marker``, only a folder an earlier run of the same writer marked)."""
    resolved = folder.resolve()
    for name, protected in (("the current folder", Path.cwd()), ("your home folder", Path.home()),
                            ("the root folder", Path(resolved.anchor))):
        protected = protected.resolve()
        if resolved == protected or resolved in protected.parents:
            raise ConfigError(f"{what} {str(folder)!r} is or holds {name}; --force never replaces it: pick another "
                              f"{what}")
    if marker is not None and not (folder / marker).is_file():
        raise ConfigError(f"{what} {str(folder)!r} is not a folder an earlier run wrote (no {marker} file in it); "
                          f"--force only replaces earlier exports: pick another {what}")
