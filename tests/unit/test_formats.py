"""Rollouts from ACE JSONL, OpenAI transcripts and BFCL result files."""

from __future__ import annotations

import json

import pytest

from ace_env import bfcl
from ace_env.calls import Call, parse_call
from ace_env.executor import canonical_arguments
from ace_env.formats import decode_bfcl_step, decode_python_step, detect, read_any
from ace_env.verifier import ATTRIBUTIONS, INFERENCE_ERROR, verify, verify_rollout
from ace_graph.errors import RolloutFormatError


@pytest.fixture(scope="module")
def task():
    return next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_0")


def _kwargs(call: str) -> tuple[str, dict]:
    """A ground-truth call string as a name and keyword arguments (positional ones named)."""
    parsed = parse_call(call)
    assert isinstance(parsed, Call)
    args = canonical_arguments(parsed.name, parsed)
    given = {k: v for k, v in args.items() if k in parsed.kwargs} if not parsed.args else args
    return parsed.name, given


def _openai(task) -> dict:
    messages = [{"role": "system", "content": "You are a helpful agent."}]
    n = 0
    for turn in task.turns:
        messages.extend(turn.user)
        for call in turn.ground_truth:
            name, args = _kwargs(call)
            n += 1
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "{}"})
        messages.append({"role": "assistant", "content": "Done."})
    return {"rollout_id": "oa-1", "task_id": task.id, "messages": messages}


def _bfcl_fc(task) -> dict:
    result = []
    for turn in task.turns:
        steps = []
        calls = [_kwargs(c) for c in turn.ground_truth]
        # first two calls in one step, the rest one per step, then the closing chat text
        if calls:
            steps.append([{n: json.dumps(a)} for n, a in calls[:2]])
            steps.extend([[{n: json.dumps(a)}] for n, a in calls[2:]])
        steps.append("I have completed the task.")
        result.append(steps)
    return {"id": task.id, "result": result, "input_token_count": [[1]], "latency": [[0.1]]}


def _bfcl_prompting(task) -> dict:
    result = []
    for turn in task.turns:
        steps = []
        if turn.ground_truth:
            steps.append("[" + ", ".join(turn.ground_truth) + "]")
        steps.append("The task is complete.")
        result.append(steps)
    return {"id": task.id, "result": result}


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ace_format(tmp_path, task):
    gt = [list(t.ground_truth) for t in task.turns]
    (r,) = read_any(_write(tmp_path / "r.jsonl", [{"rollout_id": "a", "task_id": task.id, "turns": gt}]))
    assert (r.rollout_id, r.task_id, r.turns, r.line) == ("a", task.id, gt, 1)


def test_openai_transcript(tmp_path, task):
    (r,) = read_any(_write(tmp_path / "oa.jsonl", [_openai(task)]))
    assert r.rollout_id == "oa-1" and r.task_id == task.id
    assert len(r.turns) == len(task.turns)
    assert r.turns[0] == [
        {"name": "cd", "arguments": {"folder": "document"}},
        {"name": "mkdir", "arguments": {"dir_name": "temp"}},
        {"name": "mv", "arguments": {"source": "final_report.pdf", "destination": "temp"}},
    ]
    assert r.turns[2] == [{"name": "sort", "arguments": {"file_name": "final_report.pdf"}}]
    assert verify(task, r.turns).reward == 1.0


def test_openai_user_messages_start_turns_and_bad_arguments_stay_malformed(tmp_path, task):
    obj = {
        "task_id": task.id,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "thinking"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": "{not json"}}]},
            {"role": "user", "content": "second"},
            {"role": "user", "content": "third"},
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "pwd", "arguments": ""}}]},
        ],
    }
    (r,) = read_any(_write(tmp_path / "oa.jsonl", [obj]))
    assert r.rollout_id == "oa.jsonl:line-1"  # a line without an id is named by file and line
    assert r.turns == [[{"name": "ls", "arguments": "{not json"}], [], [{"name": "pwd", "arguments": {}}]]
    v = verify(task, r.turns)
    assert v.reward == 0.0 and v.attribution == "malformed_call" and v.failing_turn == 0


