"""Named Cypher queries, loaded from the ``.cypher`` files in ``cypher/``.

Code runs exactly the text an analyst can paste into Neo4j Browser.  Each file
starts with a ``//`` header comment::

    // Purpose: what the query does (may continue on indented lines)
    // Parameters: $task_id (string), $limit (int)      -- or "none"
    // Columns: skill, failures                          -- or "none"
    // Mode: read                                        -- or "write"
    // Required: task_id                                 -- read queries: no default
    // Names: $task_id task                              -- read queries: what a parameter names
    // :params {task_id: "multi_turn_base_0", limit: 20}  -- read queries

Parameters and columns may also continue on the following ``//`` lines.
``Mode:`` decides how a query may be run: :func:`run` refuses a ``write``
query on a read path and sends a ``read`` query with read routing; a file
without a Mode line is refused.  The ``:params`` line is ready to paste into
Neo4j Browser; its values are the defaults of every parameter not listed
under ``Required:`` (whose values are examples).  ``Names:`` says which
parameters name something (``$param kind``, kinds in :data:`NAME_KINDS`; a
list value names one per item): :mod:`ace_graph.names` checks them against
the graph or the enumeration before ``ace query`` or the console runs the
query, so a wrong name is an error listing the nearest valid ones, never an
empty answer.

:func:`run` (with :func:`run_in` inside a caller's transaction) is the one
runner of these files: every store, view and scope function goes through it.
Values only ever go in as ``$params``; ``load`` rejects a file whose body uses
a parameter its header does not declare, and the runner refuses a call that
leaves a declared parameter out or passes one the file does not declare.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from ace_graph import config
from ace_graph.errors import ConfigError, QueryModeError
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_PARAM_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_FIELD_RE = re.compile(
    r"^(purpose|description|parameters|params|columns|returns|mode|required|names)\s*:\s*(.*)$", re.IGNORECASE
)
_PARAMS_LINE_RE = re.compile(r"^:params\s+(\{.*\})\s*$")
_MAP_KEY_RE = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")
_NAMES_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\s+([a-z]+)")
_HINT_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\s*(\(([^()]*(?:\([^()]*\)[^()]*)*)\))?")
# `CALL { ... } IN [n] [CONCURRENT] TRANSACTIONS` runs only in an auto-commit transaction
_IN_TRANSACTIONS_RE = re.compile(r"\bIN\s+(?:\S+\s+)?(?:CONCURRENT\s+)?TRANSACTIONS\b", re.IGNORECASE)
READ = "read"
WRITE = "write"
MODES = (READ, WRITE)

#: The largest integer Neo4j stores (int64): counts and limits passed as parameters must fit it.
INT64_MAX = 2**63 - 1

#: What a parameter may name (a header's ``Names:`` line), checked by :mod:`ace_graph.names`: a stored
#: scope, an experiment with scopes, a policy of $experiment, a skill id, a tool name, a skill or a tool
#: as $level says (``node``), a rollout of $scope (its own id, or the full ``scope/id`` the frontier
#: prints), a stored task key (``source:id``), a level, an environment.
NAME_KINDS = ("scope", "experiment", "policy", "skill", "tool", "node", "rollout", "task", "level", "environment")
#: Kinds that are read beside another parameter of the same query (which must be declared).
NAME_NEEDS = {"node": "level", "rollout": "scope", "policy": "experiment"}

#: Defaults the query console offers for common parameters (the rest start empty).
PARAM_DEFAULTS: dict[str, Any] = {
    "level": "tool",
    "limit": 20,
    "min_support": MIN_SUPPORT,
    "min_lift": MIN_LIFT,
    "min_prereq": 0.6,
}


@dataclass(frozen=True)
class Query:
    """One named query: its text and the facts its header states."""

    name: str
    text: str
    description: str
    params: tuple[str, ...]
    columns: tuple[str, ...]
    path: Path
    mode: str = WRITE
    example: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    hints: dict[str, str] = field(default_factory=dict)  # parameter -> its header's "(int, ...)" text
    names: dict[str, str] = field(default_factory=dict)  # parameter -> what it names (NAME_KINDS)
    statements: tuple[str, ...] = ()  # the text split on line-ending `;` (one item for most files)
    auto_commit: bool = False  # CALL { ... } IN TRANSACTIONS: runs only in an auto-commit transaction

    @property
    def writes(self) -> bool:
        """Whether the header says ``Mode: write``."""
        return self.mode == WRITE

    @property
    def defaults(self) -> dict[str, Any]:
        """Defaults from the ``:params`` line (parameters not listed as required)."""
        return {k: v for k, v in self.example.items() if k not in self.required}

    @property
    def params_line(self) -> str:
        """The ``:params {...}`` line to paste into Neo4j Browser."""
        return ":params {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in self.example.items()) + "}"


def _directory(directory: Path | None) -> Path:
    return Path(directory) if directory is not None else config.CYPHER_DIR


def list_queries(directory: Path | None = None) -> list[str]:
    """Names (file stems) of all ``.cypher`` files, sorted."""
    return sorted(p.stem for p in _directory(directory).glob("*.cypher"))


def read_queries(directory: Path | None = None) -> list[str]:
    """Names of the named queries whose header says ``Mode: read``."""
    return [n for n in list_queries(directory) if not load(n, directory).writes]


def _scan(text: str) -> tuple[str, list[str]]:
    """Strip comments outside strings; return (code, statements split on `;` at line ends)."""
    out: list[str] = []
    i, n = 0, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
        elif c in "'\"`":
            quote = c
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == ";":
            rest = text[i + 1 : (text.find("\n", i) if text.find("\n", i) >= 0 else n)]
            # a `;` ends a statement only when nothing but a comment follows on its line
            if not rest.strip() or rest.strip().startswith("//"):
                out.append("\0")
            else:
                out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    statements = [s.strip() for s in code.split("\0")]
    return code.replace("\0", ";"), [s for s in statements if s]


#: A backtick-quoted name or a string literal, whichever starts first: a quote inside a name (`` (n:`'`) ``)
#: starts no string, so it cannot hide the code after it from the checks (it hid `LOAD CSV` and procedures).
_NAME_OR_STRING_RE = re.compile(r"(`[^`]*`)|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")


def _strings_removed(code: str) -> str:
    """``code`` with every string literal emptied; backtick-quoted names are kept as they are."""
    return _NAME_OR_STRING_RE.sub(lambda m: m.group(1) or "''", code)


def _parse(name: str, path: Path) -> Query:
    raw = path.read_text(encoding="utf-8")
    lines = raw.splitlines()
    header: list[str] = []
    for line in lines:
        if not line.lstrip().startswith("//"):
            break
        header.append(line.lstrip()[2:].strip())
    if not header:
        raise ConfigError(
            f"{path} has no header comment. Start it with `//` lines giving Purpose:, Parameters: and Columns:."
        )
    description: list[str] = []
    params: list[str] | None = None
    columns: list[str] | None = None
    mode: str | None = None
    required: list[str] = []
    example: dict[str, Any] = {}
    param_text: list[str] = []  # the Parameters: section, for each parameter's "(type, ...)" hint
    name_text: list[str] = []  # the Names: section
    current = "purpose"  # the field a continuation line belongs to
    for line in header:
        pm = _PARAMS_LINE_RE.match(line)
        if pm:
            example = _parse_params_line(path, pm.group(1))
            continue
        m = _FIELD_RE.match(line)
        key, value = (m.group(1).lower(), m.group(2).strip()) if m else (current, line)
        if key == "mode":
            mode = value.lower()
            if mode not in MODES:
                raise ConfigError(f"{path}: `Mode: {value}` is not one of {', '.join(MODES)}")
        elif key == "required":
            current = "required"
            required += [r.strip().lstrip("$") for r in value.split(",") if r.strip() and r.strip() != "none"]
        elif key == "names":
            current = "names"
            name_text.append(value)
        elif key in ("parameters", "params"):
            current = "parameters"
            params = (params or []) + _PARAM_RE.findall(value)
            param_text.append(value)
        elif key in ("columns", "returns"):
            current = "columns"
            if value.lower() not in ("", "none", "-"):
                columns = (columns or []) + [c.strip() for c in value.split(",") if c.strip()]
            elif columns is None:
                columns = []
        else:
            current = "purpose"
            if value:
                description.append(value)
    missing = [f for f, v in (("Parameters:", params), ("Columns:", columns), ("Mode:", mode)) if v is None]
    if missing:
        raise ConfigError(f"The header of {path} lacks {' and '.join(missing)} (write `none` when there are none; "
                          "Mode: is `read` or `write`).")
    body = "\n".join(lines[len(header):]).strip()
    code, parts = _scan(body)
    used = tuple(dict.fromkeys(_PARAM_RE.findall(_strings_removed(code))))
    params_t = tuple(dict.fromkeys(params))
    undeclared = [p for p in used if p not in params_t]
    if undeclared:
        raise ConfigError(
            f"{path} uses ${', $'.join(undeclared)} but its header's Parameters: line does not declare "
            f"{'it' if len(undeclared) == 1 else 'them'}; add them to the header."
        )
    stray = sorted((set(example) | set(required)) - set(params_t))
    if stray:
        raise ConfigError(f"{path}: its :params/Required lines name {', '.join(stray)}, which Parameters: does not declare")
    names = _parse_names(path, " ".join(name_text), params_t)
    hints = dict.fromkeys(params_t, "")
    for m in _HINT_RE.finditer(" ".join(param_text)):
        if m.group(1) in hints and not hints[m.group(1)]:
            hints[m.group(1)] = (m.group(3) or "").strip()
    text = body[:-1].rstrip() if body.endswith(";") else body
    return Query(name, text, " ".join(description).strip(), params_t, tuple(columns), path,
                 mode=mode, example=example, required=tuple(required),  # type: ignore[arg-type]  # checked above
                 hints=hints, names=names,
                 statements=tuple(parts) if len(parts) > 1 else (text,),
                 auto_commit=bool(_IN_TRANSACTIONS_RE.search(_strings_removed(code))))


def _parse_names(path: Path, text: str, params: tuple[str, ...]) -> dict[str, str]:
    """``$after node, $scope scope`` -> ``{"after": "node", "scope": "scope"}``, each checked."""
    names: dict[str, str] = {}
    for m in _NAMES_RE.finditer(text):
        param, kind = m.group(1), m.group(2)
        if param not in params:
            raise ConfigError(f"{path}: its Names: line names ${param}, which Parameters: does not declare")
        if kind not in NAME_KINDS:
            raise ConfigError(f"{path}: Names: ${param} {kind}: the kind is not one of {', '.join(NAME_KINDS)}")
        needs = NAME_NEEDS.get(kind)
        if needs and needs not in params:
            raise ConfigError(f"{path}: Names: ${param} {kind} is read beside ${needs}, which the query does not take")
        names[param] = kind
    if text.strip() and text.strip().lower() != "none" and not names:
        raise ConfigError(f"{path}: its Names: line is not `$param kind, ...`: {text}")
    return names


def _parse_params_line(path: Path, text: str) -> dict[str, Any]:
    """``{scope: "a/b/c", limit: 20}`` (Cypher map literal with JSON values) -> a dict."""
    try:
        value = json.loads(_MAP_KEY_RE.sub(lambda m: f'{m.group(1)}"{m.group(2)}":', text))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: its :params line is not a map of JSON values ({e.msg}): {text}") from e
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: its :params line is not a map: {text}")
    return value


@lru_cache(maxsize=None)
def _load_cached(name: str, directory: Path) -> Query:
    path = directory / f"{name}.cypher"
    if not _NAME_RE.match(name) or not path.is_file():
        known = ", ".join(list_queries(directory)) or "(none)"
        raise ConfigError(f"No Cypher query named {name!r} in {directory}. Known queries: {known}.")
    return _parse(name, path)


def load(name: str, directory: Path | None = None) -> Query:
    """The named query (``cypher/<name>.cypher``), parsed once and cached."""
    return _load_cached(name, _directory(directory))


def statements(name: str, directory: Path | None = None) -> list[str]:
    """The statements of a multi-statement file, split on `;` at line ends, comments removed."""
    _, parts = _scan(load(name, directory).text)
    return parts


def clear_cache() -> None:
    """Forget parsed files (after editing them in a running process)."""
    _load_cached.cache_clear()


# --------------------------------------------------------------------------- the runner


def checked(name: str, params: Mapping[str, Any], *, write: bool = False, directory: Path | None = None) -> Query:
    """The named query, once it may run here: a write only where ``write`` allows it, with exactly its parameters."""
    query = load(name, directory)
    if query.writes and not write:
        raise QueryModeError(f"Query {name!r} writes to the graph (its header says Mode: write); it runs only on a "
                             "write path (GraphStore.write), never on a read one (GraphStore.run, the views).")
    unknown = sorted(set(params) - set(query.params))
    if unknown:
        raise ConfigError(f"Query {name!r} takes {', '.join(query.params) or 'no parameters'}; "
                          f"unknown: {', '.join(unknown)}.")
    missing = [p for p in query.params if p not in params]
    if missing:
        raise ConfigError(f"Query {name!r} needs ${', $'.join(missing)}.")
    return query


def _rows(target: Any, text: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    # the one place a named query's text meets its values, which go in as parameters only
    return [record.data() for record in target.run(text, dict(params))]


def run(driver: Any, name: str, params: Mapping[str, Any] | None = None, *, database: str = "neo4j",
        write: bool = False, directory: Path | None = None) -> list[dict[str, Any]]:
    """Run the named query through ``driver`` (a ``neo4j.Driver``); its rows as dicts.

    A query whose header says ``Mode: read`` runs in a read-access session
    inside a read transaction (read routing; Neo4j itself refuses a write
    there); one that says ``Mode: write`` runs only with ``write=True``, in a
    write transaction.  A file of several statements (the schema) runs them in
    order, each in its own transaction (schema changes may not share one); a
    ``CALL { ... } IN TRANSACTIONS`` query runs in an auto-commit transaction,
    as it must.  The rows are the last statement's.
    """
    from neo4j import READ_ACCESS, WRITE_ACCESS

    params = params or {}
    query = checked(name, params, write=write, directory=directory)
    access = WRITE_ACCESS if query.writes else READ_ACCESS
    rows: list[dict[str, Any]] = []
    with driver.session(database=database, default_access_mode=access) as session:
        execute = session.execute_write if query.writes else session.execute_read
        for text in query.statements:
            rows = _rows(session, text, params) if query.auto_commit else execute(_rows, text, params)
    return rows


def run_in(tx: Any, name: str, params: Mapping[str, Any] | None = None, *, write: bool = False,
           directory: Path | None = None) -> list[dict[str, Any]]:
    """Run the named query inside the caller's transaction ``tx`` (several queries, one commit); its rows.

    The same checks as :func:`run`; a ``CALL { ... } IN TRANSACTIONS`` query
    cannot run inside a transaction and is refused.
    """
    params = params or {}
    query = checked(name, params, write=write, directory=directory)
    if query.auto_commit:
        raise ConfigError(f"Query {name!r} commits in batches (CALL {{ ... }} IN TRANSACTIONS), so it cannot run "
                          "inside another transaction; run it with queries.run.")
    rows: list[dict[str, Any]] = []
    for text in query.statements:
        rows = _rows(tx, text, params)
    return rows


# --------------------------------------------------------------------------- parameters typed in a console


def param_kind(hint: str) -> str:
    """``int``, ``float``, ``list`` or ``string``, from a parameter's header hint (:attr:`Query.hints`)."""
    h = hint.lower()
    for kind in ("int", "float", "list"):
        if h.startswith(kind):
            return kind
    return "string"


