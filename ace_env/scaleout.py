"""Verification spread over a Ray cluster, with the same results as a local run.

:class:`RayVerifier` verifies BFCL rollouts on the Ray cluster at
``address`` (``auto`` finds a running local one; ``host:port`` names its
head node); :func:`ace_env.environments.verifier_for` hands it out when an
address is given, else the local :class:`ace_env.bounded.BoundedVerifier`.  Both have the
same interface (``verify_stream``, ``verify_many``, a context manager).
:func:`runner_for` gives the same choice for any function (``ace synth``
spreads its per-candidate rollouts with it): :class:`LocalRunner` calls it
at once, :class:`RayRunner` runs it as a Ray task.

Addresses: ``auto`` (a running local cluster), ``host:port`` (its head node)
or ``local`` (ACE starts a private single-node Ray in this process and stops
it at the end).  For ``local`` and for loopback addresses every Ray listener
(GCS, raylet, object manager, runtime-env agent, the workers' and this
driver's gRPC servers) stays on 127.0.0.1: Ray replaces a loopback node IP by
the machine's address unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (its
single-machine mode), so :func:`connect` sets that before Ray starts.  The
dashboard is not started.

The tasks are put into Ray's object store once; rollouts go out in batches
(``batch_size``), at most ``in_flight`` batches at a time, and come back in
the order they were read.  On every Ray worker the batch is verified by a
BoundedVerifier of its own, so the call budget holds on the cluster exactly
as it does locally, and since verification is deterministic, a verdict is
the same wherever it was computed (a test compares them).

Ray is an optional dependency (the ``ray`` extra): it is imported only when
an address is given.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import deque
from typing import Any, Iterable, Iterator, Sequence

from ace_env.bounded import FLUSH, BoundedVerifier, Result, read_ahead
from ace_env.errors import ConfigError
from ace_env.tasks import Task
from ace_env.worker import Budget

log = logging.getLogger(__name__)

#: One BoundedVerifier per Ray worker process and task set (keyed by the object ref's hex id).
_WORKER_VERIFIERS: dict[str, BoundedVerifier] = {}


#: Ray's switch that keeps a loopback node IP (else Ray replaces 127.0.0.1 by the machine's address).
SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Ray's count of attempts to reach the GCS when a driver connects (about 35 s each; default 20).
GCS_WAIT_ENV = "RAY_gcs_server_port_wait_time_s"


def is_loopback(address: str) -> bool:
    """``local``, or a ``host:port`` whose host is a loopback address."""
    if address == "local":
        return True
    host, sep, _port = address.rpartition(":")
    return (host if sep else address) in LOOPBACK_HOSTS


def _machine_ip() -> str | None:
    """The address this machine reaches others from (no packet is sent), as Ray finds its node IP."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: routing decides the source address, nothing is sent
            return s.getsockname()[0]
    except OSError:
        return None


def single_machine(address: str) -> bool:
    """Whether this driver must run in Ray's single-machine mode (node IP 127.0.0.1) for ``address``.

    ``local``: yes (ACE starts that Ray itself, on loopback).  A loopback ``host:port``: yes when
    that cluster listens on loopback only (it was started in that mode, as `.ci/run` starts
    its), no when its GCS also answers on the machine's address (a cluster started plainly,
    whose node IP is that address).  Anything else: no.  An explicit
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER in the environment wins.
    """
    if os.environ.get(SINGLE_MACHINE_ENV) in ("0", "1"):
        return os.environ[SINGLE_MACHINE_ENV] == "0"
    if address == "local":
        return True
    if not is_loopback(address):
        return False
    port = address.rpartition(":")[2]
    ip = _machine_ip()
    if not port.isdigit() or ip is None or ip.startswith("127."):
        return True
    try:
        socket.create_connection((ip, int(port)), timeout=2).close()
    except OSError:
        return True
    return False


#: Seconds to wait for a Ray head node to answer before giving up (env ACE_RAY_CONNECT_TIMEOUT).
CONNECT_TIMEOUT_S = 10.0


#: An HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113, 3.4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def connect_timeout() -> float:
    """The deadline for reaching a Ray head node: ACE_RAY_CONNECT_TIMEOUT seconds (default 10)."""
    text = os.environ.get("ACE_RAY_CONNECT_TIMEOUT", "")
    if not text.strip():
        return CONNECT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise ConfigError(f"ACE_RAY_CONNECT_TIMEOUT={text!r}: give seconds, a number above 0 and at most 3600")
    return value


