"""``ace synth``: adversarial tasks aimed at the frontier; ``ace synth check``: re-verify them."""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import typer

from ace.cli import app
from ace.cli.graphcmd import with_store
from ace.cli.options import (
    budget_options,
    check_input,
    check_policy_spec,
    config_options,
    experiment_option,
    force_option,
    json_option,
    scope_option,
    tasks_option,
)
from ace.cli.render import Progress, console, esc
from ace.cli.rolloutcmd import request_options
from ace_env.environments import DEFAULT, ENVIRONMENTS, ToolEnvironment, environment_of
from ace_env.scaleout import runner_for
from ace_env.synthesis import Synthesis
from ace_env.tasksets import load_task_set
from ace_env.worker import Budget
from ace_env.workspace import check_out
from ace_graph.errors import ConfigError
from ace_graph.frontier import FrontierConfig, frontier, parse_target, targeted, why_empty
from ace_graph.scopes import list_scopes, require_scope
from synth.pipeline import SynthConfig, run, seeds_for, sim_policy, write_tasks
from synth.registry import synthesis_of, table_for
from synth.registry import targeted as targeted_strategies
from synth.rewriter import Rewriter
from synth.strategies import STRATEGIES
from synth.taskcheck import recheck
from synth.yieldlimit import losses, stop_reason
from train.engine import RolloutConfig, TaskRollouts
from train.models import EMBEDDED
from train.policies import GenerationConfig, RequestConfig, load_policy
from train.policies.openai import check_base_url

synth_app = typer.Typer(
    help=(
        "Synthesize verified adversarial tasks aimed at the weak compositions of the skill graph's frontier.\n\n"
        "Run `ace synth --experiment E --n N --seed S --out FILE.jsonl` to synthesize, "
        "`ace synth check FILE.jsonl` to re-run task verification."
    ),
    invoke_without_command=True,
)
app.add_typer(synth_app, name="synth")

#: The frontier synthesis attacks is tool-level and wider than the query's default.
SYNTH_FRONTIER = {"level": "tool", "limit": 50}


POLICY_HELP = (
    "Who rolls the synthesized tasks out (to measure 'learnable' and to reflect): the policy whose frontier is "
    "attacked. hf:<model folder or name>, openai:<model>@<base_url>, or sim[:<weakness.toml>] (the simulated "
    "agent). Default: the scope's own policy when it can be run from its name (sim, or an embedded model such "
    "as hf-smollm2-135m); otherwise pass it."
)


def scope_policy_spec(name: str) -> str:
    """The policy spec behind a scope's policy name; a one-line error when the name cannot be run."""
    if name == "sim" or name.startswith(("sim-", "sim:")):
        return "sim"
    if name.startswith("hf-") and name[3:] in EMBEDDED:
        return f"hf:{name[3:]}"
    raise ConfigError(
        f"the scope's policy {name!r} cannot be run from its name: pass --policy hf:<its model folder> or "
        "openai:<model>@<base_url> (the policy whose frontier this is), or --policy sim:<weakness.toml>"
    )


def load_synth_policy(spec: str, weakness: Optional[Path], rollout: RolloutConfig, env: ToolEnvironment = DEFAULT,
                      seeds: tuple = ()):
    """(the pipeline's policy, its name): the environment's simulated agent directly, any other policy through
    the engine (refused in one line where the environment's synthesis takes the simulated agent only)."""
    kind, _, rest = spec.partition(":")
    if kind == "sim":
        if rest and weakness is not None:
            raise ConfigError(f"--policy {spec!r} names a weakness file and so does --weakness: give it once")
        path = Path(rest) if rest else weakness
        name = f"sim:{path}" if path is not None else "sim"
        return sim_policy(env.load_weakness(path, list(seeds)), name=name, turns=env.simulate_turns), name
    synthesis = synthesis_of(env)
    if not synthesis.models:
        raise ConfigError(synthesis.notes.get("models") or f"{env.title} synthesis rolls its tasks out with the "
                          "simulated agent only: --policy sim[:WEAKNESS.toml]")
    if weakness is not None:
        raise ConfigError(f"--weakness is for the simulated agent, not for --policy {spec!r}")
    return TaskRollouts(load_policy(spec, request=rollout.request), rollout), spec


def check_url(url: str) -> str:
    """An http(s) base URL with a host and no credentials (:func:`train.policies.openai.check_base_url`), or a
    one-line error that never shows a password."""
    try:
        return check_base_url(url.rstrip("/"))
    except ConfigError as e:
        raise ConfigError(f"--rewriter-url: {e}") from None


