"""The permanent bad-input corpus (tests/corpus/) against every entry point that reads it.

Each case either succeeds or prints one clean error line; never a traceback;
never a hang (each run under a timeout, tool calls under a 2 s budget); and
an ingest that fails leaves the graph's node and relationship counts as they
were.  Add a file to tests/corpus/rollouts or tests/corpus/tasks to add a case.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
from pathlib import Path

import pytest
from hostiletasks import bfcl_folder_runaway_gold, over_the_file_cap, tau2_many_flights, tau2_runaway_gold

from ace.cli import main
from ace_env import bfcl
from ace_env.verifier import ground_truth_rollout

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ROLLOUTS = sorted((CORPUS / "rollouts").glob("*.jsonl"))
TASKS = sorted((CORPUS / "tasks").glob("*.jsonl"))
COMMANDS = [line.strip() for path in sorted((CORPUS / "commands").glob("*.txt"))
            for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
WEAKNESS = Path(__file__).resolve().parents[2] / "ace_env" / "demo_weakness.toml"
CASE_TIMEOUT_S = 180
PWNED = Path("/tmp/ace-pwned")


class _Hang(Exception):
    pass


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    def on_alarm(*_):
        raise _Hang(f"{argv} ran past {CASE_TIMEOUT_S} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        rc = main(argv)  # an exception escaping main() would be a traceback for the user: the test fails
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _check_clean(rc: int, err: str, argv: list[str]) -> None:
    assert rc in (0, 1), (argv, rc, err)
    assert "Traceback" not in err, (argv, err)
    # Skip reports may wrap over several lines; errors are the lines that start with "error:".
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert err.count("error:") == len(errors), (argv, err)
    # Exit 1 with one error line, or with nothing on stderr and a verdict on stdout (synth check's
    # "some tasks are invalid"); exit 0 with none.
    assert len(errors) <= (1 if rc == 1 else 0), (argv, err)
    if rc == 1 and err.strip():
        assert len(errors) == 1, (argv, err)


def _counts(driver, database) -> tuple[int, int]:
    nodes, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS n", database_=database)
    rels, _, _ = driver.execute_query("MATCH ()-[r]->() RETURN count(r) AS n", database_=database)
    return nodes[0]["n"], rels[0]["n"]


@pytest.fixture(autouse=True)
def _small_budget(monkeypatch):
    monkeypatch.setenv("ACE_CALL_TIMEOUT", "2")
    monkeypatch.setenv("ACE_MEMORY_LIMIT_MB", "512")
    PWNED.unlink(missing_ok=True)
    yield
    assert not PWNED.exists(), "a call in the corpus was executed as code"


#: Hostile task files a command line names by placeholder (tests/hostiletasks.py), each written once, on first
#: use, into a folder of its own (never the case's folder, which must stay empty).
GENERATED = {
    "{tau2_runaway}": ("runaway.jsonl", tau2_runaway_gold),
    "{tau2_flights}": ("flights.jsonl", tau2_many_flights),
    "{bfcl_runaway}": ("bfcl-runaway", bfcl_folder_runaway_gold),
    "{huge}": ("huge.jsonl", over_the_file_cap),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    made: dict[str, Path] = {}

    def get(key: str) -> Path:
        if key not in made:
            name, write = GENERATED[key]
            made[key] = write(tmp_path_factory.mktemp("generated") / name)
        return made[key]

    return get


@pytest.fixture(scope="module")
def seeded(neo4j_driver, neo4j_database, tmp_path_factory):
    """A wiped graph with the taxonomy and BFCL's tasks seeded (by one good ingest), so failed runs must add nothing."""
    with neo4j_driver.session(database=neo4j_database) as session:
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    task = next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")
    good = tmp_path_factory.mktemp("seed") / "good.jsonl"
    good.write_text(json.dumps({"rollout_id": "g", "task_id": task.id, "turns": ground_truth_rollout(task)}) + "\n")
    assert main(["ingest", str(good), "-e", "seed", "-p", "p", "-c", "c", "--tasks", "bfcl:base"]) == 0
    return neo4j_driver, neo4j_database


def test_corpus_is_there():
    assert len(ROLLOUTS) >= 20 and len(TASKS) >= 7 and len(COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS)
