"""The managed local Neo4j Community server.

ACE runs the genuine Neo4j server from Maven-resolved jars: ``install`` copies
the runtime dependencies of ``org.neo4j:neo4j`` (pinned in
``ace_graph/neo4j/pom.xml``) into the workspace, and ``start`` launches the
server entry point the official distribution uses
(``org.neo4j.server.CommunityEntryPoint``) as a detached Java process.

Workspace layout (``$ACE_HOME/neo4j``)::

    lib/            server jars (+ .ace-installed marker)
    conf/neo4j.conf generated at every start from the settings below
    data/ logs/ run/ plugins/ import/
    password        generated on first start, mode 0600
    neo4j.pid       pid of the running server

Settings (environment variables, read by :mod:`ace_graph.serversettings`): ``ACE_NEO4J_BOLT_PORT``
(7687), ``ACE_NEO4J_HTTP_PORT`` (7474), ``ACE_NEO4J_HEAP`` (2g), ``ACE_NEO4J_PAGECACHE`` (2g), ``ACE_JAVA``
(Java 17+ binary); ``ACE_MVN`` (Maven binary).  Bolt and HTTP bind 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import string
import subprocess
import time
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path
from typing import Callable

from ace_env.workspace import ace_home
from ace_graph.errors import ConfigError, ServerError
from ace_graph.serversettings import TX_TIMEOUT, ServerSettings, ServerStatus, half_size

POM_PATH = Path(__file__).resolve().parent / "neo4j" / "pom.xml"


def new_password() -> str:
    """A generated password for the managed server.

    neo4j-admin reads its arguments with picocli: a value that starts with '-'
    would be taken for an option ("Missing required parameter: '<password>'"),
    so the first character is always a letter.
    """
    return secrets.choice(string.ascii_letters) + secrets.token_urlsafe(24)
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
MIN_JAVA = 17
USER = "neo4j"
LOG_FILES = {"neo4j": "neo4j.log", "console": "console.log", "debug": "debug.log"}

# JVM flags the official launcher adds by default (conf/neo4j.conf's
# server.jvm.additional); launching the entry point directly skips them.
_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
)
# Popen objects of servers this Python process launched, so their exit can be
# reaped (a zombie still answers kill(pid, 0)).
_CHILDREN: dict[int, subprocess.Popen] = {}

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    """Default progress callback: say nothing."""


def pinned_version() -> str:
    """The Neo4j version pinned in the packaged pom.xml."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(POM_PATH).getroot().find("m:properties/m:neo4j.version", ns)
    if node is None or not (node.text or "").strip():
        raise ConfigError(f"{POM_PATH} has no <neo4j.version> property; the package data is broken.")
    return node.text.strip()


# ---------------------------------------------------------------------------
# tool checks