@dataclass(frozen=True)
class SynthRequest:
    """What one `ace synth` run is asked: the strategies and targets, the attacked policy, where the tasks go,
    the optional rewriter and Ray cluster."""

    strategy: Optional[list[str]] = field(default=None, metadata={"help": (
        "Strategies to use (repeatable), of the seeds' environment: " + ", ".join(
            f"{n}{'' if s.targeted else ' (not targeted)'}" for n, s in STRATEGIES.items() if n != "probe")
        + " for the default environment's. Default: the targeted ones.")})
    out: Optional[Path] = field(default=None, metadata={
        "help": "Where to write the tasks (JSONL). Refused if it exists, unless --force."})
    policy: Optional[str] = field(default=None, metadata={"help": POLICY_HELP})
    weakness: Optional[Path] = field(default=None, metadata={
        "help": "Planted weaknesses of the simulated agent (with a sim policy)."})
    rewriter_url: Optional[str] = field(default=None, metadata={"help": (
        "OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1) to paraphrase user turns; off by default.")})
    rewriter_model: str = field(default="default", metadata={"help": "Model name sent to the rewriter."})
    ray: Optional[str] = field(default=None, metadata={"help": (
        "Run the simulated agent's trajectory rollouts and their verification on a Ray cluster: its address "
        "(host:port), `auto` (the running local one) or `local` (a private one for this command). Same tasks as a "
        "local run. A model policy (hf:, openai:) is refused: it rolls a round out in one batched run here.")})
    target: Optional[list[str]] = field(default=None, metadata={"help": (
        "Aim at this composition FROM>TO of the scope's frontier instead of its top --limit rows (repeatable): a "
        "tool pair (--target 'get_flight_cost>book_flight') or a skill pair, which is aimed at through the tool "
        "pairs that realize it in the scope's rollouts. A name not on the frontier is refused, with the nearest "
        "ones.")})


@synth_app.callback()
@config_options(SynthRequest, names={"out": ("--out", "-o"), "policy": ("--policy", "-p")}, param="ask",
                in_place=True)
@config_options(SynthConfig, include=("n", "seed", "plans", "rounds", "rollouts_per_task"), param="synth_config")
@config_options(FrontierConfig, include=("min_support", "min_lift", "min_prereq", "limit"),
                defaults=SYNTH_FRONTIER, param="frontier_config")
@config_options(GenerationConfig, include=("temperature", "max_tokens"), defaults={"temperature": 1.0},
                param="generation")  # a model's rollouts sample (above 0, so a task can pass sometimes)
