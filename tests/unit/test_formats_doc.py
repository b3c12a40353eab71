"""docs/formats.md by example: every rollout example verifies, every export example has the export's shape;
the OpenAI SFT export is OpenAI's chat fine-tuning format with no canned target; the TRL SFT step runs on it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: F401  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_env import bfcl
from ace_env.bfcl.export import BFCL_ANSWER_FILE, BFCL_QUESTION_FILE, REFUSES_A_LATER_TOOL, closing_text
from ace_env.formats import parse_openai
from ace_env.tasks import Task
from ace_env.verifier import verify
from train.export import ABSTAIN_MESSAGE, JSONL_FILE, TASK_IDS_FILE, export
from train.sft import oracle_transcripts

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "formats.md"
_EXAMPLE = re.compile(r"<!-- example: ([a-z0-9-]+) -->\n```json\n(.*?)\n```", re.S)


def examples() -> dict[str, Any]:
    found = _EXAMPLE.findall(DOC.read_text(encoding="utf-8"))
    out = {name: json.loads(text) for name, text in found}
    assert len(out) == len(found), "an example name repeats in docs/formats.md"
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- OpenAI's chat fine-tuning format
# From OpenAI's API reference (FineTuneChatRequestInput and its message types): a line holds `messages`,
# optional `tools` and optional `parallel_tool_calls` (and the deprecated `functions`, which ACE never writes);
# system/user messages {role, content, name?}; assistant {role, content?, name?, tool_calls?, refusal?,
# weight? (0 or 1)}, content required unless tool_calls; a tool call {id, type: "function",
# function: {name, arguments: a JSON string}}; tool messages {role, content, tool_call_id}.

_TOP = {"messages", "tools", "parallel_tool_calls"}
_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "weight"},
    "tool": {"role", "content", "tool_call_id"},
}


def openai_chat_ft_problems(row: Any) -> list[str]:
    """What makes ``row`` not one line of OpenAI's chat fine-tuning format (empty: it is one)."""
    bad: list[str] = []
    if not isinstance(row, dict):
        return ["a line must be a JSON object"]
    bad += [f"top-level key {k!r} is not allowed" for k in sorted(set(row) - _TOP)]
    if "parallel_tool_calls" in row and not isinstance(row["parallel_tool_calls"], bool):
        bad.append("parallel_tool_calls must be a boolean")
    tools = row.get("tools", [])
    if not isinstance(tools, list):
        return bad + ["tools must be a list"]
    names = set()
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict) \
                or not isinstance(fn.get("name"), str) or set(t) - {"type", "function"} \
                or set(fn) - {"name", "description", "parameters", "strict"} \
                or not isinstance(fn.get("parameters", {}), dict):
            bad.append(f"tools[{i}] is not {{type: function, function: {{name, description?, parameters?}}}}")
            continue
        names.add(fn["name"])
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        return bad + ["messages must be a non-empty list"]
    open_calls: set[str] = set()
    trained = 0
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in _MESSAGE_KEYS:
            bad.append(f"messages[{i}]: role {role!r}")
            continue
        bad += [f"messages[{i}] ({role}): key {k!r} is not allowed" for k in sorted(set(m) - _MESSAGE_KEYS[role])]
        content = m.get("content")
        if role in ("system", "user", "tool") and not isinstance(content, str):
            bad.append(f"messages[{i}] ({role}): content must be a string")
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                bad.append(f"messages[{i}]: tool_call_id {m.get('tool_call_id')!r} answers no earlier tool call")
            open_calls.discard(m.get("tool_call_id"))
        if role != "assistant":
            continue
        calls = m.get("tool_calls")
        if calls is None and not isinstance(content, str):
            bad.append(f"messages[{i}]: an assistant message needs content or tool_calls")
        if content is not None and not isinstance(content, str):
            bad.append(f"messages[{i}]: assistant content must be a string or null")
        if "weight" in m and m["weight"] not in (0, 1):
            bad.append(f"messages[{i}]: weight must be 0 or 1")
        trained += m.get("weight", 1) == 1
        for j, c in enumerate(calls or []):
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(c, dict) or set(c) != {"id", "type", "function"} or c["type"] != "function" \
                    or not isinstance(c["id"], str) or not isinstance(fn, dict) or set(fn) != {"name", "arguments"}:
                bad.append(f"messages[{i}].tool_calls[{j}] is not {{id, type: function, function: {{name, arguments}}}}")
                continue
            if not isinstance(fn["arguments"], str):
                bad.append(f"messages[{i}].tool_calls[{j}]: arguments must be a JSON string")
            else:
                try:
                    json.loads(fn["arguments"])
                except ValueError:
                    bad.append(f"messages[{i}].tool_calls[{j}]: arguments are not JSON")
            if names and fn["name"] not in names:
                bad.append(f"messages[{i}].tool_calls[{j}]: {fn['name']!r} is not in tools")
            open_calls.add(c["id"])
    if open_calls:
        bad.append(f"tool calls without a tool message: {sorted(open_calls)}")
    if not trained:
        bad.append("no assistant message is trained on (every one has weight 0)")
    return bad


