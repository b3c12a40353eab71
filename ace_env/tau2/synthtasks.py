"""τ² tasks ACE synthesizes: their own gold, their τ² form, and the checks each passes before it is written.

A synthesized task is a :class:`SynthTau2Task`: a :class:`~ace_env.tau2.tasks.Tau2Task` that also carries
its τ² ``Task`` as JSON (``tau2``: user scenario, gold actions, reward basis, in τ²'s own schema; what
``ace export --format tau2`` writes) and its ``origin`` (seed task, strategy, target composition).  Its
τ² id is ``synth-`` plus a hash of its domain and τ² JSON, so one id is one content.
:func:`build_task` registers its τ² ``Task`` with :func:`ace_env.tau2.env.register_task`: from then on the
oracle (:func:`ace_env.tau2.verify.gold`), ACE's verifier, the bounded runner and the tagger treat it as a
base task; its gold is its own actions, replayed from the domain's pristine database (copy-on-write).
A synthesized task's initial state is at most records added to the agent's database (the distractor's
look-alike, as τ²'s ``initialization_data.agent_data``; its seeds, airline and retail, have none).

:func:`tau2_json` gives any τ² task's JSON (a base task's from τ²'s own data); :func:`tau2_reward` runs
τ²'s own ``EnvironmentEvaluator`` (and ``ActionEvaluator`` where the basis has ACTION) on a τ² JSON
loaded back through τ²'s ``Task`` model, with a trajectory of executed steps; :func:`replay_json` replays
a τ² JSON's gold on a fresh environment and scores it that way, knowing nothing of ACE's forms (the
export round trip).  :func:`check_gold` is what every synthesized task must pass: ACE's verifier strict
on its gold replay, no gold call erroring, τ²'s evaluator reward 1 on the same steps, every identifier
of its gold grounded (said in the scenario, or shown by an earlier gold call's output).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ace_env.errors import TaskLoadError
from ace_env.tau2.env import (
    USER,
    Tau2Call,
    Tau2Step,
    call,
    new_environment,
    raw_task,
    register_task,
    start,
    tool_schemas,
)
from ace_env.tau2.package import tau2_modules
from ace_env.tau2.tasks import Tau2Task, load_tasks, task_fields
from ace_env.tau2.verify import gold, gold_calls, replay_gold

SYNTH_PREFIX = "synth-"


@dataclass(frozen=True)
class SynthTau2Task(Tau2Task):
    """A τ² task ACE made: the τ² form (``tau2``) is the source of truth, the ACE fields are derived from it."""

    tau2: dict[str, Any] = field(default_factory=dict)  # τ²'s Task, JSON (model_dump(mode="json"))
    origin: dict[str, Any] = field(default_factory=dict)  # seed, strategy, target, what the strategy did

    def __hash__(self) -> int:  # dict fields: hash by the content-derived id
        return hash(self.id)

    @property
    def provenance(self) -> dict[str, Any]:
        o = self.origin
        return {"benchmark": "tau2", "domain": self.domain, "tau2_id": self.tau2_id, "synthesized": True,
                "parents": [o.get("seed")], "strategy": o.get("strategy"), "target_edge": o.get("target"),
                **{k: v for k, v in o.items() if k not in ("seed", "strategy", "target")}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SynthTau2Task":
        """A task file's line back as a task; its τ² form must give back every field as written."""
        if not isinstance(d, dict) or not isinstance(d.get("tau2"), dict) or not isinstance(d.get("origin"), dict):
            raise TaskLoadError("a synthesized τ² task needs its τ² form ('tau2') and its 'origin'")
        tau2 = {k: v for k, v in d["tau2"].items() if k != "id"}
        task = build_task(str(d.get("domain")), tau2, d["origin"])
        if json.loads(json.dumps(task.to_dict(), default=str)) != json.loads(json.dumps(d, default=str)):
            raise TaskLoadError(f"task {d.get('id')!r} is not what its τ² form gives (was it edited? a changed "
                                "task needs a new id: synthesize it again)")
        return task


def is_synth_row(d: Any) -> bool:
    """Whether a task file's line is a synthesized τ² task."""
    return isinstance(d, dict) and isinstance(d.get("tau2"), dict) and str(d.get("id", "")).startswith("tau2:")


