"""Gold-prefix scoring: every oracle step of every task, with the oracle's own prefix in context.

A free-running rollout of a weak model fails at its first or second call, so the
compositions deeper in a task are never reached and say nothing.  Here the unit
of observation is one oracle step: for step ``i`` of turn ``t`` the conversation
is the task's user turns with the oracle's calls and their real, executed
outputs up to that step (one call per assistant message, as the SFT transcripts
show them), and the policy is asked for the next assistant message.  Because
the prefix is always right, a failure at a step is that step's own: an upstream
mistake can never masquerade as a composition failure.

Two ways to score a step, both recorded in :class:`StepScore`:

* **teacher forced** (``hf:`` policies): one forward pass over a task's whole
  gold transcript gives, for every step at once, the gold message's mean
  negative log-likelihood per token (its tokens in the policy's own template,
  the closing ``<|im_end|>`` included), whether every gold token is the model's
  top choice (``exact``: greedy decoding would write exactly the gold call and
  stop), and whether the tool name's tokens are (``tool_right``);
* **generated** (``generate=True``; the only way for ``sim:`` and ``openai:``
  policies): the policy writes the step, its first call replaces the oracle's
  call at that step, the rest of the turn stays the oracle's, and the verifier
  checks the turn in the bounded worker.  ``passed`` is the turn's verdict, so a
  call equal in effect but not in form passes.

A step's ``outcome`` for the skill graph is ``passed`` when generated, else
``exact``.  :func:`records` turns a task's scores into one stored rollout whose
every oracle step is reached, each step's predecessor being the oracle's
previous call, so the graph's queries, the estimator and the frontier work on a
gold-prefix scope unchanged.  Tasks whose ground truth does not execute
cleanly are left out (counted in :class:`Scoring`).

Steps of turns with an empty ground truth (BFCL miss_func / miss_param) are
scored on the oracle's closing text (the abstention): generated, a step passes
when no call is made; teacher forced, ``tool_right`` says whether the model's
first token starts the text rather than a call.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ace_env.bounded import BoundedVerifier, LineError
from ace_env.calls import Call, parse_call
from ace_env.environments import environment_of
from ace_env.executor import OK
from ace_env.modelout import is_malformed, parse_message
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.tau2.bounded import Tau2Runner
from ace_env.tau2.env import ASSISTANT, USER, Tau2Call
from ace_env.tau2.rollouts import to_call
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.verify import gold_calls
from ace_env.verifier import MALFORMED_CALL, WRONG_ARGUMENT, WRONG_TOOL
from ace_env.worker import Budget
from ace_graph.ingest import GOLD_PREFIX
from ace_graph.outcomes import FAIL, SUCCESS, RolloutRecord, StepRow
from ace_graph.tagger import tag_task
from train.engine import ScriptedUser, offered_schemas
from train.errors import ExportError
from train.export import ABSTAIN_MESSAGE, DONE_MESSAGE, SYSTEM_PROMPT, tool_arguments
from train.policies.base import Conversation, GenerationConfig, Policy, PolicyError
from train.tau2_agent import MALFORMED_NAME, agent_system_prompt
from train.users_tau2 import ideal_dialogue

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- the gold transcript


@dataclass(frozen=True)
class GoldStep:
    """One oracle step of a task and where its gold answer sits in the task's transcript."""

    flat: int  # index among the task's oracle steps (the tagger's flat order)
    turn: int
    index: int  # index in the turn's ground truth (0 for an abstain step)
    tool: str | None  # None: a turn whose ground truth is empty (the step is to abstain)
    call: str | None  # the ground-truth call string
    message: int  # index of the gold assistant message in Transcript.messages
    prev: int | None  # flat index of the oracle's previous call step (abstain steps skipped)


@dataclass
class Transcript:
    """A task's oracle played as a conversation, and its steps."""

    task: Any  # a BFCL Task, or a τ² task (the τ² section below)
    messages: list[dict[str, Any]]
    steps: list[GoldStep]
    tools: list[dict[str, Any]] | None = None  # the tools of every turn (τ²); None: the BFCL turn's own

    def tools_for(self, turn: int) -> list[dict[str, Any]]:
        return self.tools if self.tools is not None else offered_schemas(self.task, turn)

    def conversation(self, step: GoldStep) -> Conversation:
        """The conversation up to (not including) the gold answer of ``step``, as a policy is asked it."""
        return Conversation(
            [dict(m) for m in self.messages[: step.message]],
            self.tools_for(step.turn),
            key=f"{self.task.id}@{step.turn}.{step.index}",
            task=self.task,
            turn=step.turn,
            state={"gold_step": (step.turn, step.index)},
        )


