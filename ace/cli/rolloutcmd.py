"""``ace rollout`` and ``ace eval``: a policy on ACE's tasks, and its scores written back to the graph."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ace.cli import app, progress_bar
from ace.cli.options import (
    POLICY_FLAGS,
    budget_options,
    check_policy_spec,
    checkpoint_option,
    config_options,
    experiment_option,
    force_option,
    json_option,
    limit_field,
    name_option,
    out_option,
    ray_option,
    tasks_option,
)
from ace_env.environments import environment_of
from ace_env.tasks import Task
from ace_env.tasksets import environment_of_spec, load_task_set
from ace_env.worker import Budget
from ace_env.workspace import ace_home, check_name, check_out
from ace_graph.config import neo4j_settings
from ace_graph.db import get_driver
from ace_graph.errors import ConfigError
from ace_graph.store import GraphStore
from ace_graph.taskfiles import refuse_changes_to_stored_tasks
from train.engine import RolloutConfig
from train.evaluation import evaluate, evaluate_gold_prefix, first_error, rollout_to_file
from train.judge import check_judge_spec
from train.policies import DEFAULT_POLICY, GenerationConfig, RequestConfig, check_spec, policy_name
from train.tau2_eval import DEFAULT_MAX_TURNS, SCRIPTED, check_tau2_options, evaluate_tau2

POLICY_HELP = (
    "hf:<model folder or name> (default hf:smollm2-135m, prepared by `ace model prepare`), "
    "openai:<model>@<base_url>[,<base_url>...] (OpenAI-compatible servers; several comma-separated URLs share "
    "the conversations) or sim:<weakness.toml> (the simulated agent)."
)


@dataclass(frozen=True)
class PolicyRun:
    """Which policy `ace rollout` and `ace eval` roll out, on how many of the tasks."""

    policy: str = field(default=DEFAULT_POLICY, metadata={"help": POLICY_HELP})
    limit: Optional[int] = limit_field("Only the first N tasks of --tasks.")


@dataclass(frozen=True)
class RolloutRun(PolicyRun):
    """`ace rollout`'s own settings: how tools are listed, and how many Ray actors share the work."""

    full_schemas: bool = field(default=False, metadata={
        "help": "List tools as full JSON schemas (default: compact signatures).", "negatable": False})
    ray_workers: Optional[int] = field(default=None, metadata={
        "help": "With --ray and a non-openai policy: actors, one CPU each (default: the cluster's CPUs).",
        "min": 1, "max": 1024})


#: `ace eval --min-support`, apart from ace_graph.stats.MIN_SUPPORT on purpose: one checkpoint's evaluation is
#: tens of tasks, and at 20 attempts most compositions of a small run would not be listed (issue 33).
EVAL_MIN_SUPPORT = 5


@dataclass(frozen=True)
class EvalRun(PolicyRun):
    """`ace eval`'s own settings: what counts as a weak composition, the gold prefix, τ²'s user and judge."""

    min_support: int = field(default=EVAL_MIN_SUPPORT, metadata={
        "help": "Least attempts for a weak composition.", "min": 1, "max": 1_000_000})
    gold_prefix: bool = field(default=False, metadata={
        "help": "Score every oracle step with the oracle's own calls and outputs before it in context, instead of "
                "rolling out freely (hf: policies: NLL and teacher-forced exact match from one forward pass per "
                "task). The scope is marked gold-prefix.", "negatable": False})
    generate: bool = field(default=False, metadata={
        "help": "With --gold-prefix: the policy writes each step and its call is verified by execution (needed "
                "for sim: and openai: policies).", "negatable": False})
    user: Optional[str] = field(default=None, metadata={
        "help": f"τ² tasks: who plays the user: `{SCRIPTED}` (the default: deterministic and faithful, the same "
                "user for every checkpoint) or a policy, hf:MODEL or openai:MODEL@URL, given τ²'s user prompt and "
                "stop signals."})
    judge: Optional[str] = field(default=None, metadata={
        "help": "τ² tasks: judge the tasks' natural-language assertions through an OpenAI-compatible endpoint, "
                "openai:MODEL@URL (off by default). Judged verdicts are reported and stored apart from the exact "
                "ones and never count in an exact pass rate."})
    max_turns: Optional[int] = field(default=None, metadata={
        "help": f"τ² tasks: most messages in a dialogue, both sides (default {DEFAULT_MAX_TURNS}).",
        "min": 2, "max": 1000})