def coerce_param(value: str, kind: str) -> Any:
    """A console text field's value as the parameter's type; ConfigError when it does not parse."""
    text = value.strip()
    try:
        if kind == "int":
            number = int(text)
            if not -INT64_MAX - 1 <= number <= INT64_MAX:  # the driver cannot send it: an OverflowError traceback
                raise ValueError("outside the 64-bit integers Neo4j stores")
            return number
        if kind == "float":
            return float(text)
        if kind == "list":
            parsed = json.loads(text) if text else []
            if not isinstance(parsed, list):
                raise ValueError("not a JSON list")
            return parsed
    except RecursionError as e:  # a list nested thousands deep, typed into the console or its URL
        raise ConfigError(f"{value[:40]!r}... is not a valid {kind} (nested too deeply)") from e
    except ValueError as e:
        raise ConfigError(f"{value[:200]!r} is not a valid {kind} ({str(e)[:100]}); write e.g. 20, 0.05 or "
                          "[\"a\", \"b\"].") from e
    return value


# --------------------------------------------------------------------------- ad-hoc read queries (`ace cypher`)

#: Procedures an ad-hoc query may call: the graph's own catalogue, which reads the schema and nothing else.
#: Any other procedure may write, reach outside the database or run long, so `ace cypher` refuses it.
ADHOC_PROCEDURES = (
    "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.schema.visualization",
    "db.schema.nodeTypeProperties", "db.schema.relTypeProperties", "dbms.components",
)
#: Seconds an ad-hoc query may run before the server stops it (its transaction times out).
ADHOC_TIMEOUT = 30.0
_CALL_RE = re.compile(r"\bCALL\s+(?![({])(`[^`]*`(?:\s*\.\s*`[^`]*`)*|[A-Za-z_][\w.]*)", re.IGNORECASE)
_LOAD_CSV_RE = re.compile(r"\bLOAD\s+CSV\b", re.IGNORECASE)
_USE_RE = re.compile(r"^\s*USE\s", re.IGNORECASE)
#: Administration commands: ``TERMINATE TRANSACTIONS`` stops other sessions' work (an ingest), and ``SHOW``
#: lists the server's users, settings, procedures and transactions; only the schema's own ``SHOW INDEXES`` and
#: ``SHOW CONSTRAINTS`` read the graph's catalogue, as db.labels() does.
_TERMINATE_RE = re.compile(r"\bTERMINATE\s+TRANSACTIONS?\b", re.IGNORECASE)
_SHOW_RE = re.compile(r"^\s*SHOW\b(?P<what>.*?)(?:\bYIELD\b|\bWHERE\b|\bRETURN\b|$)", re.IGNORECASE | re.DOTALL)
_SCHEMA_SHOW_RE = re.compile(r"\b(?:INDEX|INDEXES|CONSTRAINT|CONSTRAINTS)\b", re.IGNORECASE)


