"""``ace eval`` on τ²-bench tasks: a policy plays τ²'s agent against a user simulator, verified and stored.

What the dialogue is comes from the tasks' environment, its entry's ``policy_dialogues``
(:class:`ace_env.dialogues.PolicyDialogues`; τ²'s is :mod:`ace_env.tau2.dialogue`): this module is the policy
side (loading, sampling, the judge, the graph) and imports no environment.  For each task (and each of
``n_per_task`` samples) τ²'s :func:`ace_env.tau2.orchestrate.run_dialogue` runs one dialogue on a
copy-on-write environment, every tool call in the bounded worker:

* **the agent** (:class:`PolicyAgent`) is the evaluated policy (``hf:`` or ``openai:``), given τ²'s own
  agent system prompt (:data:`ace_env.tau2.agent.AGENT_INSTRUCTION` and the domain policy, as τ²'s
  ``LLMAgent`` builds it)
  and the domain's agent tools, offered the way ACE offers BFCL's (the policy's chat template, compact
  signatures by default).  Its answer is parsed as data (:func:`ace_env.modelout.parse_message`: OpenAI
  ``tool_calls``, ``<tool_call>`` JSON or a python-list call, read with ``json``/``ast`` only, never
  evaluated); a call that cannot be read runs as an erroring call, as BFCL's malformed calls do.
* **the user** is ``scripted`` by default (:class:`ace_env.tau2.users.ScriptedTau2User`: the opening of the
  task's ideal dialogue, then exactly the identifiers it is asked for, then τ²'s stop signal once asked
  whether there is anything else).  Why: it is deterministic (two checkpoints meet the same user, so the
  user adds no reward variance to a comparison) and faithful (it never invents or leaks), where the base
  SmolLM2-135M measured as a user plays the assistant, invents identifiers and never stops
  (benchmarks/RESULTS.md, τ² user simulator).  ``--user hf:...|openai:...`` makes any policy the user
  (:class:`ace_env.tau2.users.Tau2LLMUser`, τ²'s user prompt and stop signals), e.g. a fine-tuned one.

Each dialogue becomes an ACE rollout row (``rollout_id``, ``task_id``, ``turns``: one flat list of
``{name, arguments[, requestor]}`` calls, ``messages``, ``meta``), the format of ``ace sim rollouts
--tasks tau2:...``, so it is ingested the same way (:func:`ace_graph.ingest.ingest_file`: ACE's τ²
verifier step by step and on the final state, tags, the scope ``E/NAME/CHECKPOINT``).

Verdicts say how they were reached (:mod:`train.judge`):

* ``exact``: ACE's verifier (the stored ``reward``: every gold agent call made in order, then the
  database, assertions and actions), the final-state checks alone (``meta.state_reward``: what τ²'s
  evaluator checks, so a skipped read call passes there) and the ``COMMUNICATE`` check, which is
  deterministic: τ²'s own ``CommunicateEvaluator`` (each info string in an agent message,
  case-insensitive, commas dropped) on the dialogue (:func:`ace_env.tau2.dialogue.communicate_check`).
  ``tau2_reward`` is the final-state checks times COMMUNICATE where the task's reward basis names it: τ²'s
  reward without its NL assertions (for airline, whose basis is DB and COMMUNICATE, the whole of it).
* ``judged``: the task's natural-language assertions, only with ``--judge openai:MODEL@URL``
  (:class:`train.judge.Judge`); each assertion's yes/no/unparseable/error and the rollout's judged
  outcome.  Stored on the Rollout node under ``judged_*`` properties and reported under ``judged`` in
  ``--json``, never in an exact pass rate.

``--gold-prefix`` on τ² tasks is :mod:`train.goldprefix` (its τ² section).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ace_env.dialogues import PolicyDialogues
from ace_env.environments import environment_of
from ace_env.errors import ConfigError
from ace_env.fields import offset_seed
from ace_graph.ingest import ingest_file
from ace_graph.store import GraphStore, scope_key
from train.engine import RolloutConfig
from train.evaluation import _tables, atomic_file
from train.judge import EXACT, JUDGED, Judge, judged_outcome
from train.policies import RequestConfig, load_policy
from train.policies.base import Conversation, GenerationConfig, Policy

#: The default user simulator (see the module docstring for why).
SCRIPTED = "scripted"

#: Messages per dialogue by default (both sides; τ² allows 100 steps, tool results included).
DEFAULT_MAX_TURNS = 30


def dialogues_of(tasks: Any) -> PolicyDialogues:
    """What the tasks' environment gives a policy's dialogues (its entry's ``policy_dialogues``); refused in
    one line for an environment whose rollouts are no dialogues."""
    env = environment_of(tasks)
    if env.policy_dialogues is None:
        raise ConfigError(f"{env.title} tasks are not dialogues with a simulated user (its entry gives no "
                          "policy_dialogues): a policy cannot play their agent against one")
    return env.policy_dialogues


@dataclasses.dataclass(frozen=True)
class PolicyGenerate:
    """``generate(view, tools, key)`` (:data:`ace_env.dialogues.Generate`): the policy's one reply to a
    conversation, sampled with ``generation`` (a simulated user's turn)."""

    policy: Policy
    generation: GenerationConfig

    def __call__(self, view: list[dict[str, Any]], tools: list[dict[str, Any]], key: str) -> Any:
        return self.policy.generate([Conversation(view, tools, key, None, len(view))], self.generation)[0]


class PolicyAgent:
    """A policy playing τ²'s agent on one dialogue; a ``run_dialogue`` agent.  Keeps what it cost."""

    def __init__(self, policy: Policy, generation: GenerationConfig, task: Any, key: str) -> None:
        self.policy, self.generation, self.task, self.key = policy, generation, task, key
        self.dialogues = dialogues_of([task])
        self.prompt_tokens = self.completion_tokens = self.replies = 0
        self.errors: list[str] = []

    def __call__(self, view: list[dict[str, Any]]) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.dialogues.agent_prompt(self.task)}, *view]
        conv = Conversation(messages, list(self.task.tools), self.key, None, 0)
        reply = self.policy.generate([conv], self.generation)[0]
        self.replies += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        if reply.finish_reason == "error":
            self.errors.append(str(reply.error)[:300])
            return {"role": "assistant", "content": ""}  # the dialogue ends: agent_error
        return self.dialogues.agent_message(reply.message)


