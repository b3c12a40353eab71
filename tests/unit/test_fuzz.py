"""Coverage-guided fuzzing (Hypothesis) of the call parser and the rollout readers.

Both must never raise on any input except with ACE's own error for a bad
line, and never execute anything.  The number of examples per test is
ACE_FUZZ_EXAMPLES (default 300, a few seconds each); CI can raise it for a
longer run, and ACE_FUZZ_SECONDS caps each test's wall time.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ace_env.calls import Call, MalformedCall, parse_call
from ace_env.errors import RolloutFormatError
from ace_env.formats import decode_bfcl_step, parse_any, read_any

EXAMPLES = int(os.environ.get("ACE_FUZZ_EXAMPLES", "300"))
BUDGET_S = float(os.environ.get("ACE_FUZZ_SECONDS", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                database=None)

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


class _Clock:
    def __init__(self):
        self.start = time.monotonic()

    def out_of_time(self) -> bool:
        return time.monotonic() - self.start > BUDGET_S


_parser_clock = _Clock()


@FUZZ
@given(call_like)
def test_parse_call_never_raises(value):
    if _parser_clock.out_of_time():
        return
    parsed = parse_call(value)
    assert isinstance(parsed, (Call, MalformedCall))
    if isinstance(parsed, Call):
        assert parsed.name.isidentifier()
        assert isinstance(parse_call(parsed.render()), Call)  # a parsed call renders to a parsable call


_step_clock = _Clock()


@FUZZ
@given(st.one_of(st.text(max_size=200), json_values))
def test_bfcl_step_decoder_never_raises(step):
    if _step_clock.out_of_time():
        return
    calls = decode_bfcl_step(step)
    assert isinstance(calls, list)


line_values = st.one_of(
    json_values,
    st.fixed_dictionaries({"task_id": st.text(max_size=10) | json_values, "turns": json_values},
                          optional={"rollout_id": json_values, "meta": json_values}),
    st.fixed_dictionaries({"task_id": st.text(max_size=10), "messages": json_values}),
    st.fixed_dictionaries({"id": st.text(max_size=10) | json_values, "result": json_values}),
)
_parse_clock = _Clock()


@FUZZ
@given(line_values)
def test_parse_any_raises_only_rollout_format_error(obj):
    if _parse_clock.out_of_time():
        return
    try:
        r = parse_any(obj, 1)
    except RolloutFormatError:
        return
    assert isinstance(r.rollout_id, str) and isinstance(r.task_id, str)
    assert isinstance(r.turns, list)


_reader_clock = _Clock()


@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=80), line_values.map(lambda v: json.dumps(v).encode())), max_size=6))
def test_read_any_streams_any_bytes(lines):
    if _reader_clock.out_of_time():
        return
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