def _tasks(spec: str, limit: int | None, budget: Budget, any_environment: bool = False) -> list[Task]:
    tasks = list(load_task_set(spec, budget, any_environment=any_environment).values())
    if limit is not None:
        tasks = tasks[:limit]
    if not tasks:
        raise ConfigError(f"task set {spec!r} holds no tasks (with --limit {limit})")
    return tasks


def run_rollouts(policy_spec: str, tasks: list[Task], config: RolloutConfig, out: Path,
                 compact_tools: bool = True, quiet: bool = False, ray: str | None = None,
                 ray_workers: int | None = None) -> dict[str, Any]:
    """Roll a policy out on tasks into ``out``, with a progress bar."""
    with progress_bar(disable=quiet) as progress:
        bar = progress.add_task(f"rolling out {policy_spec}", total=len(tasks) * config.n_per_task)
        return rollout_to_file(policy_spec, tasks, config, out, compact_tools, on_done=lambda _row: progress.advance(bar),
                               ray=ray, ray_workers=ray_workers)


def _config(rollout: RolloutConfig, generation: GenerationConfig, budget: Budget,
            request: RequestConfig) -> RolloutConfig:
    """The rollout config of the derived flags: sizes, sampling, the tool-call budget and the requests."""
    return dataclasses.replace(rollout, generation=generation, budget=budget, request=request)


def request_options(param: str = "request") -> Any:
    """``--request-timeout`` and ``--request-retries``: how an ``openai:`` policy waits for its endpoint
    (:class:`train.policies.openai.RequestConfig`, from its fields and bounds); a flag left out falls back to
    ``ACE_REQUEST_TIMEOUT`` / ``ACE_REQUEST_RETRIES``, then the default."""
    return config_options(RequestConfig, names={"timeout_s": "--request-timeout", "retries": "--request-retries"},
                          param=param, env=True)


def check_specs(*specs: Optional[str]) -> None:
    """Each ``openai:`` spec given is usable (a valid base URL, no credentials in it), before any work."""
    for spec in specs:
        if spec:
            check_spec(spec)


def rollout_flags(fn: Any) -> Any:
    """The flags of :class:`RolloutConfig`, :class:`GenerationConfig`, the budget and the requests, derived
    from the dataclasses."""
    fn = config_options(GenerationConfig, include=("temperature", "max_tokens", "seed"), param="generation")(fn)
    fn = config_options(RolloutConfig, include=("n_per_task", "step_cap", "batch_size"),
                        names={"n_per_task": ("--n-per-task", "-G")}, param="rollout")(fn)
    fn = request_options()(fn)
    return budget_options()(fn)


@app.command("rollout")
@rollout_flags
@config_options(RolloutRun, in_place=True, param="run", names=POLICY_FLAGS,
                before={"limit": "ray", "full_schemas": "ray", "ray_workers": "as_json"})
