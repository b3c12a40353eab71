"""The call parser: what it accepts, and that hostile input is never evaluated."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ace_env.calls import MAX_CALL_CHARS, Call, MalformedCall, parse_call


def test_parses_bfcl_call_strings():
    assert parse_call("mv(source='a', destination='b')") == Call("mv", (), {"source": "a", "destination": "b"})
    assert parse_call("sort('f.txt')") == Call("sort", ("f.txt",), {})
    assert parse_call(" mean(numbers=[1, -2.5, 3]) ") == Call("mean", (), {"numbers": [1, -2.5, 3]})
    assert parse_call("f(x={'a': (1, 2)}, y=None, z=True)").kwargs == {"x": {"a": (1, 2)}, "y": None, "z": True}


def test_parses_openai_style_objects():
    assert parse_call({"name": "ls", "arguments": "{\"a\": true}"}) == Call("ls", (), {"a": True})
    assert parse_call({"function": {"name": "cd", "arguments": {"folder": "x"}}}) == Call("cd", (), {"folder": "x"})
    assert parse_call({"name": "ls", "arguments": ""}) == Call("ls", (), {})


@pytest.mark.parametrize(
    "text, reason_part",
    [
        ("__import__('os').system('id')", "bare function name"),
        ("os.system('id')", "bare function name"),
        ("ls(a=__import__('os'))", "not a literal"),
        ("ls(a=(lambda: 1)())", "not a literal"),
        ("ls(a=[x for x in range(3)])", "not a literal"),
        ("ls(a=ls())", "not a literal"),
        ("ls(*[1])", "star"),
        ("ls(**{'a': 1})", "**"),
        ("ls(a=1, a=2)", "given twice"),
        ("ls", "not a call"),
        ("ls(); rm()", "not a Python call"),
        ("ls(a=().__class__)", "not a literal"),
        ("ls(a=1 if True else 2)", "not a literal"),
        ("ls(a=f'{1}')", "not a literal"),
        ("(lambda: 1)()", "bare function name"),
        ("ls(a=" + "[" * 500 + "]" * 500 + ")", ""),
        ("x" * (MAX_CALL_CHARS + 1), "longer than"),
        ("ls(a=" + "9" * 5000 + ")", ""),
    ],
)
def test_rejects_hostile_strings(text, reason_part):
    result = parse_call(text)
    assert isinstance(result, MalformedCall), result
    assert reason_part in result.reason
    assert len(result.raw) < 400  # kept for the record, truncated


@pytest.mark.parametrize(
    "obj",
    [
        {"arguments": {}},
        {"name": "os.system", "arguments": {}},
        {"name": "ls", "arguments": "[1, 2]"},
        {"name": "ls", "arguments": "{not json"},
        {"name": "ls", "arguments": {"not an identifier": 1}},
        42,
        None,
    ],
)
def test_rejects_bad_objects(obj):
    assert isinstance(parse_call(obj), MalformedCall)


def test_render_round_trips():
    call = Call("post_tweet", (), {"content": "hi 'there'", "tags": ["#a"], "mentions": []})
    assert parse_call(call.render()) == call


_HOSTILE_TEMPLATES = [
    "__import__('pathlib').Path({p!r}).touch()",
    "open({p!r}, 'w')",
    "ls(a=open({p!r}, 'w'))",
    "exec(\"open({p!r}, 'w')\")",
    "eval(\"open({p!r}, 'w')\")",
    "ls(a=[open({p!r},'w') for _ in [1]])",
    "ls(a=(lambda: open({p!r},'w'))())",
    "globals()['__builtins__'].open({p!r}, 'w')",
    "getattr(__builtins__, 'open')({p!r}, 'w')",
    "ls().__class__.__init__.__globals__",
    "cd(folder=open({p!r}, 'w').name)",
    "touch(file_name={p!r}); open({p!r}, 'w')",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    template=st.sampled_from(_HOSTILE_TEMPLATES),
    junk=st.text(max_size=40),
    where=st.sampled_from(["prefix", "suffix", "none"]),
)
def test_fuzz_hostile_calls_never_execute(tmp_path_factory, template, junk, where):
    """Hostile call strings through the executor: nothing runs, each gets a verdict."""
    from ace_env import bfcl
    from ace_env.executor import MALFORMED, NOT_OFFERED
    from ace_env.verifier import verify

    marker = Path(tmp_path_factory.getbasetemp()) / "pwned"
    text = template.format(p=str(marker))
    text = {"prefix": junk + text, "suffix": text + junk, "none": text}[where]
    task = bfcl.load_tasks("base")[0]
    verdict = verify(task, [[text]] + [[] for _ in task.turns[1:]])
    assert not marker.exists()
    step = verdict.steps[0][0]
    assert step.status in (MALFORMED, NOT_OFFERED)
    assert verdict.reward == 0.0
    assert verdict.attribution in ("malformed_call", "tool_not_offered")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_fuzz_arbitrary_text_never_raises(text):
    original_eval, original_exec = builtins.eval, builtins.exec

    def forbidden(*_a, **_k):
        raise AssertionError("the parser must never evaluate input")

    builtins.eval, builtins.exec = forbidden, forbidden
    try:
        result = parse_call(text)
    finally:
        builtins.eval, builtins.exec = original_eval, original_exec
    assert isinstance(result, (Call, MalformedCall))


def test_ellipsis_is_no_argument_a_tool_takes():
    # `...` is a Python literal, but it renders as `Ellipsis`, which is not one: found by the fuzzer
    for text in ("A(...)", "A([1, ...])", "A(x={'k': ...})"):
        assert isinstance(parse_call(text), MalformedCall), text
    assert parse_call("A(x='...')").kwargs == {"x": "..."}
