"""``ace ingest`` and ``ace query``: the skill graph from the command line."""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer

from ace.cli import app
from ace.cli.envcmd import check_show, load_rollout_tasks, show_option
from ace.cli.options import (
    MAX_ROUND,
    budget_options,
    checkpoint_option,
    config_options,
    expand_inputs,
    experiment_option,
    format_option,
    inputs_task_spec,
    json_option,
    policy_option,
    ray_option,
    resolve_scope,
    scope_option,
    strict_option,
    tasks_option,
)
from ace.cli.render import Progress, console, esc, table
from ace_env.environments import environment_names
from ace_env.worker import Budget
from ace_graph import names, queries
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError
from ace_graph.frontier import why_empty
from ace_graph.ingest import check_rollout_ids, ingest_file
from ace_graph.queries import INT64_MAX
from ace_graph.reports import check_scopes
from ace_graph.scopes import check_level, is_deleting, require_experiment, require_scope
from ace_graph.stats import NEAR_SUCCESS
from ace_graph.store import GraphStore
from ace_graph.taskfiles import refuse_changes_to_stored_tasks

#: Parameters that are counts or limits: whole numbers from 0 (min_support, limit) that fit Neo4j's int64.
COUNT_PARAMS = ("min_support", "limit", "min_attempts")
#: Parameters that are shares in [0, 1] (min_lift may go down to -1).
SHARE_PARAMS = {"min_prereq": (0.0, 1.0), "min_lift": (-1.0, 1.0)}
#: Queries that compare scopes ($scopes) and need at least two of them.
COMPARES = ("compare-policies",)


def with_store(fn):
    """Run ``fn(store)`` on a fresh driver for the configured Neo4j, closing it afterwards."""
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        return fn(GraphStore(driver, settings.database))
    finally:
        driver.close()


def _count_lines(path: Path) -> int | None:
    if not stat.S_ISREG(path.stat().st_mode):  # a pipe or /dev/stdin: reading would consume it
        return None
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


@dataclass(frozen=True)
class IngestConfig:
    """How `ace ingest` stores rollouts: their round, batches, writers, ids, near-success and bad lines."""

    round_: Optional[int] = field(default=None, metadata={
        "help": "Round number for capability history (default: from the checkpoint).", "min": 0, "max": MAX_ROUND})
    batch_size: int = field(default=1000, metadata={"help": "Rollouts per transaction.", "min": 1, "max": 1_000_000})
    workers: int = field(default=2, metadata={"help": "Transactions writing batches concurrently.", "min": 1,
                                              "max": 64})
    id_suffix: str = field(default="", metadata={
        "help": "Appended to every rollout id (keeps two files with the same ids apart)."})
    near_success: float = field(default=NEAR_SUCCESS, metadata={
        "help": "Share of oracle steps matched for a failed rollout to count as near-success.", "min": 0.0,
        "max": 1.0})
    skip_invalid: bool = field(default=False, metadata={"help": "Report bad lines and go on instead of stopping.",
                                                         "negatable": False})


