"""Connecting to Neo4j and applying the schema.

``get_driver()`` is the one place ACE opens a connection: store classes
receive the driver it returns.  Nothing connects at import time.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ace_env.environments import DEFAULT
from ace_env.errors import ConfigError
from ace_env.redact import redact, redact_url
from ace_graph import queries
from ace_graph.config import Neo4jSettings, neo4j_settings
from ace_graph.errors import ConnectionError_

if TYPE_CHECKING:  # pragma: no cover
    import neo4j

SCHEMA_QUERY = "schema"

T = TypeVar("T")

# The driver logs its retries (with tracebacks) as warnings; with no logging set
# up, Python would print them on stderr.  ACE reports the outcome in one line
# instead; an application that configures logging still sees them.
logging.getLogger("neo4j").addHandler(logging.NullHandler())


#: Packages the driver imports on its own import when they are installed, for its DataFrame and
#: Arrow exports (``Result.to_df`` ...), which ACE does not use.  In ACE's venv (pulled in by the
#: dashboard and the training extra) they made ``import neo4j`` take 0.7-0.8 s instead of 0.3-0.5 s,
#: paid by every graph command of the CLI.
_DRIVER_EXTRAS = ("pandas", "pyarrow")


def import_driver() -> None:
    """Import the driver, without its optional pandas/pyarrow integrations when nothing imported them yet.

    Those two are hidden from the driver's import only (``sys.modules[name] = None`` makes
    ``import name`` raise ImportError, which the driver expects); they import normally afterwards.
    Once the driver is imported this does nothing.
    """
    if "neo4j" in sys.modules:
        return
    hidden = [name for name in _DRIVER_EXTRAS if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import neo4j  # noqa: F401
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def within(seconds: float, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, or TimeoutError when it has not returned after ``seconds``.

    The driver has no read timeout: a transaction timeout is the server's to enforce, and a
    computation Neo4j does not interrupt (``reduce()`` growing a string over a huge range) keeps
    the client waiting as long as the server computes.  Here ``fn`` runs in a daemon thread the
    caller stops waiting for; it goes on until its connection is closed or the process exits.
    Exceptions ``fn`` raises are raised here.
    """
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
            box["error"] = e

    worker = threading.Thread(target=call, name="ace-bounded-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _how_to_fix(settings: Neo4jSettings) -> str:
    if settings.external:
        return "Check that the server is up and that NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD are right."
    return (
        "Start the managed server with `ace db start` (after `ace db install`), "
        "or set NEO4J_URI (with NEO4J_USER/NEO4J_PASSWORD) to use an external Neo4j."
    )


def _seconds_from_env(var: str, default: str, most: float) -> float:
    """A number of seconds in (0, ``most``] from the environment variable ``var`` (``default`` when unset)."""
    raw = os.environ.get(var, default)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= most:  # also false for nan and inf
        raise ConfigError(f"{var} must be a number of seconds in (0, {most:g}], not {raw!r}")
    return value


def retry_seconds() -> float:
    """``ACE_NEO4J_RETRY_SECONDS`` (default 30, the driver's own): how long a managed transaction
    (every ACE write) retries transient errors (a leader switch, a restarting server) before failing."""
    return _seconds_from_env("ACE_NEO4J_RETRY_SECONDS", "30", 3600)


def connect_seconds() -> float:
    """``ACE_NEO4J_CONNECT_TIMEOUT`` (default 15): the seconds a connection to Neo4j may take, the TCP connect
    and the Bolt handshake together.  The driver's own limit is 60 s, spent in silence on an address that
    accepts TCP but never speaks Bolt (a wrong port, a proxy, a firewall that holds connections)."""
    return _seconds_from_env("ACE_NEO4J_CONNECT_TIMEOUT", "15", 600)


#: The URI schemes of Neo4j's Bolt protocol, the one ACE speaks.
BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def get_driver(settings: Neo4jSettings | None = None, *, verify: bool = True) -> "neo4j.Driver":
    """A ``neo4j.Driver`` for the configured server; ConnectionError_ when it cannot be reached.

    With ``verify`` (the default) it connects and authenticates once, so a
    wrong address or password fails here with a clear message.  No message
    carries the password (:mod:`ace_env.redact`).
    """
    settings = settings or neo4j_settings()
    retry = retry_seconds()
    connect = connect_seconds()
    where = redact_url(settings.uri)

    def said(e: BaseException) -> str:
        return redact(" ".join(str(getattr(e, "message", None) or e).split()).rstrip("."), [settings.password])

    if not settings.external and settings.password is None:
        raise ConnectionError_(
            f"No password for the managed Neo4j at {where}: the server has never been started "
            f"in this workspace (ACE_HOME={os.environ.get('ACE_HOME', '~/.ace')}). " + _how_to_fix(settings)
        )
    scheme = settings.uri.partition("://")[0].lower() if "://" in settings.uri else ""
    if scheme not in BOLT_SCHEMES:  # the driver's own http:// support needs aiohttp: a traceback from every command
        raise ConnectionError_(f"Invalid Neo4j address {where[:200]!r}: it is not a Bolt address; give bolt://HOST:7687 "
                               f"or neo4j://HOST:7687 (or +s, +ssc for TLS). {_how_to_fix(settings)}")
    import_driver()
    from neo4j import GraphDatabase
    from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

    auth = (settings.user, settings.password) if settings.password is not None else None
    try:
        # Notifications (e.g. "property key does not exist" on a fresh graph) are
        # hints for interactive use; ACE's named queries run on empty graphs too.
        driver = GraphDatabase.driver(settings.uri, auth=auth, notifications_min_severity="OFF",
                                      max_transaction_retry_time=retry, connection_timeout=connect,
                                      connection_acquisition_timeout=connect)
    except (ValueError, DriverError, Neo4jError) as e:
        raise ConnectionError_(f"Invalid Neo4j address {where!r}: {said(e)}. {_how_to_fix(settings)}") from e
    if not verify:
        return driver
    try:
        driver.verify_connectivity()
    except AuthError as e:
        driver.close()
        raise ConnectionError_(
            f"Neo4j at {where} rejected user {settings.user!r}: {said(e)}. "
            + _how_to_fix(settings)
        ) from e
    except (ServiceUnavailable, DriverError, OSError, Neo4jError) as e:
        driver.close()
        raise ConnectionError_(f"Cannot reach Neo4j at {where} within {connect:g} s (ACE_NEO4J_CONNECT_TIMEOUT): "
                               f"{said(e)}. {_how_to_fix(settings)}") from e
    return driver


_SCHEMA_NAME = re.compile(r"^\s*CREATE\s+(?:CONSTRAINT|(?:RANGE\s+|TEXT\s+)?INDEX)\s+(\w+)\s+IF\s+NOT\s+EXISTS", re.I)


def ensure_schema(driver: "neo4j.Driver", database: str | None = None) -> bool:
    """Apply the schema unless every constraint and index it names exists; True when it ran.

    One round trip instead of one per statement (each constraint is backed by
    an index of the same name, so ``SHOW INDEXES`` lists both).
    """
    database = database or neo4j_settings().database
    names = {m.group(1) for st in queries.statements(SCHEMA_QUERY) if (m := _SCHEMA_NAME.match(st))}
    records, _, _ = driver.execute_query("SHOW INDEXES YIELD name", database_=database, routing_="r")
    if names and names <= {r["name"] for r in records}:
        return False
    apply_schema(driver, database)
    return True


def apply_schema(driver: "neo4j.Driver", database: str | None = None) -> list[str]:
    """Run ``cypher/schema.cypher`` statement by statement; return the statements run.

    Every statement is idempotent, so applying it again changes nothing.  Each
    runs in its own managed write transaction (schema and data statements may
    not share one), so on a cluster it goes to the leader and transient
    errors are retried.
    """

    database = database or neo4j_settings().database
    queries.run(driver, SCHEMA_QUERY, {"default_source": DEFAULT.name}, database=database, write=True)
    return list(queries.load(SCHEMA_QUERY).statements)