def transcript(task: Any) -> Transcript:
    """The gold transcript of a task of any environment (:data:`_TRANSCRIPTS`)."""
    return _TRANSCRIPTS[environment_of((task,)).name](task)


def bfcl_transcript(task: Task) -> Transcript:
    """The gold transcript of a task: the system prompt, each turn's user message (as the rollout engine
    shows it), each oracle call as one assistant tool call with its real output, and each turn's closing
    text (``DONE_MESSAGE``, or ``ABSTAIN_MESSAGE`` in a turn whose ground truth is empty).

    Raises :class:`train.errors.ExportError` when the ground truth does not execute cleanly.
    """
    oracle = oracle_for(task)
    bad = [s for t in oracle.turns for s in t.steps if s.status != OK]
    if oracle.errors or bad:
        raise ExportError(f"task {task.id}: the oracle does not execute cleanly ({(oracle.errors or ['?'])[0]})")
    user = ScriptedUser()
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    steps: list[GoldStep] = []
    last_call: int | None = None
    for t, (turn, oturn) in enumerate(zip(task.turns, oracle.turns)):
        messages.append(user.message(task, t, messages))
        for i, (raw, ostep) in enumerate(zip(turn.ground_truth, oturn.steps)):
            call = parse_call(raw)
            if not isinstance(call, Call):
                raise ExportError(f"task {task.id}: turn {t}: malformed ground truth {raw!r}")
            call_id = f"call_{t}_{i}"
            steps.append(GoldStep(len(steps), t, i, call.name, raw, len(messages), last_call))
            last_call = steps[-1].flat
            messages.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": call.name, "arguments": json.dumps(tool_arguments(call))}}],
            })
            messages.append({"role": "tool", "tool_call_id": call_id, "name": call.name, "content": ostep.output})
        if not turn.ground_truth:
            steps.append(GoldStep(len(steps), t, 0, None, None, len(messages), last_call))
        messages.append({"role": "assistant", "content": DONE_MESSAGE if turn.ground_truth else ABSTAIN_MESSAGE})
    return Transcript(task, messages, steps)


# --------------------------------------------------------------------------- scores


@dataclass
class StepScore:
    """How a policy did at one oracle step with the oracle's prefix in context."""

    task_id: str
    flat: int
    turn: int
    index: int
    tool: str | None
    prev_tool: str | None
    tokens: int = 0  # tokens of the gold answer (teacher forced)
    nll: float | None = None  # mean negative log-likelihood per gold token (None: the policy gives none)
    exact: bool | None = None  # greedy decoding writes exactly the gold answer (None: not measured)
    tool_right: bool | None = None
    passed: bool | None = None  # generated: the step's own call verified by execution (None: not generated)
    attribution: str | None = None  # what went wrong, when the step failed
    answer: str | None = None  # generated: the policy's message text (cut)

    @property
    def outcome(self) -> bool:
        """The step's verdict in the graph: verified by execution when generated, else exact match."""
        return bool(self.passed) if self.passed is not None else bool(self.exact)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Scoring:
    """The scores of a run, and what was left out."""

    scores: list[StepScore] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tasks (and steps) that could not be scored, with why
    seconds: float = 0.0
    forward_tokens: int = 0  # tokens through the model in teacher-forced passes
    prefix: str = "task-turns"  # what each step's prefix is (PREFIXES)

    def summary(self) -> dict[str, Any]:
        return summarize(self.scores) | {"skipped": len(self.skipped), "seconds": round(self.seconds, 3),
                                         "forward_tokens": self.forward_tokens, "prefix": self.prefix}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def summarize(scores: Iterable[StepScore]) -> dict[str, Any]:
    """``steps``, ``exact_match``, ``mean_nll``, ``tool_accuracy``, ``step_pass_rate`` (generated: the share
    of steps whose call verified by execution) and
    ``compositions`` (steps with a predecessor call: the composition observations)."""
    scores = list(scores)
    nll = [s.nll for s in scores if s.nll is not None]
    exact = [float(s.exact) for s in scores if s.exact is not None]
    tool = [float(s.tool_right) for s in scores if s.tool_right is not None]
    passed = [float(s.passed) for s in scores if s.passed is not None]
    return {
        "steps": len(scores),
        "compositions": sum(1 for s in scores if s.prev_tool is not None),
        "tasks": len({s.task_id for s in scores}),
        "exact_match": _mean(exact),
        "mean_nll": _mean(nll),
        "tool_accuracy": _mean(tool),
        "step_pass_rate": _mean(passed),
    }


