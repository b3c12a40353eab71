"""``ace app``: start the Streamlit dashboard against the configured Neo4j."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app
from ace.cli.options import config_options
from ace_graph.errors import ConfigError
from app import ENTRY

#: Most files `--metrics` takes.
MAX_METRICS = 100


def metrics_inputs(files: list[Path]) -> list[str]:
    """The --metrics files as absolute paths of regular files (links resolved); a one-line error otherwise.

    The dashboard lists these beside the metrics files under the workspace's runs/ and reads nothing else.
    """
    if len(files) > MAX_METRICS:
        raise ConfigError(f"--metrics takes at most {MAX_METRICS} files, not {len(files)}")
    out = []
    for given in files:
        path = Path(given).resolve()
        try:
            mode = os.stat(path).st_mode
        except OSError as e:
            raise ConfigError(f"--metrics {str(given)!r}: {e.strerror}") from e
        if not stat.S_ISREG(mode):
            raise ConfigError(f"--metrics {str(given)!r} is not a regular file (a metrics file is JSONL, one "
                              "object per step)")
        if not os.access(path, os.R_OK):
            raise ConfigError(f"--metrics {str(given)!r} cannot be read (permission denied)")
        out.append(str(path))
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class AppConfig:
    """Where `ace app` serves the dashboard, how long it caches, and the metrics files it lists."""

    host: str = field(default="127.0.0.1", metadata={
        "help": "Address to bind (loopback by default; 0.0.0.0 exposes it)."})
    port: int = field(default=8501, metadata={"help": "Port to serve the dashboard on.", "min": 1, "max": 65_535})
    ttl: int = field(default=30, metadata={"help": "Seconds a query result is cached before it is read again.",
                                           "min": 0, "max": 86_400})
    metrics: Optional[list[Path]] = field(default=None, metadata={"help": (
        "A training metrics file (JSONL) outside the workspace's runs/ for the Training page to list as well; "
        "repeatable. The page lists only these and runs/**/*metrics*.jsonl.")})


@app.command("app")
@config_options(AppConfig)
def app_cmd(config: AppConfig = None) -> None:  # type: ignore[assignment]
    """Start the diagnostic dashboard (Streamlit) on http://HOST:PORT.

    It reads the graph of the configured Neo4j (the managed server of `ace db
    start`, or NEO4J_URI) and never writes to it. A missing server or an empty
    graph gives a page that says what to run. The only files it reads are the
    training metrics under the workspace's runs/ and those given with
    --metrics; a visitor names none. Stop it with Ctrl-C.
    """
    import sys

    host, port = config.host, config.port
    env = {**os.environ, "ACE_APP_TTL": str(config.ttl),
           "ACE_APP_METRICS": json.dumps(metrics_inputs(config.metrics or []))}
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