def check_reachable(address: str, timeout: float | None = None) -> None:
    """Refuse, within ``timeout`` seconds, a ``host:port`` where nothing accepts connections.

    Ray's own connection to a head node retries for minutes (its GCS client
    logs and tries again), to a closed port and to a port where something
    other than Ray listens alike; this probe (a TCP connection, then the
    HTTP/2 greeting every gRPC server answers) gives every ``--ray
    host:port`` an overall deadline and a one-line error instead.  ``auto`` and ``local``
    are not probed (Ray finds or starts those itself, without waiting).
    """
    if address in ("auto", "local"):
        return
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--ray {address!r} is not host:port (e.g. 127.0.0.1:6379), `auto` or `local`")
    limit = connect_timeout() if timeout is None else timeout
    deadline = time.monotonic() + limit
    try:
        with socket.create_connection((host, int(port)), timeout=limit) as sock:
            # Ray's head node speaks gRPC (HTTP/2): to the client preface it answers with a SETTINGS
            # frame (a 9-byte header, type 4).  Anything else (a web server, a silent port) is not Ray.
            sock.sendall(HTTP2_PREFACE)
            header = b""
            while len(header) < 9:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = sock.recv(9 - len(header))
                if not chunk:
                    break
                header += chunk
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e) or type(e).__name__)
        raise ConfigError(
            f"Cannot reach a Ray cluster at {address!r} within {limit:g} s ({why}). Start one with "
            "`ray start --head`, give its address (host:port), or use `local`; ACE_RAY_CONNECT_TIMEOUT sets the wait."
        ) from e
    if len(header) < 9 or header[3] != 4:
        raise ConfigError(
            f"{address!r} answers, but not as a Ray head node (no gRPC/HTTP2 greeting); give the GCS address "
            "`ray start --head` printed (host:6379 by default), or use `local`."
        )


def _ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError as e:
        raise ConfigError("--ray needs the `ray` package: pip install -e '.[ray]' (scripts/setup.sh installs it)") from e
    return ray


