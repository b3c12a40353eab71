"""τ²'s dialogues with a policy as its agent or its user: its entry's ``policy_dialogues``
(:class:`ace_env.dialogues.PolicyDialogues`), what ``ace eval`` on τ² tasks (:mod:`train.tau2_eval`) and ``ace
train user-sim`` on them ask of τ².

The agent is prompted and read by :mod:`ace_env.tau2.agent`, the users are :mod:`ace_env.tau2.users`'
(the scripted one, a policy as the user, the SFT rows that teach it), a dialogue runs through
:func:`ace_env.tau2.orchestrate.run_dialogue`, its tool calls in a :class:`ace_env.tau2.calls.Tau2Calls`
worker.  The exact checks beyond ACE's step verifier are here (moved from ``train/tau2_eval.py``, unchanged):
τ²'s ``COMMUNICATE`` check (:func:`communicate_check`) and τ²'s reward without its natural-language
assertions (:func:`tau2_reward`).
"""

from __future__ import annotations

import importlib
from typing import Any

from ace_env.dialogues import EXACT, PolicyDialogues
from ace_env.tau2.agent import agent_message, agent_system_prompt
from ace_env.tau2.calls import Tau2Calls
from ace_env.tau2.orchestrate import Dialogue, run_dialogue
from ace_env.tau2.package import tau2_modules
from ace_env.tau2.rollouts import call_dict
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.users import ScriptedTau2User, Tau2LLMUser, tau2_user_rows


def communicate_check(task: Tau2Task, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """τ²'s COMMUNICATE check, exact: τ²'s ``CommunicateEvaluator`` on the dialogue's agent texts.
    ``ok`` is None when the task has no information to communicate."""
    info = list(task.communicate_info)
    if not info:
        return {"method": EXACT, "ok": None, "missing": []}
    m = tau2_modules()  # τ² imported ACE's way first (no .env read, no litellm)
    evaluator = importlib.import_module("tau2.evaluator.evaluator_communicate").CommunicateEvaluator
    said = [m.message.AssistantMessage(role="assistant", content=x["content"]) for x in messages
            if x.get("role") == "assistant" and isinstance(x.get("content"), str) and x["content"].strip()]
    missing = [c.info for c in evaluator.evaluate_communicate_info(said, info) if not c.met]
    return {"method": EXACT, "ok": not missing, "missing": missing}


def tau2_reward(task: Tau2Task, reward: float, communicate_ok: bool | None) -> float:
    """The exact part of τ²'s reward: the final-state checks (``reward``) times COMMUNICATE where the reward
    basis names it (NL_ASSERTION, judged, is left out: airline's and most of retail's basis do not name it)."""
    if "COMMUNICATE" in task.reward_basis and communicate_ok is False:
        return 0.0
    return reward


def exact_checks(task: Tau2Task, messages: list[dict[str, Any]], state_reward: float) -> dict[str, dict[str, Any]]:
    """A dialogue's exact checks beyond the step verifier: COMMUNICATE, and τ²'s reward without its NL
    assertions (the final-state checks, ``state_reward``, times COMMUNICATE)."""
    comm = communicate_check(task, messages)
    return {
        "communicate": comm,
        "tau2_reward": {"method": EXACT, "value": tau2_reward(task, state_reward, comm["ok"]),
                        "basis": list(task.reward_basis)},
    }


def dialogue_turns(d: Dialogue) -> list[list[dict[str, Any]]]:
    """A dialogue's calls as an ACE rollout row's ``turns``: one flat list of ``{name, arguments[, requestor]}``
    (the format of ``ace sim rollouts --tasks tau2:...``)."""
    return [[call_dict(s.call.name, s.call.arguments, s.call.requestor) for s in d.steps]]


TAU2_DIALOGUES = PolicyDialogues(
    agent_prompt=lambda task: agent_system_prompt(task.domain),
    agent_message=agent_message,
    scripted_user=ScriptedTau2User,
    llm_user=Tau2LLMUser,
    calls=Tau2Calls,
    run=run_dialogue,
    turns=dialogue_turns,
    exact_checks=exact_checks,
    user_rows=tau2_user_rows,
)
