"""The simulated agent with planted weaknesses, on τ²-bench tasks (airline, retail).

The same agent as :mod:`ace_env.sim` (BFCL), with the same weakness files and the same slip rule,
imported from there (:func:`ace_env.sim.slip_chance`): it walks a task's gold *agent* actions in order and
makes each one, or slips with probability ``max(defaults.error, tool.error, composition.error)``, the
composition counting when the previous gold agent call is its ``from``.  A weakness file names τ² tools
(``update_reservation_flights``, ``get_reservation_details``); the kinds are BFCL's:

* ``argument``: one argument changed (:func:`ace_env.perturb.alter_value`; a compared one when the gold
  action says which are compared);
* ``wrong_tool``: another of the domain's agent tools, with the same arguments;
* ``skip``: the call is left out;
* ``malformed``: the call is made with arguments that are not an object;
* ``early_stop``: the agent stops; no later call is made.

As in BFCL's agent, a slip is kept only when ACE's verifier (:func:`ace_env.tau2.rollouts.verify_calls`: the
gold with this one call changed) then fails at exactly that step; otherwise the next kind is tried
(argument → wrong_tool → skip → malformed), so every recorded slip is where the verifier fails.  A task
without gold agent actions is answered with no call, except with probability ``defaults.error`` a call of
a random agent tool without arguments (``acted_without_need``).

Telecom is refused: its gold holds the *user's* actions on their phone, which a simulated agent cannot make
for the user.  Rollout ``k`` draws its task and slips from :func:`ace_env.sim.rollout_rng` alone.
"""

from __future__ import annotations

import json
import random
from typing import Any, Iterable, Iterator

from ace_env import sim as bfcl_sim
from ace_env.errors import ConfigError
from ace_env.perturb import alter_value
from ace_env.sim import (
    ACTED_WITHOUT_NEED,
    ARGUMENT,
    EARLY_STOP,
    MALFORMED,
    SKIP,
    WRONG_TOOL,
    WeaknessSpec,
    load_weakness,
    slip_chance,
)
from ace_env.tau2.env import ASSISTANT, Tau2Call
from ace_env.tau2.rollouts import call_dict, verify_calls
from ace_env.tau2.tasks import GoldAction, Tau2Task

#: The domains the simulated agent runs (telecom: see the module's docstring).
SIM_DOMAINS = ("airline", "retail")

TELECOM_REFUSED = ("the simulated agent does not run τ² telecom: its gold actions include the user's own actions "
                   "on their phone, which an agent cannot make; use tau2:airline or tau2:retail")

_ALTER_TRIES = 4


def check_sim_domains(tasks: Iterable[Tau2Task]) -> None:
    """Refuse tasks of a domain the simulated agent does not run, in one line."""
    if any(t.domain not in SIM_DOMAINS for t in tasks):
        raise ConfigError(TELECOM_REFUSED)


def agent_tools(tasks: Iterable[Tau2Task]) -> frozenset[str]:
    """Every agent tool name of the tasks' domains (what a weakness file may name)."""
    return frozenset(n for t in tasks for n in t.tool_names)


def load_tau2_weakness(path: Any, tasks: Iterable[Tau2Task]) -> WeaknessSpec:
    """A weakness file naming τ² agent tools of these tasks' domains (:func:`ace_env.sim.load_weakness`)."""
    tasks = list(tasks)
    domains = "/".join(sorted({t.domain for t in tasks}))
    return load_weakness(path, known=agent_tools(tasks), what=f"a τ² {domains} agent tool")


