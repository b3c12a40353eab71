"""The judge of natural-language assertions (train/judge.py): strict answer parsing, verdict labels, refusals.

The judge against a real vLLM server is tests/integration/test_tau2_eval_judge.py; here its policy is an
in-process stand-in so the labelling of every kind of answer can be pinned.
"""

from __future__ import annotations

import pytest

from ace_env.errors import ConfigError
from train.judge import (
    ERROR,
    FAIL,
    JUDGE_SYSTEM,
    JUDGED,
    NO,
    PASS,
    TRANSCRIPT_CHARS,
    UNPARSEABLE,
    YES,
    AssertionVerdict,
    Judge,
    check_judge_spec,
    judge_prompt,
    judged_outcome,
    parse_answer,
    transcript,
)
from train.policies.base import Reply


@pytest.mark.parametrize("text, want", [
    ("YES", YES), ("yes", YES), (" Yes.\n", YES), ("**Yes**", YES), ('"No"', NO), ("no", NO), ("NO!", NO),
    ("`no`", NO),
])
def test_a_yes_or_a_no_alone_parses(text, want):
    assert parse_answer(text) == want


@pytest.mark.parametrize("text", [
    "", "   ", None, 3, "Yes, the agent refused.", "No doubt it does", "Maybe", "yesno", "YES NO", "Y", "true",
    "The answer is yes", "Yes\nbut the agent", "<tool_call>", "sí",
])
def test_anything_else_is_unparseable_never_a_pass(text):
    assert parse_answer(text) == UNPARSEABLE


def v(verdict: str) -> AssertionVerdict:
    return AssertionVerdict("a", verdict, verdict)


def test_a_rollout_passes_only_when_every_assertion_got_yes():
    assert judged_outcome([v(YES), v(YES)]) == PASS
    assert judged_outcome([v(YES), v(NO)]) == FAIL
    assert judged_outcome([v(UNPARSEABLE), v(NO)]) == FAIL  # a clear no outweighs
    assert judged_outcome([v(YES), v(UNPARSEABLE)]) == UNPARSEABLE
    assert judged_outcome([v(YES), v(ERROR)]) == UNPARSEABLE
    assert judged_outcome([]) is None
    assert v(YES).to_dict()["method"] == JUDGED


@pytest.mark.parametrize("spec", ["hf:smollm2-135m", "sim:x.toml", "openai:model", "smollm2", "openai"])
def test_the_judge_is_an_openai_endpoint(spec):
    with pytest.raises(ConfigError, match="openai:MODEL@"):
        check_judge_spec(spec)
    assert check_judge_spec("openai:m@http://127.0.0.1:8000/v1") == "openai:m@http://127.0.0.1:8000/v1"


DIALOGUE = [
    {"role": "system", "content": "the agent's policy, not shown to the judge"},
    {"role": "assistant", "content": "Hi! How can I help you today?"},
    {"role": "user", "content": "Cancel my reservation EHGLP3."},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "get_reservation_details",
                                                      "arguments": '{"reservation_id": "EHGLP3"}'}}]},
    {"role": "tool", "tool_call_id": "c0", "content": "x" * 5000},
    {"role": "assistant", "content": "I cannot cancel it under the policy."},
]


def test_the_transcript_shows_calls_cuts_tool_results_and_drops_the_system_prompt():
    text = transcript(DIALOGUE)
    assert "the agent's policy" not in text
    assert 'get_reservation_details({"reservation_id": "EHGLP3"})' in text
    assert "x" * 400 in text and "x" * 401 not in text
    assert text.splitlines()[-1] == "assistant: I cannot cancel it under the policy."
    long = [{"role": "user", "content": f"message {i} " + "y" * 100} for i in range(400)]
    cut = transcript(long)
    assert cut.startswith("[earlier messages cut]") and cut.endswith("y" * 100)
    assert len(cut) <= TRANSCRIPT_CHARS + 40
    prompt = judge_prompt(DIALOGUE, "Agent should refuse.")
    assert prompt[0] == {"role": "system", "content": JUDGE_SYSTEM}
    assert prompt[1]["content"].endswith("Expected outcome: Agent should refuse.\n\n"
                                         "Does the agent satisfy the expected outcome? Answer YES or NO.")


class Answers:
    """An in-process policy answering the judge's requests in turn with the given replies."""

    spec = "openai:stand-in@http://127.0.0.1:1/v1"

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen = []

    def generate(self, conversations, config):
        self.seen.append((conversations, config))
        return [self.replies.pop(0) for _ in conversations]

    def close(self):
        pass


def test_each_answer_is_labelled_and_kept_raw():
    replies = [Reply({"role": "assistant", "content": "Yes."}),
               Reply({"role": "assistant", "content": "Yes, the agent refused to cancel."}),
               Reply({"role": "assistant", "content": ""}, finish_reason="error", error="HTTP 500: boom"),
               Reply({"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "x"}}]}),
               Reply({"role": "assistant", "content": "NO"})]
    stand_in = Answers(replies)
    judge = Judge(stand_in.spec, policy=stand_in)
    got = judge.check(DIALOGUE, ["a1", "a2", "a3", "a4", "a5"])
    assert [(g.assertion, g.verdict) for g in got] == [
        ("a1", YES), ("a2", UNPARSEABLE), ("a3", ERROR), ("a4", UNPARSEABLE), ("a5", NO)]
    assert got[1].answer == "Yes, the agent refused to cancel." and got[2].answer == "HTTP 500: boom"
    assert all(g.method == JUDGED for g in got)
    assert judged_outcome(got) == FAIL
    [(convs, config)] = stand_in.seen
    assert config.temperature == 0.0 and config.max_tokens <= 8
    assert all(c.tools == [] for c in convs)  # the judge is offered no tool
    assert judged_outcome(judge.check(DIALOGUE, [])) is None