def test_bfcl_fc_result_entry(tmp_path, task):
    (r,) = read_any(_write(tmp_path / "BFCL_v4_multi_turn_base_result.json", [_bfcl_fc(task)]), id_suffix="@gpt")
    assert r.rollout_id == f"{task.id}@gpt" and r.task_id == task.id
    assert [[c["name"] for c in turn] for turn in r.turns] == [
        [parse_call(c).name for c in t.ground_truth] for t in task.turns
    ]
    assert verify(task, r.turns).reward == 1.0


def test_bfcl_prompting_result_entry(tmp_path, task):
    (r,) = read_any(_write(tmp_path / "BFCL_v4_multi_turn_base_result.json", [_bfcl_prompting(task)]))
    assert r.rollout_id == task.id
    assert r.turns[0] == ["cd(folder='document')", "mkdir(dir_name='temp')", "mv(source='final_report.pdf', destination='temp')"]
    assert r.turns[2] == ["sort('final_report.pdf')"]
    assert verify(task, r.turns).reward == 1.0


def test_bfcl_steps_decode_like_bfcl():
    assert decode_python_step("cd(folder='a')") == ["cd(folder='a')"]
    assert decode_python_step("```python\n[cd(folder='a'),ls(a=True)]\n```") == ["cd(folder='a')", "ls(a=True)"]
    assert decode_python_step("I moved the file for you.") == []
    assert decode_python_step("") == []
    # a call list with a non-call in it is an attempt: kept, the non-call as (malformed) text
    assert decode_python_step("[cd(folder='a'), 3]") == ["cd(folder='a')", "3"]
    assert decode_python_step("[1, 2, 3]") == []  # no call at all: an answer, not an attempt
    assert decode_bfcl_step([{"cd": '{"folder": "a"}'}, {"ls": {"a": True}}]) == [
        {"name": "cd", "arguments": {"folder": "a"}},
        {"name": "ls", "arguments": {"a": True}},
    ]
    # arguments that are not a JSON object stay as they are: the verifier finds the call malformed
    assert decode_bfcl_step([{"cd": "{broken"}]) == [{"name": "cd", "arguments": "{broken"}]
    assert decode_bfcl_step(None) == [] and decode_bfcl_step(42) == [] and decode_bfcl_step([]) == []
    assert decode_bfcl_step(["cd(folder='a')", "ls()"]) == ["cd(folder='a')", "ls()"]


def test_bfcl_inference_error_is_a_rollout_without_calls(tmp_path, task):
    (r,) = read_any(_write(tmp_path / "r.json", [{"id": task.id, "result": "Error during inference: timeout"}]))
    assert r.turns == [] and "timeout" in r.meta["inference_error"]
    assert verify(task, r.turns).reward == 0.0
    # its own attribution, not an agent that stopped early
    v = verify_rollout(task, r)
    assert v.reward == 0.0 and v.attribution == INFERENCE_ERROR == "inference_error"
    assert "timeout" in v.detail and v.failing_turn == 0
    assert INFERENCE_ERROR in ATTRIBUTIONS


def test_bfcl_malformed_call_is_malformed_not_stopped_early(tmp_path, task):
    gt = [list(t.ground_truth) for t in task.turns]
    broken = gt[0][0].rstrip(")")  # "cd(folder='document'": a call with its parenthesis missing
    fc_broken = {parse_call(gt[0][0]).name: "{'folder': document"}  # arguments that are not JSON
    entries = [
        {"id": task.id, "result": [[f"[{broken}]"]] + [[c] for c in gt[1:]]},
        {"id": task.id, "result": [[broken]] + [[c] for c in gt[1:]]},
        {"id": task.id, "result": [[[fc_broken]]] + [[c] for c in gt[1:]]},
    ]
    rollouts = list(read_any(_write(tmp_path / "BFCL_v4_multi_turn_base_result.json", entries)))
    for r in rollouts:
        assert len(r.turns[0]) == 1, r.turns[0]  # kept, not dropped
        v = verify_rollout(task, r)
        assert (v.reward, v.attribution, v.failing_turn, v.failing_step) == (0.0, "malformed_call", 0, 0)
        assert v.steps[0][0].status == "malformed"
    # chat text is still no call: an agent that answered instead of acting stopped early
    (r,) = read_any(_write(tmp_path / "chat.json", [{"id": task.id, "result": [["I did it."]] + [[] for _ in gt[1:]]}]))
    assert r.turns[0] == [] and verify_rollout(task, r).attribution == "stopped_early"