def parse_params_line(text: str) -> dict[str, Any]:
    """The map of a Browser ``:params {...}`` line (``:params {scope: "a/b/c", limit: 20}``); ConfigError when
    it is not a map of JSON values."""
    m = _PARAMS_LINE_RE.match(text.strip())
    if not m:
        raise ConfigError(f"not a `:params {{...}}` line: {text.strip()[:80]!r}")
    return _parse_params_line(Path(":params"), m.group(1))


def adhoc_checked(text: str, params: Mapping[str, Any]) -> str:
    """An ad-hoc query's code (comments removed), once it may run read-only here; ConfigError otherwise.

    Refused: an empty query, several statements, a procedure outside :data:`ADHOC_PROCEDURES`,
    ``LOAD CSV`` (it reads files and URLs), ``USE`` (another database), ``CALL { } IN TRANSACTIONS``,
    administration commands (``TERMINATE TRANSACTIONS``; ``SHOW`` but for indexes and constraints),
    a ``$parameter`` without a value and a value no ``$parameter`` takes.  A write is refused by
    Neo4j itself: the query runs in a read transaction (:func:`run_text`).
    """
    code, parts = _scan(text)
    if not parts:
        raise ConfigError("the query is empty")
    bare = _strings_removed(code)
    if len(parts) > 1 or ";" in bare.strip().rstrip(";"):
        raise ConfigError("one statement at a time: the query has several (separated by `;`)")
    for m in _CALL_RE.finditer(bare):
        name = m.group(1).replace("`", "").replace(" ", "")
        if name.lower() not in {p.lower() for p in ADHOC_PROCEDURES}:
            raise ConfigError(f"procedure {name} refused: a procedure may write, reach outside the graph or run "
                              f"long; an ad-hoc query may call only {', '.join(ADHOC_PROCEDURES)}")
    if _LOAD_CSV_RE.search(bare):
        raise ConfigError("LOAD CSV refused: an ad-hoc query reads the graph only")
    if _USE_RE.search(bare):
        raise ConfigError("USE refused: an ad-hoc query runs on ACE's database only")
    if _IN_TRANSACTIONS_RE.search(bare):
        raise ConfigError("CALL { ... } IN TRANSACTIONS refused: it commits batches, and an ad-hoc query only reads")
    show = _SHOW_RE.match(bare)
    if _TERMINATE_RE.search(bare) or (show and not _SCHEMA_SHOW_RE.search(show.group("what"))):
        raise ConfigError("administration commands refused: an ad-hoc query reads the graph only (of the SHOW "
                          "commands, SHOW INDEXES and SHOW CONSTRAINTS)")
    used = list(dict.fromkeys(_PARAM_RE.findall(bare)))
    missing = [p for p in used if p not in params]
    if missing:
        raise ConfigError(f"the query uses ${', $'.join(missing)}: pass -P {missing[0]}=VALUE"
                          + (" (or a :params line)" if len(missing) == 1 else " for each"))
    unused = sorted(set(params) - set(used))
    if unused:
        raise ConfigError(f"the query takes {', '.join('$' + p for p in used) or 'no parameters'}; "
                          f"not used: {', '.join(unused)}")
    return parts[0]


