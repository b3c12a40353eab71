"""A judge for what ACE cannot check exactly: τ²'s natural-language assertions, through an ``openai:`` endpoint.

τ²-bench grades some tasks on what the agent *said* (``nl_assertions``: "Agent should refuse to proceed
with the cancellation."), with an LLM judge.  No deterministic checker can do that, so ACE keeps such
verdicts apart from its own: a verdict here is ``judged``, never ``exact``, and ``ace eval`` reports and
stores it separately (``train.tau2_eval``); a judged pass never enters an exact pass rate.

The judge is any ``openai:MODEL@URL`` policy (:mod:`train.policies.openai`), asked once per assertion
with the transcript (:func:`transcript`) and the assertion, for exactly one word, YES or NO.  The answer
is parsed strictly (:func:`parse_answer`): only ``yes`` or ``no`` (any case, optionally quoted, bolded
or followed by a full stop) count; anything else is recorded as ``unparseable`` with the raw answer, a
request the endpoint refused (HTTP 400, 413, 422) as ``error``; a judge that is down stops the evaluation
(:class:`train.errors.EndpointError`): no verdict is made up for it.  Neither is ever a pass: a rollout's judged outcome
(:func:`judged_outcome`) is ``pass`` only when every assertion got ``yes``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from ace_env.errors import ConfigError
from train.policies import RequestConfig, load_policy
from train.policies.base import Conversation, GenerationConfig, Policy

#: How a verdict was reached: ACE's deterministic verifier, or the judge.
EXACT = "exact"
JUDGED = "judged"

#: One assertion's judged verdicts.
YES, NO, UNPARSEABLE, ERROR = "yes", "no", "unparseable", "error"

#: A rollout's judged outcome over its assertions.
PASS, FAIL = "pass", "fail"

JUDGE_SYSTEM = (
    "You grade a conversation between a customer-service agent and a customer against one expected outcome. "
    "Decide whether the agent's behaviour in the conversation satisfies the expected outcome. "
    "Answer with exactly one word: YES if it does, NO if it does not. Write nothing else."
)

#: Longest tool result and whole transcript shown to the judge, in characters.
TOOL_CHARS = 400
TRANSCRIPT_CHARS = 12_000
#: Tokens the judge may answer with: one word, with room for a stray quote or full stop.
ANSWER_TOKENS = 8

_DECOR = re.compile(r"^[\s\"'`*_]+|[\s\"'`*_.!]+$")


def check_judge_spec(spec: str) -> str:
    """``openai:MODEL@URL`` or a one-line refusal."""
    if spec.partition(":")[0] != "openai" or "@" not in spec:
        raise ConfigError(f"--judge {spec!r}: the judge is an OpenAI-compatible endpoint, "
                          "openai:MODEL@http://HOST:PORT/v1 (e.g. a vLLM server)")
    return spec


def parse_answer(text: Any) -> str:
    """``yes``, ``no`` or ``unparseable``: the answer stripped of surrounding whitespace, quotes, markdown
    emphasis and a final full stop must be exactly one of the two words (any case)."""
    if not isinstance(text, str):
        return UNPARSEABLE
    word = _DECOR.sub("", text).lower()
    return word if word in (YES, NO) else UNPARSEABLE


@dataclass(frozen=True)
class AssertionVerdict:
    """The judge's verdict on one assertion: ``yes``, ``no``, ``unparseable`` or ``error``, with its raw answer."""

    assertion: str
    verdict: str
    answer: str  # the judge's raw answer (or the request's error), cut to 200 characters
    method: str = JUDGED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judged_outcome(verdicts: Iterable[AssertionVerdict]) -> str | None:
    """A rollout's judged outcome: ``pass`` (every assertion ``yes``), ``fail`` (any ``no``),
    ``unparseable`` (no ``no``, but an answer that was not yes/no or a failed request); None without
    assertions."""
    got = [v.verdict for v in verdicts]
    if not got:
        return None
    if NO in got:
        return FAIL
    if all(v == YES for v in got):
        return PASS
    return UNPARSEABLE


def _line(m: dict[str, Any]) -> str:
    role = m.get("role", "?")
    text = m.get("content") or ""
    if role == "tool":
        text = text if len(text) <= TOOL_CHARS else text[:TOOL_CHARS] + " [...]"
    calls = [f"{(tc.get('function') or tc).get('name')}({(tc.get('function') or tc).get('arguments')})"
             for tc in m.get("tool_calls") or () if isinstance(tc, dict)]
    if calls:
        text = (text + " " if text else "") + "[tool calls: " + "; ".join(calls) + "]"
    return f"{role}: {text}"


def transcript(messages: list[dict[str, Any]]) -> str:
    """The dialogue as τ²'s judge shows it (``role: content`` per message), tool calls written out, long tool
    results cut; a transcript over :data:`TRANSCRIPT_CHARS` keeps its end (the outcome) and says so."""
    text = "\n".join(_line(m) for m in messages if m.get("role") != "system")
    if len(text) > TRANSCRIPT_CHARS:
        text = "[earlier messages cut]\n" + text[-TRANSCRIPT_CHARS:]
    return text


def judge_prompt(messages: list[dict[str, Any]], assertion: str) -> list[dict[str, Any]]:
    """The judge's conversation for one assertion."""
    return [{"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Conversation:\n{transcript(messages)}\n\nExpected outcome: {assertion}\n\n"
                                        "Does the agent satisfy the expected outcome? Answer YES or NO."}]


class Judge:
    """An ``openai:`` endpoint judging natural-language assertions (greedy, one short answer each)."""

    def __init__(self, spec: str, max_tokens: int = ANSWER_TOKENS, policy: Policy | None = None,
                 request: RequestConfig | None = None) -> None:
        self.spec = check_judge_spec(spec)
        # policy: one already loaded; request: the timeout and retries of the judge's requests
        self.policy = policy if policy is not None else load_policy(spec, request=request)
        self.generation = GenerationConfig(temperature=0.0, max_tokens=max_tokens, seed=0)

    def check(self, messages: list[dict[str, Any]], assertions: Iterable[str]) -> list[AssertionVerdict]:
        """One verdict per assertion, in order (the requests of one rollout go out together)."""
        assertions = list(assertions)
        convs = [Conversation(judge_prompt(messages, a), [],
                              "judge:" + hashlib.sha256(a.encode()).hexdigest()[:12]) for a in assertions]
        replies = self.policy.generate(convs, self.generation) if convs else []
        out = []
        for a, reply in zip(assertions, replies):
            if reply.finish_reason == "error":
                out.append(AssertionVerdict(a, ERROR, str(reply.error)[:200]))
                continue
            raw = reply.message.get("content")
            if reply.message.get("tool_calls") or not isinstance(raw, str):
                out.append(AssertionVerdict(a, UNPARSEABLE, str(raw or reply.message.get("tool_calls"))[:200]))
                continue
            out.append(AssertionVerdict(a, parse_answer(raw), raw[:200]))
        return out

    def close(self) -> None:
        self.policy.close()


__all__ = [
    "ERROR", "EXACT", "FAIL", "JUDGED", "NO", "PASS", "UNPARSEABLE", "YES",
    "AssertionVerdict", "Judge", "check_judge_spec", "judge_prompt", "judged_outcome", "parse_answer",
    "transcript",
]
