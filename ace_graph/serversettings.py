"""The managed Neo4j server's settings, read from ACE_* variables, and the status it reports.

``ACE_NEO4J_BOLT_PORT`` (7687), ``ACE_NEO4J_HTTP_PORT`` (7474), ``ACE_NEO4J_HEAP`` (2g),
``ACE_NEO4J_PAGECACHE`` (2g), ``ACE_JAVA`` (Java 17+ binary); see :mod:`ace_graph.server` for the server.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ace_graph.errors import ConfigError

_MEMORY_RE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
#: db.transaction.timeout of the managed server: the longest a transaction that names no timeout may run.
TX_TIMEOUT = "30m"


def half_size(size: str) -> str | None:
    """Half of a memory size as ``ACE_NEO4J_HEAP`` writes it (``512m`` -> ``262144k``); None under 1 MiB, the
    least ``db.memory.transaction.max`` takes (a heap that small does not start the JVM anyway)."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    size = size.lower()
    unit = size[-1] if size[-1] in units else ""
    half = int(size[:-1] if unit else size) * units[unit] // 2
    return f"{half // 1024}k" if half >= 1 << 20 else None


# ---------------------------------------------------------------------------
# settings


def _port(var: str, default: int) -> int:
    raw = os.environ.get(var, str(default))
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise ConfigError(f"{var}={raw!r} is not a TCP port; set it to a number from 1 to 65535.")
    return port


def _memory(var: str, default: str) -> str:
    raw = os.environ.get(var, default).strip()
    if not _MEMORY_RE.match(raw):
        raise ConfigError(
            f"{var}={raw!r} is not a memory size; use a number with an optional k/m/g suffix, e.g. 2g or 512m."
        )
    return raw.lower()


def _default_java() -> str:
    if os.environ.get("ACE_JAVA"):
        return os.environ["ACE_JAVA"]
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    return "java"


@dataclass(frozen=True)
class ServerSettings:
    """Ports, memory and Java binary of the managed server (from ACE_* variables)."""

    bolt_port: int = 7687
    http_port: int = 7474
    heap: str = "2g"
    pagecache: str = "2g"
    java: str = "java"

    @classmethod
    def from_env(cls) -> "ServerSettings":
        """Read ACE_NEO4J_BOLT_PORT, ACE_NEO4J_HTTP_PORT, ACE_NEO4J_HEAP, ACE_NEO4J_PAGECACHE, ACE_JAVA."""
        settings = cls(
            bolt_port=_port("ACE_NEO4J_BOLT_PORT", 7687),
            http_port=_port("ACE_NEO4J_HTTP_PORT", 7474),
            heap=_memory("ACE_NEO4J_HEAP", "2g"),
            pagecache=_memory("ACE_NEO4J_PAGECACHE", "2g"),
            java=_default_java(),
        )
        if settings.bolt_port == settings.http_port:
            raise ConfigError(
                f"ACE_NEO4J_BOLT_PORT and ACE_NEO4J_HTTP_PORT are both {settings.bolt_port}; give them different ports."
            )
        return settings


@dataclass
class ServerStatus:
    """What ``start``/``stop``/``status`` report."""

    running: bool
    pid: int | None
    bolt_uri: str
    http_url: str
    version: str | None = None
    message: str = ""
    first_start: bool = False
    password_file: str | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)
