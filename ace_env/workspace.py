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
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file, a device or a FIFO there, a name too long, no permission: one line
        why = "it is not a folder" if isinstance(e, FileExistsError) else (e.strerror or str(e))
        raise ConfigError(f"ACE_HOME {str(home)[:200]!r} cannot be the workspace folder ({why}); set ACE_HOME to a "
                          "folder, or unset it for ~/.ace") from None
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
    link = " (through a symlink)" if path.is_symlink() else ""
    raise ConfigError(f"{what} {str(path)!r} is {special_kind(mode)}{link}; ACE writes only regular files and "
                      "folders, never replaces a special file: give another path")


def special_kind(mode: int) -> str:
    """What a file that is neither a regular file nor a folder is, in words (from its ``st_mode``)."""
    return ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")


def check_readable(path: str | Path, what: str = "file", folder: bool = False) -> Path:
    """The one rule for every input file (rollouts, task files, weakness files), before it is opened.

    Accepted: a regular file that can be read (a symlink is judged by what it points to), and, with
    ``folder``, a folder.  Refused in one line: a path that does not exist, a folder (unless ``folder``), a
    FIFO (opening one blocks until a writer comes), a socket, a character or block device (``/dev/null``
    read as an empty file said "0 rollouts verified"), and a path that cannot be read.  The path is only
    ``stat``-ed here, never opened.  Standard input (``-``) is the caller's to allow
    (``ace.cli.options.expand_inputs``).
    """
    path = Path(path)
    if str(path) == "-":
        raise ConfigError(f"{what} '-': this command does not read standard input; save the data to a file and "
                          "name the file")
    try:
        mode = os.stat(path).st_mode  # never open(): a FIFO would block right here
    except FileNotFoundError:
        raise ConfigError(f"{what} {str(path)!r} does not exist") from None
    except (OSError, ValueError) as e:  # a name too long, a file where a folder should be, a NUL
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(f"{what} {str(path)[:200]!r} cannot be read ({why})") from None
    if stat.S_ISDIR(mode):
        if folder:
            return path
        raise ConfigError(f"{what} {str(path)!r} is a folder, not a file")
    if not stat.S_ISREG(mode):
        link = " (through a symlink)" if path.is_symlink() else ""
        raise ConfigError(f"{what} {str(path)!r} is {special_kind(mode)}{link}, not a regular file; ACE reads "
                          "only regular files (save the data to a file first)")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"{what} {str(path)!r} cannot be read (permission denied)")
    return path


#: The longest name (experiment, policy, checkpoint): it becomes a folder name, and files are named after it.
MAX_NAME = 100


def check_name(value: str, what: str = "name") -> str:
    """A name that becomes a path component (a scope part, a folder under ``$ACE_HOME/runs``) must be plain:
    one line of at most :data:`MAX_NAME` printable characters.

    Refused: empty, ``.`` and ``..`` (a folder above, so ``-e .. --name ..`` wrote outside
    ``runs/``), any name holding ``/`` or ``\\``, a newline, a tab or any other character that is not
    printable (a NUL, an escape, a line or paragraph separator), and a name longer than :data:`MAX_NAME`
    (``ace loop status -e <300 characters>`` failed opening a file whose name was too long).
    """
    if (not isinstance(value, str) or not value.strip() or value in (".", "..") or any(c in value for c in "/\\")
            or not value.isprintable() or len(value) > MAX_NAME):
        shown = value if not isinstance(value, str) or len(value) <= 60 else value[:60] + "..."
        raise ConfigError(f"{what} {shown!r} is not a plain name (it names a folder and a scope): one line of at "
                          f"most {MAX_NAME} printable characters, not empty, not '.' or '..', no '/' or '\\'; "
                          "use letters, digits, '-', '_' and '.'")
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
