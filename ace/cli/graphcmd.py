"""``ace ingest`` and ``ace query``: the skill graph from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ace.cli import app, progress_bar
from ace_env.rollouts import load_task_set
from ace_env.sandbox import Budget
from ace_graph import queries
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError, RolloutFormatError
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore

#: Named queries that write; `ace query` runs only the others.
WRITE_PREFIXES = ("ingest-", "upsert-", "schema", "curriculum-upsert")

#: Defaults for parameters the analysis queries share.
DEFAULTS = {"level": "skill", "min_support": 20, "min_lift": 0.05, "limit": 20, "min_prereq": 0.6}


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


@app.command("ingest")
def ingest(
    file: Path = typer.Argument(..., help="Rollouts: ACE JSONL, OpenAI-style messages JSONL, or a BFCL result file."),
    experiment: str = typer.Option(..., "--experiment", "-e", help="Experiment name."),
    policy: str = typer.Option(..., "--policy", "-p", help="Policy (agent) name."),
    checkpoint: str = typer.Option(..., "--checkpoint", "-c", help="Checkpoint name; its last number is the round."),
    tasks: str = typer.Option("bfcl:all", "--tasks", help="bfcl:CATEGORY or a task JSONL file."),
    round_: int = typer.Option(None, "--round", help="Round number for capability history (default: from the checkpoint)."),
    batch_size: int = typer.Option(1000, "--batch-size", min=1, help="Rollouts per transaction."),
    workers: int = typer.Option(2, "--workers", min=1, help="Transactions writing batches concurrently."),
    id_suffix: str = typer.Option("", "--id-suffix", help="Appended to every rollout id (keeps two files with the same ids apart)."),
    near_success: float = typer.Option(0.7, "--near-success", min=0.0, max=1.0,
                                       help="Share of oracle steps matched for a failed rollout to count as near-success."),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Report bad lines and go on instead of stopping."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    call_timeout: float = typer.Option(None, "--call-timeout", help="Seconds one tool call may run before its "
                                       "rollout ends as `timeout` (default 10, env ACE_CALL_TIMEOUT)."),
    memory_limit: int = typer.Option(None, "--memory-limit", help="MiB the verifying worker may grow by before a "
                                     "call ends its rollout as `resource_limit` (default 2048, env ACE_MEMORY_LIMIT_MB)."),
    ray: str = typer.Option(None, "--ray", metavar="ADDRESS",
                            help="Spread verification over a Ray cluster: its address (host:port), or `auto`."),
) -> None:
    """Verify, tag and store rollouts in the skill graph, scoped to (experiment, policy, checkpoint).

    Idempotent: a rollout already stored in the scope is skipped. Each batch is
    one transaction, so an interrupted ingest can simply be run again.
    """
    from rich.console import Console


    if not file.is_file():
        raise RolloutFormatError(f"rollout file {str(file)!r} does not exist")
    task_set = load_task_set(tasks)
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        store = GraphStore(driver, settings.database)
        with progress_bar(disable=as_json) as progress:
            bar = progress.add_task(f"ingesting {file.name}", total=_count_lines(file))
            report = ingest_file(
                store, file, task_set, experiment, policy, checkpoint, round_=round_,
                batch_size=batch_size, near_success=near_success, skip_invalid=skip_invalid, workers=workers,
                id_suffix=id_suffix, budget=Budget.from_env(call_timeout, memory_limit), ray=ray,
                on_progress=lambda n: progress.advance(bar, n),
            )
    finally:
        driver.close()
    for msg in report.invalid:
        Console(stderr=True).print(f"skipped: {msg}", highlight=False)
    if as_json:
        print(json.dumps(report.to_dict()))
    else:
        d = report.to_dict()
        print(
            f"{d['scope']}: {d['read']} rollouts read, {d['created']} stored, {d['already_stored']} already stored, "
            f"{d['invalid']} invalid; {d['steps']} steps in {d['seconds']} s"
        )
        if d["already_stored"]:
            print("  rollouts already stored in this scope (same rollout ids) were skipped; "
                  "if this is a different run, ingest it with --id-suffix or another --checkpoint")


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@app.command("query")
def query(
    name: str = typer.Argument(None, help="A named query from cypher/ (see --list)."),
    param: list[str] = typer.Option([], "--param", "-P", help="A parameter as key=value (JSON values allowed); repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print rows as a JSON list."),
    list_: bool = typer.Option(False, "--list", help="List the named queries with their parameters and columns."),
) -> None:
    """Run a named, read-only Cypher query from cypher/ against the skill graph.

    Defaults: level=skill, min_support=20, min_lift=0.05, limit=20, min_prereq=0.6. Example:
    `ace query weak-compositions -P scope=demo/sim/round-0 -P level=tool`.
    """
    from rich.console import Console
    from rich.table import Table


    console = Console()
    if list_:
        table = Table(title="Named queries (cypher/)")
        for col in ("name", "parameters", "columns", "purpose"):
            table.add_column(col)
        for qname in queries.list_queries():
            if qname.startswith(WRITE_PREFIXES):
                continue
            q = queries.load(qname)
            table.add_row(qname, ", ".join(q.params), ", ".join(q.columns), q.description.split(". ")[0])
        console.print(table)
        return
    if not name:
        raise ConfigError("Name a query (see `ace query --list`).")
    if name.startswith(WRITE_PREFIXES):
        raise ConfigError(f"{name!r} writes to the graph; `ace query` runs read-only queries only.")
    q = queries.load(name)
    params = {}
    for item in param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--param expects key=value, got {item!r}")
        params[key.strip()] = _parse_value(value)
    unknown = sorted(set(params) - set(q.params))
    if unknown:
        raise ConfigError(f"{name} takes {', '.join(q.params) or 'no parameters'}; unknown: {', '.join(unknown)}")
    for p in q.params:
        if p not in params and p in DEFAULTS:
            params[p] = DEFAULTS[p]
    missing = [p for p in q.params if p not in params]
    if missing:
        raise ConfigError(f"{name} needs parameter(s) {', '.join(missing)} (pass --param {missing[0]}=...)")


    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        rows = GraphStore(driver, settings.database).run(name, **params)
    finally:
        driver.close()
    if as_json:
        print(json.dumps(rows, default=str))
        return
    table = Table(title=f"{name} ({len(rows)} rows)")
    for col in q.columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(_fmt(row.get(c)) for c in q.columns))
    console.print(table)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return ", ".join(map(str, value[:5])) + (" ..." if len(value) > 5 else "")
    return "" if value is None else str(value)