def test_the_validator_refuses_what_openai_refuses():
    good = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "a", "content": "x"},
                         {"role": "assistant", "content": "ok", "weight": 0},
                         {"role": "assistant", "content": "sure"}]}
    assert openai_chat_ft_problems(good) == []
    assert openai_chat_ft_problems({**good, "task_id": "t"}) == ["top-level key 'task_id' is not allowed"]
    named = json.loads(json.dumps(good))
    named["messages"][2]["name"] = "ls"
    assert openai_chat_ft_problems(named) == ["messages[2] (tool): key 'name' is not allowed"]
    dict_args = json.loads(json.dumps(good))
    dict_args["messages"][1]["tool_calls"][0]["function"]["arguments"] = {}
    assert openai_chat_ft_problems(dict_args) == ["messages[1].tool_calls[0]: arguments must be a JSON string"]
    orphan = json.loads(json.dumps(good))
    orphan["messages"][2]["tool_call_id"] = "b"
    assert any("answers no earlier tool call" in p for p in openai_chat_ft_problems(orphan))


# --------------------------------------------------------------------------- the OpenAI SFT export


@pytest.fixture(scope="module")
def sft_export(tmp_path_factory):
    tasks = {t.id: t for c in ("base", "miss_param", "miss_func", "long_context") for t in bfcl.load_tasks(c)[:12]}
    out = tmp_path_factory.mktemp("sft") / "sft"
    report = export(tasks.values(), "openai-sft", out)
    return tasks, report, out


def test_the_openai_sft_export_is_openais_format_with_no_canned_target(sft_export):
    tasks, report, out = sft_export
    rows = _jsonl(out / JSONL_FILE)
    ids = [r["task_id"] for r in _jsonl(out / TASK_IDS_FILE)]
    every = {t.id: set().union(*(t.offered_tools(i) for i in range(len(t.turns)))) for t in tasks.values()}
    changing = {t.id for t in tasks.values()
                if any(not turn.ground_truth and t.offered_tools(i) != every[t.id] for i, turn in enumerate(t.turns))}
    assert changing and report.skipped == {REFUSES_A_LATER_TOOL: sorted(changing, key=list(tasks).index)}
    assert report.written == len(rows) == len(ids) == len(tasks) - len(changing) and len(set(ids)) == len(ids)
    abstained = 0
    for row, task_id in zip(rows, ids, strict=True):
        task = tasks[task_id]
        assert openai_chat_ft_problems(row) == [], (task_id, openai_chat_ft_problems(row)[:3])
        assert set(row) == {"messages", "tools"}
        msgs = row["messages"]
        assert not any(m.get("content") == "Done." for m in msgs)
        # every text-only assistant message either is the turn's results, masked, or the abstention it teaches
        for i, m in enumerate(msgs):
            if m["role"] != "assistant" or m.get("tool_calls"):
                continue
            results = []
            j = i - 1
            while msgs[j]["role"] in ("tool", "assistant") and msgs[j].get("weight") is None:
                if msgs[j]["role"] == "tool":
                    call = next(c for x in msgs[:j] for c in x.get("tool_calls") or []
                                if c["id"] == msgs[j]["tool_call_id"])
                    results.insert(0, (call["function"]["name"], msgs[j]["content"]))
                j -= 1
            if results:
                assert m == {"role": "assistant", "content": closing_text(results), "weight": 0}
            else:
                assert m == {"role": "assistant", "content": ABSTAIN_MESSAGE} and msgs[i - 1]["role"] == "user"
                abstained += 1
        assert {t["function"]["name"] for t in row["tools"]} == every[task_id]
        # with its id put back, the transcript is an OpenAI-messages rollout that verifies with reward 1
        verdict = verify(task, parse_openai({"task_id": task_id, **row}, 1).turns, fast_forward=False)
        assert verdict.reward == 1.0, (task_id, verdict.attribution)
    assert abstained > 0  # miss_param turns are in, with their (trained) abstention