def check_tau2_options(policy_spec: str, user: str | None) -> None:
    """Refuse, in one line and before any work, an agent or a user τ² dialogues cannot have."""
    if policy_spec.partition(":")[0] not in ("hf", "openai"):
        raise ConfigError(f"--policy {policy_spec!r}: on τ² tasks the agent is an hf: or openai: policy (the "
                          "simulated agent's τ² rollouts come from `ace sim rollouts --tasks tau2:...`)")
    if user not in (None, SCRIPTED) and user.partition(":")[0] not in ("hf", "openai"):
        raise ConfigError(f"--user {user!r}: the τ² user is `{SCRIPTED}` (the default) or a policy, "
                          "hf:MODEL or openai:MODEL@URL")


def user_factory(spec: str | None, agent_spec: str, agent_policy: Policy, generation: GenerationConfig,
                 request: RequestConfig | None = None) -> tuple[str, Callable[[Any, int], Any], Policy | None]:
    """(the user's name, ``make(task, sample)`` -> a user callable, the policy it loaded to close or None)."""
    check_tau2_options(agent_spec, spec)
    if spec in (None, SCRIPTED):
        return SCRIPTED, lambda task, sample: dialogues_of([task]).scripted_user(task), None
    policy = agent_policy if spec == agent_spec else load_policy(spec, request=request)

    def make(task: Any, sample: int) -> Any:
        sampled = dataclasses.replace(generation, seed=offset_seed(generation.seed, sample))
        return dialogues_of([task]).llm_user(PolicyGenerate(policy, sampled), task)

    return spec, make, (None if policy is agent_policy else policy)


def rollout_row(task: Any, sample: int, d: Any, agent: PolicyAgent, policy_spec: str, user: str,
                config: RolloutConfig, max_turns: int) -> dict[str, Any]:
    """A dialogue as an ACE rollout row (``ace ingest`` reads it as it reads ``ace sim rollouts``' τ² rows)."""
    verdict = d.verdict(task)
    meta: dict[str, Any] = {
        "policy": policy_spec, "user": user, "sample": sample, "seed": config.generation.seed,
        "temperature": config.generation.temperature, "max_turns": max_turns, "termination": d.termination,
        "dialogue_turns": d.turns, "agent_replies": agent.replies,
        "prompt_tokens": agent.prompt_tokens, "completion_tokens": agent.completion_tokens,
        # ACE's τ² verifier on the final state, in the dialogue's own worker: the checks of the task's reward
        # basis τ²'s evaluator makes (DB, ENV_ASSERTION, ACTION).  The stored reward (ingest) is stricter: it
        # also needs every gold agent call made in order, so a skipped read call fails there, not here.
        "state_reward": verdict.reward,
    }
    if agent.errors:
        meta["errors"] = agent.errors
    if d.overrun:
        meta["ended"], meta["ended_detail"] = d.termination, d.detail[:500]
    return {"rollout_id": f"{task.id}#{sample}", "task_id": task.id,
            "turns": dialogues_of([task]).turns(d),
            "messages": d.messages, "meta": meta}


