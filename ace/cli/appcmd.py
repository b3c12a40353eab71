"""``ace app``: start the Streamlit dashboard against the configured Neo4j."""

from __future__ import annotations

import typer

from ace.cli import app
from app import ENTRY


@app.command("app")
def app_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default; 0.0.0.0 exposes it)."),
    port: int = typer.Option(8501, "--port", min=1, max=65535, help="Port to serve the dashboard on."),
    ttl: int = typer.Option(30, "--ttl", min=0, help="Seconds a query result is cached before it is read again."),
) -> None:
    """Start the diagnostic dashboard (Streamlit) on http://HOST:PORT.

    It reads the graph of the configured Neo4j (the managed server of `ace db
    start`, or NEO4J_URI) and never writes to it. A missing server or an empty
    graph gives a page that says what to run. Stop it with Ctrl-C.
    """
    import os
    import sys

    env = {**os.environ, "ACE_APP_TTL": str(ttl)}
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(ENTRY),
        "--server.address", host, "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
        "--global.developmentMode", "false", "--client.toolbarMode", "viewer",
    ]
    typer.echo(f"ACE dashboard on http://{host}:{port} (Ctrl-C stops it)", err=True)
    sys.stderr.flush()
    # `ace app` becomes the Streamlit server (exec, not a child process), so a signal that
    # stops `ace app` stops the server too: no orphaned server left holding old credentials.
    os.execve(sys.executable, cmd, env)
