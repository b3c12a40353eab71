"""τ²-bench's own result files: read as they are, judged by τ²'s rules, in agreement with τ²'s recorded rewards."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ace.cli import main
from ace_env.errors import RolloutFormatError, TaskLoadError
from ace_env.formats import read_any
from ace_env.tau2.bounded import Tau2Outcome
from ace_env.tau2.env import ASSISTANT, run_calls
from ace_env.tau2.results import read_results, sniff
from ace_env.tau2.rollouts import Tau2Verifier, calls_of, step_verdict
from ace_env.tau2.tasks import tasks_by_id
from ace_env.tau2.verify import Conversation, is_write, verify

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "tau2-results"
FILES = sorted(RESULTS.glob("*.json"))


def _judge(rollout, tasks, termination=...):
    """ACE's verdict and its executed steps for one rollout read from a result file (in this process)."""
    task = tasks[rollout.task_id]
    calls = calls_of(rollout.turns)
    steps, env = run_calls(task.domain, task.tau2_id, calls)
    meta = rollout.meta
    conv = Conversation(tuple(meta["texts"]), meta["termination_reason"] if termination is ... else termination)
    v = verify(task, steps, env, conv)
    return step_verdict(task, Tau2Outcome(task.id, steps, v), rollout.rollout_id, False, meta["reference_reward"]), steps


def test_the_seven_shared_files_are_there():
    assert len(FILES) == 7 and all(sniff(f) for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_verdicts_agree_with_tau2_and_never_charge_a_read_or_the_order(path):
    f = read_results(path)
    tasks = tasks_by_id([f.domain])
    assert f.rollouts and len({r.rollout_id for r in f.rollouts}) == len(f.rollouts)
    for r in f.rollouts:
        v, steps = _judge(r, tasks)
        ref = r.meta["reference_reward"]
        assert v.reward == ref, (r.task_id, v.attribution, v.detail)  # equal: never looser, never stricter
        assert v.reference_reward == ref
        if v.reward == 1.0:
            continue
        task = tasks[r.task_id]
        if v.failing_step < len(steps):
            s = steps[v.failing_step]
            assert s.call.requestor == ASSISTANT  # the user's own calls are never charged to the agent
            # a failing call is a write, unless the task's ACTION basis names the read it got wrong
            assert is_write(task.domain, s.call) or "ACTION" in task.reward_basis, (r.task_id, s.call, v.detail)
        assert v.attribution != "acted_without_need" or is_write(task.domain, steps[v.failing_step].call)


def test_rollouts_carry_the_simulation_ids_the_calls_by_requestor_and_the_conversation():
    f = read_results(RESULTS / "gpt-4.1_telecom_1trial.json")
    assert (f.domain, f.policy) == ("telecom", "gpt-4.1")
    requestors = {c.get("requestor", ASSISTANT) for r in f.rollouts for c in r.turns[0]}
    assert requestors == {"assistant", "user"}  # telecom's user acts on the phone
    r = f.rollouts[0]
    assert r.rollout_id == "53759db8-5657-4a7b-b6fa-18c09fd8b859" and r.task_id.startswith("tau2:telecom:[")
    assert r.meta["termination_reason"] == "user_stop" and r.meta["reference_reward"] == 1.0 and r.meta["texts"]
    assert [x.rollout_id for x in read_any(RESULTS / "gpt-4.1_telecom_1trial.json")] == \
        [x.rollout_id for x in f.rollouts]  # every reader of rollout files takes them


def test_a_conversation_cut_off_fails_at_the_point_it_stopped():
    f = read_results(RESULTS / "gpt-4.1_airline_1trial.json")
    tasks = tasks_by_id(["airline"])
    passed = next(r for r in f.rollouts if r.meta["reference_reward"] == 1.0 and tasks[r.task_id].n_steps)
    assert _judge(passed, tasks)[0].reward == 1.0
    v, steps = _judge(passed, tasks, termination="max_steps")
    assert v.reward == 0.0 and v.attribution == "stopped_early" and "max_steps" in v.detail
    assert v.failing_step == len(steps)


def test_a_value_never_said_fails_the_communicate_basis():
    f = read_results(RESULTS / "gpt-4.1_retail_1trial.json")
    tasks = tasks_by_id(["retail"])
    r = next(r for r in f.rollouts if r.meta["reference_reward"] == 1.0 and tasks[r.task_id].communicate_info)
    info = tasks[r.task_id].communicate_info[0]
    silent = copy.copy(r)
    silent.meta = {**r.meta, "texts": [t for t in r.meta["texts"] if info.lower() not in t.lower().replace(",", "")]}
    v, _ = _judge(silent, tasks)
    assert v.reward == 0.0 and v.attribution == "not_communicated" and info in v.detail


def _write(tmp_path: Path, doc) -> Path:
    p = tmp_path / "results.json"
    p.write_text(json.dumps(doc, indent=2))
    return p


def test_a_file_run_on_other_tasks_is_refused_naming_the_task(tmp_path):
    doc = json.loads((RESULTS / "gpt-4.1_airline_1trial.json").read_text())
    t = next(t for t in doc["tasks"] if (t["evaluation_criteria"] or {}).get("actions"))
    t["evaluation_criteria"]["actions"][0]["arguments"]["user_id"] = "someone_else_1"
    with pytest.raises(TaskLoadError, match=rf"task '{t['id']}' differs from the installed one \(evaluation_criteria"):
        read_results(_write(tmp_path, doc))
    doc["tasks"][0]["id"] = "no-such-task"
    with pytest.raises(TaskLoadError, match="no installed task has this id"):
        read_results(_write(tmp_path, doc))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("simulations"), "'simulations' is missing"),
    (lambda d: d["info"].pop("environment_info"), "domain_name is missing"),
    (lambda d: d["simulations"][0].update(task_id="999"), "not among the file's tasks"),
    (lambda d: d["simulations"][1].update(id=d["simulations"][0]["id"]), "repeats"),
    (lambda d: d["simulations"][0]["messages"].append({"role": "assistant", "tool_calls": [{"arguments": {}}]}),
     "has no name"),
])
def test_a_malformed_file_is_refused_in_one_line(tmp_path, mutate, message):
    doc = json.loads((RESULTS / "gpt-4.1_airline_1trial.json").read_text())
    mutate(doc)
    with pytest.raises(RolloutFormatError, match=message) as e:
        read_results(_write(tmp_path, doc))
    assert "\n" not in str(e.value)


