"""τ²-bench as a :class:`~ace_env.environments.ToolEnvironment`: the functions its entry names that
:mod:`ace_env.tau2`'s modules do not give as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ace_env.sim import WeaknessSpec
from ace_env.steps import GoldStep, GoldSteps
from ace_env.tau2.results import read_results_cached, sniff
from ace_env.tau2.rollouts import Tau2Verifier, agent_steps_without, gold_agent_steps, refuse_ray
from ace_env.tau2.sim import check_sim_domains, load_tau2_weakness
from ace_env.tau2.tasks import Tau2Task
from ace_env.worker import Budget


def tau2_verifier(tasks: Mapping[str, Tau2Task], budget: Budget | None = None, address: str | None = None,
                  **kwargs: Any) -> Tau2Verifier:
    """The τ² verifier (local only: Ray is refused in one line)."""
    refuse_ray(address)
    return Tau2Verifier(tasks, budget, **kwargs)


def tau2_weakness(path: Any, tasks: Sequence[Tau2Task]) -> WeaknessSpec:
    """A weakness file naming τ² agent tools (the simulated agent plays airline and retail only)."""
    check_sim_domains(tasks)
    return load_tau2_weakness(path, tasks)


def tau2_results_spec(path: Path) -> str | None:
    """``tau2:DOMAIN`` of a τ²-bench result file (:func:`~ace_env.tau2.results.sniff`), None for another file."""
    return f"tau2:{read_results_cached(path).domain}" if sniff(path) else None


def tau2_results_agent(path: Path) -> str | None:
    """The agent (``info.agent_info.llm``) a τ²-bench result file names; None for another file or none named."""
    return read_results_cached(path).policy if sniff(path) else None


def tau2_steps(task: Tau2Task, removed: int | None = None) -> GoldSteps:
    """The tagger's reading of a τ² task (:mod:`ace_env.steps`): the user's scenario and the gold agent
    actions replayed (:func:`~ace_env.tau2.rollouts.gold_agent_steps`), or replayed without action
    ``removed`` (:func:`~ace_env.tau2.rollouts.agent_steps_without`); no replay for a task without any."""
    actions = task.agent_actions
    if not actions:
        return GoldSteps(task.user_scenario, ())
    run = gold_agent_steps(task) if removed is None else agent_steps_without(task, removed)
    return GoldSteps(task.user_scenario, tuple(
        None if s is None else GoldStep(a.name, dict(a.arguments), s.content, s.error)
        for a, s in zip(actions, run, strict=True)))