def java_version(java: str) -> int:
    """Major version of the given Java binary; ServerError when it cannot run."""
    fix = (
        "Install Java 17 or newer (Debian/Ubuntu: `apt-get install -y openjdk-17-jre-headless`), "
        "or point ACE_JAVA (or JAVA_HOME) at one."
    )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        raise ServerError(f"Java was not found: cannot run {java!r} ({e.strerror or e}). {fix}") from e
    except subprocess.TimeoutExpired as e:
        raise ServerError(f"`{java} -version` did not answer within 60 s. {fix}") from e
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if out.returncode != 0 or not match:
        raise ServerError(f"`{java} -version` failed or printed no version:\n{text.strip()}\n{fix}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise ServerError(f"{java} is Java {major}; Neo4j 5.26 needs Java {MIN_JAVA} or newer. {fix}")
    return major


def _find_mvn() -> str:
    mvn = os.environ.get("ACE_MVN") or shutil.which("mvn")
    if not mvn or not shutil.which(mvn):
        raise ServerError(
            "Maven (`mvn`) was not found; ACE uses it to fetch the Neo4j server jars from Maven Central. "
            "Install it (Debian/Ubuntu: `apt-get install -y maven`) or point ACE_MVN at it."
        )
    return mvn


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pid_alive(pid: int) -> bool:
    proc = _CHILDREN.get(pid)
    if proc is not None:
        if proc.poll() is None:
            return True
        _CHILDREN.pop(pid, None)
        return False
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running: it exists (even as another user's) and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def _tail(path: Path, n: int) -> list[str]:
    try:
        with path.open(errors="replace") as f:
            return [line.rstrip("\n") for line in deque(f, maxlen=n)]
    except FileNotFoundError:
        return []


# ---------------------------------------------------------------------------
# the server


class ManagedNeo4j:
    """One Neo4j Community server living in ``<workspace>`` (default ``$ACE_HOME/neo4j``).

    Creating the object touches nothing but the workspace folder; every method
    reads the pid file and settings afresh, so separate CLI calls agree.
    """

    def __init__(self, workspace: Path | None = None, settings: ServerSettings | None = None):
        self.workspace = Path(workspace) if workspace is not None else ace_home() / "neo4j"
        self.settings = settings or ServerSettings.from_env()
        self.lib_dir = self.workspace / "lib"
        self.conf_dir = self.workspace / "conf"
        self.data_dir = self.workspace / "data"
        self.logs_dir = self.workspace / "logs"
        self.run_dir = self.workspace / "run"
        self.password_file = self.workspace / "password"
        self.pid_file = self.workspace / "neo4j.pid"
        self.console_log = self.logs_dir / "console.log"
        self._marker = self.lib_dir / ".ace-installed"
        self._log_offsets: dict[str, int] = {}

    # -- addresses --------------------------------------------------------

    @property
    def bolt_uri(self) -> str:
        """Bolt address of this server."""
        return f"bolt://127.0.0.1:{self.settings.bolt_port}"

    @property
    def http_url(self) -> str:
        """HTTP address (Neo4j Browser at ``/browser/``)."""
        return f"http://127.0.0.1:{self.settings.http_port}"

    def read_password(self) -> str | None:
        """The generated password, or None before the first start."""
        try:
            return self.password_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    # -- install ----------------------------------------------------------

    def _install_stamp(self) -> str:
        digest = hashlib.sha256(POM_PATH.read_bytes()).hexdigest()[:16]
        return f"neo4j {pinned_version()} pom {digest}"

    def is_installed(self) -> bool:
        """Whether lib/ holds the jars of the pinned pom."""
        try:
            return self._marker.read_text().strip() == self._install_stamp()
        except FileNotFoundError:
            return False

    def install(self, progress: Progress = _quiet, force: bool = False) -> str:
        """Fetch the pinned server jars into lib/ with Maven; skip when already there."""
        version = pinned_version()
        if self.is_installed() and not force:
            progress(f"Neo4j {version} already installed in {self.lib_dir}")
            return "already installed"
        java_version(self.settings.java)
        mvn = _find_mvn()
        build = self.workspace / "maven"
        build.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(POM_PATH, build / "pom.xml")
        partial = self.workspace / "lib.partial"
        shutil.rmtree(partial, ignore_errors=True)
        progress(f"Resolving Neo4j {version} from Maven Central (cached in ~/.m2)...")
        cmd = [
            mvn, "-B", "-q", "-f", str(build / "pom.xml"), "dependency:copy-dependencies",
            f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
        ]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=build, timeout=1800)
        except subprocess.TimeoutExpired as e:
            raise ServerError("Maven did not finish within 30 minutes; check network access to Maven Central.") from e
        if out.returncode != 0:
            lines = (out.stdout + out.stderr).splitlines()
            errors = [l for l in lines if "[ERROR]" in l] or lines
            shown = "\n".join(errors[-15:])
            raise ServerError(
                f"Maven could not resolve the Neo4j {version} server jars (exit {out.returncode}):\n{shown}\n"
                "Check network access to Maven Central (proxy settings go in ~/.m2/settings.xml), "
                f"then rerun `ace db install`. Full command: {' '.join(cmd)}"
            )
        jars = list(partial.glob("*.jar"))
        if not any(j.name == f"neo4j-{version}.jar" for j in jars):
            raise ServerError(f"Maven finished but neo4j-{version}.jar is not among the {len(jars)} jars in {partial}.")
        if self.lib_dir.is_symlink() or self.lib_dir.is_file():
            self.lib_dir.unlink()
        else:
            shutil.rmtree(self.lib_dir, ignore_errors=True)
        partial.rename(self.lib_dir)
        self._marker.write_text(self._install_stamp() + "\n")
        progress(f"Installed Neo4j {version} ({len(jars)} jars) in {self.lib_dir}")
        return "installed"

    # -- configuration ----------------------------------------------------

    def render_conf(self) -> str:
        """The neo4j.conf text for the current settings."""
        s = self.settings
        lines = [
            "# Generated by ACE at every `ace db start`; edits here are overwritten.",
            "# Change ports/memory with ACE_NEO4J_BOLT_PORT, ACE_NEO4J_HTTP_PORT, ACE_NEO4J_HEAP, ACE_NEO4J_PAGECACHE.",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            "server.bolt.enabled=true",
            f"server.bolt.listen_address=127.0.0.1:{s.bolt_port}",
            f"server.bolt.advertised_address=127.0.0.1:{s.bolt_port}",
            "server.http.enabled=true",
            f"server.http.listen_address=127.0.0.1:{s.http_port}",
            f"server.http.advertised_address=127.0.0.1:{s.http_port}",
            "server.https.enabled=false",
            f"server.memory.heap.initial_size={s.heap}",
            f"server.memory.heap.max_size={s.heap}",
            f"server.memory.pagecache.size={s.pagecache}",
            "dbms.security.auth_enabled=true",
            "dbms.usage_report.enabled=false",
            # The graph is derived data (rebuilt from rollouts), so transaction logs are kept only for
            # crash recovery: small files, two kept, pruned at a checkpoint every 5 minutes. Neo4j's
            # defaults (256 MiB preallocated per database, kept 2 days) filled CI's disk with 1.3 GB.
            "db.tx_log.rotation.size=64M",
            "db.tx_log.rotation.retention_policy=2 files",
            "db.checkpoint.interval.time=5m",
            # Guards against a runaway query (issue 35): a transaction that names no timeout of its own ends
            # after TX_TIMEOUT (ACE's reads name theirs; its longest writes, a 60,000-rollout scope
            # delete, take minutes), and one transaction may hold at most half the heap, so a huge
            # collect() or sort fails alone instead of starving the others (all of them together stay
            # under Neo4j's own 70 % of the heap, dbms.memory.transaction.total.max).
            f"db.transaction.timeout={TX_TIMEOUT}",
            *([f"db.memory.transaction.max={half}"] if (half := half_size(s.heap)) else []),
            f"server.directories.data={self.data_dir}",
            f"server.directories.logs={self.logs_dir}",
            f"server.directories.run={self.run_dir}",
            f"server.directories.plugins={self.workspace / 'plugins'}",
            f"server.directories.import={self.workspace / 'import'}",
        ]
        return "\n".join(lines) + "\n"

    def write_conf(self) -> Path:
        """Write conf/neo4j.conf and create the folders it names."""
        for d in (self.conf_dir, self.data_dir, self.logs_dir, self.run_dir,
                  self.workspace / "plugins", self.workspace / "import"):
            d.mkdir(parents=True, exist_ok=True)
        path = self.conf_dir / "neo4j.conf"
        path.write_text(self.render_conf())
        return path

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.workspace)
        env["NEO4J_CONF"] = str(self.conf_dir)
        return env

    def _classpath(self) -> str:
        return f"{self.lib_dir}/*{os.pathsep}{self.workspace / 'plugins'}/*"

    # -- process state ----------------------------------------------------

    def _read_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if not _pid_alive(pid):
            return None
        try:  # guard against pid reuse: the process must be our server
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return pid
        if ENTRY_POINT in cmdline and str(self.workspace) in cmdline:
            return pid
        return None

    def _server_version(self, timeout: float = 5.0) -> str | None:
        password = self.read_password()
        if password is None:
            return None
        from neo4j import GraphDatabase

        try:
            with GraphDatabase.driver(
                self.bolt_uri, auth=(USER, password), connection_timeout=timeout, max_connection_lifetime=60
            ) as driver:
                agent = driver.get_server_info().agent  # "Neo4j/5.26.30"
                return agent.split("/", 1)[-1]
        except Exception:  # status is best-effort: an unreachable server has no version
            return None

    def status(self) -> ServerStatus:
        """Whether the server runs, its pid, addresses and version (asked over Bolt)."""
        pid = self._read_pid()
        if pid is None:
            return ServerStatus(False, None, self.bolt_uri, self.http_url, message="not running")
        return ServerStatus(
            True, pid, self.bolt_uri, self.http_url, version=self._server_version(),
            message="running", password_file=str(self.password_file),
        )

    def log_file(self, which: str = "neo4j") -> Path:
        """Path of a log: ``neo4j`` (server log), ``console`` (JVM output) or ``debug``."""
        if which not in LOG_FILES:
            raise ConfigError(f"Unknown log {which!r}; choose one of {', '.join(LOG_FILES)}.")
        return self.logs_dir / LOG_FILES[which]

    def logs(self, n: int = 50, which: str = "neo4j") -> list[str]:
        """The last ``n`` lines of a server log (see ``log_file``)."""
        return _tail(self.log_file(which), n)

    def _lines_since_start(self, which: str) -> list[str]:
        """Log lines written since this object last launched the server (all lines otherwise)."""
        path = self.log_file(which)
        offset = self._log_offsets.get(which)
        if offset is None:
            return self.logs(20, which)
        try:
            with path.open("rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def _failure(self, what: str, fix: str) -> ServerError:
        parts = [what]
        for which in ("console", "neo4j"):
            lines = [l for l in self._lines_since_start(which)[-20:]
                     if l.strip() and not l.startswith("==== ace db start")]
            if lines:
                parts.append(f"Last lines of {self.log_file(which)}:\n" + "\n".join(lines))
        parts.append(f"More detail in {self.log_file('debug')}.")
        parts.append(fix)
        return ServerError("\n".join(parts))

    # -- start / stop -----------------------------------------------------

    def _set_initial_password(self) -> bool:
        """Create the password on first start; return True when this is the first start."""
        if self.read_password() is not None:
            return False
        if (self.data_dir / "databases" / "system").exists():
            raise ServerError(
                f"The server in {self.workspace} was initialised before, but its password file "
                f"{self.password_file} is missing, so ACE cannot log in. Restore the file, or delete "
                f"{self.data_dir} to start over with an empty database."
            )
        password = new_password()
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        os.chmod(self.password_file, 0o600)
        # Never on a command line (visible to every user in `ps`): neo4j-admin is a
        # picocli program, and picocli reads arguments from an `@file`, so the
        # password goes into a 0600 file of this workspace for the command's
        # lifetime only.  token_urlsafe's alphabet needs no quoting there.
        args_file = self.workspace / ".initial-password.args"
        fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        cmd = [self.settings.java, "-cp", self._classpath(), ADMIN_TOOL, "dbms", "set-initial-password", f"@{args_file}"]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, env=self._env(), cwd=self.workspace, timeout=300)
        finally:
            args_file.unlink(missing_ok=True)
        if out.returncode != 0:
            self.password_file.unlink(missing_ok=True)
            raise ServerError(
                f"neo4j-admin could not set the initial password (exit {out.returncode}):\n"
                f"{(out.stdout + out.stderr).strip()[-2000:]}\n"
                "Rerun `ace db install --force` if the jars are damaged."
            )
        return True

    def start(self, wait: bool = True, timeout: float = 120.0) -> ServerStatus:
        """Start the server (no-op when running); wait until it answers on Bolt."""
        pid = self._read_pid()
        if pid is not None:
            st = self.status()
            st.message = f"already running (pid {pid})"
            return st
        if not self.is_installed():
            raise ServerError(
                f"Neo4j {pinned_version()} is not installed in {self.lib_dir}. Run `ace db install` first."
            )
        java_version(self.settings.java)
        for name, port, var in (
            ("Bolt", self.settings.bolt_port, "ACE_NEO4J_BOLT_PORT"),
            ("HTTP", self.settings.http_port, "ACE_NEO4J_HTTP_PORT"),
        ):
            if not _port_free(port):
                raise ServerError(
                    f"Cannot start Neo4j: the {name} port 127.0.0.1:{port} is already in use by another program "
                    f"(another Neo4j?). Stop that program, or choose a free port with {var}=<port>."
                )
        self.write_conf()
        first = self._set_initial_password()
        cmd = [
            self.settings.java,
            f"-Xms{self.settings.heap}",
            f"-Xmx{self.settings.heap}",
            *_JVM_FLAGS,
            "-cp", self._classpath(),
            ENTRY_POINT,
            f"--home-dir={self.workspace}",
            f"--config-dir={self.conf_dir}",
        ]
        for which in LOG_FILES:
            path = self.log_file(which)
            self._log_offsets[which] = path.stat().st_size if path.exists() else 0
        log = self.console_log.open("ab")
        log.write(f"\n==== ace db start {time.strftime('%Y-%m-%d %H:%M:%S')} ====\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.workspace, env=self._env(), start_new_session=True,
            )
        finally:
            log.close()
        _CHILDREN[proc.pid] = proc
        self.pid_file.write_text(f"{proc.pid}\n")
        status = ServerStatus(
            True, proc.pid, self.bolt_uri, self.http_url, message="started", first_start=first,
            password_file=str(self.password_file),
        )
        if wait:
            status.version = self._wait_ready(proc.pid, timeout)
        return status

    def _wait_ready(self, pid: int, timeout: float) -> str:
        """Poll Bolt until the server answers; ServerError if it dies or times out."""
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError

        password = self.read_password()
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                self.pid_file.unlink(missing_ok=True)
                raise self._failure(
                    "Neo4j exited during startup.",
                    "Fix the cause shown above (a port in use, too little memory for ACE_NEO4J_HEAP/"
                    "ACE_NEO4J_PAGECACHE, a damaged store), then run `ace db start` again.",
                )
            try:
                with GraphDatabase.driver(self.bolt_uri, auth=(USER, password), connection_timeout=3) as driver:
                    return driver.get_server_info().agent.split("/", 1)[-1]
            except AuthError as e:
                raise self._failure(
                    f"Neo4j at {self.bolt_uri} refused the password stored in {self.password_file}: {e}",
                    "The store was initialised with another password. Restore the right password file, or "
                    f"stop the server (`ace db stop`) and delete {self.data_dir} to start over.",
                ) from e
            except Exception as e:  # not listening yet
                last = e
            time.sleep(0.5)
        raise self._failure(
            f"Neo4j (pid {pid}) did not answer on {self.bolt_uri} within {timeout:.0f} s (last error: {last}).",
            "It may still be starting on a slow machine: check `ace db status` in a moment, or "
            "`ace db stop` and start again with a longer --timeout.",
        )

    def stop(self, timeout: float = 60.0) -> ServerStatus:
        """Stop with SIGTERM and wait for a clean shutdown; SIGKILL only after ``timeout``."""
        pid = self._read_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return ServerStatus(False, None, self.bolt_uri, self.http_url, message="not running")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _pid_alive(pid):
            time.sleep(0.2)
        message = f"stopped (pid {pid})"
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            while _pid_alive(pid):
                time.sleep(0.1)
            message = (
                f"killed (pid {pid}): it did not shut down within {timeout:.0f} s of SIGTERM, so it got SIGKILL; "
                "Neo4j will run recovery on the next start"
            )
        _CHILDREN.pop(pid, None)
        self.pid_file.unlink(missing_ok=True)
        return ServerStatus(False, None, self.bolt_uri, self.http_url, message=message)