def test_closing_text_is_the_turns_results_cut_short():
    long = "x" * 500
    text = closing_text([("cat", long), ("ls", '{"a":\n 1}')])
    first, second = text.split("\n")
    assert first.startswith("cat: xxx") and first.endswith("…") and len(first) == len("cat: ") + 200
    assert second == 'ls: {"a": 1}'


def test_ace_sft_still_reads_the_transcripts_and_learns_to_end_a_turn_with_its_results(sft_export, tiny_model):
    from train.policies.hf import load_model
    from train.sft import tokenize

    tasks, _, _ = sft_export
    some = [t for t in tasks.values() if t.category in ("base", "miss_param")][:4]
    rows, skipped = oracle_transcripts(some)
    assert not skipped and [r["task_id"] for r in rows] == [t.id for t in some]
    assert all(r["tools"] for r in rows) and all(set(r) == {"messages", "tools", "task_id"} for r in rows)
    tokenizer, _, template = load_model(str(tiny_model))
    (example,) = tokenize(tokenizer, template, rows[:1], max_length=100_000)
    learned = tokenizer.decode([i for i, m in zip(example["input_ids"], example["assistant_masks"]) if m])
    closings = [m["content"] for m in rows[0]["messages"] if m.get("weight") == 0]
    assert closings and all(c in learned for c in closings) and "Done." not in learned


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-formats") / "model")


