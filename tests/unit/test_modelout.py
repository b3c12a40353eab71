"""The model-output parser: every form of call, and hostile or broken text."""

from __future__ import annotations

import json
import time

from ace_env.bfcl import load_tasks
from ace_env.executor import MALFORMED, RolloutState
from ace_env.formats import parse_openai
from ace_env.modelout import MAX_CALLS_PER_MESSAGE, is_malformed, parse_message, parse_output
from ace_env.verifier import MALFORMED_CALL, verify


def _block(obj) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


def test_hermes_blocks_become_calls_in_order_with_text_kept():
    text = "Let me look.\n" + _block({"name": "cd", "arguments": {"folder": "x"}}) + _block({"name": "ls", "arguments": "{}"})
    out = parse_output(text)
    assert out.calls == [{"name": "cd", "arguments": {"folder": "x"}}, {"name": "ls", "arguments": {}}]
    assert out.text == "Let me look."


def test_openai_tool_calls_and_legacy_function_call():
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "a"}'}}]}
    assert parse_message(msg).calls == [{"name": "cd", "arguments": {"folder": "a"}}]
    legacy = {"role": "assistant", "function_call": {"name": "ls", "arguments": ""}}
    assert parse_message(legacy).calls == [{"name": "ls", "arguments": {}}]


def test_bfcl_python_list_and_fenced_list():
    assert parse_output("[cd(folder='x'), ls(a=True)]").calls == ["cd(folder='x')", "ls(a=True)"]
    assert parse_output("```python\n[pwd()]\n```").calls == ["pwd()"]


def test_prose_is_no_call():
    out = parse_output("You can run `ls` in a shell, or cd(folder) first.")
    assert out.calls == [] and out.text.startswith("You can run")
    assert parse_output("[1] first point").calls == []


def test_broken_and_hostile_outputs_are_malformed_never_calls():
    cases = {
        "unclosed": '<tool_call>{"name": "ls", "arguments": {}}',
        "trailing garbage": '<tool_call>{"name": "ls", "arguments": {}} and more</tool_call>',
        "two objects": '<tool_call>{"name": "ls", "arguments": {}}{"name": "pwd"}</tool_call>',
        "nested": '<tool_call><tool_call>{"name": "ls", "arguments": {}}</tool_call></tool_call>',
        "not json": "<tool_call>ls()</tool_call>",
        "no name": '<tool_call>{"arguments": {}}</tool_call>',
        "bad name": '<tool_call>{"name": "__import__(\'os\').system", "arguments": {}}</tool_call>',
        "args not object": '<tool_call>{"name": "ls", "arguments": [1]}</tool_call>',
        "args bad json": '<tool_call>{"name": "ls", "arguments": "{oops"}</tool_call>',
        "stray close": 'hello </tool_call>',
        "python non-literal": "[cd(folder=__import__('os').getcwd())]",
        "python attribute": "[os.system('id')]",
        "python broken": "[cd(folder='x'), ls(",
        "deep json": "<tool_call>" + "[" * 100_000 + "</tool_call>",
    }
    for label, text in cases.items():
        out = parse_output(text)
        assert out.calls, label
        assert any(is_malformed(c) for c in out.calls), (label, out.calls)
        for c in out.calls:
            assert is_malformed(c) or c == {"name": "ls", "arguments": {}}, (label, c)


def test_nested_tag_keeps_no_call_from_inside():
    out = parse_output('<tool_call><tool_call>{"name": "ls", "arguments": {}}</tool_call></tool_call>')
    assert [is_malformed(c) for c in out.calls] == [True, True]  # the nested block, then the stray close tag


def test_one_megabyte_is_fast_and_malformed():
    big = "<tool_call>" + "a" * (1 << 20) + "</tool_call>"
    start = time.perf_counter()
    out = parse_output(big)
    assert time.perf_counter() - start < 10.0  # a guard against a hang or quadratic parsing, not a benchmark
    assert len(out.calls) == 1 and is_malformed(out.calls[0])
    assert len(out.calls[0]["raw"]) < 300
    prose = "word " * 200_000
    out = parse_output(prose)
    assert len(out.calls) == 1 and is_malformed(out.calls[0])


def test_many_calls_are_capped():
    text = "".join(_block({"name": "ls", "arguments": {}}) for _ in range(MAX_CALLS_PER_MESSAGE + 1))
    out = parse_output(text)
    assert len(out.calls) == 1 and is_malformed(out.calls[0])


def test_malformed_marker_is_never_executed_and_verifies_as_malformed_call():
    task = load_tasks("base")[0]
    marker = parse_output('<tool_call>{"name": "cd", "arguments": {"folder": "x"}} junk</tool_call>').calls[0]
    step = RolloutState(task).call(marker, 0)
    assert step.status == MALFORMED and "trailing text" in step.detail
    verdict = verify(task, [[marker]])
    assert verdict.reward == 0.0 and verdict.attribution == MALFORMED_CALL


def test_openai_transcript_with_raw_text_turns_verifies():
    task = load_tasks("base")[0]
    messages = []
    for t, turn in enumerate(task.turns):
        messages.append({"role": "user", "content": turn.user[0]["content"]})
        messages.append({"role": "assistant", "content": "[" + ", ".join(turn.ground_truth) + "]"})
    rollout = parse_openai({"task_id": task.id, "messages": messages}, 1)
    assert verify(task, rollout.turns).reward == 1.0
    # the same transcript with one turn's text broken fails there, as malformed
    messages[1]["content"] = "<tool_call>{\"name\": \"cd\"</tool_call>"
    rollout = parse_openai({"task_id": task.id, "messages": messages}, 1)
    verdict = verify(task, rollout.turns)
    assert verdict.reward == 0.0 and verdict.attribution == MALFORMED_CALL and verdict.failing_turn == 0