def test_command_case(command, seeded, generated, tmp_path, tmp_path_factory, capsys):
    """A hostile command line (tests/corpus/commands): refused in one line, nothing written, nothing stored."""
    driver, database = seeded
    case = tmp_path / "case"
    case.mkdir()
    os.mkfifo(case / "fifo")
    (case / "link").symlink_to(case / "fifo")
    task = next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")
    rollouts = tmp_path_factory.mktemp("input") / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "g", "task_id": task.id, "turns": ground_truth_rollout(task)}) + "\n")
    conflict = rollouts.parent / "conflict.jsonl"  # rollout g again, with other content
    conflict.write_text(json.dumps({"rollout_id": "g", "task_id": task.id, "turns": [[]] * task.n_turns}) + "\n")
    fill = {"{tmp}": case, "{fifo}": case / "fifo", "{link}": case / "link", "{rollouts}": rollouts,
            "{conflict}": conflict, "{weakness}": WEAKNESS, "{corpus}": CORPUS}
    fill.update((key, generated(key)) for key in GENERATED if key in command)
    argv = []
    for word in shlex.split(command):
        for key, value in fill.items():
            word = word.replace(key, str(value))
        argv.append(word)
    capsys.readouterr()
    before = _counts(driver, database)
    rc, _, err = _run(argv, capsys)
    assert rc in (1, 2), (argv, rc, err)
    assert "Traceback" not in err and err.count("error:") == 1, (argv, err)
    assert _counts(driver, database) == before
    assert sorted(p.name for p in case.iterdir()) == ["fifo", "link"], (argv, list(case.iterdir()))
    assert stat.S_ISFIFO(os.stat(case / "fifo").st_mode)


@pytest.mark.parametrize("case", ROLLOUTS, ids=lambda p: p.stem)
def test_rollout_case(case, seeded, capsys):
    driver, database = seeded
    capsys.readouterr()
    verify = ["verify", "--tasks", "bfcl:base", "--rollouts", str(case), "--json"]
    for argv in (verify, verify + ["--skip-invalid"]):
        rc, out, err = _run(argv, capsys)
        _check_clean(rc, err, argv)
        for line in out.splitlines():
            json.loads(line)  # stdout under --json is only verdicts
    assert _run(verify + ["--skip-invalid"], capsys)[0] == 0  # with --skip-invalid the run always finishes
    ingest = ["ingest", str(case), "-e", "corpus", "-p", "p", "-c", case.stem, "--tasks", "bfcl:base"]
    before = _counts(driver, database)
    rc, _, err = _run(ingest, capsys)
    _check_clean(rc, err, ingest)
    if rc == 1:
        assert _counts(driver, database) == before, "a failed ingest left something behind"
    rc, _, err = _run(ingest + ["--skip-invalid"], capsys)
    _check_clean(rc, err, ingest)
    assert rc == 0


@pytest.mark.parametrize("case", TASKS, ids=lambda p: p.stem)
def test_task_case(case, seeded, tmp_path, capsys):
    driver, database = seeded
    capsys.readouterr()
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "a", "task_id": "mine_0", "turns": []}) + "\n"
                        + json.dumps({"rollout_id": "b", "task_id": "multi_turn_base_0", "turns": []}) + "\n")
    commands = [
        ["verify", "--tasks", str(case), "--rollouts", str(rollouts), "--skip-invalid"],
        ["synth", "check", str(case)],
        ["sim", "rollouts", "--tasks", str(case), "--n", "2", "--out", str(tmp_path / "sim.jsonl")],
        ["export", "--tasks", str(case), "--format", "bfcl", "--out", str(tmp_path / "export")],
        ["ingest", str(rollouts), "-e", "corpus", "-p", "p", "-c", case.stem, "--tasks", str(case), "--skip-invalid"],
    ]
    for argv in commands:
        before = _counts(driver, database)
        rc, _, err = _run(argv, capsys)
        _check_clean(rc, err, argv)
        if rc == 1:
            assert not err.strip() or str(case) in err.replace("\n", ""), err
            assert _counts(driver, database) == before
    bfcl_node, _, _ = driver.execute_query(
        "MATCH (t:Task {key: 'bfcl:multi_turn_base_0'}) RETURN t.source AS s, t.category AS c", database_=database)
    assert [r.data() for r in bfcl_node] == [{"s": "bfcl", "c": "base"}]