def connect(address: str, num_cpus: int | None = None) -> tuple[Any, bool]:
    """Connect to (or, for ``local``, start) Ray; returns the module and whether this call connected.

    ``num_cpus`` only applies to ``local``.  A second call while connected reuses the connection.
    """
    if not address or not address.strip():
        raise ConfigError("--ray needs an address (host:port), `auto` or `local`")
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    check_reachable(address)
    single = single_machine(address)
    # Ray reads the variable once, at import, into this switch: set it for this connection.
    ray._private.ray_constants.ENABLE_RAY_CLUSTER = not single
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address == "local":
        kwargs.update(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1")
    else:
        kwargs.update(address=address)
    saved = os.environ.get(SINGLE_MACHINE_ENV)
    if single:
        os.environ[SINGLE_MACHINE_ENV] = "0"  # for the processes `local` starts
    # One GCS connection attempt (about 40 s at most) instead of Ray's 20: the probe above already
    # found the head node, and a port that answers HTTP/2 without being Ray must not hold us for minutes.
    saved_wait = os.environ.get(GCS_WAIT_ENV)
    if address not in ("auto", "local") and saved_wait is None:
        os.environ[GCS_WAIT_ENV] = "1"
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ConfigError(
            f"Cannot connect to a Ray cluster at {address!r}: {str(e).splitlines()[0]}. "
            "Start one with `ray start --head`, give its address (host:port), or use `local`."
        ) from e
    finally:  # they have read it by now; a later connection decides afresh
        if saved is None:
            os.environ.pop(SINGLE_MACHINE_ENV, None)
        else:
            os.environ[SINGLE_MACHINE_ENV] = saved
        if saved_wait is None:
            os.environ.pop(GCS_WAIT_ENV, None)
    return ray, True


class LocalRunner:
    """Runs a function at once in this process: the local twin of :class:`RayRunner`."""

    def __enter__(self) -> "LocalRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def submit(self, fn: Any, *args: Any) -> Any:
        return fn(*args)

    def get(self, handle: Any) -> Any:
        return handle


class RayRunner:
    """Runs functions as Ray tasks: ``submit`` returns at once, ``get`` waits for the result.

    The function must be importable on the workers (a module-level function of ACE).
    """

    def __init__(self, address: str):
        self.address = address
        self._ray: Any = None
        self._owns = False
        self._remotes: dict[Any, Any] = {}

    def __enter__(self) -> "RayRunner":
        self._ray, self._owns = connect(self.address)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._ray is not None and self._owns:
            self._ray.shutdown()
        self._ray = None

    def submit(self, fn: Any, *args: Any) -> Any:
        remote = self._remotes.get(fn)
        if remote is None:
            remote = self._remotes[fn] = self._ray.remote(fn)
        return remote.remote(*args)

    def get(self, handle: Any) -> Any:
        return self._ray.get(handle)


def runner_for(address: str | None) -> LocalRunner | RayRunner:
    """Run here (``address`` None) or on the Ray cluster at ``address``."""
    return LocalRunner() if address is None else RayRunner(address)


def verify_batch(key: str, tasks: dict[str, Task], items: list[tuple[str, Any, str | None]],
                 budget: Budget, fast_forward: bool, strict: bool = True) -> list[Result]:
    """Verify one batch on a Ray worker, in that worker's own watched process."""
    key = f"{key}:{'strict' if strict else 'reference'}"
    bv = _WORKER_VERIFIERS.get(key)
    if bv is None:
        for old in _WORKER_VERIFIERS.values():  # one task set at a time per worker
            old.close()
        _WORKER_VERIFIERS.clear()
        bv = _WORKER_VERIFIERS[key] = BoundedVerifier(tasks, budget, batch_size=len(items) or 1,
                                                      fast_forward=fast_forward, strict=strict)
    return bv.verify_many(items)


class RayVerifier:
    """Verify rollouts on a Ray cluster; same results, in the same order, as :class:`BoundedVerifier`."""

    def __init__(self, tasks: dict[str, Task], budget: Budget | None = None, address: str = "auto",
                 batch_size: int = 256, in_flight: int | None = None, fast_forward: bool = True,
                 strict: bool = True):
        if batch_size < 1:
            raise ConfigError(f"batch size must be at least 1, not {batch_size}")
        self.tasks = tasks
        self.budget = budget or Budget()
        self.address = address
        self.batch_size = batch_size
        self.in_flight = in_flight
        self.fast_forward = fast_forward
        self.strict = strict
        self._ray: Any = None
        self._remote: Any = None
        self._tasks_ref: Any = None
        self._owns_connection = False

    def start(self) -> "RayVerifier":
        if self._ray is not None:
            return self
        ray, self._owns_connection = connect(self.address)
        self._ray = ray
        self._remote = ray.remote(verify_batch)
        self._tasks_ref = ray.put(self.tasks)
        if self.in_flight is None:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            self.in_flight = max(2, 2 * cpus)
        log.info("verifying on Ray at %s (%s batches in flight)", self.address, self.in_flight)
        return self

    def close(self) -> None:
        if self._ray is not None and self._owns_connection:
            self._ray.shutdown()
        self._ray = None

    def __enter__(self) -> "RayVerifier":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _submit(self, items: list[tuple[str, Any, str | None]]) -> Any:
        return self._remote.remote(self._tasks_ref.hex(), self._tasks_ref, items, self.budget, self.fast_forward,
                                   self.strict)

    def verify_many(self, items: Sequence[tuple[str, Any, str | None]]) -> list[Result]:
        self.start()
        refs = [self._submit(list(items[i:i + self.batch_size])) for i in range(0, len(items), self.batch_size)]
        return [r for batch in self._ray.get(refs) for r in batch]

    def verify_stream(self, rollouts: Iterable[Any]) -> Iterator[tuple[Any, Result]]:
        self.start()
        window: deque[tuple[list[Any], Any]] = deque()
        batch: list[Any] = []

        def submit(rs: list[Any]) -> None:
            window.append((rs, self._submit([(r.task_id, r.turns, r.rollout_id) for r in rs])))

        def drain(keep: int) -> Iterator[tuple[Any, Result]]:
            while len(window) > keep:
                rs, ref = window.popleft()
                yield from zip(rs, self._ray.get(ref))

        try:
            for r in read_ahead(rollouts, self.batch_size):
                if r is not FLUSH:
                    batch.append(r)
                    continue
                if batch:
                    submit(batch)
                    batch = []
                yield from drain(self.in_flight - 1)
        except Exception:
            yield from drain(0)  # what was read before a bad line is still verified, in order
            raise
        yield from drain(0)