def test_a_truncated_file_is_not_json(tmp_path):
    p = tmp_path / "cut.json"
    p.write_text((RESULTS / "gpt-4.1_airline_1trial.json").read_text()[:5000])
    assert sniff(p)
    with pytest.raises(RolloutFormatError, match="not valid JSON"):
        list(read_any(p))


def test_ace_verify_takes_the_file_as_it_is(capsys):
    path = RESULTS / "gpt-4.1-sft_telecom_1trial.json"
    assert main(["verify", str(path), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    doc = json.loads(path.read_text())
    assert [x["rollout_id"] for x in lines] == [s["id"] for s in doc["simulations"]]
    assert [x["reference_reward"] for x in lines] == [s["reward_info"]["reward"] for s in doc["simulations"]]
    assert all(x["reward"] == x["reference_reward"] for x in lines)
    assert main(["verify", str(path), "--tasks", "tau2:airline"]) == 1  # the file says its domain
    assert "does not name τ² telecom" in capsys.readouterr().err


def test_format_tau2_results_refuses_another_file(tmp_path, capsys):
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text(json.dumps({"rollout_id": "a", "task_id": "tau2:airline:0", "turns": [[]]}) + "\n")
    assert not sniff(jsonl)
    assert main(["verify", str(jsonl), "--format", "tau2-results"]) == 1
    assert "is not a τ²-bench result file" in capsys.readouterr().err
    assert main(["verify", str(jsonl), str(RESULTS / "gpt-4.1_airline_1trial.json")]) == 1  # not mixed
    assert "separate commands" in capsys.readouterr().err


def test_strict_verification_fails_what_tau2_passes_on_aces_rules():
    f = read_results(RESULTS / "gpt-4.1_retail_1trial.json")
    tasks = tasks_by_id(["retail"])
    with Tau2Verifier(tasks) as loose, Tau2Verifier(tasks, strict=True) as strict:
        a = {r.rollout_id: v for r, v in loose.verify_stream(f.rollouts)}
        b = {r.rollout_id: v for r, v in strict.verify_stream(f.rollouts)}
    listed = [k for k, v in a.items() if v.reward == 1.0 and v.stricter_because]
    assert listed  # real agents take other valid paths: skipped reads, other orders, retried errors
    assert all(b[k].reward == 0.0 and "stricter than τ²" in b[k].detail for k in listed)
    assert all(b[k].reward == a[k].reward for k in a if not a[k].stricter_because)


def test_a_line_nested_too_deeply_is_not_taken_for_a_result_file(tmp_path):
    """sniff() let the decoder's RecursionError escape: `ace verify` on a JSONL line of 5,000 nested objects was
    a traceback, even with --skip-invalid (h9); the JSONL reader refuses that line itself."""
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"a":' * 5000 + "1" + "}" * 5000 + "\n")
    assert not sniff(deep)