def test_one_trl_sft_step_on_the_openai_sft_file_as_it_is(sft_export, tiny_model, tmp_path):
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    _, report, out = sft_export
    data = load_dataset("json", data_files=str(out / JSONL_FILE), split="train")
    assert data.column_names == ["messages", "tools"] and len(data) == report.written
    data = data.select(range(2))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    args = SFTConfig(output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=1,
                     learning_rate=1e-3, assistant_only_loss=True, max_length=1024, report_to=[],
                     save_strategy="no", use_cpu=True, bf16=False, disable_tqdm=True, logging_steps=1, seed=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    first = trainer.train_dataset[0]
    learned = tokenizer.decode([t for t, label in zip(first["input_ids"], first["labels"]) if label != -100])
    assert "<tool_call>" in learned and "<tool_response>" not in learned  # the loss is on the assistant's turns
    # TRL does not read OpenAI's "weight": the closing messages are trained on too, as docs/formats.md says
    closings = [m["content"].split("\n")[0] for row in data for m in row["messages"] if m.get("weight") == 0]
    assert any(c in learned for c in closings)
    trainer.train()
    assert trainer.state.global_step == 1
    (logged,) = [h for h in trainer.state.log_history if "loss" in h]
    assert 0 < logged["loss"] < 100


# --------------------------------------------------------------------------- docs/formats.md's examples


def test_the_doc_has_an_example_of_every_format():
    assert set(examples()) == {
        "input-ace", "input-openai", "input-bfcl-fc", "input-bfcl-prompting", "input-tau2",
        "export-openai-sft", "export-openai-sft-ids", "export-trl", "export-bfcl-question", "export-bfcl-answer",
        "export-tau2",
    }


@pytest.mark.parametrize("name", ["input-ace", "input-openai", "input-bfcl-fc", "input-bfcl-prompting", "input-tau2"])
def test_each_rollout_example_verifies_as_it_is(name, tmp_path, capsys):
    example = examples()[name]
    if name == "input-tau2":
        path = tmp_path / "airline_results.json"
        path.write_text(json.dumps(example, indent=2), encoding="utf-8")
        argv = ["verify", str(path), "--json"]
    else:
        path = tmp_path / ("BFCL_v4_multi_turn_base_result.json" if "bfcl" in name else "rollouts.jsonl")
        path.write_text(json.dumps(example) + "\n", encoding="utf-8")  # one line, as in a file
        argv = ["verify", str(path), "--tasks", "bfcl:base", "--json"]
    assert main(argv) == 0
    (verdict,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert verdict["reward"] == 1.0 and verdict["attribution"] is None, verdict


#: Keys whose values are maps with free keys (parameter names, BFCL state): only "a JSON object" is checked.
_FREE = {"properties", "initial_config", "arguments"}


def _kind(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number")


def shape_problems(example: Any, written: list[Any], where: str = "$", free: bool = False) -> list[str]:
    """Where ``example`` is not shaped like any of the ``written`` values at the same place (lists pooled)."""
    kinds = {_kind(w) for w in written}
    if _kind(example) not in kinds:
        return [f"{where}: a {_kind(example)}, written: {sorted(kinds)}"]
    if isinstance(example, dict) and not free:
        same = [w for w in written if isinstance(w, dict) and set(w) == set(example)]
        if not same:
            keys = sorted({tuple(sorted(w)) for w in written if isinstance(w, dict)})[:4]
            return [f"{where}: keys {sorted(example)}, written: {keys}"]
        return [p for k, v in example.items() for p in shape_problems(v, [w[k] for w in same], f"{where}.{k}",
                                                                        k in _FREE)]
    if isinstance(example, list):
        pool = [x for w in written if isinstance(w, list) for x in w]
        if example and not pool:
            return [f"{where}: a non-empty list, written: only empty ones"]
        return [p for i, v in enumerate(example) for p in shape_problems(v, pool, f"{where}[{i}]")]
    return []


def _task_file(tmp_path: Path, task_id: str) -> Path:
    task = next(t for c in ("base", "miss_param") for t in bfcl.load_tasks(c) if t.id == task_id)
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task.to_dict()) + "\n", encoding="utf-8")
    return path


def _export(tmp_path: Path, fmt: str, task_id: str, capsys) -> Path:
    out = tmp_path / fmt
    assert main(["export", "--tasks", str(_task_file(tmp_path, task_id)), "--format", fmt, "--out", str(out),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == 1
    return out


def test_the_openai_sft_example_is_what_the_export_writes(tmp_path, capsys):
    ex = examples()
    assert openai_chat_ft_problems(ex["export-openai-sft"]) == []
    out = _export(tmp_path, "openai-sft", ex["export-openai-sft-ids"]["task_id"], capsys)
    (row,) = _jsonl(out / JSONL_FILE)
    assert shape_problems(ex["export-openai-sft"], [row]) == []
    assert ex["export-openai-sft"]["messages"] == row["messages"]  # the conversation is shown whole
    assert all(t in row["tools"] for t in ex["export-openai-sft"]["tools"])  # tools: a subset, as the doc says
    assert _jsonl(out / TASK_IDS_FILE) == [ex["export-openai-sft-ids"]]


def test_the_trl_example_is_what_the_export_writes(tmp_path, capsys):
    ex = examples()["export-trl"]
    out = _export(tmp_path, "trl", ex["task_id"], capsys)
    (row,) = _jsonl(out / JSONL_FILE)
    assert shape_problems(ex, [row]) == []
    assert ex["prompt"] == row["prompt"] and [t["user"] for t in ex["turns"]] == [t["user"] for t in row["turns"]]
    assert ex["prompt"][-1]["role"] == "user"  # prompt-only: no answer to learn from
    task = Task.from_dict(json.loads(ex["task"]))  # the abbreviated task is still a task
    assert task.id == ex["task_id"] and [t.ground_truth for t in task.turns] == \
        [t.ground_truth for t in Task.from_dict(json.loads(row["task"])).turns]


def test_the_bfcl_examples_are_what_the_export_writes(tmp_path, capsys):
    ex = examples()
    out = _export(tmp_path, "bfcl", ex["export-bfcl-question"]["id"], capsys)
    (question,) = _jsonl(out / BFCL_QUESTION_FILE)
    (answer,) = _jsonl(out / BFCL_ANSWER_FILE)
    assert shape_problems(ex["export-bfcl-question"], [question]) == []
    assert {k: v for k, v in ex["export-bfcl-question"].items() if k != "initial_config"} == \
        {k: v for k, v in question.items() if k != "initial_config"}
    assert ex["export-bfcl-answer"] == answer


def test_the_tau2_example_is_what_the_export_writes(tmp_path):
    from ace_env.tau2.tasks import tasks_by_id

    (example,) = examples()["export-tau2"]
    task = tasks_by_id(["airline"])[f"tau2:airline:{example['id']}"]
    report = export([task], "tau2", tmp_path / "tau2")  # what `ace export --format tau2` runs, on one task
    assert report.written == 1
    (written,) = json.loads((tmp_path / "tau2" / "airline" / "tasks.json").read_text(encoding="utf-8"))
    assert written == example
