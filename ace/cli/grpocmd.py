"""``ace train grpo`` and ``ace train user-sim``: RL with the verifier as reward, and the user simulator's SFT."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ace.cli.graphcmd import with_store
from ace.cli.options import (
    POLICY_FLAGS,
    config_options,
    experiment_option,
    force_option,
    json_option,
    limit_field,
    name_option,
    out_option,
    skip_field,
    tasks_option,
)
from ace.cli.render import console, esc, table
from ace.cli.traincmd import LR_FLAGS, train_app
from ace_env.environments import environment_of
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set
from ace_env.workspace import ace_home, check_name, check_out
from ace_graph.errors import ConfigError
from ace_graph.taskfiles import refuse_changes_to_stored_tasks
from train.engine import RolloutConfig
from train.errors import ExportError
from train.evaluation import evaluate
from train.export import to_openai_sft
from train.grpo import GRPORunConfig, check_mode, train_grpo
from train.models import resolve_model
from train.policies import DEFAULT_POLICY, policy_name
from train.policies.base import GenerationConfig
from train.sft import SFTRunConfig, train_sft_rows
from train.users import user_sim_rows

log = logging.getLogger(__name__)


#: Where ``ace train grpo --report-to`` also logs (TRL's ``report_to``); ``none``: only ACE's own metrics.
REPORTERS = ("none", "tensorboard", "wandb")


@dataclass(frozen=True)
class GrpoRun:
    """What `ace train grpo` trains, on which of the tasks, where its metrics go and how often it evaluates."""

    policy: str = field(default=DEFAULT_POLICY, metadata={"help": "hf:<model folder or name> to train."})
    skip: int = skip_field("Leave out the first N tasks (e.g. the ones evaluated).")
    limit: Optional[int] = limit_field("Train on at most N tasks (after --skip).")
    metrics_out: Optional[Path] = field(default=None, metadata={
        "help": "Per-step metrics JSONL (default: OUT/metrics.jsonl)."})
    eval_every: int = field(default=0, metadata={"help": "Evaluate every N steps and at the end (0: never).",
                                                 "min": 0, "max": 100_000})
    eval_limit: int = field(default=5, metadata={"help": "Evaluate on the first N of --eval-tasks.",
                                                 "min": 1, "max": 10_000})
    report_to: str = field(default=REPORTERS[0], metadata={
        "help": "Also log to: none, tensorboard or wandb (TRL's report_to)."})


@dataclass(frozen=True)
class UserSimRun:
    """Which model `ace train user-sim` turns into a user simulator, and which of the tasks it learns from."""

    policy: str = field(default=DEFAULT_POLICY, metadata={"help": "hf:<model> to turn into a user simulator."})
    skip: int = skip_field("Leave out the first N tasks (held out for fidelity).")
    limit: Optional[int] = limit_field("At most N tasks (after --skip).")


def _local_model(policy: str) -> Path:
    kind, _, model = policy.partition(":")
    if kind != "hf" or not model:
        raise ConfigError(f"--policy {policy!r}: training needs a local model, give hf:<folder or name>")
    return resolve_model(model)


def _select(spec: str, skip: int, limit: Optional[int]) -> list[Any]:
    tasks = list(load_task_set(spec, any_environment=True).values())[skip:]  # every environment's tasks
    if limit is not None:
        tasks = tasks[:limit]
    if not tasks:
        raise ConfigError(f"no tasks left in {spec!r} after --skip {skip}" + (f" and --limit {limit}" if limit else ""))
    return tasks


@train_app.command("grpo")
@config_options(GRPORunConfig, names=LR_FLAGS)
@config_options(GrpoRun, in_place=True, param="run", names=POLICY_FLAGS,
                before={"skip": "out", "limit": "out", "metrics_out": "eval_tasks", "eval_every": "eval_tasks",
                        "eval_limit": "experiment", "report_to": "as_json"})
def grpo_cmd(
    config: GRPORunConfig,
    run: GrpoRun = None,  # type: ignore[assignment]
    tasks: str = tasks_option(note="Prompts (e.g. a task file from ace synth)."),
    out: Path = out_option(help="Folder of the trained model; load it with --policy hf:OUT."),
    force: bool = force_option(),
    eval_tasks: Optional[str] = tasks_option(None, "--eval-tasks", note="Tasks of the evaluation (default: --tasks)."),
    experiment: str = experiment_option("grpo", help="Experiment the evaluations are written to."),
    name: Optional[str] = name_option(None, "--name", help="The policy's name in the graph (default: from --policy)."),
    as_json: bool = json_option("Print the metrics as JSON lines."),
) -> None:
    """Train a local model with GRPO (TRL), the verifier's verdict as the reward.

    Each step samples --generations rollouts for each of --prompts-per-step tasks
    with ACE's rollout engine (multi-turn: user turns, tool results, step cap),
    verifies them, drops groups whose rewards are all equal (no signal) and
    refills the batch from further tasks (--no-dynamic-filtering for plain GRPO),
    and updates on the policy's own tokens only.  The total batch is
    prompts-per-step x generations; in the AReaL-SEA paper the total batch mattered
    more than how it was split, so grow it as far as the machine allows.

    With --eval-every N the checkpoint is evaluated every N steps and at the end
    (`ace eval`), each as its own scope EXPERIMENT/NAME/step-K, so
    `ace query capability-history` shows the run's progress per skill.
    Several GPUs or machines: `accelerate launch --num_processes K -m ace.cli train grpo ...`.
    """
    policy, skip, limit, metrics_out, eval_every, eval_limit, report_to = (
        run.policy, run.skip, run.limit, run.metrics_out, run.eval_every, run.eval_limit, run.report_to)
    check_name(experiment, "--experiment")  # evaluations go to $ACE_HOME/runs/grpo-eval/E/NAME and scope E/NAME/step-K
    if name is not None:
        check_name(name, "--name")
    out = check_out(Path(out), force, directory=True)
    metrics_path = check_out(Path(metrics_out), force, what="--metrics-out") if metrics_out else out / "metrics.jsonl"
    task_list = _select(tasks, skip, limit)
    check_mode(task_list, config)  # before the model resolves
    model_dir = _local_model(policy)
    reporters = [] if report_to == "none" else [report_to]
    if report_to not in REPORTERS:
        raise ConfigError(f"--report-to {report_to!r}: choose none, tensorboard or wandb")
    graph_name = name if name is not None else policy_name(policy)  # an empty --name is refused, not the default
    eval_list = _select(eval_tasks or tasks, 0, eval_limit) if eval_every else []
    if eval_list and environment_of(eval_list).dialogues:
        raise ConfigError(f"--eval-every replays the tasks' own user turns, and {environment_of(eval_list).title} "
                          "tasks are dialogues with a simulated user: evaluate the saved model with `ace eval`")
    if eval_list:  # the evaluations store these tasks: a task file may not change a stored one
        with_store(lambda store: refuse_changes_to_stored_tasks(store, {t.id: t for t in eval_list},
                                                                eval_tasks or tasks))
    evaluations: list[dict[str, Any]] = []

    def on_checkpoint(step: int, folder: Path) -> None:
        if not eval_every:
            return
        result = with_store(lambda store: evaluate(
            store, f"hf:{folder}", eval_list, experiment, graph_name, f"step-{step}",
            RolloutConfig(generation=GenerationConfig(max_tokens=config.max_tokens), step_cap=config.step_cap),
            ace_home() / "runs" / "grpo-eval" / experiment / graph_name / f"step-{step}.jsonl",
        ))
        evaluations.append({"step": step, "scope": result["scope"], "pass_rate": result["pass_rate"]})
        console(stderr=True).print(esc(f"step {step}: {result['scope']} pass rate {result['pass_rate']:.3f}"))

    logging.getLogger("train").setLevel(logging.INFO)
    lines = train_grpo(
        model_dir, {t.id: t for t in task_list}, out, config, metrics_out=metrics_path, report_to=reporters,
        on_checkpoint=on_checkpoint, checkpoint_every=eval_every,
    )
    if evaluations:
        (out / "evaluations.json").write_text(json.dumps(evaluations, indent=2))
    if as_json:
        for line in lines:
            print(json.dumps(line))
        return
    cols = ("step", "reward_mean", "reward_std", "groups_sampled", "groups_kept", "loss", "seconds_generate",
            "seconds_train")
    console().print(table("GRPO steps", cols, [[f"{x[c]:.3f}" if isinstance(x[c], float) else x[c] for c in cols]
                                              for x in lines]))
    print(f"saved to {out} (use --policy hf:{out}); metrics in {metrics_path}")
    for e in evaluations:
        print(f"  evaluated step {e['step']}: {e['scope']} pass rate {e['pass_rate']:.3f}")


@train_app.command("user-sim")
@config_options(SFTRunConfig, include=("epochs", "learning_rate", "max_length", "seed"), names=LR_FLAGS)
@config_options(UserSimRun, in_place=True, param="run", names=POLICY_FLAGS, before={"skip": "out", "limit": "out"})
def user_sim_cmd(
    run: UserSimRun = None,  # type: ignore[assignment]
    tasks: str = tasks_option(note="Tasks whose dialogs it learns from."),
    out: Path = out_option(help="Folder of the user simulator; use it as an `llm` user."),
    force: bool = force_option(),
    as_json: bool = json_option("Print the report as JSON."),
    config: SFTRunConfig = None,  # type: ignore[assignment]
) -> None:
    """Fine-tune a model to play the user (SFT): for every task and turn, its view of the
    conversation so far (its profile: the requests up to this turn; the agent's answers;
    roles swapped, no tool traffic) -> the task's own user message.  Answers to clarifying
    questions come from the tasks where the agent must ask (BFCL miss_param).
    Measure it with benchmarks/user_sim_bench.py (fidelity on held-out tasks).

    τ² tasks (tau2:airline, tau2:retail, tau2:telecom): the user's view as τ² shows it (its
    system prompt and scenario, the agent's texts) -> each user message of the task's ideal
    dialogue, built from the scenario and the gold actions (ace_env/tau2/users.py); dialogues
    the fidelity check flags are left out.  Measure it with benchmarks/tau2_user_bench.py.
    """
    policy, skip, limit = run.policy, run.skip, run.limit
    out = check_out(Path(out), force, directory=True)
    _local_model(policy)
    skipped: list[str] = []
    named = environment_of_spec(tasks)
    dialogues = named.policy_dialogues if named is not None else None  # its user is a simulator (τ²)
    if dialogues is not None:
        task_list = list(load_every_task(tasks).values())[skip:]
        task_list = task_list[:limit] if limit is not None else task_list
        if not task_list:
            raise ConfigError(f"no tasks left in {tasks!r} after --skip {skip}")
        rows = dialogues.user_rows(task_list, skipped)
        unit = "user messages"
    else:
        task_list = _select(tasks, skip, limit)
        transcripts = {}
        for t in task_list:
            try:
                transcripts[t.id] = to_openai_sft(t)["messages"]
            except ExportError as e:  # a ground truth that cannot be played as a conversation
                skipped.append(str(e))
        rows = user_sim_rows(task_list, transcripts)
        unit = "dialog turns"
    if not rows:
        raise ConfigError(f"no dialog could be built from {tasks!r} ({(skipped or ['no tasks'])[0]})")
    logging.getLogger("train").setLevel(logging.INFO)
    too_long: list[str] = []
    report = train_sft_rows(dataclasses.replace(config, model=policy.partition(":")[2], out=str(out)), rows, too_long)
    report = {**report, "tasks": len(task_list), "dialogs_dropped": len(skipped), "rows_too_long": len(too_long)}
    if as_json:
        print(json.dumps(report))
    else:
        dropped = f" ({len(skipped)} task(s) left out: {skipped[0]})" if skipped else ""
        dropped += f" ({len(too_long)} row(s) over --max-length left out)" if too_long else ""
        print(f"trained the user simulator on {report['examples']} {unit} of {len(task_list)} tasks in "
              f"{report['seconds']} s{dropped}; loss {report['first_loss']} -> {report['last_loss']}; saved to {out}")
