"""The evidence benchmark's speed-up: samples the targeted arm needs to reach the random arm's final value."""

from __future__ import annotations

import pytest
from benchmod import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("evidence_bench.py", "evidence_bench_under_test")


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


def _two_seed_state(per_seed):
    """Four tasks of one step each at target a>b; ``per_seed`` maps a seed to (ace, random) step marks."""
    steps = [{"task": f"t{k}", "flat": 0, "tool": "b", "prev": "a"} for k in range(4)]
    recs = [{"arm": "warm", "seed": None, "samples": 0, "step_exact": "0000", "step_nll": [1.0] * 4}]
    for seed, (ace, rnd) in per_seed.items():
        for arm, marks in (("ace", ace), ("random", rnd)):
            recs.append({"arm": arm, "seed": seed, "samples": 16, "step_exact": marks,
                         "step_nll": [1.0 - int(m) / 2 for m in marks]})
    return {"records": recs, "held_out_steps": steps, "phases": {"diagnosis": {"targets": [["a", "b"]]}}}


def test_hierarchical_interval_widens_when_seeds_disagree(bench):
    # seed 0: ace right everywhere, random nowhere; seed 1 the reverse. Pooled over both seeds every task's
    # difference is 0, so resampling tasks with the seeds held fixed gives [0, 0]; resampling seeds does not.
    state = _two_seed_state({0: ("1111", "0000"), 1: ("0000", "1111")})
    fixed = bench.difference(state, n_boot=400, hierarchical=False)[16]
    hier = bench.difference(state, n_boot=400)[16]
    assert fixed["point"] == hier["point"] == 0.0
    assert (fixed["low"], fixed["high"]) == (0.0, 0.0)
    assert hier["low"] <= -0.9 and hier["high"] >= 0.9  # draws of seed 0 twice (+1) and seed 1 twice (-1)
    assert hier["per_seed"] == {0: 1.0, 1: -1.0} and hier["se"] > 0.5


def test_hierarchical_interval_is_the_per_task_bootstrap_with_one_seed(bench):
    state = _two_seed_state({0: ("1101", "0100")})
    hier = bench.difference(state, n_boot=300)[16]
    fixed = bench.difference(state, n_boot=300, hierarchical=False)[16]
    assert (hier["low"], hier["high"], hier["se"]) == (fixed["low"], fixed["high"], fixed["se"])
    assert hier["low"] < hier["point"] == 0.5 < hier["high"]  # tasks are resampled: not a point
    # and it is the plain per-task bootstrap: 4 tasks with differences (1, 0, 1, 0) drawn with replacement
    draws = list(bench.bootstrap_draws([0], ["t0", "t1", "t2", "t3"], 300))
    means = sorted(sum(t in ("t0", "t2") for t in d[0][1]) / 4 for d in draws)
    assert (hier["low"], hier["high"]) == (means[7], means[-8])


def test_speed_up_interval_resamples_seeds_too(bench):
    # seed 0: ace right everywhere from 16 samples on, random ends right on t0; seed 1: ace never right, random
    # ends right on t1. Pooled over both seeds ace (0.5) is past random's final value (<= 0.5) at 16 whatever the
    # tasks drawn; a draw of seed 1 twice never gets there (speed-up inf), which only resampling seeds shows.
    state = _two_seed_state({0: ("1111", "0000"), 1: ("0000", "0000")})
    for seed, (ace, rnd) in {0: ("1111", "1000"), 1: ("0000", "0100")}.items():
        for arm, marks in (("ace", ace), ("random", rnd)):
            state["records"].append({"arm": arm, "seed": seed, "samples": 64, "step_exact": marks,
                                     "step_nll": [1.0] * 4})
    hier = bench.speed_up(state, n_boot=200)
    fixed = bench.speed_up(state, n_boot=200, hierarchical=False)
    assert hier["point"] == fixed["point"] == pytest.approx(0.25)
    assert fixed["high"] == pytest.approx(0.25) and hier["high"] == float("inf") and not hier["claim_holds"]


def test_constant_call_rule_finds_the_composition_whose_gold_call_never_changes(bench):
    steps = ([{"task": f"t{k}", "prev": "pressBrakePedal", "tool": "startEngine",
               "call": "startEngine(ignitionMode='START')"} for k in range(5)]
             + [{"task": f"t{k}", "prev": "touch", "tool": "echo", "call": f"echo(content='{k}')"} for k in range(5)]
             + [{"task": "t9", "prev": "cd", "tool": "touch", "call": "touch(file_name='a')"}]  # seen once: not decided
             + [{"task": "t8", "prev": "x", "tool": "y", "call": "y()"}] * 3)  # constant, but not a target
    targets = [["pressBrakePedal", "startEngine"], ["touch", "echo"], ["cd", "touch"]]
    found = bench.constant_call_compositions(steps, targets)
    assert found == {("pressBrakePedal", "startEngine"): {"call": "startEngine(ignitionMode='START')", "occurrences": 5}}
    steps[2] = dict(steps[2], call="startEngine(ignitionMode='STOP')")  # one occurrence differs: not constant
    assert bench.constant_call_compositions(steps, targets) == {}


def test_report_without_the_constant_composition_drops_its_steps(bench):
    state = _two_seed_state({0: ("1100", "0000"), 1: ("1100", "0000")})
    for k in (2, 3):
        state["held_out_steps"][k]["prev"] = "z"
    state["phases"]["diagnosis"]["targets"].append(["z", "b"])
    rep = bench.report(state, n_boot=50, constant={("a", "b"): {"call": "b()", "occurrences": 9}})
    assert rep["difference"]["exact"][16]["point"] == pytest.approx(0.5)
    wc = rep["without_constant"]
    assert wc["target_steps"] == 2 and wc["exact"]["ace"][16] == 0.0 and wc["exact"]["random"][16] == 0.0
    assert wc["difference"]["exact"][16]["point"] == 0.0 and wc["compositions"] == {"a>b": {"call": "b()", "occurrences": 9}}


def test_gold_steps_follow_the_ground_truth_with_abstain_steps(bench):
    from types import SimpleNamespace

    task = SimpleNamespace(id="x", turns=[SimpleNamespace(ground_truth=["ls()", "cd(folder='a')"]),
                                          SimpleNamespace(ground_truth=[]),
                                          SimpleNamespace(ground_truth=["touch(file_name='b')"])])
    steps = bench.gold_steps(task)
    assert [(s["flat"], s["prev"], s["tool"], s["call"]) for s in steps] == [
        (0, None, "ls", "ls()"), (1, "ls", "cd", "cd(folder='a')"), (2, "cd", None, None),
        (3, "cd", "touch", "touch(file_name='b')")]


def test_supervised_tokens_per_arm_budget_and_seed(bench):
    state = _two_seed_state({0: ("1100", "0000")})
    for r in state["records"]:
        if r["arm"] != "warm":
            r["loss_tokens"] = 100 if r["arm"] == "ace" else 80
    assert bench.supervised_tokens(state) == {"ace": {16: {0: 100}}, "random": {16: {0: 80}}}