def rollout_cmd(
    run: RolloutRun = None,  # type: ignore[assignment]
    tasks: str = tasks_option(),
    out: Path = out_option(help="Rollout JSONL to write (ACE rollouts with full messages)."),
    force: bool = force_option(),
    ray: Optional[str] = ray_option(
        "Spread the conversations over a Ray cluster: its address (host:port), `auto` (the running local one) "
        "or `local` (a private one for this command). openai: one Ray actor per base URL; other policies: "
        "--ray-workers actors. The file is the one a local run writes."),
    as_json: bool = json_option("Print the totals as JSON."),
    rollout: RolloutConfig = None,  # type: ignore[assignment]
    generation: GenerationConfig = None,  # type: ignore[assignment]
    budget: Budget = None,  # type: ignore[assignment]
    request: RequestConfig = None,  # type: ignore[assignment]
) -> None:
    """Roll a policy out on tasks: per user turn the agent answers, its calls run in the
    rollout's own environment, results go back as tool messages, until it answers without
    calls or hits --step-cap.  Conversations advance together in batches.

    Tool calls run in a watched worker process under --call-timeout and --memory-limit
    (the verifier's budget); a call over budget ends only its rollout, recorded in the
    row's meta.ended (timeout or resource_limit), and `ace verify` attributes it the same.

    Rows are written task by task, samples in order, whatever the batching.  The output is
    accepted unchanged by `ace verify` and `ace ingest`.

    An openai: endpoint that does not answer (after --request-retries, each request waiting at most
    --request-timeout) or answers something that is not a chat completion stops the command with an
    error, and --out is not written. Examples:
    `ace rollout -p hf:smollm2-135m --tasks bfcl:base --limit 5 --out runs/r.jsonl`;
    `ace rollout -p openai:smollm2@http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1 --ray 10.0.0.1:6379 ...`.
    """
    policy, limit, ray_workers = run.policy, run.limit, run.ray_workers
    out = Path(out)
    check_policy_spec(policy)
    check_specs(policy)
    check_out(out, force)
    named = environment_of_spec(tasks)  # any environment whose rollouts the engine plays (its entry's task_turns)
    task_list = _tasks(tasks, limit, budget, any_environment=named is not None and named.task_turns is not None)
    config = _config(rollout, generation, budget, request)
    if ray_workers is not None and ray is None:
        raise ConfigError("--ray-workers needs --ray")
    totals = run_rollouts(policy, task_list, config, out, compact_tools=not run.full_schemas, quiet=as_json,
                          ray=ray, ray_workers=ray_workers)
    if as_json:
        print(json.dumps(totals))
    else:
        print(
            f"wrote {totals['rollouts']} rollouts to {out} ({len(task_list)} tasks x {config.n_per_task}); "
            f"{totals['calls']} calls, {totals['completion_tokens']} tokens generated in {totals['seconds']} s "
            f"({totals['tokens_per_s']} tokens/s); {totals['errors']} rollouts ended by a policy error, "
            f"{totals['over_budget']} by a tool call over budget"
        )
    if totals["rollouts"] and totals["errors"] == totals["rollouts"]:
        raise ConfigError(f"every one of the {totals['rollouts']} rollouts ended by a policy error "
                          f"({first_error(out)}); check that --policy {policy} answers")


def _table(title: str, rows: list[dict[str, Any]], cols: list[str]):
    from rich.table import Table

    table = Table(title=title)
    for c in cols:
        table.add_column(c)
    for r in rows:
        table.add_row(*(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols))
    return table


@app.command("eval")
@rollout_flags
@config_options(EvalRun, in_place=True, param="run", names=POLICY_FLAGS,
                before={"limit": "out", **{f: "as_json" for f in ("min_support", "gold_prefix", "generate", "user",
                                                                   "judge", "max_turns")}})
