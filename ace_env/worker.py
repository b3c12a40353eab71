"""A watched worker: one long-lived forked process whose every tool call runs under a budget.

Model output can ask a tool for ``power(base=10, exponent=1000000000)`` (one
C-level bigint multiplication that never returns to the interpreter),
``square_root(number=2, precision=100000000)`` (hundreds of MB and growing) or
``logarithm(value=2, base=3, precision=1000000)``.  One such line must not
stall a verification run, an ingest, or a training step.

Why worker processes with a watchdog, not in-thread checks
----------------------------------------------------------
An in-thread check (a timer thread, ``signal.alarm``, a tracing hook) only
acts between bytecodes: a single multiplication of two huge ints runs to the
end inside C, and a thread cannot be killed.  The only thing that reliably
stops it is killing the process it runs in.  So the calls run in one
long-lived *forked* worker process (forked, so it inherits the loaded tasks,
BFCL's classes and the warm caches without pickling them):

* the worker stamps the start of every tool call into a shared double
  (:func:`ace_env.executor.set_call_clock`; three stores per call, ~0.1 µs);
* the parent, waiting for the worker's answer, sleeps until the running
  call's deadline (looking at the clock at least once a second) and, if it is
  still running, kills the worker (SIGKILL); the caller gives that item the
  verdict ``timeout``, and a fresh worker is forked for the rest; outside any
  call, a clock that stands still (no call started, no next item) for
  max(60 s, 6x the call budget) ends the worker the same way, so ACE's own
  code stuck between calls cannot hang the run either;
* the worker runs under ``RLIMIT_AS`` = its size at start + the memory
  budget, so a runaway allocation raises ``MemoryError`` inside the call,
  which the executor turns into the verdict ``resource_limit``; a worker that
  dies anyway (a C library that aborts on a failed allocation) gets the same
  verdict for the item it was running.

Two workers are built on it: the bounded verifier
(:class:`ace_env.bounded.BoundedVerifier`) and the rollout engine's tool calls
(:class:`ace_env.boundedcalls.BoundedCalls`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import resource
import signal
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any, Iterator

from ace_env import executor
from ace_env.errors import ConfigError
from ace_env.verifier import TIMEOUT

#: Slots of the shared clock every watched worker has: [CALL] start of the running call (0.0 when
#: none), [INDEX] index in the batch of the item being worked on.
CALL, INDEX = 0, 1

#: The most one tool call may be given: a day of wall-clock time, 16 TiB of memory growth.
MAX_CALL_SECONDS, MAX_MEMORY_MB = 86_400, 1 << 24


@dataclass(frozen=True)
class Budget:
    """What one tool call may spend before its rollout is ended (reward 0)."""

    call_seconds: float = field(
        default=10.0,
        metadata={"help": "Wall-clock seconds one tool call may run (BFCL's take microseconds). "
                          "Env: ACE_CALL_TIMEOUT.", "min": 0.0, "max": MAX_CALL_SECONDS},
    )
    memory_mb: int = field(
        default=2048,
        metadata={"help": "Memory (MiB) the verifying worker may grow by (BFCL's calls need a few). "
                          "Env: ACE_MEMORY_LIMIT_MB.", "min": 16, "max": MAX_MEMORY_MB},
    )

    def __post_init__(self) -> None:
        if not (isinstance(self.call_seconds, (int, float)) and 0 < self.call_seconds <= MAX_CALL_SECONDS):
            raise ConfigError(f"call timeout must be between 0 and {MAX_CALL_SECONDS} seconds, not {self.call_seconds!r}")
        if not (isinstance(self.memory_mb, int) and 16 <= self.memory_mb <= MAX_MEMORY_MB):
            raise ConfigError(f"memory limit must be between 16 and {MAX_MEMORY_MB} MiB, not {self.memory_mb!r}")

    @classmethod
    def from_env(cls, call_seconds: float | None = None, memory_mb: int | None = None) -> "Budget":
        """Explicit values, else ``ACE_CALL_TIMEOUT`` / ``ACE_MEMORY_LIMIT_MB``, else the defaults."""
        defaults = {f.name: f.default for f in fields(cls)}

        def pick(value: Any, env: str, kind: type) -> Any:
            if value is not None:
                return value
            text = os.environ.get(env)
            if text is None:
                return None
            try:
                return kind(text)
            except ValueError:
                raise ConfigError(f"{env}={text!r} is not a number") from None

        seconds = pick(call_seconds, "ACE_CALL_TIMEOUT", float)
        memory = pick(memory_mb, "ACE_MEMORY_LIMIT_MB", int)
        return cls(
            call_seconds=defaults["call_seconds"] if seconds is None else seconds,
            memory_mb=defaults["memory_mb"] if memory is None else memory,
        )


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


#: prctl(2) option: the signal this process gets when its parent dies (Linux).
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this worker when its parent dies (even by kill -9).

    A forked worker holds copies of the parent's descriptors, the database
    connection's socket among them; an orphan would keep that connection, and
    the killed parent's open transaction with its locks, alive.  Linux:
    ``prctl(PR_SET_PDEATHSIG, SIGKILL)``.  Where that is not available (another
    system, or prctl refused), a daemon thread checks the parent every 0.2 s and
    ends the worker when it is gone.
    """
    try:
        armed = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL)) == 0
    except (OSError, AttributeError):
        armed = False
    if armed:
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="ace-parent-watch", daemon=True).start()


