"""The synthesis hardness benchmark (issue 34, item 4): its target steps, pairs and paired bootstrap on fixed
inputs, and one quick run end to end on a tiny model built offline (benchmarks/synth_hardness.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmod import load_benchmark

from ace_env.tasks import Task, Turn

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hb():
    return load_benchmark("synth_hardness.py", "synth_hardness_under_test")


def _task(tid: str, turns: list[list[str]], **provenance) -> Task:
    return Task(tid, "ace", "x", [Turn([{"role": "user", "content": "go"}], gt) for gt in turns], {}, [], [],
                provenance=provenance)


def test_target_steps_are_every_call_to_b_right_after_a_across_turns(hb):
    task = _task("t", [["a(x=1)", "b(y=2)", "c()"], [], ["a(x=3)"], ["b(y=4)", "a(x=5)"]])
    assert hb.target_keys(task, ("a", "b")) == [(0, 1), (3, 0)]  # the empty turn 1 is skipped over
    assert hb.target_keys(task, ("b", "a")) == [(3, 1)]
    assert hb.target_keys(task, ("c", "b")) == []


def test_task_value_is_the_mean_nll_and_exact_share_of_scored_steps(hb):
    steps = [{"nll": 1.0, "exact": True}, {"nll": 3.0, "exact": False}, {"nll": None, "exact": None}]
    assert hb.task_value(steps) == (2.0, 0.5)
    assert hb.task_value([{"nll": None, "exact": None}]) is None


def test_pairs_are_each_task_against_its_own_seed(hb):
    tasks = [_task("s1", [["a()", "b()"]], parents=["seed1"], strategy="cascade", target_edge="a>b"),
             _task("s2", [["a()", "b()"]], parents=["seed2"], strategy="cascade", target_edge="a>b"),
             _task("s3", [["a()", "b()"]], parents=["seed1"], strategy="depth", target_edge="a>b")]
    scores = {
        "s1@a>b": {"steps": [{"nll": 2.0, "exact": False}], "skipped": []},
        "s2@a>b": {"steps": [], "skipped": ["task s2: step 0.1 lies beyond the model's 8192-token context"]},
        "s3@a>b": {"steps": [{"nll": 0.5, "exact": True}], "skipped": []},
        "seed1@a>b": {"steps": [{"nll": 1.0, "exact": True}], "skipped": []},
        "seed2@a>b": {"steps": [{"nll": 1.0, "exact": True}], "skipped": []},
    }
    pairs, left = hb.make_pairs(tasks, scores)
    assert [(p.task, p.seed, p.diff, p.synth_exact, p.seed_exact) for p in pairs] == [
        ("s1", "seed1", 1.0, 0.0, 1.0), ("s3", "seed1", -0.5, 1.0, 1.0)]
    assert len(left) == 1 and left[0].startswith("s2 (task): task s2: step 0.1 lies beyond")
    pairs, left = hb.make_pairs(tasks, {k: v for k, v in scores.items() if k != "seed1@a>b"})
    assert [p.task for p in pairs] == [] and left[0] == "s1: not scored yet"


def test_a_seed_is_paired_at_the_target_steps_of_each_tasks_own_composition(hb):
    """A seed used by two strategies aiming at different compositions (multi_turn_base_123: get_stock_info>
    place_order for one, place_order>get_order_details for the other) has different target steps for each:
    its score at one composition is never paired with a task aiming at the other."""
    tasks = [_task("s1", [["a()", "b()", "c()"]], parents=["seed1"], strategy="lookalike", target_edge="a>b"),
             _task("s2", [["a()", "b()", "c()"]], parents=["seed1"], strategy="distractor", target_edge="b>c")]
    scores = {"s1@a>b": {"steps": [{"nll": 2.0, "exact": False}], "skipped": []},
              "s2@b>c": {"steps": [{"nll": 0.5, "exact": False}], "skipped": []},
              "seed1@a>b": {"steps": [{"nll": 1.0, "exact": False}], "skipped": []}}
    pairs, left = hb.make_pairs(tasks, scores)
    assert [(p.task, p.diff) for p in pairs] == [("s1", 1.0)] and left == ["s2: not scored yet"]
    scores["seed1@b>c"] = {"steps": [{"nll": 0.25, "exact": False}], "skipped": []}
    assert [(p.task, p.diff) for p in hb.make_pairs(tasks, scores)[0]] == [("s1", 1.0), ("s2", 0.25)]
    line = {"task": "seed1", "edge": "b>c", "steps": [], "skipped": []}
    assert hb.score_key(line["task"], line["edge"]) == "seed1@b>c"


def test_paired_bootstrap_on_fixed_differences(hb):
    mean, lo, hi = hb.paired_bootstrap([0.5, 0.7, 0.6, 0.9, 0.4], n_boot=2000, seed=0)
    assert mean == pytest.approx(0.62)
    assert 0.4 <= lo < mean < hi <= 0.9  # every difference positive: the interval is above zero
    assert hb.paired_bootstrap([0.5, 0.7, 0.6, 0.9, 0.4], 2000, 0) == (mean, lo, hi)  # seeded: the same
    mean, lo, hi = hb.paired_bootstrap([-1.0, 1.0, -0.5, 0.5], 2000, 0)
    assert mean == 0.0 and lo < 0 < hi
    assert hb.paired_bootstrap([0.3], 100, 0) == (0.3, 0.3, 0.3)
    assert all(x != x for x in hb.paired_bootstrap([], 100, 0))  # nan


def test_strategy_rows_report_each_strategy_and_whether_it_is_harder(hb):
    pairs = [hb.Pair("cascade", f"t{i}", "s", "a>b", 2.0 + i * 0.1, 1.0, 0.0, 1.0) for i in range(4)]
    pairs += [hb.Pair("depth", "d0", "s", "a>b", 1.0, 1.2, 1.0, 1.0), hb.Pair("depth", "d1", "s", "a>b", 1.3, 1.1, 1.0, 0.0)]
    rows = hb.strategy_rows(pairs, ["cascade", "depth", "lookalike"], {"cascade": (4, 4)}, n_boot=500)
    by = {r["strategy"]: r for r in rows}
    assert by["cascade"]["n"] == 4 and by["cascade"]["harder"] and by["cascade"]["lo"] > 0
    assert by["cascade"]["seed_nll"] == 1.0 and by["cascade"]["synth_exact"] == 0.0
    assert by["cascade"]["solvable"] == (4, 4)
    assert not by["depth"]["harder"] and by["depth"]["diff"] == pytest.approx(0.0)
    assert by["lookalike"]["n"] == 0 and by["lookalike"]["diff"] is None and not by["lookalike"]["harder"]
    hb.print_table(rows)  # prints without failing on an empty strategy


def test_warm_start_tasks_share_no_base_number_with_a_seed(hb):
    used = {"multi_turn_long_context_12", "multi_turn_base_3"}
    ids = hb.warm_task_ids(used, 40, 0)
    assert len(ids) == 40 and ids == hb.warm_task_ids(used, 40, 0)
    assert not {hb.base_number(i) for i in ids} & {"12", "3"}


def test_quick_run_end_to_end(tmp_path):
    """--quick through synth_bench.py --hardness: synthesis, a warm start of a tiny model, scoring, the table."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACE_TORCH_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "synth_bench.py"), "--hardness", "--quick"],
                         capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "strategies whose target-step NLL rose (paired 95% interval above 0):" in out.stdout
    for strategy in ("ambiguity", "cascade", "depth", "distractor", "lookalike"):
        assert f"\n{strategy}" in out.stdout