# --------------------------------------------------------------------------- teacher forcing


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of 1 in an assistant-token mask, as (start, end)."""
    spans, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(mask)))
    return spans


def _name_tokens(tokenizer: Any, ids: list[int], tool: str) -> int:
    """How many leading tokens of a gold answer it takes to have written the tool's name (all if never)."""
    needle = f'"name": "{tool}"'
    for k in range(1, len(ids) + 1):
        if needle in tokenizer.decode(ids[:k]):
            return k
    return len(ids)


def _groups(tr: Transcript) -> list[tuple[list[dict[str, Any]], list[GoldStep]]]:
    """(tools, steps) per run of consecutive turns offered the same tools: each run is one forward pass."""
    out: list[tuple[list[dict[str, Any]], list[GoldStep]]] = []
    for step in tr.steps:
        tools = tr.tools_for(step.turn)
        if out and out[-1][0] == tools:
            out[-1][1].append(step)
        else:
            out.append((tools, [step]))
    return out


@dataclass
class _Forced:
    """One teacher-forced pass to make: a transcript's run of turns with the same tools, tokenized."""

    tr: Transcript
    steps: list[GoldStep]
    ids: list[int]  # the tokens through the model (up to the end of the last scored answer)
    span_of: dict[int, tuple[int, int]]  # message index -> (start, end) of its assistant tokens
    positions: list[int]  # the positions whose logits predict a gold answer's tokens, in step order


def _forced_inputs(policy: Any, tr: Transcript, context: int | None) -> tuple[list[_Forced], list[str]]:
    """The teacher-forced passes of a transcript (one per run of turns with the same tools), and the reasons of
    steps left out because the transcript is longer than the model's context."""
    tokenizer = policy.tokenizer
    passes: list[_Forced] = []
    skipped: list[str] = []
    for tools, steps in _groups(tr):
        last = steps[-1].message
        messages = tr.messages[: last + 1]
        enc = tokenizer.apply_chat_template(
            messages, tools=tools or None, chat_template=policy.template, tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True, compact_tools=policy.compact_tools,
        )
        ids, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
        spans = _spans(mask)
        assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        if len(spans) != len(assistant):
            raise PolicyError(f"task {tr.task.id}: the template marks {len(spans)} assistant spans for "
                              f"{len(assistant)} assistant messages; gold-prefix scoring needs {{% generation %}} "
                              "around each assistant message")
        span_of = dict(zip(assistant, spans))
        if context and len(ids) > context:
            keep = [s for s in steps if span_of[s.message][1] <= context]
            skipped += [f"task {tr.task.id}: step {s.turn}.{s.index} lies beyond the model's {context}-token "
                        "context" for s in steps if s not in keep]
            steps = keep
            ids = ids[:context]
        if not steps:
            continue
        positions: list[int] = []
        for s in steps:
            a, b = span_of[s.message]
            positions.extend(range(a - 1, b - 1))
        end = max(span_of[s.message][1] for s in steps)
        passes.append(_Forced(tr, steps, ids[:end], span_of, positions))
    return passes, skipped