def add_checks(task: Any, row: dict[str, Any], judge: Judge | None) -> None:
    """The row's checks beyond ACE's step verifier, each labelled: COMMUNICATE (exact), τ²'s reward without
    its NL assertions (exact: the final-state checks times COMMUNICATE), NL assertions (judged)."""
    checks: dict[str, Any] = dialogues_of([task]).exact_checks(task, row["messages"], row["meta"]["state_reward"])
    if task.nl_assertions:
        if judge is None:
            checks["nl_assertions"] = {"method": None, "outcome": None, "note": "not checked (no --judge)"}
        else:
            verdicts = judge.check(row["messages"], task.nl_assertions)
            checks["nl_assertions"] = {"method": JUDGED, "judge": judge.spec, "outcome": judged_outcome(verdicts),
                                       "verdicts": [v.to_dict() for v in verdicts]}
    row["meta"]["checks"] = checks


def run_tau2(policy_spec: str, tasks: list[Any], config: RolloutConfig, out: Path, user: str | None = None,
             judge: str | None = None, max_turns: int = DEFAULT_MAX_TURNS, compact_tools: bool = True,
             on_done: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every task's dialogues (``n_per_task`` each, task by task) into ``out``, written whole or not at all;
    the totals.  Dialogues run one at a time; their tool calls share one watched worker (``config.budget``;
    None runs them here, unbounded)."""
    check_tau2_options(policy_spec, user)
    dialogues = dialogues_of(tasks)
    policy = load_policy(policy_spec, compact_tools=compact_tools, request=config.request)
    judge_ = Judge(judge, request=config.request) if judge else None
    runner = dialogues.calls({t.id: t for t in tasks}, config.budget) if config.budget is not None else None
    user_policy = None
    start = time.perf_counter()
    totals: dict[str, Any] = {"rollouts": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0,
                              "over_budget": 0, "terminations": Counter()}
    try:
        user_name, make_user, user_policy = user_factory(user, policy_spec, policy, config.generation, config.request)
        with atomic_file(out) as f:
            for task in tasks:
                for sample in range(config.n_per_task):
                    rid = f"{task.id}#{sample}"
                    generation = dataclasses.replace(config.generation, seed=offset_seed(config.generation.seed, sample))
                    agent = PolicyAgent(policy, generation, task, rid)
                    d = dialogues.run(task, agent, make_user(task, sample), max_turns=max_turns,
                                      budget=config.budget, calls=runner)
                    row = rollout_row(task, sample, d, agent, policy_spec, user_name, config, max_turns)
                    add_checks(task, row, judge_)
                    f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                    totals["rollouts"] += 1
                    totals["calls"] += len(d.steps)
                    totals["prompt_tokens"] += agent.prompt_tokens
                    totals["completion_tokens"] += agent.completion_tokens
                    totals["errors"] += bool(agent.errors)
                    totals["over_budget"] += d.overrun
                    totals["terminations"][d.termination] += 1
                    if on_done:
                        on_done(row)
    finally:
        policy.close()
        if user_policy is not None:
            user_policy.close()
        if judge_ is not None:
            judge_.close()
        if runner is not None:
            runner.close()
    seconds = time.perf_counter() - start
    totals.update(seconds=round(seconds, 3), user=user_name, judge=judge, max_turns=max_turns, out=str(out),
                  terminations=dict(totals["terminations"].most_common()),
                  seconds_per_dialogue=round(seconds / totals["rollouts"], 3) if totals["rollouts"] else None)
    return totals


def read_checks(out: Path) -> list[dict[str, Any]]:
    """(rollout id, task id, meta) of every row of a τ² eval file, in order."""
    rows = []
    with open(out, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            rows.append({"rollout_id": r["rollout_id"], "task_id": r["task_id"], "meta": r["meta"]})
    return rows


def graph_rows(scope: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The properties ``dialogue-rollout-checks`` sets on each stored Rollout: exact ones, then ``judged_*``."""
    out = []
    for r in rows:
        checks = r["meta"]["checks"]
        comm = checks["communicate"]
        nl = checks.get("nl_assertions") or {}
        judged = nl.get("method") == JUDGED
        out.append({
            "id": f"{scope}/{r['rollout_id']}",
            "communicate_ok": comm["ok"],
            "communicate_missing": comm["missing"],
            "tau2_reward": checks["tau2_reward"]["value"],
            "judged_nl": nl.get("outcome") if judged else None,
            "judged_by": nl.get("judge") if judged else None,
            "judged_verdicts": json.dumps(nl["verdicts"]) if judged else None,
        })
    return out


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The exact figures beyond the stored pass rate and, apart, the judged ones (never in an exact rate)."""
    n = len(rows)
    comm = [r["meta"]["checks"]["communicate"]["ok"] for r in rows]
    tau2 = [r["meta"]["checks"]["tau2_reward"]["value"] for r in rows]
    nl = [r["meta"]["checks"].get("nl_assertions") or {} for r in rows]
    judged = [x for x in nl if x.get("method") == JUDGED]
    verdicts = Counter(v["verdict"] for x in judged for v in x["verdicts"])
    outcomes = Counter(x["outcome"] for x in judged)
    return {
        "exact": {
            "method": EXACT,
            "state_pass_rate": _rate(sum(r["meta"]["state_reward"] == 1.0 for r in rows), n),
            "communicate_checked": sum(c is not None for c in comm),
            "communicate_passed": sum(c is True for c in comm),
            "tau2_reward_pass_rate": _rate(sum(x == 1.0 for x in tau2), n),
        },
        "judged": {
            "method": JUDGED,
            "judge": judged[0]["judge"] if judged else None,
            "rollouts_with_assertions": sum(1 for x in nl if x),
            "rollouts_judged": len(judged),
            "assertions": sum(verdicts.values()),
            "verdicts": {k: verdicts.get(k, 0) for k in ("yes", "no", "unparseable", "error")},
            "outcomes": {k: outcomes.get(k, 0) for k in ("pass", "fail", "unparseable")},
            "nl_pass_rate": _rate(outcomes.get("pass", 0), len(judged)),
        },
    }


def evaluate_tau2(store: GraphStore, policy_spec: str, tasks: list[Any], experiment: str, name: str,
                  checkpoint: str, config: RolloutConfig, out: Path, user: str | None = None,
                  judge: str | None = None, max_turns: int = DEFAULT_MAX_TURNS, min_support: int = 5,
                  compact_tools: bool = True, on_done: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the dialogues into ``out``, ingest them into ``experiment/name/checkpoint`` (ACE's verifier, step
    by step and on the final state), store each rollout's labelled checks on its Rollout node; the
    summary (the scope's tables, the exact figures, the judged ones apart)."""
    key = scope_key(experiment, name, checkpoint)
    if any(s["key"] == key and s["rollouts"] for s in store.run("scopes", experiment=experiment)):
        raise ConfigError(f"scope {key} already holds rollouts: a τ² evaluation labels every rollout it stores, so "
                          f"give another --checkpoint or delete it first (`ace scope delete {key} --yes`)")
    totals = run_tau2(policy_spec, tasks, config, out, user, judge, max_turns, compact_tools, on_done)
    by_id = {t.id: t for t in tasks}
    report = ingest_file(store, out, by_id, experiment, name, checkpoint, budget=config.budget)  # type: ignore[arg-type]
    rows = read_checks(out)
    labelled = store.write("dialogue-rollout-checks", rows=graph_rows(report.scope, rows)).get("rollouts", 0)
    if labelled != len(rows):
        raise ConfigError(f"{len(rows)} τ² rollouts were written to {out} but {labelled} are stored in {report.scope}"
                          f" (ingest: {report.to_dict()['invalid']} invalid)")
    tables = _tables(store, report.scope, experiment, report.read, min_support)
    steps = sum(len(t.agent_actions) or 1 for t in tasks) * config.n_per_task
    return {**tables, "tasks": len(tasks), "steps": steps, "environment": environment_of(tasks).name, "reward_method": EXACT,
            **summarize(rows), "rollout": totals, "ingest": report.to_dict()}


__all__ = [
    "DEFAULT_MAX_TURNS", "SCRIPTED", "PolicyAgent",
    "PolicyGenerate", "add_checks", "check_tau2_options", "dialogues_of", "evaluate_tau2", "graph_rows",
    "rollout_row", "run_tau2", "summarize", "user_factory",
]
