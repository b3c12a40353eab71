"""Every benchmark runs end to end in its --quick form (tiny sizes, a tiny model built offline), so none rots
between its long runs.

The benchmarks are found by glob: a new ``benchmarks/*_bench.py`` fails here until it has a ``--quick`` mode and
an entry in ``QUICK`` (what its run must print: the line that sets ACE beside its baseline or goal).  Each one
runs once, as a subprocess with a timeout; those that read or write the graph get the suite's Neo4j, wiped first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.name for p in (ROOT / "benchmarks").glob("*_bench.py"))
TIMEOUT_S = 600  # one quick run; they take well under a minute on an idle core


@dataclass(frozen=True)
class Quick:
    """How a benchmark's quick run is checked: the pattern its output must match, whether it needs Neo4j."""

    pattern: str
    graph: bool = False
    args: tuple[str, ...] = field(default_factory=tuple)


RATIO = r"\d+(?:\.\d+)?x"
QUICK = {
    "app_bench.py": Quick(rf"(?m)^baseline: bare page .* 1\.0x.*\n(?:.*\n)*?^Overview +\d+ +\d+ +\d+ +\d+ +{RATIO}",
                          graph=True),
    "diagnosis_bench.py": Quick(r"goal >= best baseline at every N \(with probes\): (MET|NOT MET)"),
    "evidence_bench.py": Quick(r"primary exact"),  # checked further in test_evidence_bench_quick_runs_and_resumes
    "goldprefix_bench.py": Quick(r"gold-prefix / free-running: (\d+(?:\.\d+)?|inf)x compositions per CPU-second"),
    "ingest_bench.py": Quick(rf"ratio ACE/baseline \(steps/s\): {RATIO}", graph=True),
    "loop_bench.py": Quick(r"headline ace / random at b2: (\d+\.\d+x|n/a)", graph=True),
    "memory_bench.py": Quick(r"(?m)^sft\S* +0 +\d+ +\d+\.\d+ "),
    "policy_bench.py": Quick(rf"speed-up \(rollouts/s\): {RATIO}; same calls in both modes", graph=True),
    "query_bench.py": Quick(r"(?m)^capability-profile tool .* (MET|NOT MET)$", graph=True),
    "reingest_bench.py": Quick(rf"re-ingest / first ingest \(after\): {RATIO}", graph=True),
    "scale_bench.py": Quick(rf"(?m)^Ray, 1 worker\(s\) +1 +[\d,]+ +\d+\.\d+ +{RATIO} +True$"),
    "synth_bench.py": Quick(r"weakness hit: pass rate targeted / random-same-seeds = (\d+\.\d+|nan)"),
    "task_copy_bench.py": Quick(rf"copy\.deepcopy / pickle\.loads \(ACE\): {RATIO}"),
    "tau2_user_bench.py": Quick(rf"faithful dialogues SFT/base: ({RATIO}|n/a)"),
    "tau2_verify_bench.py": Quick(rf"(?m)^agreement: (\d+)/\1 rollouts\n^verification speed τ²/ACE: {RATIO}"),
    "user_sim_bench.py": Quick(rf"fidelity ratio SFT/base: ({RATIO}|n/a)"),
    "verify_bench.py": Quick(rf"speed ratio ACE/BFCL: cold {RATIO}, cold bounded {RATIO}, warm {RATIO}(?s:.*)"
                             r"without --strict \(untimed\): ACE rejects what BFCL accepts: 0; "
                             r"ACE accepts what BFCL rejects: 0"),
}


def _run(script: str, *args: str, timeout: int = TIMEOUT_S) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACE_TORCH_THREADS": "1"}
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                              text=True, env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} {' '.join(args)} ran past {timeout} s; its output:\n{(e.stdout or '')[-3000:]}")
    assert proc.returncode == 0, f"{script} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc.stdout


def _graph_for_the_dashboard(tmp_path: Path) -> None:
    """A scope the dashboard has something to draw in: the demo's planted weaknesses, 600 simulated rollouts."""
    ace = str(Path(sys.executable).parent / "ace")
    rollouts = tmp_path / "rollouts.jsonl"
    for argv in ([ace, "sim", "rollouts", "-t", "bfcl:base", "--n", "600", "--weakness",
                  str(ROOT / "ace_env" / "demo_weakness.toml"), "--out", str(rollouts)],
                 [ace, "ingest", str(rollouts), "-e", "app-bench-quick", "-p", "sim", "-c", "c0"]):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT_S)
        assert proc.returncode == 0, f"{' '.join(argv[1:3])} failed:\n{proc.stderr[-3000:]}"


