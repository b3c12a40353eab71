"""``ace env replay`` and ``ace verify``: the environments (BFCL, τ²-bench) and the verifier."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer

from ace.cli import app
from ace.cli.options import (
    budget_options,
    config_options,
    expand_inputs,
    format_option,
    inputs_task_spec,
    json_option,
    ray_option,
    shared,
    strict_option,
    tasks_option,
)
from ace.cli.render import Progress, console, esc, table
from ace_env.environments import DEFAULT, environment_named, environment_of, verifier_for
from ace_env.formats import read_any
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set
from ace_env.verifier import with_inference_error
from ace_env.worker import Budget
from ace_graph.errors import ConfigError
from ace_graph.ingest import line_refused

env_app = typer.Typer(help="Executable tool environments (BFCL multi-turn, τ²-bench).", no_args_is_help=True)
app.add_typer(env_app, name="env")

SHOW = ("none", "failures", "all")

def load_rollout_tasks(spec: str, budget: Budget | None = None) -> dict[str, Any]:
    """The tasks rollouts are judged against: every task the spec names, of any environment (τ²'s telecom too:
    its user-side calls are the user's), task files of any environment (τ² ones `ace synth` wrote too)."""
    return load_every_task(spec, budget)


def show_option() -> Any:
    """``--show``, the per-task table of `ace verify` and `ace ingest` (written here once)."""
    return shared(typer.Option("failures", "--show",
                               help="Per-task table: none, failures (tasks with a failing rollout) or all."), "show")


def check_show(show: str) -> str:
    if show not in SHOW:
        raise ConfigError(f"--show {show!r}: use one of {', '.join(SHOW)}")
    return show


def task_table(title: str, per_task: dict[str, dict[str, Any]], show: str):
    """Rows per task: rollouts, rewarded, mean partial credit, the commonest failure."""
    rows = []
    for task_id in sorted(per_task):
        t = per_task[task_id]
        failed = t["rollouts"] - t["rewarded"]
        if show == "failures" and not failed:
            continue
        top = ", ".join(f"{k} {v}" for k, v in t["attributions"].most_common(2))
        rows.append((task_id, t["rollouts"], t["rewarded"], failed, f"{t['partial'] / t['rollouts']:.2f}", top))
    return table(title, ("task", "rollouts", "rewarded", "failed", "partial credit", "failures"), rows,
                 right=("rollouts", "rewarded", "failed", "partial credit")), len(rows)


@dataclass(frozen=True)
class ReplayConfig:
    """`ace env replay`'s old spelling of a BFCL category (its task set is --tasks)."""

    category: Optional[str] = field(default=None, metadata={
        "help": "Old name: --category CAT is --tasks bfcl:CAT (kept as an alias)."})


@env_app.command("replay")
@config_options(ReplayConfig, param="old", in_place=True)
def replay(
    environment: Optional[str] = typer.Argument(
        None, help="The environment: bfcl (BFCL multi-turn) or tau2 (τ²-bench); default: the one --tasks names, "
                   "else bfcl."),
    tasks: str = tasks_option(None, note="bfcl: BFCL's own tasks (default bfcl:all); tau2: tau2:DOMAIN[,DOMAIN...] "
                                         "(airline, retail, telecom, all; default tau2, all three)."),
    old: ReplayConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print one JSON object, keyed by category or domain, instead of a table."),
) -> None:
    """Replay every task's ground truth through the safe executor and the verifier.

    A task passes when its ground truth executes without an error and the
    verifier gives it reward 1; the counts are per group (a BFCL category, a
    τ² domain).  BFCL's oracle is computed afresh (not from the cache).  For
    tau2, every task's gold actions (agent and user side) run in the watched
    worker, each call under the budget (ACE_CALL_TIMEOUT, ACE_MEMORY_LIMIT_MB),
    and a pass also needs no step to error where the gold's did not.
    `--category CAT` is the older spelling of `--tasks bfcl:CAT`.
    """
    category = old.category
    if tasks and category:
        raise ConfigError("give --tasks or its old name --category, not both")
    if category:
        tasks = f"{DEFAULT.name}:{category}"
    named = environment_named(environment) if environment is not None else None
    spec = tasks or f"{(named or DEFAULT).name}:all"
    # a spec naming an environment replays all its tasks (τ²'s telecom too); a task file, the default's tasks
    loader = load_every_task if environment_of_spec(spec) is not None else load_task_set
    task_list = list(loader(spec).values())
    env = environment_of(task_list)
    if named is not None and env is not named:
        raise ConfigError(f"`ace env replay {named.name}` replays {named.title} tasks, and {spec!r} names "
                          f"{env.title} tasks")
    with Progress(f"replaying {spec}", len(task_list), disable=as_json) as progress:
        result = env.replay(task_list, Budget.from_env(), progress.advance)
    failures = [line for counts in result.values() for line in counts.pop("failures")]
    if as_json:
        print(json.dumps(result))
    else:
        columns = ("group", *next(iter(result.values())))
        rows = [[group, *counts.values()] for group, counts in result.items()]
        console().print(table(f"{env.title} gold replay ({spec})", columns, rows, right=columns[1:]))
        for line in failures[:20]:
            print(f"  {line}", file=sys.stderr)
    if any(counts["failed"] for counts in result.values()):
        raise typer.Exit(1)


@dataclass(frozen=True)
class VerifyConfig:
    """`ace verify`'s rollout files given by flag, and what it does with a bad line."""

    rollouts: Optional[list[Path]] = field(default=None, metadata={
        "help": "A rollout file or folder (repeatable; same as naming it as an argument): ACE JSONL "
                "{rollout_id, task_id, turns}, OpenAI-style messages, a BFCL result file, or a τ²-bench result "
                "file (the JSON τ²'s run writes)."})
    skip_invalid: bool = field(default=False, metadata={
        "help": "Report bad lines on stderr and go on instead of stopping.", "negatable": False})


# --rollouts stands after --tasks in the help, --skip-invalid after --json: two in-place groups of VerifyConfig
@app.command("verify")
@budget_options()
@config_options(VerifyConfig, include=["rollouts"], names={"rollouts": ("--rollouts", "-r")}, param="named",
                in_place=True)
@config_options(VerifyConfig, include=["skip_invalid"], param="lines", in_place=True)
def verify_cmd(
    files: list[Path] = typer.Argument(None, help="Rollout files or folders (their *.jsonl files); - reads standard input."),
    tasks: Optional[str] = tasks_option(None, note="Also tau2:DOMAIN (τ² rollouts). Not needed for τ²-bench "
                                                   "result files, which say their domain; required otherwise."),
    named: VerifyConfig = None,  # type: ignore[assignment]
    fmt: str = format_option(),
    strict: bool = strict_option(),
    as_json: bool = json_option("One JSON verdict per rollout on stdout."),
    lines: VerifyConfig = None,  # type: ignore[assignment]
    show: str = show_option(),
    ray: str = ray_option(),
    budget: Budget = None,  # type: ignore[assignment]
) -> None:
    """Verify rollouts against their tasks' oracles.

    Each verdict has reward (0/1), partial_credit, the first failing turn and
    step, and an attribution (wrong_tool, wrong_argument, tool_not_offered,
    malformed_call, state_diverged, missing_output, acted_without_need,
    stopped_early, inference_error; timeout and resource_limit when a tool
    call goes over its budget).  Every tool call runs in a watched worker
    process under a wall-clock and a memory budget; a call over budget ends
    only its rollout.  Without --json: a per-task table (--show) and the totals.

    τ²-bench result files are read as they are: one verdict per simulation (rollout_id = its id), judged
    by τ²'s own rules on the task's reward basis, with τ²'s recorded reward beside it (reference_reward)
    and an agreement count at the end.
    """
    check_show(show)
    rollouts, skip_invalid = named.rollouts or [], lines.skip_invalid
    paths = expand_inputs(list(files or []) + list(rollouts), stdin=True)
    spec, _ = inputs_task_spec(paths, tasks, fmt, default="")
    if not spec:
        raise ConfigError("give --tasks SPEC (the rollouts' task set: bfcl:CATEGORY, tau2:DOMAIN or a task file); "
                          "only τ²-bench result files say their own")
    task_set = load_rollout_tasks(spec, budget)
    bad: list[str] = []
    n = rewarded = 0
    kinds: Counter[str] = Counter()
    agreement: Counter[tuple[float, float]] = Counter()  # (reference reward, ACE's reward) where a file records one
    per_task: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"rollouts": 0, "rewarded": 0, "partial": 0.0, "attributions": Counter()})
    with Progress("verifying", None, disable=as_json) as progress, verifier_for(task_set, budget, ray,
                                                                                      strict=strict) as bv:
        for path in paths:
            for r, verdict in bv.verify_stream(read_any(path, skip_invalid=skip_invalid, errors=bad)):
                if line_refused(verdict, r, str(path), skip_invalid, bad):
                    continue
                verdict = with_inference_error(verdict, r)
                n += 1
                rewarded += verdict.reward == 1.0
                kinds[verdict.attribution or "pass"] += 1
                if verdict.reference_reward is not None:
                    agreement[(verdict.reference_reward, verdict.reward)] += 1
                t = per_task[r.task_id]
                t["rollouts"] += 1
                t["rewarded"] += verdict.reward == 1.0
                t["partial"] += verdict.partial_credit
                if verdict.attribution:
                    t["attributions"][verdict.attribution] += 1
                progress.advance()
                if as_json:
                    print(json.dumps(verdict.to_dict()))
    err = console(stderr=True)
    for msg in bad:
        err.print(f"skipped: {esc(msg)}")
    if as_json and n == 0:  # stdout stays verdicts only; an empty result is said, not left silent
        err.print(esc(f"warning: 0 rollouts verified ({len(bad)} lines skipped) from {', '.join(map(str, paths))}"))
    if not as_json:
        out = console()
        if show != "none":
            t, shown = task_table(f"verdicts per task ({show})", per_task, show)
            if shown:
                out.print(t)
        print(f"{n} rollouts verified ({len(per_task)} tasks, {len(paths)} file{'s' * (len(paths) != 1)}), "
              f"{rewarded} rewarded, {len(bad)} skipped")
        for kind, count in kinds.most_common():
            print(f"  {kind:20s} {count}")
        if agreement:
            same = sum(c for (ref, got), c in agreement.items() if ref == got)
            looser = sum(c for (ref, got), c in agreement.items() if got > ref)
            total = sum(agreement.values())
            print(f"agreement with the recorded reward: {same}/{total} ({100 * same / total:.1f}%), "
                  f"ACE looser on {looser}, stricter on {total - same - looser}")
