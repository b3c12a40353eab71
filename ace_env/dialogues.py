"""What a policy's dialogues with a simulated user ask of an environment: its entry's ``policy_dialogues``.

``ace eval`` on an environment whose rollouts are dialogues (its entry's ``dialogues``) has a policy play the
agent against a user simulator (:mod:`train.tau2_eval`), and ``ace train user-sim`` teaches a policy to play
that user.  The policy side (loading, sampling, the judge, the graph) is the training layer's; the dialogue
is the environment's, so its entry gives (:class:`PolicyDialogues`):

* ``agent_prompt(task)``: the agent's system prompt, and ``agent_message(message)``: a policy's answer
  (read as data, never evaluated) as the agent's message the dialogue takes;
* ``scripted_user(task)``: the default user of a task's dialogue (a callable, ``view -> message``), and
  ``llm_user(generate, task)``: a policy as that user, ``generate(view, tools, key)`` asking the policy for
  one reply (an object with ``message``); ``task`` None: the user answers from the views it is given;
* ``calls(tasks, budget)``: a watched worker the tool calls of many dialogues share (``close()`` ends it),
  and ``run(task, agent, user, max_turns, budget, calls)``: one dialogue, an object with ``messages``,
  ``steps``, ``turns``, ``termination``, ``overrun``, ``detail`` and ``verdict(task)`` (its ``reward``);
* ``turns(dialogue)``: its calls as an ACE rollout row's ``turns``, and ``exact_checks(task, messages,
  state_reward)``: the checks beyond the step verifier that are exact, by name, each labelled
  ``{"method": EXACT, ...}``;
* ``user_rows(tasks, dropped)``: SFT rows (``{"messages", "tools", "task_id"}``) that teach a policy the user,
  the reason a task gives none appended to ``dropped``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The label of a check reached without a model (``train.judge.EXACT`` is the same word).
EXACT = "exact"

#: ``generate(view, tools, key)``: one reply of a policy (an object with ``message``) to a conversation.
Generate = Callable[[list[dict[str, Any]], list[dict[str, Any]], str], Any]


@dataclass(frozen=True)
class PolicyDialogues:
    """What a policy's dialogues with a simulated user need of one environment (the module doc)."""

    agent_prompt: Callable[[Any], str]
    agent_message: Callable[[dict[str, Any]], dict[str, Any]]
    scripted_user: Callable[[Any], Callable[[list[dict[str, Any]]], dict[str, Any]]]
    llm_user: Callable[[Generate, Any], Callable[[list[dict[str, Any]]], dict[str, Any]]]
    calls: Callable[[Mapping[str, Any], Any], Any]
    run: Callable[..., Any]
    turns: Callable[[Any], list[Any]]
    exact_checks: Callable[[Any, list[dict[str, Any]], float], dict[str, dict[str, Any]]]
    user_rows: Callable[[Iterable[Any], list[str] | None], list[dict[str, Any]]]
