"""τ² environments over copy-on-write views of a pristine database loaded once per process.

:func:`new_environment` builds a domain's τ² ``Environment`` on a :func:`~ace_env.tau2.cow.cow_copy` of
the pristine database (airline, retail) or on a deep copy (telecom: 10 KB, 0.6 ms).
:func:`start` puts it in a task's initial state; :func:`call` runs one tool call, agent- or user-side,
and returns what the caller sees.  A failing call is a result, never an exception: τ²'s
``get_response`` turns every exception into ``Error: ...`` with ``error=True``, and arguments that
do not fit the tool (unknown, missing, not a dict) come back the same way.

Bounds: the calls here run in-process; :mod:`ace_env.tau2.bounded` runs them in ACE's watched worker
(:class:`ace_env.worker.WatchedWorker`), where a call over the wall-clock or memory budget ends its
rollout, not the run.
"""

from __future__ import annotations

import functools
import time
import typing
from dataclasses import dataclass
from typing import Any

from ace_env.errors import TaskLoadError
from ace_env.tau2 import DOMAINS
from ace_env.tau2.cow import cow_copy
from ace_env.tau2.package import tau2_modules

ASSISTANT, USER = "assistant", "user"

#: A shared double array (:class:`ace_env.worker.WatchedWorker`'s clock) where :func:`call` stamps the
#: start of each tool call in slot 0 (0.0 after) and counts calls in the last slot; None: no stamping.
_CLOCK: Any = None


def set_call_clock(clock: Any) -> None:
    """Stamp every tool call into ``clock`` (see ``_CLOCK``), or stop with None."""
    global _CLOCK
    _CLOCK = clock


def check_domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise TaskLoadError(f"unknown τ² domain {domain!r}; use one of {', '.join(DOMAINS)}")
    return domain


@functools.cache
def raw_tasks(domain: str) -> dict[str, Any]:
    """τ²'s own ``Task`` objects of a domain's base split, by τ² id (parsed once per process)."""
    mod = getattr(tau2_modules(), check_domain(domain))
    return {t.id: t for t in mod.get_tasks()}


#: τ² ``Task`` objects of tasks ACE synthesized (:mod:`ace_env.tau2.synthtasks` registers them), by
#: (domain, τ² id).  Their ids are content hashes, so one id is one task and every cache keyed on
#: (domain, τ² id), the gold replay's included, holds for them as for the base split.
_SYNTHESIZED: dict[tuple[str, str], Any] = {}


def register_task(domain: str, task: Any) -> None:
    """Make a synthesized τ² ``Task`` known to :func:`raw_task` (and so to the oracle and the verifier)."""
    _SYNTHESIZED[(check_domain(domain), task.id)] = task


def raw_task(domain: str, tau2_id: str) -> Any:
    hit = _SYNTHESIZED.get((domain, tau2_id))
    if hit is not None:
        return hit
    try:
        return raw_tasks(domain)[tau2_id]
    except KeyError:
        raise TaskLoadError(f"τ² {domain} has no task {tau2_id!r} in its base split") from None


@functools.cache
def pristine(domain: str) -> tuple[Any, Any]:
    """The domain's (agent DB, user DB or None), loaded from τ²'s package data once per process.

    Never written: every environment gets a copy-on-write view (or, for telecom, a deep copy)."""
    m = tau2_modules()
    if check_domain(domain) == "airline":
        return m.airline_db.FlightDB.load(m.airline.AIRLINE_DB_PATH), None
    if domain == "retail":
        return m.retail_db.RetailDB.load(m.retail.RETAIL_DB_PATH), None
    return (m.telecom_db.TelecomDB.load(m.telecom.TELECOM_DB_PATH),
            m.telecom_user_db.TelecomUserDB.load(m.telecom.TELECOM_USER_DB_PATH))


def pristine_hash(domain: str) -> tuple[str, str | None]:
    """τ²'s own hashes of the pristine databases (airline: 0.3 s; for checks, not per rollout)."""
    db, user_db = pristine(domain)
    return db.get_hash(), user_db.get_hash() if user_db is not None else None


def new_environment(domain: str, solo_mode: bool = False) -> Any:
    """A τ² ``Environment`` over a fresh copy-on-write view of the pristine database (about 1 ms)."""
    m = tau2_modules()
    db, user_db = pristine(domain)
    if domain == "telecom":
        return m.telecom.get_environment(db=db.model_copy(deep=True), user_db=user_db.model_copy(deep=True),
                                         solo_mode=solo_mode)
    return getattr(m, domain).get_environment(db=cow_copy(db), solo_mode=solo_mode)


