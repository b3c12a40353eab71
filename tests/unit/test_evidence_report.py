"""The evidence benchmark's speed-up: samples the targeted arm needs to reach the random arm's final value."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "evidence_bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("evidence_bench_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _state(random_exact, random_nll, ace_exact, ace_nll):
    steps = [{"task": t, "flat": i, "tool": "b", "prev": "a"} for t in ("t1", "t2") for i in (0, 1)]
    steps.append({"task": "t3", "flat": 0, "tool": "c", "prev": "x"})  # off target: never counted
    recs = [{"arm": "warm", "seed": None, "samples": 0, "primary_exact": 0.0, "primary_nll": 1.0,
             "step_exact": "00001", "step_nll": [1.0, 1.0, 1.0, 1.0, 0.0]}]
    for arm, exact, nll in (("random", random_exact, random_nll), ("ace", ace_exact, ace_nll)):
        for n, e, v in zip((32, 64, 128), exact, nll):
            recs.append({"arm": arm, "seed": 0, "samples": n, "primary_exact": e.count("1") / 4,
                         "primary_nll": v, "step_exact": e + "1", "step_nll": [v] * 4 + [0.0]})
    return {"records": recs, "held_out_steps": steps, "phases": {"diagnosis": {"targets": [["a", "b"]]}}}


def test_targeted_arm_that_reaches_randoms_final_value_at_a_quarter_of_the_samples(bench):
    state = _state(["0000", "1000", "1100"], [0.9, 0.8, 0.6], ["1100", "1110", "1111"], [0.6, 0.5, 0.4])
    rep = bench.report(state, n_boot=50)
    assert rep["speed_up"]["point"] == pytest.approx(32 / 128)
    assert rep["speed_up_nll"]["point"] == pytest.approx(32 / 128)
    # reached at the first budget: only a bound, said so
    assert rep["speed_up"]["upper_bound_only"] and "at most" in rep["speed_up"]["note"]
    assert rep["table"]["ace"][128] == 1.0 and rep["nll"]["random"][128] == 0.6


def test_interpolates_between_budgets_in_log2(bench):
    # ace: NLL 0.9 at 32, 0.5 at 64; random ends at 0.7 -> halfway in log2 between 32 and 64
    state = _state(["0000", "0000", "1000"], [0.9, 0.8, 0.7], ["0000", "1000", "1100"], [0.9, 0.5, 0.4])
    s = bench.speed_up(state, "nll", n_boot=20)
    assert s["point"] == pytest.approx(2 ** 5.5 / 128) and not s["upper_bound_only"] and s["note"] is None
    assert s["claim_holds"] is (s["high"] <= 0.7)


def test_no_speed_up_when_random_did_not_improve_on_the_warm_start(bench):
    state = _state(["0000", "0000", "0000"], [1.1, 1.2, 1.0], ["1000", "1000", "1000"], [0.5, 0.5, 0.5])
    rep = bench.report(state, n_boot=20)
    assert rep["speed_up"]["point"] is None and "not better" in rep["speed_up"]["note"]
    assert rep["speed_up_nll"]["point"] is None and rep["speed_up_nll"]["high"] is None
    assert not rep["speed_up"]["claim_holds"]


def test_equal_budget_difference_is_defined_even_when_random_never_leaves_the_warm_start(bench):
    state = _state(["0000", "0000", "0000"], [1.1, 1.2, 1.0], ["1000", "1100", "1111"], [0.5, 0.4, 0.3])
    diff = bench.report(state, n_boot=20)["difference"]
    assert diff["exact"][128]["point"] == pytest.approx(1.0) and diff["exact"][32]["point"] == pytest.approx(0.25)
    assert diff["nll"][128]["point"] == pytest.approx(0.3 - 1.0)  # as measured: negative favours ace
    assert diff["exact"][64]["low"] <= diff["exact"][64]["point"] <= diff["exact"][64]["high"]


def test_difference_against_the_more_real_control(bench):
    state = _state(["0000", "0000", "0000"], [1.1, 1.2, 1.0], ["1000", "1100", "1100"], [0.5, 0.4, 0.3])
    for n, e, v in zip((32, 64, 128), ["1100", "1111", "1111"], [0.4, 0.2, 0.1]):  # real data does better
        state["records"].append({"arm": "more-real", "seed": 0, "samples": n, "primary_exact": e.count("1") / 4,
                                 "primary_nll": v, "step_exact": e + "1", "step_nll": [v] * 4 + [0.0]})
    rep = bench.report(state, n_boot=20)
    assert rep["difference_more_real"]["exact"][128]["point"] == pytest.approx(0.5 - 1.0)
    assert rep["difference_more_real"]["nll"][64]["point"] == pytest.approx(0.4 - 0.2)
    assert rep["difference"]["exact"][128]["point"] == pytest.approx(0.5)  # against random: unchanged


def test_per_target_counts_say_which_compositions_a_gain_comes_from(bench):
    state = _state(["0000", "0000", "0000"], [1.1, 1.2, 1.0], ["1000", "1100", "1110"], [0.5, 0.4, 0.3])
    state["held_out_steps"][2]["prev"] = "z"  # steps 2-3 (t2) now belong to another target
    state["held_out_steps"][3]["prev"] = "z"
    state["phases"]["diagnosis"]["targets"].append(["z", "b"])
    rows = bench.per_target(state)
    assert rows["a>b"]["ace@128"] == (2, 2) and rows["z>b"]["ace@128"] == (1, 2)
    assert rows["a>b"]["random@128"] == (0, 2) and rows["a>b"]["warm"] == (0, 2)
    assert "ace@32" not in rows["a>b"]  # only the largest budget


def test_two_processes_saving_one_state_keep_each_others_records_and_notes(bench, tmp_path):
    path = tmp_path / "evidence.json"
    path.write_text('{"records": [{"arm": "warm", "seed": null, "samples": 0, "x": 1}], "phases": {"synthesis": {}}}')
    a, b = bench.load_state(path), bench.load_state(path)
    # Each process loaded the same file; a runs seed 1, b seed 2.
    a["records"].append({"arm": "ace", "seed": 1, "samples": 16, "x": 2})
    a["phases"]["synthesis"]["ace-1"] = {"tasks": 64}
    bench.save_state(path, a)
    b["records"].append({"arm": "ace", "seed": 2, "samples": 16, "x": 3})
    b["phases"]["synthesis"]["ace-2"] = {"tasks": 60}
    b.setdefault("notes", []).append({"what": "b"})
    bench.save_state(path, b)
    # a replaces its own record (a re-run) after b saved: b's record and note survive, a's change wins for its key.
    a["records"] = [r for r in a["records"] if r["seed"] != 1] + [{"arm": "ace", "seed": 1, "samples": 16, "x": 4}]
    bench.save_state(path, a)
    on_disk = bench.load_state(path)
    assert {(r["seed"], r["x"]) for r in on_disk["records"]} == {(None, 1), (1, 4), (2, 3)}
    assert on_disk["phases"]["synthesis"] == {"ace-1": {"tasks": 64}, "ace-2": {"tasks": 60}}
    assert on_disk["notes"] == [{"what": "b"}]
    assert a == on_disk  # the saving process sees the merged state


def test_a_deletion_on_disk_stays_deleted_and_held_parts_of_the_state_stay_live(bench, tmp_path):
    path = tmp_path / "evidence.json"
    path.write_text('{"records": [{"arm": "ace", "seed": 1, "samples": 16, "x": 1}], "phases": {"warm": {"epochs": []}}}')
    a, b = bench.load_state(path), bench.load_state(path)
    # a supersedes seed 1's record; b, loaded before, saves something else and must not bring it back
    a.setdefault("superseded", []).extend(a["records"])
    a["records"] = []
    bench.save_state(path, a)
    phase = b["phases"]["warm"]  # a part of the state b's code holds across saves
    b["records"].append({"arm": "ace", "seed": 2, "samples": 16, "x": 2})
    bench.save_state(path, b)
    phase["epochs"].append({"n": 1})
    phase.update(done=True)
    bench.save_state(path, b)
    held = b.setdefault("free_running", [])  # a list held across saves, as free_running() does
    held.append({"arm": "warm"})
    bench.save_state(path, b)
    held.append({"arm": "ace"})
    bench.save_state(path, b)
    held.append({"arm": "random"})
    bench.save_state(path, b)
    on_disk = bench.load_state(path)
    assert [(r["seed"], r["x"]) for r in on_disk["records"]] == [(2, 2)]
    assert on_disk["superseded"] == [{"arm": "ace", "seed": 1, "samples": 16, "x": 1}]
    assert on_disk["phases"]["warm"] == {"epochs": [{"n": 1}], "done": True}
    assert on_disk["free_running"] == [{"arm": "warm"}, {"arm": "ace"}, {"arm": "random"}]


def test_a_record_changed_on_both_sides_is_one_sides_whole_record(bench, tmp_path):
    path = tmp_path / "evidence.json"
    path.write_text('{"records": [{"arm": "ace", "seed": 1, "samples": 16, "x": 1, "y": 1}], "phases": {}}')
    a, b = bench.load_state(path), bench.load_state(path)
    a["records"] = [{"arm": "ace", "seed": 1, "samples": 16, "x": 2, "y": 1}]
    bench.save_state(path, a)
    b["records"] = [{"arm": "ace", "seed": 1, "samples": 16, "x": 1, "y": 3}]
    bench.save_state(path, b)
    assert bench.load_state(path)["records"] == [{"arm": "ace", "seed": 1, "samples": 16, "x": 1, "y": 3}]
