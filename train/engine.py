"""The rollout engine: many conversations advanced together, tool calls run per rollout.

For each task and each of ``n_per_task`` samples, a conversation runs turn by
turn: the user (by default the task's own scripted turns) says something; the
policy answers; the calls in its answer (read by :mod:`ace_env.modelout`, never
evaluated) run against that rollout's own state; their results go back as tool
messages; the turn ends when the policy answers without calls or after
``step_cap`` answers; then the user speaks again, until the task's ``n_turns``.

What a turn is belongs to the task's environment: its entry's ``task_turns``
(:class:`ace_env.taskturns.TaskTurns`: each turn's user message, the tools it
offers, one rollout's state, whose ``call`` runs a call), so the engine runs
any environment whose rollouts are the task's own turns (BFCL's: its executor's
:class:`ace_env.executor.RolloutState`; the tests' toy key-value store) and
refuses, in one line, one whose rollouts are not (τ²'s are dialogues with a
simulated user, :mod:`train.tau2_eval`).

All live conversations advance together: each engine step sends up to
``batch_size`` of them to the policy in one call, so a model generates for a
whole batch at once (the benchmark in ``benchmarks/`` measures the gain over one
conversation at a time).

Tool calls never run in the engine's process: they run in a watched worker
under a time and memory budget (:mod:`ace_env.boundedcalls`, the same
:class:`ace_env.worker.Budget` as the verifier's).  A call over budget ends
only its rollout: the row keeps the offending call as the last of its
``turns`` (so verifying the row gives the same attribution) and says why in
``meta["ended"]`` (``timeout`` or ``resource_limit``); the other conversations
of the batch go on.

Output rows are ACE rollouts (``rollout_id, task_id, turns, messages, meta``):
``turns`` holds the calls per user turn (malformed ones as markers the verifier
records as ``malformed_call``), so ``ace verify`` and ``ace ingest`` take the
file unchanged; ``messages`` is the full OpenAI-style transcript.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol

from ace_env.boundedcalls import BoundedCalls, Overrun
from ace_env.environments import task_turns_of
from ace_env.executor import StepResult
from ace_env.fields import check_bounds
from ace_env.goldprefix import SYSTEM_PROMPT  # the system message of rollouts, exports and SFT alike
from ace_env.modelout import parse_message
from ace_env.tasks import Task
from ace_env.taskturns import TaskTurns
from ace_env.worker import Budget
from train.policies.base import Conversation, GenerationConfig, Policy, PolicyError
from train.policies.openai import RequestConfig

log = logging.getLogger(__name__)

#: Bounds of a rollout run's sizes (a larger value is a typo or a machine-filling request).
MAX_SAMPLES_PER_TASK = 1024
MAX_STEP_CAP = 256
MAX_BATCH = 4096


@dataclass
class RolloutConfig:
    """How the engine runs conversations."""

    n_per_task: int = field(default=1, metadata={"help": "Samples (rollouts) per task.", "min": 1,
                                                 "max": MAX_SAMPLES_PER_TASK})
    step_cap: int = field(default=8, metadata={"help": "Most answers of the agent in one user turn.", "min": 1,
                                               "max": MAX_STEP_CAP})
    batch_size: int = field(default=8, metadata={"help": "Conversations sent to the policy in one call.", "min": 1,
                                                 "max": MAX_BATCH})
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    system_prompt: str = field(default=SYSTEM_PROMPT, metadata={"help": "The system message."})
    budget: Budget | None = field(
        default_factory=Budget,
        metadata={"help": "Time and memory budget of each tool call (ace_env.worker.Budget); a call over it "
                          "ends its rollout. None runs calls in the engine's process, unbounded (benchmarks only)."},
    )
    request: RequestConfig | None = field(
        default=None,
        metadata={"help": "Timeout and retries of an openai: policy's requests (train.policies.openai.RequestConfig; "
                          "None: ACE_REQUEST_TIMEOUT / ACE_REQUEST_RETRIES, else the defaults). Whoever loads the "
                          "policy for this config passes it on."},
    )

    def __post_init__(self) -> None:
        check_bounds(self)


def rollout_id(task: Task, sample: int) -> str:
    """The id of sample ``sample`` of ``task``."""
    return f"{task.id}#{sample}"


class User(Protocol):
    """Who speaks the user's turns (the seam for an LLM user simulator)."""

    def message(self, task: Task, turn: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The user's message that opens turn ``turn`` of ``task``."""
        ...


class ScriptedUser:
    """The task's own user turns, one message per turn, as its environment says them (its entry's
    ``task_turns.user_message``; BFCL's: :data:`~ace_env.tasks.ADDED_TOOLS_PROMPT` for a tools-only turn)."""

    def message(self, task: Task, turn: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return task_turns_of(task).user_message(task, turn)


def offered_schemas(task: Task, turn: int) -> list[dict[str, Any]]:
    """OpenAI tool schemas of the tools offered in a turn, in the task's order (its entry's
    ``task_turns.tools``)."""
    return task_turns_of(task).tools(task, turn)


class TurnCalls(BoundedCalls):
    """The engine's bounded calls, each rollout's state its task's environment's (``task_turns.state``)."""

    def _new_env(self, rollout_id: str) -> Any:
        task = self.tasks[rollout_id]
        return task_turns_of(task).state(task)


@dataclass
class _Live:
    """One conversation in flight."""

    task: Task
    sample: int
    rollout_id: str
    play: TaskTurns  # what the task's environment says a turn is
    env: Any  # the rollout's state (play.state); None: the calls run in the bounded worker (TurnCalls)
    conv: Conversation
    turns: list[list[Any]] = field(default_factory=list)
    steps_in_turn: int = 0
    capped_turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    ended: str = ""  # timeout | resource_limit: a tool call went over budget and ended the rollout
    ended_detail: str = ""
    done: bool = False


def _tool_message(call_id: str, name: str | None, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name or "", "content": content}


class RolloutEngine:
    """Runs rollouts of one policy on tasks, in batches."""

    def __init__(self, policy: Policy, config: RolloutConfig | None = None, user: User | None = None):
        self.policy = policy
        self.config = config or RolloutConfig()
        self.user = user or ScriptedUser()

    def _start(self, task: Task, sample: int) -> _Live:
        rid = rollout_id(task, sample)
        messages = [{"role": "system", "content": self.config.system_prompt}]
        play = task_turns_of(task)
        env = play.state(task) if self.config.budget is None else None
        live = _Live(task, sample, rid, play, env, Conversation(messages, [], rid, task, 0))
        self._open_turn(live, 0)
        return live

    def _open_turn(self, live: _Live, turn: int) -> None:
        live.conv.turn = turn
        live.conv.tools = live.play.tools(live.task, turn)
        live.conv.messages.append(self.user.message(live.task, turn, live.conv.messages))
        live.turns.append([])
        live.steps_in_turn = 0

    def _close_turn(self, live: _Live) -> None:
        nxt = live.conv.turn + 1
        if nxt >= live.task.n_turns:
            live.done = True
        else:
            self._open_turn(live, nxt)

    def _answer(self, live: _Live, reply: Any) -> tuple[dict[str, Any], list[Any]]:
        """Record the policy's answer; the calls in it, to run (none: the turn or the rollout ended)."""
        message = dict(reply.message)
        message["role"] = "assistant"
        live.conv.messages.append(message)
        live.prompt_tokens += reply.prompt_tokens
        live.completion_tokens += reply.completion_tokens
        live.steps_in_turn += 1
        if reply.finish_reason == "error":
            # The policy could not answer (endpoint down, context full): the rollout ends here.
            live.errors.append(f"turn {live.conv.turn}: {reply.error}")
            live.done = True
            return message, []
        calls = parse_message(message).calls
        if not calls:
            self._close_turn(live)
        return message, calls

    def _results(self, live: _Live, message: dict[str, Any], calls: list[Any],
                 results: list[StepResult | Overrun]) -> None:
        """The calls' results go back as tool messages; a call over budget ends the rollout there."""
        ids = [tc.get("id") for tc in message.get("tool_calls") or [] if isinstance(tc, dict)]
        for k, (call, result) in enumerate(zip(calls, results)):
            live.turns[-1].append(call)
            call_id = ids[k] if k < len(ids) and ids[k] else f"call_{live.conv.turn}_{live.steps_in_turn}_{k}"
            if isinstance(result, Overrun):
                live.conv.messages.append(_tool_message(call_id, None, f"Error: {result.detail}"))
                live.ended = result.kind
                live.ended_detail = f"turn {live.conv.turn}: {call if isinstance(call, str) else result.kind}: {result.detail}"
                live.done = True
                return
            if result.executed:
                content = result.output or ""
            else:
                content = f"Error: {result.detail}"
            live.conv.messages.append(_tool_message(call_id, result.name, content))
        if live.steps_in_turn >= self.config.step_cap:
            live.capped_turns += 1
            self._close_turn(live)

    def _step_all(self, batch: list[_Live], replies: list[Any], calls_runner: BoundedCalls | None) -> None:
        """One engine step: record every answer, run all their calls (one round trip), return the results."""
        answered = [(x, *self._answer(x, reply)) for x, reply in zip(batch, replies)]
        answered = [(x, m, calls) for x, m, calls in answered if calls]
        if calls_runner is None:
            for x, message, calls in answered:
                env: Any = x.env
                self._results(x, message, calls, [env.call(c, x.conv.turn) for c in calls])
            return
        flat = calls_runner.run([(x.rollout_id, c, x.conv.turn) for x, _, calls in answered for c in calls])
        at = 0
        for x, message, calls in answered:
            self._results(x, message, calls, flat[at:at + len(calls)])
            at += len(calls)

    def _row(self, live: _Live) -> dict[str, Any]:
        meta = {
            "policy": self.policy.spec,
            "sample": live.sample,
            "seed": self.config.generation.seed,
            "temperature": self.config.generation.temperature,
            "step_cap": self.config.step_cap,
            "capped_turns": live.capped_turns,
            "prompt_tokens": live.prompt_tokens,
            "completion_tokens": live.completion_tokens,
        }
        if live.errors:
            meta["errors"] = live.errors
        if live.ended:
            meta["ended"], meta["ended_detail"] = live.ended, live.ended_detail[:500]
        if "slips" in live.conv.state:
            meta["slips"] = live.conv.state["slips"]
        return {
            "rollout_id": live.rollout_id,
            "task_id": live.task.id,
            "turns": live.turns,
            "messages": live.conv.messages,
            "meta": meta,
        }

    def run(self, tasks: Iterable[Task], on_done: Callable[[dict[str, Any]], None] | None = None) -> Iterator[dict[str, Any]]:
        """Roll out every task ``n_per_task`` times; rows are yielded as rollouts finish."""
        return self.run_samples(rollout_samples(tasks, self.config.n_per_task), on_done)

    def run_samples(self, samples: Iterable[tuple[Task, int]],
                    on_done: Callable[[dict[str, Any]], None] | None = None) -> Iterator[dict[str, Any]]:
        """Roll out each (task, sample number) once (rollout id ``task#sample``); rows as rollouts finish."""
        pending = list(samples)
        by_id = {rollout_id(t, g): t for t, g in pending}
        if len(by_id) != len(pending):
            raise PolicyError("two rollouts would share one id (the same task id and sample number)")
        for task in {id(t): t for t in by_id.values()}.values():
            task_turns_of(task)  # a task the engine cannot play is refused before any work
        pending.reverse()
        runner = None if self.config.budget is None else TurnCalls(by_id, self.config.budget)
        live: list[_Live] = []
        size = self.config.batch_size
        try:
            while pending or live:
                # Keep the pool full: finished conversations are replaced by new ones.
                while pending and len(live) < size:
                    live.append(self._start(*pending.pop()))
                batch = live[:size]
                replies = self.policy.generate([x.conv for x in batch], self.config.generation)
                if len(replies) != len(batch):
                    raise PolicyError(f"policy {self.policy.spec} answered {len(replies)} of {len(batch)} conversations")
                self._step_all(batch, replies, runner)
                still = []
                for x in live:
                    if x.done:
                        if runner is not None:
                            runner.finish(x.rollout_id)
                        row = self._row(x)
                        if on_done:
                            on_done(row)
                        yield row
                    else:
                        still.append(x)
                live = still
        finally:
            if runner is not None:
                runner.close()


class TaskRollouts:
    """A policy as the synthesis pipeline uses it: tasks in, each task's rollouts (calls per user turn) out.

    ``rollouts(tasks, n, seed)`` rolls all the tasks out ``n`` times each in one
    engine run, so a model generates for whole batches, not one conversation at
    a time; calling the object with ``(task, rng)`` makes one rollout.  It
    matches ``synth.pipeline.BatchPolicy`` by shape (``synth`` and ``train``
    never import each other; the CLI hands this object to the pipeline).
    ``rows`` keeps the engine's rows of the last run (messages, ``meta.ended``).
    """

    def __init__(self, policy: Policy, config: RolloutConfig | None = None):
        self.policy = policy
        self.config = config or RolloutConfig()
        self.name = policy.spec
        self.rows: list[dict[str, Any]] = []

    def rollouts(self, tasks: list[Task], n: int, seed: int) -> list[list[list[list[Any]]]]:
        config = dataclasses.replace(self.config, n_per_task=n,
                                     generation=dataclasses.replace(self.config.generation, seed=seed))
        self.rows = list(RolloutEngine(self.policy, config).run(tasks))
        by_id = {r["rollout_id"]: r["turns"] for r in self.rows}
        return [[by_id[rollout_id(t, k)] for k in range(n)] for t in tasks]

    def __call__(self, task: Task, rng: random.Random) -> list[list[Any]]:
        return self.rollouts([task], 1, rng.randrange(2**31))[0][0]

    def close(self) -> None:
        self.policy.close()


def rollout_samples(tasks: Iterable[Task], n_per_task: int) -> list[tuple[Task, int]]:
    """Every (task, sample number) of a run, in the canonical order: task by task, samples in order."""
    return [(t, g) for t in tasks for g in range(n_per_task)]


def in_order(rows: Iterable[dict[str, Any]], order: list[str]) -> Iterator[dict[str, Any]]:
    """Rows (as they finish) in the order of their rollout ids in ``order``, each as soon as its turn comes.

    Rows that finish early wait in a buffer, so a run's file is the same however its
    conversations were batched or spread over workers.
    """
    position = {rid: i for i, rid in enumerate(order)}
    waiting: dict[int, dict[str, Any]] = {}
    nxt = 0
    for row in rows:
        i = position.get(row["rollout_id"])
        if i is None or i in waiting or i < nxt:
            raise PolicyError(f"rollout {row['rollout_id']!r} was not asked for, or came twice")
        waiting[i] = row
        while nxt in waiting:
            yield waiting.pop(nxt)
            nxt += 1
    if waiting or nxt != len(order):
        raise PolicyError(f"{len(order) - nxt} of {len(order)} rollouts did not come back")


def write_rollouts(rows: Iterable[dict[str, Any]], f: Any) -> dict[str, Any]:
    """Write rows as JSONL to an open file; returns totals for the report."""
    start = time.perf_counter()
    totals = {"rollouts": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0, "over_budget": 0}
    for row in rows:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
        totals["rollouts"] += 1
        totals["calls"] += sum(len(t) for t in row["turns"])
        totals["prompt_tokens"] += row["meta"]["prompt_tokens"]
        totals["completion_tokens"] += row["meta"]["completion_tokens"]
        totals["errors"] += bool(row["meta"].get("errors"))
        totals["over_budget"] += bool(row["meta"].get("ended"))
    totals["seconds"] = round(time.perf_counter() - start, 3)
    return totals