class _FailsAt:
    """Whether the gold with agent action ``j`` replaced (None: removed) fails at exactly step ``j``; cached."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int, str], bool] = {}

    def __call__(self, task: Tau2Task, j: int, replacement: Tau2Call | None) -> bool:
        key = (task.id, j, json.dumps(None if replacement is None else
                                      [replacement.name, replacement.arguments], sort_keys=True, default=str))
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            hit = self._cache[key] = self._compute(task, j, replacement)
        return hit

    @staticmethod
    def _compute(task: Tau2Task, j: int, replacement: Tau2Call | None) -> bool:
        calls, n = [], 0
        for a in task.gold_actions:
            if a.requestor == ASSISTANT:
                if n == j:
                    if replacement is not None:
                        calls.append(replacement)
                else:
                    calls.append(Tau2Call(a.name, dict(a.arguments), a.requestor))
                n += 1
            else:
                calls.append(Tau2Call(a.name, dict(a.arguments), a.requestor))
        v = verify_calls(task, calls)
        return v.reward == 0.0 and v.failing_oracle_step == j


_fails_at = _FailsAt()


def _altered(a: GoldAction, rng: random.Random) -> dict[str, Any] | None:
    keys = [k for k in (a.compare_args if a.compare_args is not None else a.arguments) if k in a.arguments]
    if not keys:
        return None
    key = rng.choice(sorted(keys))
    return {**a.arguments, key: alter_value(a.arguments[key], rng)}


def _apply(task: Tau2Task, j: int, a: GoldAction, kind: str, rng: random.Random) -> tuple[str, dict[str, Any] | None]:
    """The kind actually applied and the call made instead (None: no call)."""
    if kind == ARGUMENT:
        for _ in range(_ALTER_TRIES):
            args = _altered(a, rng)
            if args is None:
                break
            if args != a.arguments and _fails_at(task, j, Tau2Call(a.name, args)):
                return ARGUMENT, call_dict(a.name, args)
        kind = WRONG_TOOL
    if kind == WRONG_TOOL:
        others = sorted(n for n in task.tool_names if n != a.name)
        for _ in range(_ALTER_TRIES if others else 0):
            name = rng.choice(others)
            if _fails_at(task, j, Tau2Call(name, dict(a.arguments))):
                return WRONG_TOOL, call_dict(name, dict(a.arguments))
        kind = SKIP
    if kind == SKIP and not _fails_at(task, j, None):
        kind = MALFORMED  # leaving the call out goes unnoticed here (the same call is made again later)
    if kind == MALFORMED:
        return MALFORMED, call_dict(a.name, json.dumps(a.arguments)[:-1])  # arguments that are not an object
    return kind, None  # skip, early_stop


def simulate_one(task: Tau2Task, spec: WeaknessSpec, rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One rollout of ``task``: its calls and the slips planted in it (``previous``: the gold agent call
    before the slipped one, the composition's ``from``)."""
    calls: list[dict[str, Any]] = []
    slips: list[dict[str, Any]] = []
    actions = task.agent_actions
    if not actions:
        if rng.random() < spec.default.error and task.tool_names:
            name = rng.choice(sorted(task.tool_names))
            calls.append(call_dict(name, {}))
            slips.append({"turn": 0, "index": 0, "tool": name, "kind": ACTED_WITHOUT_NEED, "cause": "default",
                          "previous": None})
        return calls, slips
    previous: str | None = None
    for j, a in enumerate(actions):
        p, weakness, cause = slip_chance(spec, a.name, previous)
        before, previous = previous, a.name
        if p <= 0.0 or rng.random() >= p:
            calls.append(call_dict(a.name, dict(a.arguments)))
            continue
        kind, made = _apply(task, j, a, weakness.kind, rng)
        slip = {"turn": 0, "index": j, "tool": a.name, "kind": kind, "cause": cause, "previous": before}
        if kind != weakness.kind:
            slip["planned"] = weakness.kind
        slips.append(slip)
        if kind == EARLY_STOP:
            break
        if made is not None:
            calls.append(made)
    return calls, slips


def gold_prefix_step(task: Tau2Task, j: int, spec: WeaknessSpec,
                     rng: random.Random) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What the simulated agent does at gold agent action ``j`` when everything before it is the gold's
    (BFCL's :func:`ace_env.sim.gold_prefix_step` for τ²): the call it makes (None: none) and the slip it
    planted (None: it made the gold call).  The slip probability is keyed on the previous gold agent call,
    as in :func:`simulate_one`, so a planted composition shows up in a gold-prefix scope where it was planted."""
    actions = task.agent_actions
    if not actions:
        if task.tool_names and rng.random() < spec.default.error:
            name = rng.choice(sorted(task.tool_names))
            return call_dict(name, {}), {"turn": 0, "index": 0, "tool": name, "kind": ACTED_WITHOUT_NEED,
                                         "cause": "default", "previous": None}
        return None, None
    a = actions[j]
    previous = actions[j - 1].name if j else None
    p, weakness, cause = slip_chance(spec, a.name, previous)
    if p <= 0.0 or rng.random() >= p:
        return call_dict(a.name, dict(a.arguments)), None
    kind, made = _apply(task, j, a, weakness.kind, rng)
    slip = {"turn": 0, "index": j, "tool": a.name, "kind": kind, "cause": cause, "previous": previous}
    if kind != weakness.kind:
        slip["planned"] = weakness.kind
    return made, slip


def simulate_turns(task: Tau2Task, spec: WeaknessSpec, rng: random.Random) -> tuple[list[Any], list[dict[str, Any]]]:
    """One rollout of ``task`` in BFCL's turn shape: its calls as the one turn, and the slips planted."""
    calls, slips = simulate_one(task, spec, rng)
    return [calls], slips  # a τ² rollout is one turn of the agent's calls


def simulate_rollout(tasks: list[Tau2Task], k: int, spec: WeaknessSpec, seed: int, prefix: str = "sim") -> dict[str, Any]:
    """Rollout ``k`` of the batch ``simulate(tasks, n, spec, seed)``, alone (BFCL's rollout shape and seeding)."""
    return bfcl_sim.simulate_rollout(tasks, k, spec, seed, prefix, one=simulate_turns)


def simulate(tasks: Iterable[Tau2Task], n: int, spec: WeaknessSpec, seed: int,
             prefix: str = "sim") -> Iterator[dict[str, Any]]:
    """``n`` rollout dicts ``{rollout_id, task_id, turns, meta}`` of the simulated agent on τ² tasks."""
    tasks = list(tasks)
    check_sim_domains(tasks)
    return bfcl_sim.simulate(tasks, n, spec, seed, prefix, one=simulate_turns)


__all__ = [
    "SIM_DOMAINS",
    "agent_tools",
    "check_sim_domains",
    "gold_prefix_step",
    "load_tau2_weakness",
    "simulate",
    "simulate_one",
    "simulate_rollout",
    "simulate_turns",
]