@config_options(RolloutConfig, include=("step_cap", "batch_size"), param="rollout")
@request_options()
@budget_options()
def synth(
    ctx: typer.Context,
    experiment: Optional[str] = experiment_option(None, "Experiment whose frontier to attack."),
    ask: "SynthRequest" = None,  # type: ignore[assignment]
    force: bool = force_option(),
    scope: Optional[str] = scope_option(None, "Scope E/P/C of the experiment to read the frontier from (default: its newest)."),
    tasks: Optional[str] = tasks_option(
        None, note="Seed tasks the synthesized ones are made from. Default: the groups of the scope's environment "
        "its rollouts were made on (every BFCL category, a τ² domain)."),
    as_json: bool = json_option("Print the summary as JSON."),
    synth_config: SynthConfig = None,  # type: ignore[assignment]
    frontier_config: FrontierConfig = None,  # type: ignore[assignment]
    generation: GenerationConfig = None,  # type: ignore[assignment]
    rollout: RolloutConfig = None,  # type: ignore[assignment]
    budget: Budget = None,  # type: ignore[assignment]
    request: RequestConfig = None,  # type: ignore[assignment]
) -> None:
    """Pull the frontier from Neo4j, plan, synthesize, verify, roll out, reflect; write the valid tasks.

    The rollouts that place each task in or out of the learnable zone (and that
    reflection reads) come from --policy, by default the scope's own policy; a
    model rolls out all of a round's tasks in one batched engine run, every tool
    call under --call-timeout and --memory-limit.  The policy used is printed and
    recorded in each task's provenance and each plan's history.

    Everything is checked before any work: --out can be written, the scope
    exists and is the experiment's, the numbers and the rewriter URL are valid.
    """
    if ctx.invoked_subcommand is not None:
        return
    strategy, out, policy, weakness = list(ask.strategy or []), ask.out, ask.policy, ask.weakness
    rewriter_url, rewriter_model, ray, target = ask.rewriter_url, ask.rewriter_model, ask.ray, list(ask.target or [])
    if not experiment or out is None:
        raise ConfigError("`ace synth` needs --experiment and --out (or use `ace synth check FILE`).")
    for t in target:
        parse_target(t)  # a malformed name is refused before anything loads
    check_out(out, force)
    if policy is not None:
        check_policy_spec(policy)
    config = synth_config
    if rewriter_url is not None:
        config.rewriter = Rewriter(check_url(rewriter_url), rewriter_model, api_key=os.environ.get("OPENAI_API_KEY"))
    config.budget = budget
    rollout = dataclasses.replace(rollout, budget=budget, generation=generation, request=request)
    run_ = _Run(strategy=list(strategy), policy=policy, weakness=weakness, rollout=rollout, ray=ray, config=config)
    if tasks is not None:  # seeds named on the command line: checked (and a named policy loaded) before any work
        run_.prepare(load_task_set(tasks, any_environment=True, budget=budget), tasks)

    def work(store):
        key = scope or _newest_scope(store, experiment)
        require_scope(store, key, experiment=experiment)
        if run_.seeds is None:
            spec = scope_task_spec(store, key)
            run_.prepare(load_task_set(spec, any_environment=True, budget=budget), spec)
        if "policy" not in run_.chosen:
            run_.load_policy(scope_policy_spec(key.split("/")[1]), "the scope's policy")
        if ray is not None and callable(getattr(run_.chosen["policy"], "rollouts", None)):
            raise ConfigError(f"--ray spreads the simulated agent's rollouts; {run_.chosen['name']} (a model) rolls a "
                              "round out in one batched run on this machine: drop --ray")
        edges = _edges(store, key, target, frontier_config)
        by_target = seeds_for(run_.synthesis, edges, run_.seeds)
        if not any(by_target.values()):
            what = ", ".join(f"{a}>{b}" for a, b in by_target) if target else f"a frontier edge of {key!r}"
            raise ConfigError(f"no seed task of --tasks {run_.spec} makes the two calls of {what} in a row (seeds "
                              "whose own gold is a sound oracle), so nothing can be synthesized there: give the "
                              "scope's tasks with --tasks")
        with Progress("synthesizing", config.n, disable=as_json) as progress, runner_for(ray) as runner:
            result = run(run_.synthesis, run_.env.task_type, edges, run_.seeds, by_target, run_.chosen["policy"],
                         config, progress=progress.advance, runner=runner)
        _store(store, experiment, out, result)
        return key, edges, result, by_target

    try:
        key, edges, result, by_target = with_store(work)
    finally:
        close = getattr(run_.chosen.get("policy"), "close", None)
        if close is not None:
            close()
    summary = {"scope": key, "out": str(out), **result.summary(), "policy_source": run_.chosen["source"]}
    short = stop_reason(losses(result, config.n, by_target, len(config.strategies), run_.synthesis.schedule,
                               result.budget))
    if short is not None:
        summary["stop_reason"] = short
    if config.rewriter is not None:
        summary["paraphrases"] = {"accepted": config.rewriter.accepted, "rejected": config.rewriter.rejected}
    plans = (f"{summary['plans']} plans (target × strategy)" if result.in_turn
             else f"{summary['plans']} plans ({summary['retired']} retired by reflection)")
    _report(summary, as_json, f"Rollouts by {summary['policy']} ({summary['policy_source']})",
            f"Frontier of {key}: {len(edges)} edges; {plans}",
            f"Wrote {summary['tasks']} verified tasks to {out} from {summary['attempted']} attempts",
            *([short] if short is not None else []))


class _Run:
    """What one ``ace synth`` run settles before it synthesizes: its seeds, their environment and its synthesis
    (from the one registry), the strategies and the attacked policy."""

    def __init__(self, *, strategy: list[str], policy: Optional[str], weakness: Optional[Path],
                 rollout: RolloutConfig, ray: Optional[str], config: SynthConfig):
        self.strategy, self.policy, self.weakness, self.rollout = strategy, policy, weakness, rollout
        self.ray, self.config = ray, config
        self.seeds: dict | None = None
        self.spec = ""
        self.env: ToolEnvironment = DEFAULT
        self.synthesis: Synthesis | None = None
        self.chosen: dict[str, object] = {}

    def prepare(self, seeds: dict, spec: str) -> None:
        """The seeds' environment asked for its synthesis; the options checked against it; a --policy loaded."""
        self.seeds, self.spec = seeds, spec
        self.env = environment_of(seeds.values())
        self.synthesis = synthesis_of(self.env)
        known = table_for(self.env.task_type)
        unknown = [s for s in self.strategy if s not in known]
        if unknown:
            raise ConfigError(f"unknown strategy {unknown[0]!r} for {self.env.title} tasks; known: "
                              f"{', '.join(sorted(known))}")
        self.config.strategies = tuple(self.strategy) if self.strategy else targeted_strategies(self.env.task_type)
        if self.ray is not None and not self.synthesis.ray:
            raise ConfigError(f"--ray: {self.synthesis.notes.get('ray') or 'this environment synthesizes here'}")
        if self.config.rewriter is not None and self.synthesis.schedule != "rounds":
            raise ConfigError(f"--rewriter-url: {self.env.title} synthesis does not paraphrase its tasks")
        if self.policy is not None:
            self.load_policy(self.policy, "--policy")

    def load_policy(self, spec: str, source: str) -> None:
        self.chosen["policy"], self.chosen["name"] = load_synth_policy(
            spec, self.weakness, self.rollout, self.env, tuple((self.seeds or {}).values()))
        self.chosen["source"] = source