def _content_id(domain: str, tau2: dict[str, Any]) -> str:
    blob = json.dumps([domain, tau2], sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return SYNTH_PREFIX + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def build_task(domain: str, tau2: dict[str, Any], origin: dict[str, Any]) -> SynthTau2Task:
    """A synthesized task from its τ² JSON (without ``id``: the content hash becomes it), registered with the
    environment.  A JSON τ²'s ``Task`` model refuses, or one whose initial state is more than records added to the
    agent's database, raises TaskLoadError."""
    if domain not in ("airline", "retail"):
        raise TaskLoadError(f"synthesized τ² tasks are airline or retail tasks, not {domain!r}")
    tau2 = {k: v for k, v in tau2.items() if k != "id"}
    tau2_id = _content_id(domain, tau2)
    m = tau2_modules()
    try:
        raw = m.tasks.Task.model_validate({"id": tau2_id, **tau2})
    except ValueError as e:  # pydantic's ValidationError
        raise TaskLoadError(f"not a τ² task: {str(e).splitlines()[0]}") from e
    ist = raw.initial_state
    if ist is not None and (ist.initialization_actions or ist.message_history or ist.initialization_data is None
                            or ist.initialization_data.user_data is not None):
        raise TaskLoadError("a synthesized τ² task's initial state is records added to the agent's database "
                            "(initialization_data.agent_data), nothing else")
    register_task(domain, raw)
    if ist is not None:  # the added records must make a valid database, said here rather than at the first replay
        try:
            start(domain, tau2_id)
        except ValueError as e:  # pydantic's ValidationError
            raise TaskLoadError(f"the task's initial state is not a valid {domain} database: "
                                f"{str(e).splitlines()[0]}") from e
    agent_tools, user_tools = tool_schemas(domain)
    return SynthTau2Task(  # the same fields ace_env.tau2.tasks.load_tasks derives from a base task
        id=f"tau2:{domain}:{tau2_id}", domain=domain, tau2_id=tau2_id, **task_fields(raw, agent_tools, user_tools),
        tau2=raw.model_dump(mode="json"), origin=dict(origin),
    )


def tau2_json(task: Tau2Task) -> dict[str, Any]:
    """The task in τ²'s own schema (``Task.model_dump(mode="json")``): what τ²'s ``tasks.json`` holds."""
    if isinstance(task, SynthTau2Task):
        return task.tau2
    return raw_task(task.domain, task.tau2_id).model_dump(mode="json")


def base_task(domain: str, tau2_id: str) -> Tau2Task:
    """A base-split task in ACE form, by its τ² id."""
    for t in load_tasks(domain):
        if t.tau2_id == tau2_id:
            return t
    raise TaskLoadError(f"τ² {domain} has no task {tau2_id!r} in its base split")


# --------------------------------------------------------------------------- τ²'s own evaluator


def trajectory(steps: list[Tau2Step]) -> list[Any]:
    """τ² messages of executed steps: each call, then its recorded tool message (τ²'s ``set_state`` replays
    the calls and checks that every response equals the recorded one)."""
    m = tau2_modules().message
    msgs: list[Any] = [m.AssistantMessage(role="assistant", content="Hi! How can I help you today?")]
    for i, s in enumerate(steps):
        tc = m.ToolCall(id=f"call_{i}", name=s.call.name, arguments=s.call.arguments, requestor=s.call.requestor)
        cls = m.UserMessage if s.call.requestor == USER else m.AssistantMessage
        msgs.append(cls(role=s.call.requestor, tool_calls=[tc]))
        msgs.append(m.ToolMessage(id=tc.id, role="tool", content=s.content, requestor=s.call.requestor,
                                  error=s.error))
    msgs.append(m.AssistantMessage(role="assistant", content="Done."))
    msgs.append(m.UserMessage(role="user", content="###STOP###"))
    return msgs


def _constructor(domain: str, fresh: bool) -> Any:
    """How τ²'s evaluator builds environments: over ACE's copy-on-write view, or (``fresh``) τ²'s own
    ``get_environment``, which loads the database from τ²'s data files each time."""
    if fresh:
        return getattr(tau2_modules(), domain).get_environment
    return lambda solo_mode=False: new_environment(domain, solo_mode=solo_mode)


def tau2_reward(domain: str, task_json: dict[str, Any], steps: list[Tau2Step], fresh: bool = False) -> float:
    """τ²'s own reward for ``steps`` on the task ``task_json`` (loaded through τ²'s ``Task`` model): the
    ``EnvironmentEvaluator`` (DB hash, env assertions), times the ``ActionEvaluator`` where the basis has ACTION.
    COMMUNICATE and NL_ASSERTION concern what is said; they are not scored here."""
    m = tau2_modules()
    raw = m.tasks.Task.model_validate(task_json)
    msgs = trajectory(steps)
    try:
        reward = m.evaluator_env.EnvironmentEvaluator.calculate_reward(
            environment_constructor=_constructor(domain, fresh), task=raw, full_trajectory=msgs).reward
    except ValueError:  # set_state: a replayed call answered otherwise than the recorded step
        return 0.0
    if "ACTION" in {r.value for r in raw.evaluation_criteria.reward_basis}:
        reward *= m.evaluator_action.ActionEvaluator.calculate_reward(task=raw, full_trajectory=msgs).reward
    return float(reward)


def replay_json(domain: str, task_json: dict[str, Any], fresh: bool = False) -> tuple[float, list[Tau2Step], Any]:
    """(τ²'s reward, the steps, the environment they left) of a τ² JSON's own gold actions, replayed on a fresh
    environment in the task's initial state: the round trip of an exported task, using nothing but the JSON."""
    m = tau2_modules()
    raw = m.tasks.Task.model_validate(task_json)
    env = _constructor(domain, fresh)()
    ist = raw.initial_state
    env.set_state(initialization_data=ist.initialization_data if ist else None,
                  initialization_actions=ist.initialization_actions if ist else None, message_history=[])
    actions = raw.evaluation_criteria.actions or [] if raw.evaluation_criteria else []
    steps = [call(env, Tau2Call(a.name, dict(a.arguments), a.requestor), f"call_{i}") for i, a in enumerate(actions)]
    return tau2_reward(domain, task_json, steps, fresh), steps, env


# --------------------------------------------------------------------------- the checks


#: Rejection reasons of :func:`check_gold`.
ACE_VERIFIER = "ace_verifier_fails_gold"
GOLD_ERRORS = "gold_call_errors"
TAU2_EVALUATOR = "tau2_evaluator_fails_gold"
UNGROUNDED = "ungrounded_identifier"


def _id_values(arguments: dict[str, Any]) -> list[str]:
    """The identifier values of a call's arguments (keys ending in ``_id`` or ``_ids``)."""
    out: list[str] = []
    for k, v in arguments.items():
        if k.endswith("_id") and isinstance(v, str):
            out.append(v)
        elif k.endswith("_ids") and isinstance(v, list):
            out += [x for x in v if isinstance(x, str)]
    return out


def ungrounded(task: Tau2Task, steps: list[Tau2Step] | None = None) -> list[str]:
    """``tool.value`` of every identifier a gold agent action uses that neither the user scenario says nor an
    earlier gold step's output shows: a value the agent could only guess."""
    steps = steps if steps is not None else replay_gold_steps(task)
    seen = [task.user_scenario]
    out = []
    for s in steps:
        if s.call.requestor != USER and isinstance(s.call.arguments, dict):
            for v in _id_values(s.call.arguments):
                if not any(v in text for text in seen):
                    out.append(f"{s.call.name}.{v}")
        seen.append(s.content)
    return out


def replay_gold_steps(task: Tau2Task) -> list[Tau2Step]:
    return list(gold(task).steps)


def check_gold(task: Tau2Task, fresh: bool = False) -> list[str]:
    """Why the task's gold is not a valid oracle (empty: it is): ACE's verifier strict on its replay, no gold
    call erroring, τ²'s evaluator reward 1 on the same steps (its τ² JSON loaded back through τ²'s model),
    every identifier grounded."""
    reasons = []
    verdict = replay_gold(task)  # cached per (domain, τ² id), as the oracle is
    if not verdict.strict:
        reasons.append(ACE_VERIFIER)
    steps = replay_gold_steps(task)
    if any(s.error for s in steps):
        reasons.append(GOLD_ERRORS)
    if tau2_reward(task.domain, tau2_json(task), steps, fresh) != 1.0:
        reasons.append(TAU2_EVALUATOR)
    if ungrounded(task, steps):
        reasons.append(UNGROUNDED)
    return reasons


def to_row(task: SynthTau2Task) -> dict[str, Any]:
    """A task file's line (:meth:`SynthTau2Task.from_dict` reads it back)."""
    return asdict(task)


__all__ = [
    "SynthTau2Task",
    "build_task",
    "check_gold",
    "gold_calls",
    "is_synth_row",
    "replay_json",
    "tau2_json",
    "tau2_reward",
    "to_row",
    "trajectory",
    "ungrounded",
]
