"""``ace cypher``: an ad-hoc, read-only Cypher query against the skill graph."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer

from ace.cli import app
from ace.cli.graphcmd import parse_value
from ace.cli.options import check_input, config_options, json_option
from ace.cli.render import console, esc, table
from ace_graph import queries
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver, within
from ace_graph.errors import ConfigError

#: The Neo4j error code a write in a read transaction raises.
ACCESS_MODE = "Neo.ClientError.Statement.AccessMode"


#: The longest query text `ace cypher` reads (argument, file or standard input): ACE's longest named query is
#: under 10 KB; `ace cypher - < /dev/zero` read until memory ran out.
MAX_QUERY_BYTES = 1 << 20


#: Seconds past --timeout that `ace cypher` waits for Neo4j's answer (the server's "timed out" reply, or
#: the rows) before it gives up on its own: Neo4j checks a transaction's timeout between steps, and a
#: computation inside one expression (`reduce()` over `range(1, 10000000)` growing a string) is not
#: interrupted, so without this the command waited as long as the server computed (hours).
CLIENT_GRACE_S = 5.0


def _decoded(data: bytes, where: str) -> str:
    if len(data) > MAX_QUERY_BYTES:
        raise ConfigError(f"{where} holds more than {MAX_QUERY_BYTES // 1024} KiB; a Cypher query is at most "
                          f"{MAX_QUERY_BYTES // 1024} KiB (pass values as parameters, -P key=value)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where} is not UTF-8 text ({e.reason})") from e


def read_query(text: Optional[str], file: Optional[Path]) -> str:
    """The query's text: the argument, ``-`` (standard input) or ``-f FILE``; exactly one of them, at most
    :data:`MAX_QUERY_BYTES` (only that much more is read, so an endless input ends in one line)."""
    if text is not None and file is not None:
        raise ConfigError("give the query once: as an argument, as `-` (standard input) or with -f FILE")
    if file is not None:
        if not check_input(file, "query file").is_file():  # a FIFO or a device would block or never end
            raise ConfigError(f"query file {str(file)!r} is not a regular file")
        with open(file, "rb") as f:
            return _decoded(f.read(MAX_QUERY_BYTES + 1), f"query file {str(file)!r}")
    if text is None:
        raise ConfigError("give a query: `ace cypher 'MATCH ... RETURN ...'`, `-f FILE` or `-` to read standard input")
    if text == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream (a test's): read as text, within the same bound
            return _decoded(sys.stdin.read(MAX_QUERY_BYTES + 1).encode("utf-8"), "standard input")
        return _decoded(stream.read(MAX_QUERY_BYTES + 1), "standard input")
    return _decoded(text.encode("utf-8", "surrogateescape"), "the query")


def split_params_lines(text: str) -> tuple[str, dict[str, Any]]:
    """(the query without its ``:params {...}`` lines, the parameters those lines give).

    A file pasted from the docs or a ``cypher/`` header may carry Browser's ``:params`` line; its values
    are the query's defaults here, and -P overrides them.
    """
    params: dict[str, Any] = {}
    kept = []
    for line in text.splitlines():
        if line.strip().startswith(":params"):
            params.update(queries.parse_params_line(line))
        elif line.strip().startswith(":"):
            raise ConfigError(f"{line.strip()[:40]!r} is a Neo4j Browser command, not Cypher; "
                              "the one `ace cypher` reads is `:params {...}`")
        else:
            kept.append(line)
    return "\n".join(kept), params


def parse_params(items: list[str]) -> dict[str, Any]:
    """``-P key=value`` items as a dict (values parsed as in ``ace query``: JSON when they parse)."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param expects key=value, got {item!r}")
        params[key.strip()] = parse_value(value)
    return params