def test_every_benchmark_has_a_quick_check():
    missing = [b for b in BENCHMARKS if b not in QUICK]
    assert not missing, f"benchmarks without a --quick check in QUICK: {missing}"
    assert not set(QUICK) - set(BENCHMARKS), f"QUICK names benchmarks that do not exist: {set(QUICK) - set(BENCHMARKS)}"


@pytest.mark.parametrize("script", [b for b in BENCHMARKS if b != "evidence_bench.py"])
def test_benchmark_quick_runs_and_compares(script, request, tmp_path):
    quick = QUICK.get(script)
    if quick is None:
        pytest.fail(f"{script} has no entry in QUICK: give it a --quick mode and the line its run must print")
    if quick.graph:
        request.getfixturevalue("clean_db")
    if script == "app_bench.py":
        _graph_for_the_dashboard(tmp_path)
    out = _run(script, "--quick", *quick.args)
    assert re.search(quick.pattern, out), f"{script} --quick did not print /{quick.pattern}/:\n{out[-3000:]}"
    if script == "goldprefix_bench.py":  # the gold prefix observes more compositions than free running
        rows = {line.split()[0]: line.split() for line in out.splitlines()
                if line.startswith(("free-running ", "gold-prefix ")) and line.split()[1].isdigit()}
        assert int(rows["gold-prefix"][1]) > int(rows["free-running"][1])


def test_evidence_bench_quick_runs_and_resumes(clean_db, tmp_path):
    """The evidence benchmark's quick run, and its state file resumes without redoing anything."""
    state = tmp_path / "state.json"
    out = _run("evidence_bench.py", "--quick", "--state", str(state), "--work", str(tmp_path / "work"))
    assert re.search(QUICK["evidence_bench.py"].pattern, out)
    data = json.loads(state.read_text())
    assert data["phases"]["warm"]["done"] and data["phases"]["diagnosis"]["targets"]
    arms = {r["arm"] for r in data["records"]}
    assert {"warm", "more-real", "grpo"} <= arms
    for r in data["records"]:
        if r["arm"] in ("more-real", "ace", "random"):
            assert r["samples"] in (1, 2) and r["tokens"] > 0 and len(r["step_exact"]) == len(data["held_out_steps"])
    # free-running partial credit: the warm start and each arm's final checkpoint, one held-out task each
    free = {(r["arm"], r["seed"]): r for r in data["free_running"]}
    finals = {(r["arm"], r["seed"]) for r in data["records"] if r["arm"] != "warm" and r["samples"] == 2}
    assert ("warm", None) in free and finals <= set(free)
    assert all(r["tasks"] == 1 and 0.0 <= r["partial_credit"] <= 1.0 and len(r["per_task"]) == 1 for r in free.values())
    before = state.read_text()
    again = _run("evidence_bench.py", "--quick", "--state", str(state), "--work", str(tmp_path / "work"))
    assert "warm start epoch" not in again and json.loads(state.read_text())["records"] == json.loads(before)["records"]
    assert json.loads(state.read_text())["free_running"] == json.loads(before)["free_running"]


