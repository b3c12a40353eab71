"""τ²-bench as a :class:`~ace_env.environments.ToolEnvironment`: the functions its entry names that
:mod:`ace_env.tau2`'s modules do not give as they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ace_env.sim import WeaknessSpec
from ace_env.tau2.results import read_results_cached, sniff
from ace_env.tau2.rollouts import Tau2Verifier, refuse_ray
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
