"""``ace export --format tau2``: τ²'s own schema, and the round trip (exported gold → τ²'s evaluator) over all
50 airline tasks and synthesized ones; an export that changes what the gold does is caught."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from docblocks import bash_commands

from ace.cli import main
from ace_env.tau2 import export as export_tau2
from ace_env.tau2.export import NOT_THE_ORACLE, ROUND_TRIP_NOTE, TASKS_FILE, roundtrip
from ace_env.tau2.package import tau2_modules
from ace_env.tau2.synthesis import SYNTHESIS
from ace_env.tau2.synthtasks import SynthTau2Task, tau2_json
from ace_env.tau2.tasks import Tau2Task, load_tasks
from synth.pipeline import SynthConfig, run, write_tasks
from synth.registry import targeted
from train.export import export

STRATEGIES = targeted(Tau2Task)


def synthesize_tau2(edges, seeds, n, strategies, seed=0):
    """The one synthesis pipeline on τ² seeds (no rollouts)."""
    return run(SYNTHESIS, Tau2Task, edges, seeds, None, None, SynthConfig(n=n, strategies=strategies, seed=seed))


ROOT = Path(__file__).resolve().parents[2]
EDGES = [{"from": "get_reservation_details", "to": "update_reservation_flights"},
         {"from": "get_user_details", "to": "get_reservation_details"},
         {"from": "search_direct_flight", "to": "update_reservation_flights"},
         {"from": "update_reservation_flights", "to": "update_reservation_flights"}]


@pytest.fixture(scope="module")
def synthesized():
    seeds = {t.id: t for t in load_tasks("airline")}
    # no airline seed carries a look-alike, and since the s5 review no airline cascade (a cabin change that changes
    # the free bags: RESULTS); since the s6 review no airline ambiguity on these edges (a live near miss only on
    # seeds 37 and 40) but distractors (seeds 29, 33); depth only from a few seeds (synthesis seed 5 finds one)
    tasks = [t for strategy, seed in (("distractor", 0), ("distractor", 1), ("depth", 5))
             for t in synthesize_tau2(EDGES, seeds, 1, strategies=(strategy,), seed=seed).tasks]
    assert len(tasks) == 3 and len({t.id for t in tasks}) == 3
    assert {t.origin["strategy"] for t in tasks} == {"distractor", "depth"}
    return tasks


WRITES = ("update_", "cancel_", "book_", "send_")


def test_a_distractors_added_look_alike_travels_in_taus_own_initial_state(tmp_path):
    seeds = {t.id: t for t in load_tasks("retail")}
    (task,) = synthesize_tau2([{"from": "get_order_details", "to": "modify_pending_order_address"}], seeds, 1,
                              strategies=("distractor",), seed=1).tasks
    report = export([task], "tau2", tmp_path / "out")
    assert report.written == 1 and report.n_skipped == 0
    (row,) = json.loads((tmp_path / "out" / "retail" / TASKS_FILE).read_text())
    assert task.origin["look_alike"] in row["initial_state"]["initialization_data"]["agent_data"]["orders"]
    # τ²'s evaluator, loading the state from the exported JSON alone, passes the gold
    assert roundtrip(tmp_path / "out", {("retail", task.tau2_id): task}) == \
        {"retail": {"tasks": 1, "passed": 1, "failed": []}}


def test_all_airline_tasks_and_synthesized_ones_round_trip(synthesized, tmp_path):
    base = list(load_tasks("airline"))
    report = export(base + synthesized, "tau2", tmp_path / "out")
    assert report.written == 53 and report.n_skipped == 0
    assert len(report.notes[ROUND_TRIP_NOTE]) == 53
    rows = json.loads((tmp_path / "out" / "airline" / TASKS_FILE).read_text())
    Task = tau2_modules().tasks.Task
    loaded = [Task.model_validate(r) for r in rows]  # τ²'s own model loads every row
    assert [t.id for t in loaded] == [t.tau2_id for t in base + synthesized]
    assert rows[:50] == [tau2_json(t) for t in base]  # τ²'s own tasks as τ²'s data holds them
    ace = {("airline", t.tau2_id): t for t in base + synthesized}
    assert roundtrip(tmp_path / "out", ace) == {"airline": {"tasks": 53, "passed": 53, "failed": []}}


def test_an_export_that_changes_the_gold_is_not_written(synthesized, tmp_path, monkeypatch):
    real = export_tau2.tau2_json
    task = next(t for t in synthesized
                if any(a["name"].startswith(WRITES) for a in real(t)["evaluation_criteria"]["actions"]))

    def changed(t):
        d = json.loads(json.dumps(real(t)))
        if t.id == task.id:  # its writes dropped: the file agrees with itself, not with ACE's oracle
            d["evaluation_criteria"]["actions"] = [a for a in d["evaluation_criteria"]["actions"]
                                                   if not a["name"].startswith(WRITES)]
        return d

    monkeypatch.setattr(export_tau2, "tau2_json", changed)
    report = export(synthesized, "tau2", tmp_path / "out")
    assert report.written == 2 and report.skipped == {NOT_THE_ORACLE: [task.id]}


def test_a_tampered_exported_file_fails_the_round_trip(synthesized, tmp_path):
    export(synthesized, "tau2", tmp_path / "out")
    path = tmp_path / "out" / "airline" / TASKS_FILE
    rows = json.loads(path.read_text())
    rows[0]["evaluation_criteria"]["actions"].append(  # a gold call that errors (the DB as it was)
        {"action_id": "x", "requestor": "assistant", "name": "cancel_reservation",
         "arguments": {"reservation_id": "NOSUCH"}, "info": None, "compare_args": None})
    rows[1]["evaluation_criteria"]["reward_basis"] = ["DB", "ACTION"]
    rows[1]["evaluation_criteria"]["actions"][0]["arguments"] = {"user_id": "nobody"}
    path.write_text(json.dumps(rows))
    alone = roundtrip(tmp_path / "out")["airline"]  # self-consistent: τ² replays the same actions both sides
    assert alone["failed"] == []
    result = roundtrip(tmp_path / "out", {("airline", t.tau2_id): t for t in synthesized})["airline"]
    assert result["tasks"] == 3 and result["failed"] == [rows[0]["id"], rows[1]["id"]]


def test_export_cli_writes_a_task_file_and_refuses_bfcl(synthesized, tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    write_tasks(path, synthesized)
    assert main(["export", "--tasks", str(path), "--format", "tau2", "--out", str(tmp_path / "o"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["written"] == 3 and d["files"] == ["airline/tasks.json"]
    rows = json.loads((tmp_path / "o" / "airline" / TASKS_FILE).read_text())
    assert [r["id"] for r in rows] == [t.tau2_id for t in synthesized]
    assert all(isinstance(t, SynthTau2Task) for t in synthesized)
    assert main(["export", "--tasks", "bfcl:base", "--format", "tau2", "--out", str(tmp_path / "b")]) == 1
    assert "not a τ² task" in capsys.readouterr().err


def test_telecom_exports_with_the_users_own_actions_as_docs_cli_says(tmp_path, capsys):
    # issue 35, defect 13: the command wrote telecom while docs/cli.md said it refused it; the export is right
    # (each exported gold, the user's phone actions included, passes τ²'s evaluator and ACE's verifier)
    assert main(["export", "--tasks", "tau2:telecom", "--format", "tau2", "--out", str(tmp_path / "o"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["written"] == 114 and d["skipped"] == 0 and d["files"] == ["telecom/tasks.json"]
    rows = json.loads((tmp_path / "o" / "telecom" / TASKS_FILE).read_text())
    telecom = load_tasks("telecom")
    assert rows == [tau2_json(t) for t in telecom]
    assert sum(a["requestor"] == "user" for r in rows for a in r["evaluation_criteria"]["actions"] or []) == 393
    assert roundtrip(tmp_path / "o", {("telecom", t.tau2_id): t for t in telecom}) == \
        {"telecom": {"tasks": 114, "passed": 114, "failed": []}}
    text = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    refusing = re.findall(r"([^.;:]*) refuse telecom", text)  # the commands the docs say refuse it
    assert refusing and not any("ace export" in r for r in refusing), refusing
    assert "`ace export --format tau2` writes telecom's tasks" in text
    assert "ace export --tasks tau2:telecom --format tau2 --out export-tau2" in bash_commands(ROOT / "docs" / "cli.md")