def worker_setup(parent_end: Any, parent_pid: int, clock: Any, memory_mb: int) -> None:
    """What a forked worker does first: die with its parent, cap its growth, stamp its tool calls.

    Its address space is capped (``RLIMIT_AS``) at its size at start plus
    ``memory_mb``, so a runaway allocation raises ``MemoryError`` inside the
    call; every tool call's start is stamped into ``clock`` for the watchdog.
    """
    _die_with_parent(parent_pid)
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(0)
    parent_end.close()  # our copy of the parent's end: without it, recv() sees EOF when the parent is gone
    size = _address_space()
    if size is not None:
        limit = size + memory_mb * (1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        except (ValueError, OSError):  # a hard limit below ours: keep the tighter one
            pass
    executor.set_call_clock(clock)


def messages(conn: Any) -> Iterator[Any]:
    """What a worker's parent sends it, one message at a time, until the parent sends None or its end closes."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        yield message


class WatchedWorker:
    """One long-lived forked worker process, and the watchdog that bounds each of its tool calls in time.

    A subclass names the worker function (:meth:`_target`; it is called with
    ``(conn, parent_end, parent_pid, clock, *self._worker_args())`` and starts
    with :func:`worker_setup`) and how many slots its shared clock has; slot 0
    is the start of the running call, slot 1 the index in the batch of the item
    being worked on.  :meth:`_send_and_wait` sends one batch and waits for the
    answer, killing the worker when a call runs past ``budget.call_seconds``, or when
    outside any call its clock (calls started, item index, phase) stands still for
    :attr:`stall_seconds`.
    """

    _name = "ace-worker"
    _slots = 2
    #: Outside any tool call the worker is killed when its shared clock has not moved (no call started,
    #: no next item) for this long: max(stall_floor, stall_factor x the call budget).  It bounds what no
    #: call stamp covers (parsing, pickling, ACE's own code), so a stuck worker cannot hang the caller.
    stall_floor = 60.0
    stall_factor = 6.0

    def __init__(self, budget: Budget | None = None):
        self.budget = budget or Budget()
        #: Whether the last kill was for a stall outside any call (not a call over its budget).
        self.stalled = False
        self._ctx = multiprocessing.get_context("fork")
        # The slots, and one more at the end: the executor counts the tool calls it starts there, so a
        # watchdog sampling once a second sees progress even when every call ends between two looks.
        self._clock = self._ctx.RawArray("d", self._slots + 1)
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0

    @property
    def stall_seconds(self) -> float:
        return max(self.stall_floor, self.stall_factor * self.budget.call_seconds)

    def _target(self) -> Any:
        raise NotImplementedError

    def _worker_args(self) -> tuple[Any, ...]:
        return ()

    def _on_start(self) -> None:
        """A fresh worker is up (a subclass forgets what the last one held)."""

    def start(self) -> Any:
        """Fork the worker now (before starting threads, ideally); later calls do nothing while it lives."""
        if self._proc is None:
            parent, child = self._ctx.Pipe()
            for i in range(self._slots + 1):
                self._clock[i] = 0.0
            self._proc = self._ctx.Process(
                target=self._target(), name=self._name, daemon=True,
                args=(child, parent, os.getpid(), self._clock, *self._worker_args()),
            )
            self._proc.start()
            child.close()
            self._conn = parent
            self._on_start()
        return self

    def close(self) -> None:
        """Stop the worker."""
        if self._proc is None:
            return
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        self._proc.join(timeout=2)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._conn.close()
        self._proc = self._conn = None

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._conn.close()
            self._proc = self._conn = None
            self.restarts += 1

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _send_and_wait(self, message: Any) -> tuple[Any, str, tuple[float, ...]]:
        """Send ``message`` and wait for the answer: ``(answer, "", ())``, or, when the worker is
        gone, ``(None, why, clock)``: ``why`` is TIMEOUT (killed here: a call ran past the budget, or
        the clock stood still for :attr:`stall_seconds` outside any call: then :attr:`stalled`),
        ``signal N`` / ``exit code N`` (it died) or ``it could not be reached`` (then ``clock`` is
        empty: nothing ran); ``clock`` is the shared clock as it was then (which item, and what
        the worker was doing)."""
        self.start()
        try:
            self._conn.send(message)
        except (OSError, ValueError):
            self._kill()
            return None, "it could not be reached", ()
        limit = self.budget.call_seconds
        stall = self.stall_seconds
        clock = self._clock
        self.stalled = False
        seen, moved = tuple(clock), time.monotonic()
        while True:
            now = time.monotonic()
            snapshot = tuple(clock)
            if snapshot != seen:
                seen, moved = snapshot, now
            started = clock[CALL]
            wait = started + limit - now if started else moved + stall - now
            if wait <= 0:
                self.stalled = not started
                self._kill()
                return None, TIMEOUT, snapshot
            try:
                ready = self._conn.poll(min(wait, 1.0))  # look at the clock again at least every second
            except (OSError, EOFError):
                ready = True
            if ready:
                try:
                    return self._conn.recv(), "", ()
                except (EOFError, OSError):
                    snapshot = tuple(clock)
                    self._proc.join()
                    code = self._proc.exitcode
                    self._kill()
                    return None, f"signal {-code}" if code is not None and code < 0 else f"exit code {code}", snapshot