def _neo4j_message(e: Exception) -> str:
    """One line from a Neo4j error: a write is named as such; anything else is the server's first line."""
    code = getattr(e, "code", None) or ""
    message = (getattr(e, "message", None) or str(e)).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if code == ACCESS_MODE:
        return "refused: `ace cypher` only reads, and this query writes to the graph (nothing was written)"
    if "TransactionTimedOut" in code or "Terminated" in code:
        return "the query ran past --timeout and Neo4j stopped it (raise --timeout, or narrow the query)"
    return f"Neo4j: {message} ({code or type(e).__name__})"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return "" if value is None else str(value)


@dataclass(frozen=True)
class CypherConfig:
    """Where `ace cypher` reads its query from, its parameters, and its limits."""

    file: Optional[Path] = field(default=None, metadata={"help": "Read the query from this file."})
    param: Optional[list[str]] = field(default=None, metadata={
        "help": "A parameter as key=value (JSON values allowed, as in `ace query`); repeatable."})
    timeout: float = field(default=queries.ADHOC_TIMEOUT, metadata={
        "help": "Seconds the query may run before Neo4j stops it; the command gives up 5 s later in any case.",
        "min": 0.1, "max": 3600.0})
    max_rows: int = field(default=1000, metadata={"help": "Most rows printed; a note says when more were left.",
                                                  "min": 1, "max": 10_000_000})


@app.command("cypher")
@config_options(CypherConfig, names={"file": ("--file", "-f"), "param": ("--param", "-P")}, in_place=True)
def cypher(
    query: Optional[str] = typer.Argument(None, help="The Cypher query, or `-` to read it from standard input."),
    config: CypherConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print the rows as a JSON list of objects."),
) -> None:
    """Run an ad-hoc, read-only Cypher query against the skill graph.

    It runs like a named query of `ace query`: a read transaction (a query that
    writes is refused by Neo4j and nothing is written), values only as
    parameters (`$name`, given with -P name=value or a `:params {...}` line in
    the text), under a time limit.  Procedures other than the schema's catalogue
    (db.labels, db.relationshipTypes, db.propertyKeys, db.schema.*,
    dbms.components), LOAD CSV and USE are refused.  Neo4j's warnings (a label,
    relationship type or property the graph has never held) go to stderr.
    docs/graph.md describes every label, relationship and property.  Example:
    `ace cypher 'MATCH (s:Scope) RETURN s.key AS scope, s.rollouts AS rollouts'`.
    """
    timeout, max_rows = config.timeout, config.max_rows
    text, params = split_params_lines(read_query(query, config.file))
    params.update(parse_params(config.param or []))
    queries.adhoc_checked(text, params)  # refused before any connection
    settings = neo4j_settings()
    driver = get_driver(settings)
    warnings: list[str] = []
    gave_up = False
    try:
        columns, rows, more = within(timeout + CLIENT_GRACE_S, queries.run_text, driver, text, params,
                                     database=settings.database, timeout=timeout, max_rows=max_rows,
                                     warnings=warnings)
    except TimeoutError as e:
        gave_up = True
        raise ConfigError(
            f"the query ran past --timeout ({timeout:g} s) and Neo4j did not stop it within {CLIENT_GRACE_S:g} s "
            "more; Neo4j was told to stop it, but a computation inside one expression (e.g. reduce() over a huge "
            "range) is not interrupted and may keep one CPU busy until it ends or the server restarts "
            "(`ace db stop`, `ace db start`)") from e
    except Exception as e:
        if type(e).__module__.split(".")[0] != "neo4j":
            raise
        raise ConfigError(_neo4j_message(e)) from e
    finally:
        if not gave_up:  # the abandoned call still holds its connection; the process's exit closes it
            driver.close()
    for warning in warnings:  # e.g. a misspelled label: the rows are empty and this says why
        console(stderr=True).print(esc(f"warning: Neo4j: {warning}"))
    if more:
        console(stderr=True).print(esc(f"note: only the first {max_rows} rows are shown (--max-rows); more were left"))
    if as_json:
        print(json.dumps(rows, default=str))
        return
    console().print(table(f"{len(rows)} row{'s' if len(rows) != 1 else ''}{' (more left)' if more else ''}",
                          columns, [[_cell(row.get(c)) for c in columns] for row in rows]))