def run_text(driver: Any, text: str, params: Mapping[str, Any] | None = None, *, database: str = "neo4j",
             timeout: float = ADHOC_TIMEOUT, max_rows: int | None = None,
             warnings: list[str] | None = None) -> tuple[list[str], list[dict[str, Any]], bool]:
    """Run an ad-hoc query read-only: (its columns, up to ``max_rows`` rows as dicts, whether more were left).

    The same path as a named ``Mode: read`` query (:func:`run`): a read-access session, a read
    transaction, values only as parameters; a query that writes is refused by Neo4j there
    (``Neo.ClientError.Statement.AccessMode``).  The transaction times out after ``timeout`` seconds.
    What :func:`adhoc_checked` refuses never reaches the server.  ``warnings``, when given, receives
    the server's warnings about the query (a label, relationship type or property the database has
    never held, a deprecated form): a misspelled name in hand-written Cypher answers an empty result,
    and this is the only sign of it.  The driver turns notifications off (the named queries know
    their names); this session turns them back on at ``WARNING``.
    """
    from neo4j import READ_ACCESS, unit_of_work

    params = dict(params or {})
    statement = adhoc_checked(text, params)

    @unit_of_work(timeout=timeout)
    def work(tx: Any) -> tuple[list[str], list[dict[str, Any]], bool]:
        result = tx.run(statement, params)
        keys = list(result.keys())
        rows: list[dict[str, Any]] = []
        more = False
        for record in result:
            if max_rows is not None and len(rows) >= max_rows:
                more = True
                break
            rows.append(record.data())
        summary = result.consume()
        if warnings is not None:
            warnings[:] = server_warnings(summary)  # a retried transaction reports once
        return keys, rows, more

    with driver.session(database=database, default_access_mode=READ_ACCESS,
                        notifications_min_severity="WARNING") as session:
        return session.execute_read(work)


def server_warnings(summary: Any) -> list[str]:
    """The ``WARNING`` notifications of a result summary, one line each, without GQL's ``warn:`` prefix."""
    out = []
    for status in getattr(summary, "gql_status_objects", None) or ():
        if getattr(status, "is_notification", False) and getattr(status, "raw_severity", None) == "WARNING":
            text = " ".join(str(status.status_description).split())
            out.append(text[len("warn: "):] if text.startswith("warn: ") else text)
    return out