def test_scoring_order_takes_each_strategy_in_turn(hb):
    tasks = [_task(f"{s}{i}", [["a()"]], strategy=s) for s, n in (("x", 3), ("y", 1), ("z", 2)) for i in range(n)]
    assert [t.id for t in hb.interleaved(tasks)] == ["x0", "y0", "z0", "x1", "z1", "x2"]
    assert hb.interleaved([]) == []


def test_a_sample_is_reused_only_with_the_flags_it_was_made_with(hb, tmp_path, monkeypatch):
    hb.write_tasks(tmp_path / "tasks.jsonl", [])
    monkeypatch.setattr(hb, "load_task_set", lambda path: {})
    (tmp_path / "sample.json").write_text('{"per_strategy": 3, "seed": 0, "strategies": ["cascade"], '
                                          '"long_context": false}')
    assert hb.load_or_make_sample(tmp_path, {}, 3, 0, ["cascade"]) == []
    with pytest.raises(SystemExit, match="give another --work or the same flags"):
        hb.load_or_make_sample(tmp_path, {}, 4, 0, ["cascade"])


def test_warm_overlap_names_the_base_numbers_the_warm_start_trained_on(hb, tmp_path):
    """``--keep-warm`` leaves out the tasks whose seed shares a base number with the warm start's training tasks
    (any variant of it: base, miss_func, ...), and only those."""
    assert hb.warm_overlap(tmp_path, {"multi_turn_base_1"}) == set()  # no warm start yet
    (tmp_path / "warm").mkdir()
    (tmp_path / "warm" / "hardness_warm.json").write_text(
        '{"tasks": ["multi_turn_base_138", "multi_turn_base_7"]}')
    used = {"multi_turn_miss_func_138", "multi_turn_base_70", "multi_turn_base_17"}
    assert hb.warm_overlap(tmp_path, used) == {"138"}
