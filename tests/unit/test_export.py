"""Exports round-trip: BFCL files equal BFCL's own, SFT transcripts verify, TRL rows rebuild tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.bfcl.export import (
    BFCL_ANSWER_FILE,
    BFCL_LONG_ANSWER_FILE,
    BFCL_LONG_QUESTION_FILE,
    BFCL_QUESTION_FILE,
    REFUSES_A_LATER_TOOL,
    refuses_a_later_tool,
)
from ace_env.formats import parse_openai
from ace_env.official import official_check_entry
from ace_env.tasks import Task
from ace_env.verifier import verify
from synth import strategies
from synth.checks.parts import adjacent_positions
from train.errors import ExportError
from train.export import INFO_FILE, JSONL_FILE, TASK_IDS_FILE, export

DATA = Path(bfcl._package_dir()) / "data"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _bfcl_file(category: str, answer: bool = False) -> dict[str, dict]:
    sub = "possible_answer/" if answer else ""
    return {d["id"]: d for d in _jsonl(DATA / f"{sub}BFCL_v4_multi_turn_{category}.json")}


@pytest.fixture(scope="module")
def base_tasks():
    return bfcl.load_tasks("base")


@pytest.mark.parametrize("category", ["base", "miss_func", "miss_param"])
def test_bfcl_export_equals_bfcls_own_files(tmp_path, category):
    tasks = bfcl.load_tasks(category)
    report = export(tasks, "bfcl", tmp_path / "out")
    questions = _jsonl(tmp_path / "out" / BFCL_QUESTION_FILE)
    answers = _jsonl(tmp_path / "out" / BFCL_ANSWER_FILE)
    assert report.written == len(tasks) == len(questions) == len(answers)
    own_q, own_a = _bfcl_file(category), _bfcl_file(category, answer=True)
    repaired = {t.id for t in tasks if t.provenance.get("repairs")}
    for q, a in zip(questions, answers):
        assert list(q)[:5] == ["id", "question", "initial_config", "path", "involved_classes"]
        o = own_q[q["id"]]
        assert q["question"] == o["question"]
        assert q["initial_config"] == o["initial_config"]
        assert q["involved_classes"] == o["involved_classes"]
        assert set(q.get("excluded_function", [])) == set(o.get("excluded_function") or [])
        if q["id"] not in repaired:
            assert q.get("missed_function") == o.get("missed_function")
        assert a == {"id": q["id"], "ground_truth": own_a[q["id"]]["ground_truth"]}
    if category == "miss_func":
        # BFCL leaves the question of a tools-only turn empty
        assert any(turn == [] for q in questions for turn in q["question"])


def test_bfcl_export_skips_what_bfcl_cannot_express(tmp_path, base_tasks):
    t0 = base_tasks[0]
    with_distractor = Task.from_dict({**t0.to_dict(), "id": "d1", "source": "ace", "distractors": [t0.tools[0]]})
    foreign = Task.from_dict({**t0.to_dict(), "id": "f1", "source": "ace", "tools": t0.tools + ["launch_rocket"]})
    fine = Task.from_dict({**t0.to_dict(), "id": "ok1", "source": "ace"})
    report = export([with_distractor, foreign, fine], "bfcl", tmp_path / "out")
    assert report.written == 2 and report.n_skipped == 1
    assert report.skipped["offers tools that are not functions of its BFCL classes"] == ["f1"]
    qs = _jsonl(tmp_path / "out" / BFCL_QUESTION_FILE)
    assert [q["id"] for q in qs] == ["multi_turn_ace_d1", "multi_turn_ace_ok1"]  # BFCL reads the category from the id
    # the distractor is an offered function doc: not excluded
    assert t0.tools[0] not in qs[0].get("excluded_function", [])


def _mixed_set():
    """Tasks of every targeted strategy and the baseline, from base and long-context seeds."""
    targets = [("get_stock_info", "place_order"), ("book_flight", "retrieve_invoice"), ("cd", "mv"),
               ("get_zipcode_based_on_city", "estimate_distance"), ("place_order", "get_order_details"),
               ("get_flight_cost", "book_flight"), ("touch", "echo")]
    seeds = bfcl.load_tasks("base") + bfcl.load_tasks("long_context")
    out = []
    for name in strategies.STRATEGIES:
        for target in targets:
            found = [t for t in seeds if adjacent_positions(t, target)]
            picks = found[:2] + [t for t in found if t.long_context][:1]
            for i, seed in enumerate(picks):
                task = strategies.generate(name, seed, target, 0.6, seed=5, index=i)
                if task is not None:
                    out.append(task)
    return out


def test_mixed_synthesized_set_exports_to_bfcl_and_bfcls_checker_replays_it(tmp_path):
    tasks = _mixed_set()
    by = {t.id: t for t in tasks}
    assert {t.provenance["strategy"] for t in tasks} >= {"ambiguity", "lookalike", "distractor", "cascade", "depth"}
    assert any(t.distractors for t in tasks) and any(t.long_context for t in tasks)
    report = export(tasks, "bfcl", tmp_path / "out")
    assert report.written >= 0.9 * len(tasks), report.to_dict()
    assert report.to_dict()["notes"]  # tasks with output views are written and counted
    checked = 0
    for qf, af in ((BFCL_QUESTION_FILE, BFCL_ANSWER_FILE), (BFCL_LONG_QUESTION_FILE, BFCL_LONG_ANSWER_FILE)):
        questions = _jsonl(tmp_path / "out" / qf)
        answers = {a["id"]: a["ground_truth"] for a in _jsonl(tmp_path / "out" / af)}
        for q in questions:
            gt = answers[q["id"]]
            assert ("long_context" in q["id"]) == (qf == BFCL_LONG_QUESTION_FILE)
            assert official_check_entry(q, gt, gt)["valid"], q["id"]
            assert not official_check_entry(q, gt, [[] for _ in gt])["valid"], q["id"]
            task = by[q["id"].rsplit("_", 1)[-1]]
            for name in task.distractors:  # offered as docs
                assert name not in q.get("excluded_function", [])
            checked += 1
    assert checked == report.written


def test_openai_sft_transcripts_replay_with_reward_one(tmp_path):
    tasks = {t.id: t for c in bfcl.CATEGORIES for t in bfcl.load_tasks(c)[:25]}
    report = export(tasks.values(), "openai-sft", tmp_path / "sft")
    refusing = [t.id for t in tasks.values() if refuses_a_later_tool(t)]  # miss_func: see docs/formats.md
    assert refusing and report.skipped == {REFUSES_A_LATER_TOOL: refusing}
    assert report.written == len(tasks) - len(refusing)
    rows = _jsonl(tmp_path / "sft" / JSONL_FILE)
    ids = [r["task_id"] for r in _jsonl(tmp_path / "sft" / TASK_IDS_FILE)]
    positional = 0
    for n, (row, task_id) in enumerate(zip(rows, ids, strict=True)):
        task = tasks[task_id]
        msgs = row["messages"]
        assert msgs[0]["role"] == "system"
        assert sum(m["role"] == "user" for m in msgs) == len(task.turns)
        calls = [c for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        results = {m["tool_call_id"]: m for m in msgs if m["role"] == "tool"}
        assert len(calls) == task.n_steps and set(results) == {c["id"] for c in calls}
        for c in calls:
            assert isinstance(json.loads(c["function"]["arguments"]), dict)
        positional += any("(" in gt and "=" not in gt.split("(", 1)[1] and not gt.endswith("()")
                          for turn in task.turns for gt in turn.ground_truth)
        assert {t["function"]["name"] for t in row["tools"]} == set(task.tools)
        rollout = parse_openai({"task_id": task_id, **row}, n)
        verdict = verify(task, rollout.turns, fast_forward=False)
        assert verdict.reward == 1.0, (task.id, verdict.attribution, verdict.detail)
    assert positional > 0  # positional ground-truth arguments were named, and still verify


def test_openai_sft_with_broken_oracle_is_skipped(tmp_path, base_tasks):
    t0 = base_tasks[0].to_dict()
    t0["id"] = "broken"
    t0["turns"][0]["ground_truth"] = ["launch_rocket(target='moon')"]
    report = export([Task.from_dict(t0)], "openai-sft", tmp_path / "sft")
    assert report.written == 0 and report.n_skipped == 1
    assert "oracle does not execute cleanly" in next(iter(report.skipped))


def test_trl_rows_parse_back_into_tasks(tmp_path):
    tasks = bfcl.load_tasks("miss_func")[:30]
    report = export(tasks, "trl", tmp_path / "trl")
    assert report.written == 30
    rows = _jsonl(tmp_path / "trl" / JSONL_FILE)
    info = json.loads((tmp_path / "trl" / INFO_FILE).read_text())
    assert info["rows"] == 30
    assert set(info["columns"]) == {"prompt", "tools", "turns", "task", "environment", "task_id", "n_turns"}
    for row, task in zip(rows, tasks):
        assert set(row) == set(info["columns"])
        back = Task.from_dict(json.loads(row["task"]))
        assert back == task
        assert row["task_id"] == task.id and row["n_turns"] == len(task.turns) == len(row["turns"])
        assert row["prompt"][0]["role"] == "system" and row["prompt"][1:] == task.turns[0].user
        offered = {t["function"]["name"] for t in row["tools"]}
        assert offered == set(task.offered_tools(0))
        later = {n for t in task.turns[1:] for n in t.tools_added}
        assert not offered & later  # miss_func tools held back are not in the prompt


def test_trl_rows_carry_every_turn_in_order_with_the_tools_each_turn_offers(tmp_path):
    tasks = [t for t in bfcl.load_tasks("miss_func") if any(turn.tools_added for turn in t.turns[1:])][:10]
    assert tasks and all(len(t.turns) >= 3 for t in tasks)
    export(tasks, "trl", tmp_path / "trl")
    rows = _jsonl(tmp_path / "trl" / JSONL_FILE)
    for row, task in zip(rows, tasks, strict=True):
        assert [t["user"] for t in row["turns"]] == [t.user for t in task.turns]  # every turn, in order
        assert len({json.dumps(t["user"]) for t in row["turns"]}) > 1  # not the first turn repeated
        assert row["turns"][0]["tools_added"] == []
        offered = {t["function"]["name"] for t in row["tools"]}
        for i, (entry, turn) in enumerate(zip(row["turns"], task.turns)):
            assert entry["tools_offered"] == [n for n in task.tools if n in task.offered_tools(i)]
            added = [t["function"]["name"] for t in entry["tools_added"]]
            if i:
                assert set(added) == set(turn.tools_added) - offered  # the schemas of what this turn reveals
                assert all(t == bfcl.tool_schema(t["function"]["name"]) for t in entry["tools_added"])
            offered |= set(added)
            assert offered == set(task.offered_tools(i))
    # the turn-0 tool set names the environment: equal sets share a name, different sets do not
    by_name: dict[str, set] = {}
    for row in rows:
        by_name.setdefault(row["environment"], set()).add(frozenset(t["function"]["name"] for t in row["tools"]))
    assert all(len(sets) == 1 for sets in by_name.values())
    assert len({next(iter(s)) for s in by_name.values()}) == len(by_name)


def test_trl_export_loads_with_datasets_and_keeps_every_turn(tmp_path):
    from datasets import load_dataset

    tasks = bfcl.load_tasks("miss_func")[:6] + bfcl.load_tasks("base")[:6]
    export(tasks, "trl", tmp_path / "trl")
    data = load_dataset("json", data_files=str(tmp_path / "trl" / JSONL_FILE), split="train")
    for row, task in zip(data, tasks, strict=True):
        assert [t["user"] for t in row["turns"]] == [t.user for t in task.turns]
        assert Task.from_dict(json.loads(row["task"])) == task


def test_export_is_atomic_and_refuses_to_overwrite(tmp_path, base_tasks, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    (out / ".ace-export").write_text("an earlier export\n")
    with pytest.raises(ExportError, match="--force"):
        export(base_tasks[:3], "trl", out)
    assert (out / "keep.txt").exists()
    # a failure mid-way leaves the old folder and no temporary folder behind
    import train.export as ex

    def boom(task):
        raise RuntimeError("disk full")

    monkeypatch.setattr(ex, "to_trl", boom)
    with pytest.raises(RuntimeError):
        export(base_tasks[:3], "trl", out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (out / "keep.txt").exists()
    monkeypatch.undo()
    report = export(base_tasks[:3], "trl", out, force=True)
    assert report.written == 3 and not (out / "keep.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_cli_export(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["export", "--tasks", "bfcl:base", "--format", "bfcl", "--out", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["written"] == 200 and d["skipped"] == 0
    assert sorted(d["files"]) == sorted([BFCL_QUESTION_FILE, BFCL_ANSWER_FILE])
    assert main(["export", "--tasks", "bfcl:base", "--format", "bfcl", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["export", "--tasks", "bfcl:base", "--format", "csv", "--out", str(tmp_path / "x")]) == 1


def test_force_replaces_only_an_earlier_export(tmp_path, monkeypatch):
    from ace_env import bfcl
    from train.errors import ExportError
    from train.export import export

    tasks = bfcl.load_tasks("base")[:3]
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "important.txt").write_text("mine")
    with pytest.raises(ExportError, match="only replaces earlier exports"):
        export(tasks, "trl", victim, force=True)
    assert (victim / "keep" / "important.txt").read_text() == "mine"

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    export(tasks, "trl", out)
    export(tasks, "openai-sft", out, force=True)  # an earlier export: replaced
    assert (out / ".ace-export").is_file()
    with pytest.raises(ExportError):
        export(tasks, "trl", tmp_path, force=True)  # the current folder is never replaced


def test_cli_export_says_what_it_skipped_and_what_it_could_not_carry(tmp_path, capsys, base_tasks):
    seed = next(t for t in base_tasks if adjacent_positions(t, ("get_stock_info", "place_order")))
    viewed = strategies.generate("ambiguity", seed, ("get_stock_info", "place_order"), 0.5, seed=1, index=0)
    assert viewed is not None and viewed.output_views
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(viewed.to_dict()) + "\n")
    assert main(["export", "--tasks", str(path), "--format", "bfcl", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "note, 1 written: written without its output views" in err


def _prompting_result(entry_id: str, ground_truth: list[list[str]]) -> dict:
    """A BFCL result entry as `bfcl generate` writes it for a prompting model: one python-list step per turn."""
    return {"id": entry_id, "result": [(["[" + ", ".join(calls) + "]"] if calls else []) + ["Done."]
                                      for calls in ground_truth]}


def _roundtrip_tasks(base_tasks):
    long_seed = bfcl.load_tasks("long_context")[0]
    ace = Task.from_dict({**base_tasks[0].to_dict(), "id": "ace-1", "source": "ace"})
    ace_long = Task.from_dict({**long_seed.to_dict(), "id": "ace-long-1", "source": "ace"})
    return base_tasks[:3] + bfcl.load_tasks("miss_func")[:2] + [long_seed, ace, ace_long]


def test_ace_verify_reads_a_bfcl_export_folder_and_a_bfcl_result_file_with_its_ids(tmp_path, base_tasks, capsys):
    tasks = _roundtrip_tasks(base_tasks)
    out = tmp_path / "bfcl"
    report = export(tasks, "bfcl", out)
    assert report.written == len(tasks) and report.n_skipped == 0
    entries = [q for f in (BFCL_QUESTION_FILE, BFCL_LONG_QUESTION_FILE) for q in _jsonl(out / f)]
    answers = {a["id"]: a["ground_truth"] for f in (BFCL_ANSWER_FILE, BFCL_LONG_ANSWER_FILE) for a in _jsonl(out / f)}
    ids = [q["id"] for q in entries]
    assert "multi_turn_ace_ace-1" in ids and "multi_turn_ace_long_context_ace-long-1" in ids
    wrong = "multi_turn_base_1"
    result = tmp_path / "BFCL_v4_multi_turn_ace_result.json"
    result.write_text("".join(
        json.dumps(_prompting_result(i, [[] for _ in answers[i]] if i == wrong else answers[i])) + "\n" for i in ids))
    assert main(["verify", "--tasks", str(out), "--rollouts", str(result), "--json"]) == 0
    verdicts = {v["task_id"]: v for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(verdicts) == set(ids)  # every exported id found its task
    assert {i: v["reward"] for i, v in verdicts.items()} == {i: float(i != wrong) for i in ids}
    assert verdicts[wrong]["failing_turn"] == 0, verdicts[wrong]
    assert verdicts[wrong]["attribution"] == "stopped_early"
    # the folder's tasks are the exported ones: BFCL's own unchanged, ACE's under their BFCL ids
    from ace_env.tasksets import load_task_set

    loaded = load_task_set(str(out))
    for task in tasks:
        if task.source == "bfcl":
            assert loaded[task.id] == task
    back = loaded["multi_turn_ace_long_context_ace-long-1"]
    assert back.long_context and back.turns == tasks[-1].turns and back.initial_config == tasks[-1].initial_config
    # and exporting the folder again writes the same files (the ids are stable)
    assert main(["export", "--tasks", str(out), "--format", "bfcl", "--out", str(tmp_path / "again")]) == 0
    for f in (BFCL_QUESTION_FILE, BFCL_ANSWER_FILE, BFCL_LONG_QUESTION_FILE, BFCL_LONG_ANSWER_FILE):
        assert _jsonl(tmp_path / "again" / f) == _jsonl(out / f), f


def test_a_folder_that_claims_a_bfcl_id_for_another_task_is_refused(tmp_path, base_tasks, capsys):
    out = tmp_path / "bfcl"
    export(base_tasks[:2], "bfcl", out)
    q = out / BFCL_QUESTION_FILE
    entries = _jsonl(q)
    entries[1]["question"][0][0]["content"] = "something else entirely"
    q.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert main(["verify", "--tasks", str(out), "--rollouts", str(q)]) == 1
    assert "multi_turn_base_1 is the id of a BFCL task but the entry differs" in capsys.readouterr().err


def test_cli_export_says_how_many_each_format_skipped_and_why(tmp_path, capsys, base_tasks):
    t0 = base_tasks[0].to_dict()
    broken = {**t0, "id": "rocket", "source": "ace",
              "turns": [{**t0["turns"][0], "ground_truth": ["launch_rocket(target='moon')"]}, *t0["turns"][1:]]}
    fine = {**t0, "id": "fine", "source": "ace"}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(broken) + "\n" + json.dumps(fine) + "\n")
    expected = {"bfcl": (1, "ground truth holds a call that is not a BFCL call string"),
                "openai-sft": (1, "the oracle does not execute cleanly"),
                "trl": (0, None)}
    for fmt, (n_skipped, reason) in expected.items():
        assert main(["export", "--tasks", str(path), "--format", fmt, "--out", str(tmp_path / fmt)]) == 0
        captured = capsys.readouterr()
        assert captured.out.strip().endswith(f"; {n_skipped} skipped"), captured.out
        if reason:
            assert f"skipped 1: {reason}" in captured.err and "(e.g. rocket)" in captured.err
        else:
            assert "skipped" not in captured.err
        assert main(["export", "--tasks", str(path), "--format", fmt, "--out", str(tmp_path / f"{fmt}-json"),
                     "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["skipped"] == n_skipped and d["written"] == 2 - n_skipped
        assert [r for r in d["skipped_by_reason"] if reason and r.startswith(reason)] == \
            ([next(iter(d["skipped_by_reason"]))] if reason else [])