@app.command("ingest")
@budget_options()
@config_options(IngestConfig, names={"round_": "--round"}, in_place=True)
def ingest(
    files: list[Path] = typer.Argument(..., help="Rollout files or folders (their *.jsonl files): ACE JSONL, "
                                                   "OpenAI-style messages JSONL, BFCL result files, or τ²-bench "
                                                   "result files (the JSON τ²'s run writes); - reads standard input."),
    experiment: Optional[str] = experiment_option(None),
    policy: Optional[str] = policy_option(None),
    checkpoint: Optional[str] = checkpoint_option(None),
    scope: Optional[str] = scope_option(None, "The scope as E/P/C (instead of -e E -p P -c C)."),
    tasks: Optional[str] = tasks_option(None, note="Default bfcl:all; also tau2:DOMAIN[,DOMAIN...] (τ²-bench). "
                                                   "τ²-bench result files say their domain: leave it out."),
    fmt: str = format_option(),
    strict: bool = strict_option(),
    config: IngestConfig = None,  # type: ignore[assignment]
    show: str = show_option(),
    as_json: bool = json_option("Print the report as JSON."),
    ray: str = ray_option(),
    budget: Budget = None,  # type: ignore[assignment]
) -> None:
    """Verify, tag and store rollouts in the skill graph, scoped to (experiment, policy, checkpoint).

    Give the scope as `--scope E/P/C` or as `-e E -p P -c C`.  Several files
    and folders go into the one scope, in order.  Idempotent: a rollout already
    stored in the scope with the same content is skipped; a rollout id that
    names two different rollouts (in two files, or in a file and the scope) is
    refused before anything is stored. Each batch is one transaction, so an
    interrupted ingest can simply be run again.  Then a per-task table of what
    the scope holds (--show).
    """
    round_, batch_size, workers = config.round_, config.batch_size, config.workers
    id_suffix, near_success, skip_invalid = config.id_suffix, config.near_success, config.skip_invalid
    check_show(show)
    paths = expand_inputs(files, stdin=True)
    tasks, file_policy = inputs_task_spec(paths, tasks, fmt)
    if scope is None and policy is None and file_policy is not None:
        policy = file_policy  # τ² result files name their agent (info.agent_info.llm)
    e, p, c = resolve_scope(scope, experiment, policy, checkpoint)
    task_set = load_rollout_tasks(tasks, budget)

    def work(store):
        key = f"{e}/{p}/{c}"
        if is_deleting(store, key):
            raise ConfigError(f"scope {key!r} is being deleted (a delete stopped part-way); finish it with "
                              f"`ace scope delete {key} --yes` before ingesting into it")
        # one id, one rollout per scope: across the files and against what the scope holds, before anything is stored
        skip = check_rollout_ids(store, paths, key, id_suffix, skip_invalid)
        refuse_changes_to_stored_tasks(store, task_set, tasks)  # an environment's own tasks are checked at load
        reports, rows = [], []
        for i, path in enumerate(paths):
            with Progress(f"ingesting {path.name}", _count_lines(path), disable=as_json) as progress:
                reports.append(ingest_file(
                    store, path, task_set, e, p, c, round_=round_, batch_size=batch_size,
                    near_success=near_success, skip_invalid=skip_invalid, workers=workers, id_suffix=id_suffix,
                    on_read=progress.advance, seed_tasks=i == 0,
                    budget=budget, ray=ray, strict=strict, check_ids=False, skip_lines=skip.get(i),
                ))
        if show != "none" and not as_json:
            rows = store.run("scope-tasks", scope=reports[0].scope, failures_only=show == "failures", limit=INT64_MAX)
        return reports, rows

    reports, rows = with_store(work)
    err = console(stderr=True)
    for r in reports:
        for msg in r.invalid:
            err.print(f"skipped: {esc(msg)}")
    ds = [r.to_dict() for r in reports]
    total = {k: sum(d[k] for d in ds) for k in ("read", "created", "already_stored", "invalid", "steps")}
    total["seconds"] = round(sum(d["seconds"] for d in ds), 3)
    if as_json:
        d = dict(ds[0]) if len(ds) == 1 else {"scope": ds[0]["scope"], **total, "files": ds}
        print(json.dumps(d))
        return
    out = console()
    if rows:
        out.print(table(f"{ds[0]['scope']}: rollouts per task ({show})",
                        ("task", "rollouts", "rewarded", "failed", "partial credit", "failures"),
                        [(r["task_id"], r["rollouts"], r["rewarded"], r["failed"], f"{r['partial_credit']:.2f}",
                          ", ".join(r["attributions"])) for r in rows],
                        right=("rollouts", "rewarded", "failed", "partial credit")))
    files_note = f" from {len(ds)} files" if len(ds) > 1 else ""
    out.print(
        f"{esc(ds[0]['scope'])}: {total['read']} rollouts read{files_note}, {total['created']} stored, "
        f"{total['already_stored']} already stored, {total['invalid']} invalid; "
        f"{total['steps']} steps in {total['seconds']} s"
    )
    if total["already_stored"]:
        out.print("  rollouts already stored in this scope (same ids, same content) were skipped")