def test_hostile_bfcl_step_is_never_executed(tmp_path, task):
    marker = tmp_path / "pwned"
    hostile = [
        f"[__import__('os').system('touch {marker}')]",
        f"[ls(a=open('{marker}', 'w').write('x'))]",
        f"[exec(\"open('{marker}', 'w')\")]",
        f"[cd(folder=__import__('pathlib').Path('{marker}').touch())]",
        "[(lambda: 1)()]",
        "[" * 5000 + "]" * 5000,
        "[f(a=" + "9" * 10000 + ")]",
    ]
    entry = {"id": task.id, "result": [hostile] + [[] for _ in task.turns[1:]]}
    (r,) = read_any(_write(tmp_path / "r.json", [entry]))
    assert not marker.exists()
    assert len(r.turns[0]) == 6  # the nested brackets are no call; the rest, the oversized call too, are data
    v = verify(task, r.turns)
    assert not marker.exists()
    # each is malformed (not a literal call) or names a tool that is not offered: none runs
    assert [s.status for s in v.steps[0]] == ["malformed", "malformed", "not_offered", "malformed", "malformed", "malformed"]
    assert v.reward == 0.0 and v.attribution == "malformed_call" and v.failing_turn == 0


def test_formats_are_detected_per_line(tmp_path, task):
    gt = [list(t.ground_truth) for t in task.turns]
    f = _write(
        tmp_path / "mixed.jsonl",
        [{"task_id": task.id, "turns": gt}, _openai(task), _bfcl_prompting(task), _bfcl_fc(task)],
    )
    rollouts = list(read_any(f))
    assert [r.line for r in rollouts] == [1, 2, 3, 4]
    assert all(verify(task, r.turns).reward == 1.0 for r in rollouts)
    assert detect({"turns": []}) == "ace" and detect({"messages": []}) == "openai"
    assert detect({"id": "x", "result": []}) == "bfcl" and detect([1]) is None


def test_bad_lines_are_reported_with_line_numbers(tmp_path, task):
    f = _write(
        tmp_path / "bad.jsonl",
        [
            _bfcl_prompting(task),
            "{not json",
            {"hello": "world"},
            {"task_id": task.id, "messages": [{"role": "wizard"}]},
            {"id": task.id, "result": 5},
            "",
            {"task_id": task.id, "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "ls"}}]}]},
            {"task_id": task.id, "turns": "oops"},
            _openai(task),
        ],
    )
    with pytest.raises(RolloutFormatError) as e:
        list(read_any(f))
    assert str(f) in str(e.value) and "line 2" in str(e.value) and "not valid JSON" in str(e.value)

    errors: list[str] = []
    good = list(read_any(f, skip_invalid=True, errors=errors))
    assert [r.line for r in good] == [1, 9]
    assert [int(m.split("line ")[1].split(":")[0]) for m in errors] == [2, 3, 4, 5, 7, 8]
    assert all(m.startswith(str(f)) for m in errors)
    assert "unknown role 'wizard'" in errors[2]
    assert "before the first user message" in errors[4]


def test_missing_file(tmp_path):
    with pytest.raises(RolloutFormatError, match="does not exist"):
        list(read_any(tmp_path / "nope.jsonl"))


def test_the_digest_is_what_the_file_said_of_a_rollout():
    from ace_env.rollout import Rollout

    a = Rollout("x", "t", [["f(a=1)"], []], 1, {"k": 1, "j": [1, 2]})
    assert a.digest() == Rollout("y", "t", [["f(a=1)"], []], 9, {"j": [1, 2], "k": 1}).digest()  # not id, line
    for other in (Rollout("x", "u", a.turns, 1, a.meta), Rollout("x", "t", [["f(a=2)"], []], 1, a.meta),
                  Rollout("x", "t", [["f(a=1)"]], 1, a.meta), Rollout("x", "t", a.turns, 1, None)):
        assert other.digest() != a.digest()

