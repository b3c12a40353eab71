"""τ²'s synthesis, as its entry declares it (:class:`ace_env.synthesis.Synthesis`): the strategies of
:mod:`ace_env.tau2.strategies` and what the one pipeline (:mod:`synth.pipeline`) calls on τ² tasks.

Frontier edges are ``A>B`` (tool names).  A seed is one of τ²'s own tasks whose gold holds A then B and whose
own gold passes :func:`~ace_env.tau2.synthtasks.check_gold` (:func:`usable_seeds`).  A strategy's draft becomes a
new τ² task (:func:`assemble`: the seed's τ² form with the draft's gold, scenario and facts to communicate);
the pipeline rejects it, counted by reason, when

* ``target_lost``: A>B no longer adjacent in the new gold;
* the oracle (:func:`check`, :func:`~ace_env.tau2.synthtasks.check_gold`): ACE's verifier strict on the gold
  replay (on a copy-on-write view of the domain database), no gold call erroring, τ²'s own
  ``EnvironmentEvaluator`` reward 1 on its τ² JSON, every identifier grounded;
* the checks the strategy declares (:data:`ace_env.tau2.strategies.STRATEGIES`): ``trap_not_live``,
  ``still_named``, ``answer_in_scenario``;
* ``duplicate``: a task with the same content (so the same id) made earlier in the run.

A τ² scenario is instructions to the user simulator, which speaks in its own words: plans are ``plain``.  The
attacked agent is the simulated one (``sim:WEAKNESS``); each valid task is rolled out and verified step by step
(:func:`verify`), so its provenance says how often it passes.
"""

from __future__ import annotations

from typing import Any, Mapping

from ace_env.synthesis import Synthesis
from ace_env.tau2.env import raw_task
from ace_env.tau2.rollouts import calls_of, verify_calls
from ace_env.tau2.strategies import STRATEGIES, Draft, target_positions
from ace_env.tau2.synthtasks import SynthTau2Task, build_task, check_gold
from ace_env.tau2.tasks import Tau2Task

_SEED_OK: dict[str, bool] = {}  # base tasks never change within a process


def usable_seeds(seeds: Mapping[str, Tau2Task]) -> dict[str, Tau2Task]:
    """The base tasks whose own gold is a valid oracle (τ²'s gold sometimes acts on an id it never read)."""
    out = {}
    for i, t in seeds.items():
        if isinstance(t, SynthTau2Task):
            continue
        if t.id not in _SEED_OK:
            _SEED_OK[t.id] = not check_gold(t)
        if _SEED_OK[t.id]:
            out[i] = t
    return out


def seeds_by_target(edges: list[dict[str, Any]], seeds: Mapping[str, Tau2Task]) -> dict[tuple[str, str], list[str]]:
    """For each frontier edge, the seeds (sorted ids) whose gold agent actions make A then B."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in edges:
        pair = (r["from"], r["to"])
        out[pair] = sorted(i for i, t in seeds.items() if target_positions(t.agent_actions, pair))
    return out


def assemble(seed: Tau2Task, target: tuple[str, str], strategy: str, draft: Draft) -> SynthTau2Task:
    """The new task: the seed's τ² form with the draft's gold, scenario and facts to communicate."""
    raw = raw_task(seed.domain, seed.tau2_id)
    crit = raw.evaluation_criteria
    basis = [r.value for r in crit.reward_basis]
    nl = [] if draft.drop_nl_assertions else list(crit.nl_assertions or [])
    if not nl and "NL_ASSERTION" in basis:
        basis.remove("NL_ASSERTION")
    communicate = list(crit.communicate_info or []) + draft.communicate_info
    if draft.communicate_info and "COMMUNICATE" not in basis:
        basis.append("COMMUNICATE")
    edge = f"{target[0]}>{target[1]}"
    tau2 = {
        "description": {"purpose": f"ACE {strategy} synthesis aimed at {edge}, from τ² {seed.domain} task "
                                   f"{seed.tau2_id}: {draft.what}.", "relevant_policies": None, "notes": None},
        "user_scenario": {"persona": raw.user_scenario.persona, "instructions": draft.instructions},
        "ticket": None,
        "initial_state": None if draft.agent_data is None else {
            "initialization_data": {"agent_data": draft.agent_data, "user_data": None},
            "initialization_actions": None, "message_history": None},
        "evaluation_criteria": {
            "actions": [{"action_id": f"{i}", "requestor": a.requestor, "name": a.name, "arguments": a.arguments,
                         "info": None, "compare_args": list(a.compare_args) if a.compare_args is not None else None}
                        for i, a in enumerate(draft.actions)],
            "env_assertions": None, "communicate_info": communicate, "nl_assertions": nl, "reward_basis": basis,
        },
    }
    origin = {"seed": seed.id, "strategy": strategy, "target": edge, "what": draft.what, **draft.details}
    return build_task(seed.domain, tau2, origin)


def has_target(task: Tau2Task, target: tuple[str, str]) -> bool:
    return bool(target_positions(task.agent_actions, target))


def check(task: SynthTau2Task) -> list[str]:
    """The generic checks of a new τ² task: its gold a valid oracle (see the module doc)."""
    return check_gold(task)


def verify(task: SynthTau2Task, turns: list[Any], rollout_id: str) -> tuple[float, str | None]:
    """(reward, attribution) of one rollout (its calls as one turn), verified step by step."""
    v = verify_calls(task, calls_of(turns), rollout_id)
    return v.reward, v.attribution


def with_outcome(task: SynthTau2Task, outcome: dict[str, Any]) -> SynthTau2Task:
    """The task with its rollouts' outcome in its origin (its provenance reads it there)."""
    return SynthTau2Task(**{**task.__dict__, "origin": {**task.origin, **outcome}})


SYNTHESIS = Synthesis(
    strategies=STRATEGIES, usable=usable_seeds, seeds_by_target=seeds_by_target, has_target=has_target,
    assemble=assemble, check=check, verify=verify, with_outcome=with_outcome, domain=lambda t: t.domain,
    notes={"models": "τ² synthesis rolls its tasks out with the simulated agent only (--policy sim:WEAKNESS.toml "
                     "naming τ² tools); a model plays τ² against a user simulator (`ace eval`)",
           "ray": "τ² synthesis runs here (its rollouts are the simulated agent's); leave --ray out"},
)