def parse_value(text: str, key: str = "") -> Any:
    """A --param value: JSON when it parses (numbers, lists, true/null), else the text itself; a number too
    long for Python to read (over 4,300 digits) is a one-line error."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a byte the terminal's encoding could not decode (argv's surrogate escapes)
        raise ConfigError(f"--param {key}=: the value is not UTF-8 text; Neo4j stores only text") from None
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text
    except ValueError:  # Python's int-str conversion limit: no parameter takes such a number
        raise ConfigError(f"--param {key}=: a number of {len(text):,} characters; no parameter takes more than "
                          "a 64-bit integer") from None
    if not _fits_int64(value):  # the driver cannot send it (an OverflowError traceback from `ace cypher`)
        raise ConfigError(f"--param {key}=: a number that does not fit a 64-bit integer, the largest Neo4j stores")
    return value


def _fits_int64(value: Any) -> bool:
    """Whether every int in a parsed JSON value fits Neo4j's 64-bit integers."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and not -INT64_MAX - 1 <= v <= INT64_MAX:
            return False
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return True


def check_params(name: str, q: queries.Query, params: dict[str, Any]) -> None:
    """Numbers and levels checked at the edge, each with a one-line error."""
    for key, value in params.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise ConfigError(f"{name}: {key} ({len(str(abs(value)))} digits) does not fit a 64-bit integer")
        if isinstance(value, float) and value != value:
            raise ConfigError(f"{name}: {key} is NaN")
    for key in COUNT_PARAMS:
        if key in params:
            v = params[key]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"{name}: {key} must be a whole number >= 0, got {v!r}")
    for key, (lo, hi) in SHARE_PARAMS.items():
        if key in params:
            v = params[key]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= v <= hi:
                raise ConfigError(f"{name}: {key} must be a number in [{lo:g}, {hi:g}], got {v!r}")
    if "level" in params:
        check_level(params["level"])


def _list_queries(as_json: bool) -> None:
    rows = []
    for qname in queries.list_queries():
        q = queries.load(qname)
        if q.writes:
            continue
        rows.append({"name": qname, "parameters": list(q.params), "required": list(q.required),
                     "defaults": q.defaults, "columns": list(q.columns),
                     "purpose": q.description.split(". ")[0], "params_line": q.params_line})
    if as_json:
        print(json.dumps(rows))
        return
    console().print(table(
        "Named read queries (cypher/); run with `ace query NAME --scope E/P/C -P key=value`",
        ("name", "purpose", "required", "defaults", "columns"),
        [(r["name"], r["purpose"], ", ".join(r["required"]) or "-",
          ", ".join(f"{k}={json.dumps(v)}" for k, v in r["defaults"].items()) or "-",
          ", ".join(r["columns"])) for r in rows],
    ))


@dataclass(frozen=True)
class QueryConfig:
    """`ace query`'s parameters, or the list of queries instead of a run."""

    param: Optional[list[str]] = field(default=None, metadata={
        "help": "A parameter as key=value (JSON values allowed); repeatable."})
    list_: bool = field(default=False, metadata={
        "help": "List the named read queries with their parameters, defaults and columns.", "negatable": False})


