"""``ace env replay`` and ``ace verify``: the BFCL environment and the verifier."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import typer

from ace.cli import app, progress_bar
from ace_env import bfcl
from ace_env.formats import read_any
from ace_env.rollouts import load_task_set
from ace_env.sandbox import Budget, LineError
from ace_env.scaleout import verifier_for
from ace_env.verifier import ground_truth_rollout, replay_oracle, verify
from ace_graph.errors import RolloutFormatError

env_app = typer.Typer(help="Executable tool environments (BFCL multi-turn).", no_args_is_help=True)
app.add_typer(env_app, name="env")


@env_app.command("replay")
def replay(
    environment: str = typer.Argument("bfcl", help="The environment; only `bfcl` for now."),
    category: str = typer.Option(
        "all", "--category", "-c", help="base, long_context, miss_func, miss_param, or all."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Replay every task's ground truth through the safe executor and the verifier.

    Each task's oracle is computed afresh (not from the cache), then the ground
    truth is verified against it.  A task passes when its ground truth executes
    without an error and the verifier gives it reward 1.
    """

    if environment != "bfcl":
        raise typer.BadParameter(f"unknown environment {environment!r}; only 'bfcl' is available")
    tasks = bfcl.load_tasks(category)
    passed = failed = errors = 0
    failures: list[str] = []
    start = time.perf_counter()
    with progress_bar(disable=as_json) as progress:
        bar = progress.add_task(f"replaying bfcl:{category}", total=len(tasks))
        for task in tasks:
            oracle = replay_oracle(task)
            if oracle.errors:
                errors += 1
                failures.append(f"{task.id}: {oracle.errors[0]}")
            verdict = verify(task, ground_truth_rollout(task), oracle=oracle)
            if verdict.reward == 1.0 and not oracle.errors:
                passed += 1
            else:
                failed += 1
                if not oracle.errors:
                    failures.append(f"{task.id}: {verdict.attribution}: {verdict.detail}")
            progress.advance(bar)
    elapsed = time.perf_counter() - start
    result = {
        "tasks": len(tasks),
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "tasks_per_s": round(len(tasks) / elapsed, 1) if elapsed > 0 else None,
    }
    if as_json:
        print(json.dumps(result))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"BFCL multi-turn replay ({category})")
        for col in result:
            table.add_column(col, justify="right")
        table.add_row(*(str(v) for v in result.values()))
        Console().print(table)
        for line in failures[:20]:
            print(f"  {line}", file=sys.stderr)
    if failed:
        raise typer.Exit(1)


@app.command("verify")
def verify_cmd(
    tasks: str = typer.Option(..., "--tasks", help="bfcl:CATEGORY or a task JSONL file."),
    rollouts: Path = typer.Option(
        ..., "--rollouts", help="Rollouts: ACE JSONL {rollout_id, task_id, turns}, OpenAI-style messages, or a BFCL result file."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON verdict per rollout on stdout."),
    skip_invalid: bool = typer.Option(
        False, "--skip-invalid", help="Report bad lines on stderr and go on instead of stopping."
    ),
    call_timeout: float = typer.Option(
        None, "--call-timeout", help="Seconds one tool call may run before its rollout ends as `timeout` "
        "(default 10, env ACE_CALL_TIMEOUT)."),
    memory_limit: int = typer.Option(
        None, "--memory-limit", help="MiB the verifying worker may grow by before a call ends its rollout as "
        "`resource_limit` (default 2048, env ACE_MEMORY_LIMIT_MB)."),
    ray: str = typer.Option(
        None, "--ray", help="Spread verification over a Ray cluster: its address (host:port), or `auto`.",
        metavar="ADDRESS"),
) -> None:
    """Verify rollouts against their tasks' oracles.

    Each verdict has reward (0/1), partial_credit, the first failing turn and
    step, and an attribution (wrong_tool, wrong_argument, tool_not_offered,
    malformed_call, state_diverged, missing_output, acted_without_need,
    stopped_early; timeout and resource_limit when a tool call goes over its
    budget).  Every tool call runs in a watched worker process under a
    wall-clock and a memory budget; a call over budget ends only its rollout.
    """

    task_set = load_task_set(tasks)
    budget = Budget.from_env(call_timeout, memory_limit)
    bad: list[str] = []
    n = rewarded = 0
    kinds: Counter[str] = Counter()
    with verifier_for(task_set, budget, ray) as bv:
        for r, verdict in bv.verify_stream(read_any(rollouts, skip_invalid=skip_invalid, errors=bad)):
            if isinstance(verdict, LineError):
                message = f"{rollouts}: line {r.line}: {verdict.message}"
                if not skip_invalid:
                    raise RolloutFormatError(message)
                bad.append(message)
                continue
            n += 1
            rewarded += verdict.reward == 1.0
            kinds[verdict.attribution or "pass"] += 1
            if as_json:
                print(json.dumps(verdict.to_dict()))
    for msg in bad:
        print(f"skipped: {msg}", file=sys.stderr)
    if not as_json:
        print(f"{n} rollouts verified, {rewarded} rewarded, {len(bad)} skipped")
        for kind, count in kinds.most_common():
            print(f"  {kind:20s} {count}")
