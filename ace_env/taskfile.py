"""Task files on disk: the size caps every task-file reader enforces, and the one way their lines are read.

A task file is read whole into tasks, and each task's initial state is built (and its gold replayed) several
times at load: a τ² task whose initial state adds 100,000 flights (18 MB on one line) takes minutes and
gigabytes to load.  So a task file is refused in one line, before anything is parsed, when it is larger than
:data:`TASK_FILE_MAX_BYTES`, and when one of its lines (one task, or one entry of a BFCL file) is larger than
:data:`TASK_LINE_MAX_BYTES`.  For scale: all 800 of BFCL's scored tasks as one ACE task file are 2.5 MB
(the largest task 10 KB), BFCL's own question files 0.4 MB each, and every airline and retail task of τ²
as a τ² task file 2.5 MB (the largest task 21 KB).

:func:`task_file_lines` is how every reader (:func:`ace_env.tasksets.load_task_set`'s task files,
:func:`ace_env.bfcl.load_folder`'s BFCL files, :mod:`ace_env.tau2.taskfile`'s τ² task files) reads one.

An environment whose synthesized tasks are written in a task file of its own (``ace synth --out``) gives its
reader on its entry (``ToolEnvironment.task_file``, a :class:`TaskFile`): :func:`ace_env.tasksets.load_task_set`
asks each environment's reader whether a file holds its tasks before reading the file as ACE (BFCL) tasks, so
``--tasks FILE`` and ``ace synth check FILE`` take it.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ace_env.errors import TaskLoadError

#: The largest task file (bytes) ACE reads: 32 MiB, 13x all of BFCL's tasks as one file (docs/robustness.md).
TASK_FILE_MAX_BYTES = 32 << 20
#: The largest line of a task file (bytes): one task, or one entry of a BFCL file; 1 MiB, 50x the largest real task.
TASK_LINE_MAX_BYTES = 1 << 20


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def check_task_file_size(path: str | Path, size: int) -> None:
    """One-line TaskLoadError when a task file of ``size`` bytes is over :data:`TASK_FILE_MAX_BYTES`."""
    if size > TASK_FILE_MAX_BYTES:
        raise TaskLoadError(f"{path} is larger than a task file may be ({_mib(size)}; at most "
                            f"{_mib(TASK_FILE_MAX_BYTES)}): split it into several files")


def task_file_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every non-blank line of a UTF-8 task file (a leading BOM dropped).

    Refused in one line (:class:`~ace_env.errors.TaskLoadError`): a file over :data:`TASK_FILE_MAX_BYTES`
    (said before any line is read, when its size is known; otherwise when that much has been read), a line
    over :data:`TASK_LINE_MAX_BYTES` (never read whole), a line that is not UTF-8.
    """
    with open(path, "rb") as f:
        check_task_file_size(path, os.fstat(f.fileno()).st_size)
        total = 0
        n = 0
        while True:
            raw = f.readline(TASK_LINE_MAX_BYTES + 1)
            if not raw:
                return
            n += 1
            total += len(raw)
            check_task_file_size(path, total)  # a file that grows as it is read, or has no size to stat
            if len(raw.rstrip(b"\r\n")) > TASK_LINE_MAX_BYTES:
                raise TaskLoadError(f"{path}:{n}: the line is larger than a task may be (over "
                                    f"{_mib(TASK_LINE_MAX_BYTES)}; real tasks are at most tens of KB)")
            if n == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)  # a leading BOM is not part of the JSON
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TaskLoadError(f"{path}:{n}: not UTF-8 text ({e.reason} at byte {e.start})") from e
            if text.strip():
                yield n, text


@dataclass(frozen=True)
class TaskFile:
    """An environment's reader of its own task files (its entry's ``task_file``; the module doc)."""

    #: Whether a JSONL file holds this environment's tasks (its first line tells); False for a file it cannot
    #: read at all, which the default reader then refuses in one line.
    holds: Callable[[Path], bool]
    #: The file's tasks by id, ``(path, budget)``: every line one of its tasks, ids unique, each within the size
    #: caps (read through :func:`task_file_lines`) and its gold checked under ``budget`` (an
    #: :class:`ace_env.worker.Budget`, or None: the environment's default); a file that fails says where, in one
    #: line (:class:`~ace_env.errors.TaskLoadError`).
    load: Callable[[Path, Any], dict[str, Any]]