# -P stands before --scope and --json in the help, --list after them: two in-place groups of QueryConfig's flags
@app.command("query")
@config_options(QueryConfig, include=["param"], names={"param": ("--param", "-P")}, param="given", in_place=True)
@config_options(QueryConfig, include=["list_"], names={"list_": "--list"}, param="listing", in_place=True)
def query(
    name: str = typer.Argument(None, help="A named read query from cypher/ (see --list)."),
    given: QueryConfig = None,  # type: ignore[assignment]
    scope: Optional[str] = scope_option(None, "The scope E/P/C (same as -P scope=E/P/C)."),
    as_json: bool = json_option("Print rows (or, with --list, the queries) as a JSON list."),
    listing: QueryConfig = None,  # type: ignore[assignment]
) -> None:
    """Run a named, read-only Cypher query from cypher/ against the skill graph.

    Each query's defaults come from the `:params` line of its file (shown by
    `--list`); the level defaults to tool. Every parameter that names something
    (a scope, experiment, policy, skill, tool, rollout, task, level; the
    header's Names: line) is checked: an unknown name is an error listing the
    nearest valid ones, never an empty answer. Where the level is not given,
    tool names choose the tool level and skill ids the skill level. A rollout
    may be given as its own id or as the frontier prints it (E/P/C/ID, which
    also gives the scope). Tables fit the terminal (COLUMNS); --json has every
    value. Example:
    `ace query failed-after --scope demo/sim/round-0 -P after=place_order -P skill=get_order_details`.
    """
    param, list_ = given.param or [], listing.list_
    if list_:
        _list_queries(as_json)
        return
    if not name:
        raise ConfigError("Name a query (see `ace query --list`).")
    readable = queries.read_queries()
    if name not in readable and name not in queries.list_queries():
        # Only the read queries are candidates: `ace query` refuses the write ones anyway.
        raise ConfigError(f"no named read query {name!r}; nearest: {', '.join(names.nearest(name, readable))} "
                          f"(`ace query --list` lists all {len(readable)})")
    q = queries.load(name)
    if q.writes:
        raise ConfigError(f"{name!r} writes to the graph (its header says Mode: {q.mode}); "
                          "`ace query` runs read-only queries only.")
    params: dict[str, Any] = {}
    for item in param:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param expects key=value, got {item!r}")
        params[key.strip()] = parse_value(value, key.strip())
    if scope is not None:
        if "scope" in params and params["scope"] != scope:
            raise ConfigError(f"--scope {scope} and -P scope={params['scope']} disagree; pass one")
        params["scope"] = scope
    unknown = sorted(set(params) - set(q.params))
    if unknown:
        raise ConfigError(f"{name} takes {', '.join(q.params) or 'no parameters'}; unknown: {', '.join(unknown)}")
    given = set(params)  # what the user set; a default level may follow the names given (names.check)
    params = names.prepare(q, params)  # a full-form rollout E/P/C/ID also gives the scope
    for p, v in q.defaults.items():
        params.setdefault(p, v)
    for p, kind in q.names.items():  # a list of environments (view-scope-environments): the registry's
        if kind == "environment" and queries.param_kind(q.hints.get(p, "")) == "list":
            params.setdefault(p, environment_names())
    missing = [p for p in q.params if p not in params]
    if missing:
        flag = "--scope E/P/C" if missing[0] == "scope" else f"--param {missing[0]}=..."
        odd = [f"; {p}={params[p]!r} is not a full rollout key E/P/C/ID" for p, k in q.names.items()
               if k == "rollout" and "scope" in missing and "/" in str(params.get(p, ""))]
        raise ConfigError(f"{name} needs parameter(s) {', '.join(missing)} (pass {flag}){''.join(odd[:1])}")
    check_params(name, q, params)
    if isinstance(params.get("scopes"), str):  # -P scopes=E/P/C,E/P/C
        params["scopes"] = [s.strip() for s in params["scopes"].split(",") if s.strip()]

    def work(store):
        params.update(names.check(store, q, params, given))  # every name the header declares, or one error
        if "scopes" in params:
            check_scopes(store, params["scopes"], at_least=2 if name in COMPARES else 1)
        if "scope" in params:
            require_scope(store, params["scope"])
        elif params.get("experiment") is not None:
            require_experiment(store, params["experiment"])
        rows = store.run(name, **params)
        note = None
        if not rows and "scope" in params and "min_support" in params and "level" in params:
            note = why_empty(store, params["scope"], params["level"], params["min_support"])
        return rows, note

    rows, note = with_store(work)
    if note:
        console(stderr=True).print(esc(note))
    if rows and name not in COMPARES and params.get("limit") == len(rows):  # compare-policies' limit counts pairs
        # A full page looks like the whole answer; say that it is the limit's.
        console(stderr=True).print(esc(f"note: {len(rows)} rows is the query's limit (-P limit={params['limit']}); "
                                       "there may be more: raise it with -P limit=N"))
    if as_json:
        print(json.dumps(rows, default=str))
        return
    numbers = [c for c in q.columns if rows and all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
                                                    or r.get(c) is None for r in rows)]
    console().print(table(f"{name} ({len(rows)} rows)", q.columns, [[_fmt(row.get(c)) for c in q.columns] for row in rows],
                          right=numbers))


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return ", ".join(map(str, value[:5])) + (" ..." if len(value) > 5 else "")
    return "" if value is None else str(value)