def environment_constructor(domain: str) -> Any:
    """``ctor(solo_mode=False) -> Environment``, the form τ²'s ``EnvironmentEvaluator`` takes."""
    return functools.partial(new_environment, domain)


@functools.cache
def tool_schemas(domain: str) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    """(agent tools, user tools) of a domain as OpenAI function schemas (user tools: telecom only)."""
    env = new_environment(domain)
    agent = tuple(t.openai_schema for t in env.get_tools())
    user = tuple(t.openai_schema for t in env.get_user_tools()) if env.user_tools is not None else ()
    return agent, user


def _merged(old: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``old`` updated with ``update`` as τ²'s ``update_db`` does (addict): dicts merged key by key, anything
    else (lists included) replaced."""
    out = dict(old)
    for key, value in update.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def apply_agent_data(db: Any, data: dict[str, Any]) -> bool:
    """τ²'s ``update_db(data)`` on a copy-on-write database, copying only the records ``data`` names (τ²'s own
    dumps and re-validates the whole database: 1.1 s for airline).  Returns False, changing nothing, when
    ``data`` is not a set of record updates of the database's tables (the caller then lets τ² do it)."""
    fields = type(db).model_fields
    if not all(name in fields and isinstance(getattr(db, name), dict) and isinstance(records, dict)
               and all(isinstance(v, dict) for v in records.values()) for name, records in data.items()):
        return False
    for name, records in data.items():
        table, model = getattr(db, name), typing.get_args(fields[name].annotation)[1]
        for key, update in records.items():
            old = table.get(key)
            table[key] = model.model_validate(_merged(old.model_dump() if old is not None else {}, update))
    return True


def start(domain: str, tau2_id: str) -> Any:
    """A fresh environment in the task's initial state (initialization data and actions applied; record
    updates of the agent's database through :func:`apply_agent_data`, the rest through τ²)."""
    task = raw_task(domain, tau2_id)
    env = new_environment(domain)
    ist = task.initial_state
    data = ist.initialization_data if ist else None
    if data is not None and data.agent_data is not None and domain != "telecom" \
            and apply_agent_data(env.tools.db, data.agent_data):
        data = data.model_copy(update={"agent_data": None})
    env.set_state(initialization_data=data, initialization_actions=ist.initialization_actions if ist else None,
                  message_history=[])
    return env


@dataclass(frozen=True)
class Tau2Call:
    """One tool call of a rollout, by the agent (``assistant``) or the user."""

    name: str
    arguments: Any
    requestor: str = ASSISTANT


@dataclass(frozen=True)
class Tau2Step:
    """What a tool call returned: the tool message's text, and whether it was an error."""

    call: Tau2Call
    content: str
    error: bool


def call(env: Any, c: Tau2Call, call_id: str = "call") -> Tau2Step:
    """Run one tool call on ``env``; a bad call (unknown tool, bad arguments, a tool that raises) is an
    error step with τ²'s ``Error: ...`` text, never an exception."""
    m = tau2_modules()
    if not isinstance(c.name, str) or not isinstance(c.arguments, dict) or c.requestor not in (ASSISTANT, USER) \
            or not all(isinstance(k, str) for k in c.arguments):
        return Tau2Step(c, "Error: a tool call needs a tool name, a JSON object of arguments and a requestor "
                           "(assistant or user)", True)
    try:
        tc = m.message.ToolCall(id=call_id, name=c.name, arguments=c.arguments, requestor=c.requestor)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        return Tau2Step(c, f"Error: malformed tool call: {e}", True)
    clock = _CLOCK
    if clock is not None:
        clock[len(clock) - 1] += 1
        clock[0] = time.monotonic()
    try:
        msg = env.get_response(tc)
    finally:
        if clock is not None:
            clock[0] = 0.0
    return Tau2Step(c, msg.content, bool(msg.error))


def run_calls(domain: str, tau2_id: str, calls: list[Tau2Call] | tuple[Tau2Call, ...]) -> tuple[list[Tau2Step], Any]:
    """Run ``calls`` in order from the task's initial state: (steps, the final environment)."""
    env = start(domain, tau2_id)
    return [call(env, c, f"call_{i}") for i, c in enumerate(calls)], env


@functools.cache
def tool_kinds(domain: str) -> dict[tuple[str, str], str]:
    """(requestor, tool) -> τ²'s tool type (``read``, ``write``, ``think``, ``generic``) for a domain."""
    env = new_environment(domain)
    out = {}
    for requestor, kit in ((ASSISTANT, env.tools), (USER, env.user_tools)):
        if kit is not None:
            out.update(((requestor, name), kit.tool_type(name).value) for name in kit.tools)
    return out