def scope_task_spec(store, key: str) -> str:
    """The task spec of the scope's environment's groups its rollouts were made on (``NAME:GROUP,...``): the
    seeds ``ace synth`` takes when no --tasks is given; one line when the scope has no tasks of one environment."""
    rows = store.run("scope-task-groups", scope=key)
    sources = sorted({r["source"] for r in rows if r["source"] in ENVIRONMENTS})
    if len(sources) != 1:
        found = ", ".join(sources) or "none of a known environment"
        raise ConfigError(f"the tasks of scope {key!r}'s rollouts are of {found}: name the seed tasks with --tasks")
    groups = sorted({str(r["category"]) for r in rows if r["source"] == sources[0]})
    return f"{sources[0]}:{','.join(groups)}"


def _edges(store, key: str, targets: list[str], frontier_config: FrontierConfig) -> list[dict]:
    """The frontier edges synthesis aims at: the --target ones, or the frontier's `composition` rows
    (`ambiguous` edges, a weak composition or a weak tool the data cannot tell apart, are probed by `ace diagnose`,
    not trained on); a one-line error when there is none."""
    if targets:
        edges = targeted(store, key, list(targets), frontier_config)
    else:
        edges = [r for r in frontier(store, key, frontier_config, check=False)
                 if r.get("verdict", "composition") == "composition"]
    if not edges:
        raise ConfigError(
            f"The frontier of scope {key!r} is empty ({why_empty(store, key, frontier_config.level, frontier_config.min_support)}): "
            "no composition is significantly weaker than its parts. Ingest more rollouts, or lower --min-support."
        )
    return edges


def _store(store, experiment: str, out: Path, result) -> None:
    """The run's tasks written to --out (atomically) and stored with their plans and lineage."""
    write_tasks(out, result.tasks)
    store.upsert_tasks(result.tasks)
    store.upsert_plans(experiment, result.plans)
    store.upsert_lineage(experiment, result.lineage)


def _report(summary: dict, as_json: bool, *lines: str) -> None:
    """The run's summary: as JSON, or its lines and counts."""
    if as_json:
        print(json.dumps(summary))
        return
    c = console()
    for line in lines:
        c.print(esc(line))
    for k in ("by_strategy", "by_target", "rejections"):
        c.print(esc(f"  {k}: {summary[k]}"))


def _newest_scope(store, experiment: str) -> str:
    rows = list_scopes(store, experiment)
    if not rows:
        raise ConfigError(f"No scope of experiment {experiment!r} in the graph: ingest rollouts first (`ace ingest`).")
    return rows[0]["key"]


@synth_app.command("check")
def check(
    file: Path = typer.Argument(..., help="Synthesized tasks (JSONL)."),
    as_json: bool = json_option("Print {tasks, valid, invalid, reasons} as JSON."),
) -> None:
    """Re-run task verification on every task of a file (execution, verifier, rejection tests, duplicates, text),
    as the tasks' environment's synthesis checks them."""
    tasks = load_task_set(str(check_input(file, "task file")), any_environment=True)
    synthesis = synthesis_of(environment_of(tasks.values()))
    seen: set[str] = set()
    reasons: Counter[str] = Counter()
    valid = 0
    for task in tasks.values():
        found = recheck(synthesis, task, seen)
        valid += not found
        reasons.update(found)
    summary = {"tasks": len(tasks), "valid": valid, "invalid": len(tasks) - valid, "reasons": dict(reasons)}
    if as_json:
        print(json.dumps(summary))
    else:
        print(f"{summary['tasks']} tasks: {valid} valid, {summary['invalid']} invalid")
        for reason, count in reasons.most_common():
            print(f"  {reason:28s} {count}")
    if summary["invalid"]:
        raise typer.Exit(1)