def eval_cmd(
    run: EvalRun = None,  # type: ignore[assignment]
    tasks: str = tasks_option(),
    experiment: str = experiment_option(help="Experiment name (scope)."),
    checkpoint: str = checkpoint_option(),
    name: Optional[str] = name_option(
        None, "--name", help="The policy's name in the graph (default: from --policy, e.g. hf-smollm2-135m). "
        "Give two checkpoints of one model the same name to see them in capability-history."),
    out: Optional[Path] = out_option(None, "Keep the rollouts here (default: under $ACE_HOME/runs/eval)."),
    force: bool = force_option(),
    as_json: bool = json_option("Print the result as JSON."),
    rollout: RolloutConfig = None,  # type: ignore[assignment]
    generation: GenerationConfig = None,  # type: ignore[assignment]
    budget: Budget = None,  # type: ignore[assignment]
    request: RequestConfig = None,  # type: ignore[assignment]
) -> None:
    """Evaluate a policy: roll out, verify, ingest into the scope EXPERIMENT/NAME/CHECKPOINT,
    and print the per-skill and per-tool success table and the weakest compositions.

    Each checkpoint is its own scope, so `ace query capability-history -P experiment=E -P policy=NAME`
    shows one row per checkpoint and skill.  Nothing is stored when the policy could not be measured: an
    openai: endpoint (--policy, --user or --judge) that does not answer (after --request-retries, each
    request waiting at most --request-timeout) or answers something that is not a chat completion stops
    the command with an error, and so do rollouts that every one ended by a policy error. Example:
    `ace eval -p hf:runs/sft -e smoke -c sft-1 --name smollm2 --tasks bfcl:base --limit 5`.

    With --gold-prefix every oracle step is scored with the oracle's prefix in context (the policy's
    answer at each step, never an earlier mistake of its own), so compositions deep in a task are
    measured even for a model that fails free-running; the per-step scores go to --out (default under
    $ACE_HOME/runs/eval, `.gold-prefix.jsonl`) and --json prints steps, exact_match, mean_nll,
    tool_accuracy, step_pass_rate (--generate: steps whose call verified by execution) and pass_rate (tasks
    whose every step passed).

    With --gold-prefix on τ² tasks, a step's prefix is the task's ideal dialogue: the gold agent calls
    in order with their real outputs, and a scripted user who gives exactly the values each call needs
    (τ² tasks have no user turns of their own); --generate verifies the step's call by running the whole
    gold with it in place (final state and the call's own output must match the gold's).

    On τ² tasks (--tasks tau2:airline, tau2:retail) the policy plays τ²'s agent (τ²'s agent prompt and the
    domain's tools) against --user, one dialogue per task and sample (at most --max-turns messages, tool
    calls bounded); ACE's verifier checks each step and the final state (pass_rate, exact), τ²'s COMMUNICATE
    check is exact too (exact.tau2_reward_pass_rate: τ²'s final-state checks times COMMUNICATE), and with
    --judge the natural-language assertions are judged (under `judged` in --json, judged_* on the stored
    rollouts). Example:
    `ace eval -p hf:smollm2-135m --tasks tau2:airline --limit 3 -e tau2 -c base --json`.
    """
    from rich.console import Console

    policy, limit, min_support, gold_prefix, generate, user, judge, max_turns = (
        run.policy, run.limit, run.min_support, run.gold_prefix, run.generate, run.user, run.judge, run.max_turns)
    check_specs(policy, user, judge)
    graph_name = name if name is not None else policy_name(policy)  # an empty --name is refused, not the default
    for value, flag in ((experiment, "--experiment"), (graph_name, "--name"), (checkpoint, "--checkpoint")):
        check_name(value, flag)  # each names a folder under $ACE_HOME/runs/eval and a part of the scope
    if generate and not gold_prefix:
        raise ConfigError("--generate goes with --gold-prefix (a free-running evaluation always generates)")
    named = environment_of_spec(tasks)
    dialogues = named is not None and named.dialogues  # the policy talks with a simulated user (τ² tasks)
    for value, flag in ((user, "--user"), (judge, "--judge"), (max_turns, "--max-turns")):
        if value is not None and not dialogues:
            raise ConfigError(f"{flag} is for τ² tasks (--tasks tau2:DOMAIN); BFCL's user turns are the task's own")
        if value is not None and gold_prefix:
            raise ConfigError(f"{flag} is for free-running τ² dialogues; through the gold prefix every step's "
                              "prefix is the task's ideal dialogue (train.goldprefix)")
    if judge is not None:
        check_judge_spec(judge)
    if dialogues and not gold_prefix:
        check_tau2_options(policy, user)
    if out is None:
        suffix = ".gold-prefix.jsonl" if gold_prefix else ".jsonl"
        out = ace_home() / "runs" / "eval" / experiment / graph_name / f"{checkpoint}{suffix}"
        force = True
    out = Path(out)
    check_out(out, force)
    # any environment's tasks through the gold prefix (its entry's gold_prefix); free-running, dialogues' and
    # those whose rollouts the engine plays over the task's own turns (its entry's task_turns)
    free = named is not None and (dialogues or named.task_turns is not None)
    task_list = _tasks(tasks, limit, budget, any_environment=free or gold_prefix)
    config = _config(rollout, generation, budget, request)
    settings = neo4j_settings()
    driver = get_driver(settings)
    try:
        store = GraphStore(driver, settings.database)
        refuse_changes_to_stored_tasks(store, {t.id: t for t in task_list}, tasks)  # before any work
        with progress_bar(disable=as_json) as progress:
            if dialogues and not gold_prefix:
                bar = progress.add_task(f"τ² dialogues of {policy}", total=len(task_list) * config.n_per_task)
                result = evaluate_tau2(store, policy, task_list, experiment, graph_name, checkpoint,  # type: ignore[arg-type]
                                       config, out, user, judge, max_turns or DEFAULT_MAX_TURNS, min_support,
                                       on_done=lambda _row: progress.advance(bar))
            elif gold_prefix:
                env = environment_of(task_list)
                steps = sum(env.gold_steps(task) for task in task_list)
                bar = progress.add_task(f"scoring {policy} through the gold prefix", total=steps)
                result = evaluate_gold_prefix(
                    store, policy, task_list, experiment, graph_name, checkpoint, out, generate,
                    config.generation, config.budget, config.batch_size, min_support,
                    on_step=lambda n: progress.advance(bar, n), request=config.request)
            else:
                bar = progress.add_task(f"evaluating {policy}", total=len(task_list) * config.n_per_task)
                result = evaluate(store, policy, task_list, experiment, graph_name, checkpoint, config, out,
                                  min_support, on_done=lambda _row: progress.advance(bar))
    finally:
        driver.close()
    scope = result["scope"]
    skills, tools, weak = result["skills"], result["tools"], result["weak_compositions"]
    if as_json:
        print(json.dumps(result, default=str))
        return
    console = Console()
    if gold_prefix:
        shown = {k: result[k] for k in ("steps", "compositions", "exact_match", "mean_nll", "tool_accuracy",
                                        "step_pass_rate", "pass_rate") if result[k] is not None}
        console.print(f"{scope} (gold-prefix): " + ", ".join(f"{k} {v}" for k, v in shown.items())
                      + f"; {result['skipped']} skipped; per-step scores in {out}", highlight=False)
    else:
        console.print(
            f"{scope}: {result['rewarded']}/{result['rollouts']} rollouts rewarded "
            f"(pass rate {result['pass_rate']:.3f}); rollouts in {out}", highlight=False,
        )
    if dialogues and not gold_prefix:
        ex, jd, ro = result["exact"], result["judged"], result["rollout"]
        console.print(f"τ² (exact): final state pass rate {ex['state_pass_rate']}, COMMUNICATE "
                      f"{ex['communicate_passed']}/{ex['communicate_checked']} passed, τ²'s reward without NL "
                      f"assertions pass rate {ex['tau2_reward_pass_rate']}; user {ro['user']}, "
                      f"{ro['seconds_per_dialogue']} s a dialogue, ended by {ro['terminations']}", highlight=False)
        if jd["rollouts_judged"]:
            console.print(f"judged by {jd['judge']} (not exact): {jd['assertions']} assertions {jd['verdicts']}, "
                          f"rollouts {jd['outcomes']}", highlight=False)
        elif jd["rollouts_with_assertions"]:
            console.print(f"{jd['rollouts_with_assertions']} rollouts carry natural-language assertions, not "
                          "checked (give --judge openai:MODEL@URL to judge them)", highlight=False)
    cols = ["key", "attempts", "successes", "success_rate", "ci_low", "ci_high"]
    console.print(_table("per skill (weakest first)", skills, cols))
    console.print(_table("per tool (weakest first)", tools, cols))
    if weak:
        console.print(_table("weakest compositions (tool level)", weak,
                             ["from", "to", "n", "failures", "composition_success", "fragility"]))
    else:
        console.print(f"no composition with at least {min_support} attempts fails more often than elsewhere")