def test_evidence_replication_quick_runs_resumes_and_reports(clean_db, tmp_path):
    """The preregistered replication (``evidence_bench.py --plan``) in its quick form: 2 seeds x 4 arms x 2 token
    budgets on the tiny model, each record with every field the plan's "records" names, the budgets matched, the
    synthetic data built by the plan's commit and hashed, the random arm never aimed at a target; a second run
    redoes nothing, and --report prints the decision rule's verdict."""
    plan_path = ROOT / "benchmarks" / "evidence_plan.json"
    plan = json.loads(plan_path.read_text())
    state, work = tmp_path / "state.json", tmp_path / "work"
    argv = ("--plan", str(plan_path), "--quick", "--state", str(state), "--work", str(work))
    _run("evidence_bench.py", *argv)
    data = json.loads(state.read_text())
    assert data["settings"]["synthesizer_commit"] == plan["synthesizer"]["commit"]
    budgets = data["settings"]["budgets"]
    records = {(r["arm"], r["seed"], r["budget"]): r for r in data["records"]}
    arms = ("ace", "random", "more-real", "curriculum-mixed")
    assert set(records) == {(a, s, b) for a in arms for s in (0, 1) for b in budgets} | {("warm", 0, 0), ("warm", 1, 0)}
    for (arm, seed, budget), r in records.items():
        sst = data["seeds"][str(seed)]
        assert len(r["step_exact"]) == len(r["step_nll"]) == len(sst["held_out_steps"]) > 0
        if arm == "warm":
            continue
        assert abs(r["loss_tokens"] - budget) <= 0.05 * budget and r["tokens"] > r["loss_tokens"] and r["samples"] >= 1
        name = "ace" if arm == "curriculum-mixed" else arm
        file = work / "data" / f"{name}-{seed}.jsonl"
        assert r["data_sha256"] == sst["data"][name]["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()
        assert r["synthesizer_commit"] == (None if arm == "more-real" else plan["synthesizer"]["commit"])
    for seed in ("0", "1"):
        sst = data["seeds"][seed]
        targets = {tuple(t) for t in sst["diagnosis"]["targets"]}
        drawn = {tuple(c) for batch in sst["diagnosis"]["random_draw"] for c in batch}
        aimed = {tuple(c.split(">", 1)) for c in sst["data"]["random"]["synthesis"]["aimed_at"]}
        assert targets and drawn and aimed <= drawn and not (drawn | aimed) & targets
        assert "/synth-7f28e42d07eb/" in sst["data"]["ace"]["synthesis"]["synth_module"]  # the pinned checkout's
        held = set(sst["splits"]["held_out"])
        assert not held & set(sst["splits"]["pool"]) and not held & set(sst["splits"]["train"])
        rounds = sst["curriculum"]["rounds"]
        assert len(rounds) == len(budgets) and rounds[0]["scope"].endswith(f"warm-{seed}/pool")
    assert data["seeds"]["0"]["splits"] != data["seeds"]["1"]["splits"]  # a seed is also a split
    free = {(r["arm"], r["seed"]): r for r in data["free_running"]}  # secondary: the warm start and each final
    assert set(free) == {(a, s) for a in ("warm", *arms) for s in (0, 1)}
    assert all(r["tasks"] == 1 and r["budget"] == (0 if a == "warm" else budgets[-1]) for (a, _), r in free.items())
    before = state.read_text()
    again = _run("evidence_bench.py", *argv)
    assert "warm start epoch" not in again and "supervised tokens (" not in again and ": round " not in again
    assert json.loads(state.read_text())["records"] == json.loads(before)["records"]
    # a new machine: the committed state only (no checkpoints or data files, an empty graph), the curriculum arm not yet run
    old = json.loads(before)
    cur = [r for r in old["records"] if r["arm"] == "curriculum-mixed"]
    moved = dict(old, records=[r for r in old["records"] if r["arm"] != "curriculum-mixed"])
    for seed in ("0", "1"):
        moved["seeds"][seed].pop("curriculum")
    state.write_text(json.dumps(moved))
    shutil.rmtree(work)
    clean_db.execute_query("MATCH (n) DETACH DELETE n")
    resumed = _run("evidence_bench.py", *argv)
    assert resumed.count("warm start rebuilt: same losses and held-out scores as recorded") == 2, resumed[-3000:]
    assert resumed.count("re-ingested (same exact as recorded)") == 2, resumed[-3000:]
    again_cur = [r for r in json.loads(state.read_text())["records"] if r["arm"] == "curriculum-mixed"]
    key = ("seed", "budget", "step_exact", "step_nll", "loss_tokens", "samples", "order_sha256")
    assert [{k: r[k] for k in key} for r in again_cur] == [{k: r[k] for k in key} for r in cur]
    report = _run("evidence_bench.py", "--plan", str(plan_path), "--quick", "--state", str(state), "--report")
    assert re.search(r"(?m)^verdict: (established|refuted|not decidable) -- ", report), report[-2000:]
    assert re.search(r"(?m)^ace - random, primary exact: .* @500, .* @1500 \(seeds \[0, 1\]\)$", report)
