"""Fuzzing (Hypothesis) of the call parsers and the rollout readers.

Covered: ``ace_env.calls.parse_call``, ``ace_env.modelout.parse_output`` /
``parse_message`` (what a model says), ``ace_env.formats`` (BFCL steps, any
rollout line, whole files) and ``ace_env.formats.parse_rollout``.  They must
never raise on any input except with ACE's own error for a bad line, and
never execute anything.

Every test here is marked ``fuzz``.  In the normal suite they run short:
ACE_FUZZ_EXAMPLES examples each (default 50).  CI runs them again as their
own step with a time budget (``.ci/run``: ``pytest -m fuzz`` with
ACE_FUZZ_EXAMPLES=100000 ACE_FUZZ_SECONDS=12 under ``timeout``): each test
then stops generating new work after ACE_FUZZ_SECONDS of wall time
(default 30), counted from its first example.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ace_env.calls import Call, MalformedCall, parse_call
from ace_env.errors import RolloutFormatError
from ace_env.formats import decode_bfcl_step, parse_any, parse_rollout, read_any
from ace_env.modelout import is_malformed, parse_message, parse_output

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("ACE_FUZZ_EXAMPLES", "50"))
BUDGET_S = float(os.environ.get("ACE_FUZZ_SECONDS", "30"))
#: Examples per Hypothesis run; a test repeats runs (fresh random examples each) within its budget.
CHUNK = max(1, min(EXAMPLES, 200))
# print_blob: a failure prints its @reproduce_failure(...) line, so a failing CI log is enough to replay it
# (nothing is kept between runs: database=None).
FUZZ = settings(max_examples=CHUNK, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], database=None)


def _budgeted(prop) -> int:
    """Run a Hypothesis property in chunks until ACE_FUZZ_EXAMPLES examples or ACE_FUZZ_SECONDS have passed.

    Hypothesis has no wall-clock limit of its own, and a property that merely returns once time is up
    still has every remaining example generated; chunks stop cleanly.  Returns the examples run.
    """
    start = time.monotonic()
    done = 0
    while done < EXAMPLES and (done == 0 or time.monotonic() - start < BUDGET_S):
        prop()
        done += CHUNK
    return done


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)
call_like = st.one_of(
    st.text(max_size=200),
    st.builds(lambda n, a: f"{n}({a})", st.sampled_from(["ls", "cd", "power", "__import__", "eval", "os.system"]),
              st.text(alphabet="abc=,'\"()[]{}0123456789.-_ xe", max_size=60)),
    st.dictionaries(st.sampled_from(["name", "arguments", "function"]), json_values, max_size=3),
    json_values,
)


@FUZZ
@given(call_like)
def _parse_call_never_raises(value):
    parsed = parse_call(value)
    assert isinstance(parsed, (Call, MalformedCall))
    if isinstance(parsed, Call):
        assert parsed.name.isidentifier()
        assert isinstance(parse_call(parsed.render()), Call)  # a parsed call renders to a parsable call




@FUZZ
@given(st.one_of(st.text(max_size=200), json_values))
def _bfcl_step_decoder_never_raises(step):
    calls = decode_bfcl_step(step)
    assert isinstance(calls, list)


line_values = st.one_of(
    json_values,
    st.fixed_dictionaries({"task_id": st.text(max_size=10) | json_values, "turns": json_values},
                          optional={"rollout_id": json_values, "meta": json_values}),
    st.fixed_dictionaries({"task_id": st.text(max_size=10), "messages": json_values}),
    st.fixed_dictionaries({"id": st.text(max_size=10) | json_values, "result": json_values}),
)


@FUZZ
@given(line_values)
def _parse_any_raises_only_rollout_format_error(obj):
    try:
        r = parse_any(obj, 1)
    except RolloutFormatError:
        return
    assert isinstance(r.rollout_id, str) and isinstance(r.task_id, str)
    assert isinstance(r.turns, list)




@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=80), line_values.map(lambda v: json.dumps(v).encode())), max_size=6))
def _read_any_streams_any_bytes(lines):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.jsonl"
        path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
        errors: list[str] = []
        rollouts = list(read_any(path, skip_invalid=True, errors=errors))
        assert all(isinstance(r.rollout_id, str) for r in rollouts)
        assert len({r.rollout_id for r in rollouts}) <= len(rollouts)
        try:
            strict = list(read_any(path))
        except RolloutFormatError as e:
            assert str(e).startswith(str(path))
        else:
            assert [r.rollout_id for r in strict] == [r.rollout_id for r in rollouts] and not errors


model_text = st.one_of(
    st.text(max_size=300),
    st.builds(lambda a, b: f"{a}<tool_call>{b}</tool_call>", st.text(max_size=20),
              st.text(alphabet='{}[]":,nameargumentsls0123 <>/_', max_size=80)),
    st.builds(lambda b: f"<tool_call>{json.dumps(b)}</tool_call>", json_values),
    st.builds(lambda b: f"[{b}]", st.text(alphabet="abcdls=,'\"()[]{}0123456789._ ", max_size=80)),
    st.builds(lambda b: f"```python\n[{b}]\n```", st.text(alphabet="cdls=(),'x ", max_size=40)),
)
tool_calls = st.one_of(
    st.none(),
    json_values,
    st.lists(st.fixed_dictionaries({"id": st.text(max_size=5), "type": st.just("function"),
                                    "function": st.fixed_dictionaries({"name": st.text(max_size=10) | json_values,
                                                                       "arguments": st.text(max_size=40) | json_values})}),
             max_size=3),
)


def _is_call_form(call) -> bool:
    """A malformed marker, a BFCL call string or a {name, arguments} object: what the executor takes."""
    if is_malformed(call):
        return isinstance(call["malformed"], str)
    if isinstance(call, str):
        return True
    return isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("arguments"), dict)


@FUZZ
@given(st.one_of(st.none(), model_text, json_values), tool_calls)
def _parse_output_never_raises(text, calls):
    parsed = parse_output(text, calls)
    assert isinstance(parsed.text, str)
    assert all(_is_call_form(c) for c in parsed.calls), parsed.calls




@FUZZ
@given(st.dictionaries(st.sampled_from(["role", "content", "tool_calls", "function_call"]),
                       st.one_of(model_text, tool_calls, st.lists(json_values, max_size=3)), max_size=4))
def _parse_message_never_raises(message):
    parsed = parse_message(message)
    assert all(_is_call_form(c) for c in parsed.calls), parsed.calls




@FUZZ
@given(line_values)
def _parse_rollout_raises_only_rollout_format_error(obj):
    try:
        r = parse_rollout(obj, 3)
    except RolloutFormatError as e:
        assert str(e).startswith("line 3")
        return
    assert isinstance(r.rollout_id, str) and r.rollout_id and isinstance(r.task_id, str) and r.task_id


# The tests: each property under the time budget.


def test_parse_call_never_raises():
    assert _budgeted(_parse_call_never_raises) >= min(EXAMPLES, CHUNK)


def test_bfcl_step_decoder_never_raises():
    assert _budgeted(_bfcl_step_decoder_never_raises) >= min(EXAMPLES, CHUNK)


def test_parse_any_raises_only_rollout_format_error():
    assert _budgeted(_parse_any_raises_only_rollout_format_error) >= min(EXAMPLES, CHUNK)


def test_read_any_streams_any_bytes():
    assert _budgeted(_read_any_streams_any_bytes) >= min(EXAMPLES, CHUNK)


def test_parse_output_never_raises():
    assert _budgeted(_parse_output_never_raises) >= min(EXAMPLES, CHUNK)


def test_parse_message_never_raises():
    assert _budgeted(_parse_message_never_raises) >= min(EXAMPLES, CHUNK)


def test_parse_rollout_raises_only_rollout_format_error():
    assert _budgeted(_parse_rollout_raises_only_rollout_format_error) >= min(EXAMPLES, CHUNK)
