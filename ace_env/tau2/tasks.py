"""τ² tasks in a form ACE carries: plain, frozen, JSON-ready.

:func:`load_tasks` reads a domain's ``base`` split once per process (telecom's ``tasks.json`` holds all
2,285 of its tasks and takes 1-2 s to parse); :func:`ace_env.tau2.env.raw_task` gives back τ²'s own
``Task`` for the environment and τ²'s evaluators.  ACE ids are ``tau2:DOMAIN:ID``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from ace_env.tau2 import DOMAINS
from ace_env.tau2.env import raw_tasks, tool_schemas


@dataclass(frozen=True)
class GoldAction:
    """One gold tool call: who makes it (``assistant`` or ``user``), the tool, its arguments, and which
    arguments τ²'s action check compares (None: all)."""

    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"
    compare_args: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Tau2Task:
    """A τ² task as ACE carries it."""

    id: str  # tau2:DOMAIN:TAU2_ID
    domain: str
    tau2_id: str
    user_scenario: str  # exactly the text τ²'s user simulator is given (str(task.user_scenario))
    gold_actions: tuple[GoldAction, ...]
    reward_basis: tuple[str, ...]  # DB, ENV_ASSERTION, ACTION, COMMUNICATE, NL_ASSERTION
    communicate_info: tuple[str, ...]
    nl_assertions: tuple[str, ...]
    n_env_assertions: int
    tools: tuple[dict[str, Any], ...]  # the agent's tools, OpenAI function schemas
    user_tools: tuple[dict[str, Any], ...]  # the user's tools (telecom only)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # What the skill graph stores of a task (``ace_graph.store``), as for BFCL's ``ace_env.tasks.Task``.
    source = "tau2"

    @property
    def category(self) -> str:
        return self.domain

    @property
    def agent_actions(self) -> tuple[GoldAction, ...]:
        """The gold actions the agent makes (telecom's user-side ones left out): the task's oracle steps."""
        return tuple(a for a in self.gold_actions if a.requestor == "assistant")

    @property
    def n_steps(self) -> int:
        return len(self.agent_actions)

    @property
    def n_turns(self) -> int:
        return 1  # one conversation; its calls are one flat list

    @property
    def provenance(self) -> dict[str, Any]:
        return {"benchmark": "tau2", "domain": self.domain, "tau2_id": self.tau2_id}

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The agent's tool names."""
        return tuple(t["function"]["name"] if "function" in t else t["name"] for t in self.tools)

    def fingerprint(self) -> str:
        """SHA-256 of the task's content (canonical JSON of :meth:`to_dict`)."""
        blob = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def ace_id(domain: str, tau2_id: str) -> str:
    return f"tau2:{domain}:{tau2_id}"


@functools.cache
def load_tasks(domain: str) -> tuple[Tau2Task, ...]:
    """The ``base`` split of a domain (airline 50, retail 114, telecom 114), in τ²'s order."""
    agent_tools, user_tools = tool_schemas(domain)
    out = []
    for t in raw_tasks(domain).values():
        out.append(Tau2Task(id=ace_id(domain, t.id), domain=domain, tau2_id=t.id,
                            **task_fields(t, agent_tools, user_tools)))
    return tuple(out)


def task_fields(raw: Any, agent_tools: tuple, user_tools: tuple) -> dict[str, Any]:
    """The fields a :class:`Tau2Task` takes from τ²'s own task object ``raw`` (its scenario and evaluation
    criteria) and its domain's tool schemas: one derivation for base tasks and synthesized ones."""
    crit = raw.evaluation_criteria
    return dict(
        user_scenario=str(raw.user_scenario),
        gold_actions=tuple(GoldAction(a.name, dict(a.arguments), a.requestor,
                                      tuple(a.compare_args) if a.compare_args is not None else None)
                           for a in (crit.actions or [])),
        reward_basis=tuple(r.value for r in crit.reward_basis),
        communicate_info=tuple(crit.communicate_info or ()), nl_assertions=tuple(crit.nl_assertions or ()),
        n_env_assertions=len(crit.env_assertions or ()), tools=agent_tools, user_tools=user_tools,
    )


def tasks_by_id(domains: tuple[str, ...] | list[str]) -> dict[str, Tau2Task]:
    """The tasks of several domains by ACE id."""
    return {t.id: t for d in domains for t in load_tasks(d)}


def tau2_tool_info(tasks: Iterable[Tau2Task]) -> dict[str, tuple[str, str]]:
    """(class, description) of every τ² agent tool, when ``tasks`` holds any τ² task (else nothing): the
    class is ``tau2:DOMAIN``, or ``tau2`` for a tool several domains have (``calculate``), whichever domains
    ``tasks`` come from; the description is the schema's, cut to 300 characters."""
    if not any(True for _ in tasks):
        return {}
    domains: dict[str, set[str]] = {}
    descriptions: dict[str, str] = {}
    for domain in DOMAINS:
        for schema in tool_schemas(domain)[0]:
            fn = schema.get("function", schema)
            domains.setdefault(fn["name"], set()).add(domain)
            descriptions.setdefault(fn["name"], str(fn.get("description", ""))[:300])
    return {name: (f"tau2:{next(iter(d))}" if len(d) == 1 else "tau2", descriptions[name])
            for name, d in domains.items()}
