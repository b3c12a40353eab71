"""``ace db ...`` (the managed Neo4j server) and ``ace init`` (apply the schema)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import typer

from ace.cli import app
from ace.cli.options import config_options, force_option, json_option
from ace.cli.render import esc
from ace_env.redact import redact_url
from ace_graph.config import neo4j_settings
from ace_graph.db import apply_schema, get_driver
from ace_graph.server import ManagedNeo4j

db_app = typer.Typer(
    help=(
        "Manage the local Neo4j Community server ACE runs in its workspace ($ACE_HOME/neo4j). "
        "Not needed when NEO4J_URI points at an external Neo4j."
    ),
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def _external_uri() -> str | None:
    """NEO4J_URI as ACE may show it: a password written into it is masked."""
    uri = os.environ.get("NEO4J_URI")
    return redact_url(uri) if uri else None


@dataclass(frozen=True)
class StartConfig:
    """How long `ace db start` waits for the managed server."""

    timeout: float = field(default=120.0, metadata={"help": "Seconds to wait for the server to answer on Bolt.",
                                                    "min": 1.0, "max": 3600.0})


@dataclass(frozen=True)
class StopConfig:
    """How long `ace db stop` waits for a clean shutdown."""

    timeout: float = field(default=60.0, metadata={
        "help": "Seconds to wait for a clean shutdown before the server is killed.", "min": 0.0, "max": 3600.0})


@dataclass(frozen=True)
class LogsConfig:
    """Which managed server log `ace db logs` shows, and how much of it."""

    lines: int = field(default=50, metadata={"help": "How many lines to show.", "min": 1, "max": 100_000})
    file: str = field(default="neo4j", metadata={
        "help": "Which log: neo4j (server log), console (JVM output) or debug."})


@db_app.command("install")
def install(
    force: bool = force_option("Fetch the jars again even if this version is installed."),
) -> None:
    """Fetch the pinned Neo4j Community server jars from Maven Central (needs Java 17+ and Maven)."""

    console = _console()
    ManagedNeo4j().install(progress=lambda m: console.print(esc(m)), force=force)


@db_app.command("start")
@config_options(StartConfig)
def start(config: StartConfig = None) -> None:  # type: ignore[assignment]
    """Start the managed Neo4j server (installing it first if needed) and wait until it accepts connections."""
    console = _console()
    if _external_uri():
        console.print(
            f"An external Neo4j is configured (NEO4J_URI={esc(_external_uri())}); ACE uses it, so there is "
            "nothing to start. Unset NEO4J_URI to use the managed server."
        )
        return

    server = ManagedNeo4j()
    if not server.is_installed():
        console.print("Neo4j is not installed in this workspace yet; fetching it first (`ace db install`).")
        server.install(progress=lambda m: console.print(esc(m)))
    with console.status(f"Starting Neo4j on {server.bolt_uri} ..."):
        status = server.start(wait=True, timeout=config.timeout)
    if status.message.startswith("already running"):
        console.print(f"Neo4j is already running (pid {status.pid}) on {esc(status.bolt_uri)}.")
        return
    console.print(f"[green]Neo4j {status.version or ''} is running[/] (pid {status.pid}).")
    console.print(f"  Bolt:    {esc(status.bolt_uri)}")
    console.print(f"  Browser: {esc(status.http_url)}/browser/  (user neo4j)")
    if status.first_start:
        console.print(f"  First start: the generated password is stored in {esc(status.password_file)} (mode 0600).")


@db_app.command("stop")
@config_options(StopConfig)
def stop(config: StopConfig = None) -> None:  # type: ignore[assignment]
    """Stop the managed Neo4j server cleanly (SIGTERM; SIGKILL only after --timeout)."""
    console = _console()
    if _external_uri():
        console.print(f"An external Neo4j is configured (NEO4J_URI={esc(_external_uri())}); ACE does not stop it.")
        return

    status = ManagedNeo4j().stop(timeout=config.timeout)
    console.print(f"Neo4j {esc(status.message)}.")


@db_app.command("status")
def status(
    as_json: bool = json_option("Print the status as one JSON object."),
) -> None:
    """Say whether the managed server is running, with its pid, addresses and version."""

    st = ManagedNeo4j().status()
    data = st.to_dict()
    data["external_uri"] = _external_uri()
    if as_json:
        typer.echo(json.dumps(data))
        return
    console = _console()
    if _external_uri():
        console.print(f"External Neo4j configured: NEO4J_URI={esc(_external_uri())} (ACE uses it).")
    if st.running:
        console.print(f"[green]running[/] pid {st.pid}, Neo4j {st.version or '?'}")
        console.print(f"  Bolt:    {esc(st.bolt_uri)}")
        console.print(f"  Browser: {esc(st.http_url)}/browser/")
    else:
        console.print(f"managed server: not running (would listen on {esc(st.bolt_uri)}); start it with `ace db start`.")


@db_app.command("logs")
@config_options(LogsConfig, names={"lines": ("-n", "--lines")})
def logs(config: LogsConfig = None) -> None:  # type: ignore[assignment]
    """Show the last lines of a managed server log."""

    server = ManagedNeo4j()
    path = server.log_file(config.file)
    lines = server.logs(config.lines, config.file)
    if not lines:
        typer.echo(f"({path} is empty or missing)", err=True)
    for line in lines:
        typer.echo(line)


@app.command("init")
def init() -> None:
    """Apply the graph schema (constraints and indexes) to the configured Neo4j; safe to repeat."""

    settings = neo4j_settings()
    with get_driver(settings) as driver:
        statements = apply_schema(driver, settings.database)
    _console().print(
        f"Schema applied to {esc(settings.uri)} (database {esc(settings.database)}): {len(statements)} statements."
    )