def _forced_scores(tokenizer: Any, p: _Forced, logits: Any) -> dict[int, StepScore]:
    """The scores of a pass's steps from the logits at its positions (one row per position, in order)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    gold = torch.tensor([p.ids[q + 1] for q in p.positions], device=logp.device)
    token_nll = (-logp.gather(1, gold[:, None])[:, 0]).tolist()
    hits = (logp.argmax(dim=-1) == gold).tolist()
    scores: dict[int, StepScore] = {}
    at = 0
    for s in p.steps:
        a, b = p.span_of[s.message]
        n = b - a
        nll, hit = token_nll[at:at + n], hits[at:at + n]
        at += n
        named = _name_tokens(tokenizer, p.ids[a:b], s.tool) if s.tool else 1
        scores[s.flat] = StepScore(p.tr.task.id, s.flat, s.turn, s.index, s.tool, None, tokens=n,
                                   nll=sum(nll) / n, exact=all(hit), tool_right=all(hit[:named]))
    return scores


def teacher_forced(policy: Any, tr: Transcript, context: int | None = None) -> tuple[dict[int, StepScore], int, list[str]]:
    """NLL, exact match and tool-name match of every step of a transcript under an ``hf:`` policy.

    One forward pass per run of turns with the same tools (one for most tasks), logits kept only at the
    positions that predict a gold answer's tokens.  Returns (scores by flat index, tokens through the
    model, reasons of steps left out because the transcript is longer than the model's context).
    """
    import torch

    model = policy.model
    passes, skipped = _forced_inputs(policy, tr, context if context is not None else policy.context)
    scores: dict[int, StepScore] = {}
    forward = 0
    for p in passes:
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([p.ids], device=model.device),
                        logits_to_keep=torch.tensor(p.positions, device=model.device))
            scores.update(_forced_scores(policy.tokenizer, p, out.logits[0]))
        forward += len(p.ids)
    return scores, forward, skipped


def _cut(cache: Any, length: int) -> None:
    """Cut a key/value cache back to its first ``length`` tokens (``crop`` of a negative count: the one form
    every transformers version reads the same way)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _common(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def teacher_forced_shared(policy: Any, transcripts: list[Transcript],
                          context: int | None = None) -> tuple[dict[tuple[str, int], StepScore], int, list[str]]:
    """What :func:`teacher_forced` gives for each transcript, computing each token prefix that several passes
    share (the system prompt and tool listing of tasks offered the same tools, at least) once.

    The passes are sorted by their tokens, so passes that share a prefix are neighbours; the shared prefixes
    form a tree, walked depth first: a node's key/value states are computed on top of its parent's, each pass's
    own tokens on top of its deepest node, and the cache is cut back after each child.  A prefix never reaches
    a pass's first scored position, so every logit comes from the pass's own forward, at the same positions,
    over the same keys and values as in one whole pass: the scores equal :func:`teacher_forced`'s up to float
    rounding.  Returns (scores by (task id, flat index), tokens through the model, reasons of steps left out).
    """
    import torch
    from transformers import DynamicCache

    model, tokenizer = policy.model, policy.tokenizer
    context = context if context is not None else policy.context
    passes: list[_Forced] = []
    skipped: list[str] = []
    for tr in transcripts:
        got, why = _forced_inputs(policy, tr, context)
        passes += got
        skipped += why
    passes.sort(key=lambda p: p.ids)
    cap = [p.positions[0] for p in passes]  # a shared prefix ends before the pass's first scored position
    near = [min(_common(passes[i].ids, passes[i + 1].ids), cap[i], cap[i + 1]) for i in range(len(passes) - 1)]
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    scores: dict[tuple[str, int], StepScore] = {}
    forward = 0

    def extend(cache: Any, ids: list[int], logits_to_keep: Any) -> Any:
        nonlocal forward
        forward += len(ids)
        return model(input_ids=torch.tensor([ids], device=model.device), use_cache=True,
                     logits_to_keep=logits_to_keep, **{cache_arg: cache})

    def walk(lo: int, hi: int, cache: Any, done: int) -> None:
        """Score passes[lo:hi], which share their first ``done`` tokens (in ``cache``)."""
        if hi - lo == 1:
            p = passes[lo]
            rest = torch.tensor([q - done for q in p.positions], device=model.device)
            out = extend(cache, p.ids[done:], rest)
            for flat, score in _forced_scores(tokenizer, p, out.logits[0]).items():
                scores[(p.tr.task.id, flat)] = score
            _cut(cache, done)
            return
        shared = min(near[lo:hi - 1])
        if shared > done:
            extend(cache, passes[lo].ids[done:shared], 1)
        start = lo
        for i in range(lo, hi):
            if i == hi - 1 or near[i] == shared:  # the children: runs whose neighbours share more than this node
                walk(start, i + 1, cache, shared)
                start = i + 1
        _cut(cache, done)

    if passes:
        with torch.inference_mode():
            walk(0, len(passes), DynamicCache(config=model.config), 0)
    return scores, forward, skipped


# --------------------------------------------------------------------------- generation


def _replaced(task: Task, step: GoldStep, calls: list[Any]) -> list[list[Any]]:
    """The ground truth up to the step's turn, with the step's call replaced by ``calls``."""
    turns = [list(turn.ground_truth) for turn in task.turns[: step.turn + 1]]
    if step.tool is None:
        turns[step.turn] = list(calls)
    else:
        turns[step.turn][step.index:step.index + 1] = list(calls)
    return turns


def generated(policy: Policy, transcripts: list[Transcript], config: GenerationConfig, budget: Budget | None,
              batch_size: int = 8, on_step: Callable[[int], None] | None = None) -> dict[tuple[str, int], StepScore]:
    """Every step answered by the policy and its first call verified by execution, in batches.

    Steps are sent task by task, so an ``hf:`` policy's prefix cache reuses each task's prefix.  The
    first call of an answer replaces the oracle's call at the step (the rest of the turn stays the
    oracle's) and the turn is verified in the bounded worker: the step passes when the turn does, and
    an answer without a call passes only where the turn needs none.
    """
    todo = [(tr, s) for tr in transcripts for s in tr.steps]
    tasks = {tr.task.id: tr.task for tr in transcripts}
    out: dict[tuple[str, int], StepScore] = {}
    with BoundedVerifier(tasks, budget or Budget(), keep_steps=True) as verifier:
        for at in range(0, len(todo), batch_size):
            batch = todo[at:at + batch_size]
            replies = policy.generate([tr.conversation(s) for tr, s in batch], config)
            if len(replies) != len(batch):
                raise PolicyError(f"policy {policy.spec} answered {len(replies)} of {len(batch)} conversations")
            for (tr, s), score in zip(batch, judge_replies(verifier, batch, replies)):
                out[(tr.task.id, s.flat)] = score
            if on_step:
                on_step(len(batch))
    return out


def judge_replies(verifier: BoundedVerifier, steps: list[tuple[Transcript, GoldStep]],
                  replies: list[Any]) -> list[StepScore]:
    """The verdict on each reply at its step: its first call replaces the oracle's call there, the rest of the
    turn stays the oracle's, and the turn is verified in ``verifier`` (a started BoundedVerifier over the
    steps' tasks, ``keep_steps=True``)."""
    firsts = []
    for reply in replies:
        calls = [] if reply.finish_reason == "error" else parse_message(reply.message).calls
        firsts.append(calls[:1])
    results = verifier.verify_many([
        (tr.task.id, _replaced(tr.task, s, first), f"{tr.task.id}@{s.turn}.{s.index}")
        for (tr, s), first in zip(steps, firsts)
    ])
    return [_judge(tr, s, reply, first, verdict)
            for (tr, s), reply, first, verdict in zip(steps, replies, firsts, results)]


def _judge(tr: Transcript, s: GoldStep, reply: Any, first: list[Any], verdict: Any) -> StepScore:
    text = reply.message.get("content") or ""
    score = StepScore(tr.task.id, s.flat, s.turn, s.index, s.tool, None, answer=str(text)[:500])
    if reply.finish_reason == "error":
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "inference_error"
        return score
    if isinstance(verdict, LineError):
        score.passed, score.exact, score.tool_right, score.attribution = False, False, False, "malformed_call"
        return score
    turn_ok = len(verdict.turn_ok) > s.turn and verdict.turn_ok[s.turn]
    if s.tool is None:  # the turn needs no call
        score.passed = score.exact = score.tool_right = not first and turn_ok
        score.attribution = None if score.passed else verdict.attribution or "acted_without_need"
        return score
    made = verdict.steps[s.turn][s.index] if first and len(verdict.steps) > s.turn and \
        len(verdict.steps[s.turn]) > s.index else None
    gold = oracle_for(tr.task).turns[s.turn].steps[s.index]
    score.tool_right = made is not None and made.name == gold.name
    score.exact = made is not None and made.executed and made.name == gold.name and \
        repr(made.arguments) == repr(gold.arguments)
    score.passed = bool(first) and turn_ok
    if not score.passed:
        if not first:
            score.attribution = "stopped_early"
        elif verdict.attribution in (None, WRONG_ARGUMENT, WRONG_TOOL):
            score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
        else:
            score.attribution = verdict.attribution
    return score


# --------------------------------------------------------------------------- τ² tasks
#
# Gold-prefix scoring on τ² tasks (the sections above are BFCL's).
#
# A τ² task's gold holds the agent's calls but no user turns: its user is simulated.  The prefix of a step
# is therefore the task's *ideal dialogue* (:func:`train.users_tau2.ideal_dialogue`): the gold calls in
# order, executed on the task's database, with the scripted user who answers exactly the identifying
# values each call needs (checked by τ²'s fidelity rules, the dialogue the user simulator is fine-tuned
# on).  The agent sees it as in a τ² rollout: τ²'s agent system prompt and policy, the domain's agent
# tools, the user's messages, its own calls and their outputs; telecom's user-side calls and their
# outputs are the user's and are left out of the agent's view.  A run's summary names its prefix
# (``prefix``: ``ideal-dialogue``), so a τ² gold-prefix figure is never mistaken for one over a real user.
#
# Step ``j`` is the task's ``j``-th gold agent action (the tagger's flat order, all in turn 0); a task
# without agent actions is one abstain step, scored on the closing text.
#
# * teacher forced (``hf:``): as for BFCL, one forward pass per task;
# * generated: the step's first call replaces gold action ``j`` and the whole gold (user calls included)
#   runs in the bounded τ² worker (:class:`~ace_env.tau2.bounded.Tau2Runner`).  The step passes when the
#   rollout's reward is 1 (the final database and assertions equal the gold's) *and* the call returned
#   what the gold call returned, so a read with other arguments fails even though it changes nothing,
#   and a call equal in effect but not in form passes.


#: What a step's prefix is, per environment (a run's summary says it).
PREFIXES = {"bfcl": "task-turns", "tau2": "ideal-dialogue"}


def _agent_view(message: dict[str, Any]) -> dict[str, Any] | None:
    """A message of the ideal dialogue as the agent sees it (None: the user's own tool call or its output)."""
    if message["role"] == USER and message.get("tool_calls"):
        return None
    if message["role"] == "tool":
        if message.get("requestor") == USER:
            return None
        return {k: message[k] for k in ("role", "tool_call_id", "name", "content")}
    out = {"role": message["role"], "content": message.get("content") or None}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def tau2_transcript(task: Tau2Task) -> Transcript:
    """The gold transcript of a τ² task: τ²'s agent prompt, then the ideal dialogue in the agent's view."""
    dialogue = ideal_dialogue(task)
    messages: list[dict[str, Any]] = [{"role": "system", "content": agent_system_prompt(task.domain)}]
    steps: list[GoldStep] = []
    for m in dialogue.messages:
        view = _agent_view(m)
        if view is None:
            continue
        if view["role"] == ASSISTANT and view.get("tool_calls"):
            fn = view["tool_calls"][0]["function"]
            prev = steps[-1].flat if steps else None
            steps.append(GoldStep(len(steps), 0, len(steps), fn["name"], fn["arguments"], len(messages), prev))
        messages.append(view)
    if not task.agent_actions:  # one abstain step: the agent's closing text
        last = max(i for i, m in enumerate(messages) if m["role"] == ASSISTANT)
        steps.append(GoldStep(0, 0, 0, None, None, last, None))
    if len(steps) != max(len(task.agent_actions), 1):
        raise PolicyError(f"task {task.id}: the ideal dialogue holds {len(steps)} agent calls for "
                          f"{len(task.agent_actions)} gold agent actions")
    return Transcript(task, messages, steps, tools=[dict(t) for t in task.tools])


def _first_call(reply: Any) -> Tau2Call | None:
    """The reply's first call as a τ² call (a malformed one kept as a call that errors), None without one."""
    if reply.finish_reason == "error":
        return None
    calls = parse_message(reply.message).calls
    if not calls:
        return None
    first = calls[0]
    if is_malformed(first):  # runs as a call whose arguments are not an object: an error step
        return Tau2Call(MALFORMED_NAME, "malformed: " + str(first.get("raw", ""))[:500])
    if isinstance(first, dict) and isinstance(first.get("name"), str) and isinstance(first.get("arguments"), dict):
        return Tau2Call(first["name"], dict(first["arguments"]))
    try:
        return to_call(first)
    except Exception:  # noqa: BLE001 - a call ACE cannot read is a call that errors, never a crash
        return Tau2Call(MALFORMED_NAME, "malformed: " + json.dumps(first, default=str)[:500])


def _with_step(task: Tau2Task, j: int, made: Tau2Call | None) -> tuple[list[Tau2Call], int | None]:
    """The gold calls with agent action ``j`` replaced by ``made`` (left out when None), and its position
    (None when left out)."""
    calls, at, n = [], None, 0
    for c in gold_calls(task):
        if c.requestor == ASSISTANT:
            if n == j:
                if made is not None:
                    at = len(calls)
                    calls.append(made)
                n += 1
                continue
            n += 1
        calls.append(c)
    return calls, at


def judge_tau2(runner: Tau2Runner, tr: Transcript, s: GoldStep, reply: Any) -> StepScore:
    """The verdict on one reply at its step (the module doc)."""
    task = tr.task
    text = (reply.message.get("content") or "") if reply.finish_reason != "error" else ""
    score = StepScore(task.id, s.flat, s.turn, s.index, s.tool, None, answer=str(text)[:500])
    if reply.finish_reason == "error":
        score.passed = score.exact = score.tool_right = False
        score.attribution = "inference_error"
        return score
    made = _first_call(reply)
    if s.tool is None:  # no gold action: the agent should only talk
        score.passed = score.exact = score.tool_right = made is None
        score.attribution = None if made is None else "acted_without_need"
        return score
    if made is None:
        score.passed = score.exact = score.tool_right = False
        score.attribution = "stopped_early"
        return score
    action = task.agent_actions[s.index]
    score.tool_right = made.name == action.name
    score.exact = score.tool_right and made.arguments == action.arguments
    calls, at = _with_step(task, s.index, made)
    assert at is not None
    outcome = runner.run(task.id, calls)
    if outcome.verdict is None:
        score.passed, score.attribution = False, outcome.attribution or "error"
        return score
    gold_output = tr.messages[s.message + 1]["content"]  # what the gold call returned, as the agent saw it
    step = outcome.steps[at] if at < len(outcome.steps) else None
    score.passed = outcome.verdict.reward == 1.0 and step is not None and step.content == gold_output
    if not score.passed:
        if not isinstance(made.arguments, dict):
            score.attribution = MALFORMED_CALL
        else:
            score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
    return score


def generated_tau2(policy: Policy, transcripts: list[Transcript], config: GenerationConfig, budget: Budget | None,
                   batch_size: int = 8, on_step: Callable[[int], None] | None = None) -> dict[tuple[str, int], StepScore]:
    """Every step of τ² transcripts answered by the policy and verified by execution, in batches."""
    todo = [(tr, s) for tr in transcripts for s in tr.steps]
    out: dict[tuple[str, int], StepScore] = {}
    with Tau2Runner({tr.task.id: tr.task for tr in transcripts}, budget or Budget()) as runner:
        for at in range(0, len(todo), batch_size):
            batch = todo[at:at + batch_size]
            replies = policy.generate([tr.conversation(s) for tr, s in batch], config)
            if len(replies) != len(batch):
                raise PolicyError(f"policy {policy.spec} answered {len(replies)} of {len(batch)} conversations")
            for (tr, s), reply in zip(batch, replies):
                out[(tr.task.id, s.flat)] = judge_tau2(runner, tr, s, reply)
            if on_step:
                on_step(len(batch))
    return out


# --------------------------------------------------------------------------- a run


def score_tasks(policy: Policy, tasks: Iterable[Task], generate: bool = False,
                config: GenerationConfig | None = None, budget: Budget | None = None, batch_size: int = 8,
                on_step: Callable[[int], None] | None = None, share_prefix: bool = False) -> Scoring:
    """Gold-prefix scores of every oracle step of ``tasks``.

    Teacher forcing needs an ``hf:`` policy (one with ``model`` and ``tokenizer``); other policies need
    ``generate=True``.  With an ``hf:`` policy and ``generate`` both are recorded.  ``on_step(n)`` is
    called as steps are scored (``n`` of them).  ``share_prefix``: teacher-force every task together,
    computing the token prefixes tasks share once (:func:`teacher_forced_shared`: the same scores, fewer
    tokens through the model); otherwise one task at a time (:func:`teacher_forced`).
    """
    start = time.perf_counter()
    run = Scoring()
    forcing = hasattr(policy, "model") and hasattr(policy, "tokenizer")
    if not forcing and not generate:
        raise PolicyError(f"policy {policy.spec} gives no likelihoods: score it with --generate")
    tasks = list(tasks)
    run.prefix = PREFIXES[environment_of(tasks).name]
    transcripts: list[Transcript] = []
    for task in tasks:
        try:
            transcripts.append(transcript(task))
        except (ExportError, PolicyError) as e:
            run.skipped.append(str(e))
    forced: dict[tuple[str, int], StepScore] = {}
    if forcing and share_prefix:
        forced, run.forward_tokens, skipped = teacher_forced_shared(policy, transcripts)
        run.skipped += skipped
        if on_step and not generate:
            on_step(sum(len(tr.steps) for tr in transcripts))
    elif forcing:
        for tr in transcripts:
            by_flat, n, skipped = teacher_forced(policy, tr)
            run.forward_tokens += n
            run.skipped += skipped
            forced.update({(tr.task.id, k): v for k, v in by_flat.items()})
            if on_step and not generate:
                on_step(len(tr.steps))
    made: dict[tuple[str, int], StepScore] = {}
    if generate and transcripts:
        generate_in = _GENERATED[environment_of([tr.task for tr in transcripts]).name]
        made = generate_in(policy, transcripts, config or GenerationConfig(), budget, batch_size, on_step)
    for tr in transcripts:
        tools = {s.flat: s.tool for s in tr.steps}
        for s in tr.steps:
            key = (tr.task.id, s.flat)
            if key not in forced and key not in made:
                continue
            score = made.get(key) or forced[key]
            if key in made and key in forced:
                f = forced[key]
                score.tokens, score.nll, score.exact, score.tool_right = f.tokens, f.nll, f.exact, f.tool_right
            score.prev_tool = tools[s.prev] if s.prev is not None else None
            if not score.outcome and score.attribution is None:
                score.attribution = WRONG_ARGUMENT if score.tool_right else WRONG_TOOL
            run.scores.append(score)
    run.seconds = time.perf_counter() - start
    return run


#: How each environment's gold transcript is built and its generated steps verified.
_TRANSCRIPTS: dict[str, Callable[[Any], Transcript]] = {"bfcl": bfcl_transcript, "tau2": tau2_transcript}
_GENERATED: dict[str, Callable[..., dict[tuple[str, int], StepScore]]] = {"bfcl": generated, "tau2": generated_tau2}


# --------------------------------------------------------------------------- into the graph


def records(scores: Iterable[StepScore], tasks: dict[str, Task], scope: str) -> Iterator[tuple[RolloutRecord, tuple[Any, ...]]]:
    """One stored rollout per task (id ``TASK#gold-prefix``): every scored oracle step reached, its outcome
    the step's own, its predecessor the oracle's previous call; reward 1 when every step passed."""
    by_task: dict[str, list[StepScore]] = {}
    for s in scores:
        by_task.setdefault(s.task_id, []).append(s)
    for task_id, steps in by_task.items():
        task = tasks[task_id]
        tags = tag_task(task)
        tr_steps = {s.flat: s for s in transcript(task).steps}
        steps.sort(key=lambda s: s.flat)
        rows = []
        for s in steps:
            tag = tags[s.flat]
            rows.append(StepRow(s.flat, s.turn, s.index, tag.tool, tuple(tag.skills),
                                SUCCESS if s.outcome else FAIL, tr_steps[s.flat].prev, nll=s.nll))
        failed = [s for s in steps if not s.outcome]
        first = failed[0] if failed else None
        prev = tags[tr_steps[first.flat].prev] if first and tr_steps[first.flat].prev is not None else None
        share = (len(steps) - len(failed)) / len(steps)
        rollout_id = f"{task_id}#{GOLD_PREFIX}"
        yield RolloutRecord(
            id=f"{scope}/{rollout_id}", rollout_id=rollout_id, scope=scope, task_id=task_id,
            reward=1.0 if not failed else 0.0, partial_credit=share, step_match=share,
            near_success=bool(failed) and share >= 0.7,
            attribution=first.attribution if first else None,
            failing_turn=first.turn if first else None, failing_step=first.index if first else None,
            fail_tool=tags[first.flat].tool if first else None, fail_prev_tool=prev.tool if prev else None,
            fail_skills=tuple(tags[first.flat].skills) if first else (),
            fail_prev_skills=tuple(prev.skills) if prev else (),
            steps=rows,
            pairs=[(s.prev, s.flat) for s in tr_steps.values() if s.prev is not None],
            calls=json.dumps([s.answer for s in steps] if any(s.answer is not None for s in steps) else
                             [s.tool for s in steps])[:20_000],
            detail=f"gold-prefix: {len(steps) - len(failed)} of {len(steps)} steps passed",
            task_key=f"{task.source}:{task.id}",
        ), tags

