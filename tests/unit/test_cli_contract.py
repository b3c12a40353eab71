"""The CLI's one vocabulary and its edge checks, through main(argv), with no services.

Each test fails on the CLI before issue 7 (the behaviour it pins was missing or different).
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import typer

import ace
from ace.cli import democmd, main
from ace.cli.options import config_options, parse_scope, resolve_scope
from ace.cli.render import Progress
from ace_env import bfcl
from ace_env.tasksets import load_task_set as load_tasks
from ace_env.verifier import ground_truth_rollout
from ace_env.workspace import check_out
from ace_graph.errors import ConfigError


def _rollouts(path, rows, bom=False):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


def _good(task, rid="g"):
    return {"rollout_id": rid, "task_id": task.id, "turns": ground_truth_rollout(task)}


@pytest.fixture(scope="module")
def base():
    return bfcl.load_tasks("base")


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"ace {ace.__version__}"


def test_dash_c_means_checkpoint_not_category(capsys):
    # -c was --category in replay; now -c is only --checkpoint, and replay takes --tasks (with --category as alias)
    assert main(["env", "replay", "bfcl", "-c", "miss_func"]) == 2
    assert main(["env", "replay", "bfcl", "--tasks", "bfcl:miss_func", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["miss_func"]["tasks"] == 200
    assert main(["env", "replay", "--help"]) == 0
    assert "alias" in capsys.readouterr().out


def test_dash_f_is_format_only(capsys):
    assert main(["db", "logs", "-f", "neo4j"]) == 2  # was --file here, --format in export
    assert main(["db", "logs", "--help"]) == 0
    assert "--file" in capsys.readouterr().out


def test_demo_count_is_n_with_rollouts_alias(capsys):
    assert main(["demo", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--n" in out and "--rollouts" in out and "alias" in out
    assert main(["demo", "--n", "5"]) == 1  # checked by DemoConfig before Neo4j is touched
    assert "at least 100" in capsys.readouterr().err


def test_tasks_spec_takes_several_categories(tmp_path, base, capsys):
    tasks = load_tasks("bfcl:base,miss_func")
    assert len(tasks) == 400 and {t.category for t in tasks.values()} >= {"base"}
    miss = bfcl.load_tasks("miss_func")[0]
    f = _rollouts(tmp_path / "r.jsonl", [_good(base[0], "a"), _good(miss, "b")])
    assert main(["verify", "--tasks", "bfcl:base,miss_func", "--rollouts", str(f), "--json"]) == 0
    assert [json.loads(x)["reward"] for x in capsys.readouterr().out.splitlines()] == [1.0, 1.0]


def test_verify_takes_files_and_folders_and_prints_a_task_table(tmp_path, base, capsys):
    d = tmp_path / "dir"
    d.mkdir()
    _rollouts(d / "a.jsonl", [_good(base[0], "a")])
    bad = _good(base[1], "b")
    bad["turns"] = [[] for _ in bad["turns"]]
    _rollouts(d / "b.jsonl", [bad])
    extra = _rollouts(tmp_path / "c.jsonl", [_good(base[2], "c")])
    assert main(["verify", str(d), "--rollouts", str(extra), "--tasks", "bfcl:base", "--show", "all"]) == 0
    out = capsys.readouterr().out
    assert "3 rollouts verified (3 tasks, 3 files), 2 rewarded" in out
    assert base[0].id in out and base[1].id in out and base[2].id in out
    assert main(["verify", str(d), "--rollouts", str(extra), "--tasks", "bfcl:base"]) == 0  # default: failures
    out = capsys.readouterr().out
    assert base[1].id in out and base[0].id not in out
    assert main(["verify", str(d), "--tasks", "bfcl:base", "--show", "bogus"]) == 1


def test_rich_markup_in_data_is_printed_literally(tmp_path, base, capsys):
    f = _rollouts(tmp_path / "r.jsonl", [
        {"rollout_id": "x", "task_id": "[/red]", "turns": []},
        {"rollout_id": "y", "task_id": "[link=http://evil]click[/link]", "turns": []},
        _good(base[0]),
    ])
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f)]) == 1
    assert "'[/red]'" in capsys.readouterr().err
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert "'[/red]'" in err and "[link=http://evil]click[/link]" in err


def test_error_printer_escapes(capsys):
    from ace.cli import _print_error

    _print_error("task [/red] and [bold]x[/bold]")
    assert capsys.readouterr().err.strip() == "error: task [/red] and [bold]x[/bold]"


def test_utf8_bom_is_accepted(tmp_path, base, capsys):
    f = _rollouts(tmp_path / "r.jsonl", [_good(base[0])], bom=True)
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reward"] == 1.0
    t = tmp_path / "tasks.jsonl"
    t.write_bytes(b"\xef\xbb\xbf" + (json.dumps(base[0].to_dict()) + "\n").encode())
    assert list(load_tasks(str(t))) == [base[0].id]


def test_a_folder_or_a_pipe_is_not_reported_missing(tmp_path, base, capsys, monkeypatch):
    assert main(["synth", "check", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "is a folder" in err and "does not exist" not in err
    assert main(["export", "--tasks", str(tmp_path), "--format", "bfcl", "--out", str(tmp_path / "o")]) == 1
    assert "is a folder" in capsys.readouterr().err
    # a pipe is read as standard input (-), never opened by name: a FIFO is refused without blocking (issue 35)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(fifo), "--json"]) == 1
    assert "is a FIFO (named pipe)" in capsys.readouterr().err
    line = json.dumps(_good(base[0])) + "\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(line.encode())))
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reward"] == 1.0


def test_out_is_checked_before_any_work(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", str(out), "--force"]) == 0
    for bad in ("/proc/x", str(out / "nope" / "r.jsonl"), str(tmp_path)):  # (a missing folder is created)
        assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", bad]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    # synth checks --out before it touches Neo4j or does any work, and leaves no .partial file
    s = tmp_path / "ro"
    s.mkdir()
    s.chmod(0o500)
    try:
        if os.access(s, os.W_OK):  # root ignores the mode: use a path no one can create instead
            target = "/proc/ace-tasks.jsonl"
        else:
            target = str(s / "tasks.jsonl")
        assert main(["synth", "-e", "x", "--out", target]) == 1
        assert "cannot write" in capsys.readouterr().err
    finally:
        s.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "ro"]


def test_check_out_leaves_nothing(tmp_path):
    check_out(tmp_path / "a.jsonl")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="folder"):
        check_out(tmp_path)
    check_out(tmp_path / "d", directory=True)


def test_numbers_urls_and_levels_are_checked_at_the_edge(tmp_path, capsys):
    out = str(tmp_path / "t.jsonl")
    cases = [
        (["synth", "-e", "x", "--out", out, "--min-support", "-5"], "--min-support must be at least 1"),
        (["synth", "-e", "x", "--out", out, "--min-support", "99999999999999999999"], "--min-support must be at most 1000000"),
        (["synth", "-e", "x", "--out", out, "--rewriter-url", "not a url"], "not an http"),
        (["synth", "-e", "x", "--out", out, "--n", "0"], "at least 1"),
        (["ingest", out, "-e", "e", "-p", "p", "-c", "c", "--round", "-5"], "--round must be at least 0"),
        (["query", "frontier", "--scope", "a/b/c", "-P", "limit=99999999999999999999"], "64-bit"),
        (["query", "frontier", "--scope", "a/b/c", "-P", "min_support=-5"], ">= 0"),
        (["query", "frontier", "--scope", "a/b/c", "-P", "level=bogus"], "valid levels: skill, tool"),
        (["query", "frontier", "--scope", "a/b/c", "-P", "min_prereq=7"], "[0, 1]"),
        (["curriculum", "step", "-e", "x", "--scope", "x/p/c", "--theta", "7"], "theta"),
    ]
    for argv, needle in cases:
        code = main(argv)
        err = capsys.readouterr().err
        assert code in (1, 2), argv
        assert needle in err, (argv, err)
        assert "Traceback" not in err
    assert not (tmp_path / "t.jsonl").exists() and not list(tmp_path.glob("*.partial"))


def test_scope_vocabulary():
    assert parse_scope("e/p/c") == ("e", "p", "c")
    for bad in ("e/p", "e//c", "", "a/b/c/d"):
        with pytest.raises(ConfigError, match="experiment/policy/checkpoint"):
            parse_scope(bad)
    assert resolve_scope(None, "e", "p", "c") == ("e", "p", "c")
    assert resolve_scope("e/p/c", "e") == ("e", "p", "c")
    with pytest.raises(ConfigError, match="disagrees"):
        resolve_scope("e/p/c", "other")
    with pytest.raises(ConfigError, match="--policy"):
        resolve_scope(None, "e", None, "c")


def test_ingest_takes_scope_or_its_parts(tmp_path, capsys):
    f = tmp_path / "r.jsonl"
    f.write_text("")
    assert main(["ingest", str(f), "--scope", "e/p"]) == 1
    assert "experiment/policy/checkpoint" in capsys.readouterr().err
    assert main(["ingest", str(f), "-e", "e", "-p", "p"]) == 1
    assert "--checkpoint" in capsys.readouterr().err


@dataclass(frozen=True)
class _Cfg:
    alpha: float = field(default=0.5, metadata={"help": "The alpha knob."})
    count: int = 3
    """How many things."""
    name: str = "x"

    def __post_init__(self):
        if self.count < 0:
            raise ConfigError(f"count={self.count} must be >= 0")


def test_flags_are_derived_from_the_config_dataclass(capsys):
    seen = {}
    app = typer.Typer()

    @app.command()
    @config_options(_Cfg, defaults={"name": "fixed"}, include=("alpha", "count"))
    def cmd(verbose: bool = typer.Option(False, "--verbose"), config: _Cfg = None):
        seen["config"], seen["verbose"] = config, verbose

    def run(*argv):
        try:
            app(list(argv), standalone_mode=False)
        except SystemExit:
            pass

    run("--count", "7", "--verbose")
    assert seen["config"] == _Cfg(alpha=0.5, count=7, name="fixed") and seen["verbose"]
    run("--help")
    out = capsys.readouterr().out
    assert "The alpha knob." in out and "How many things." in out and "--name" not in out
    with pytest.raises(ConfigError, match="count=-1"):
        app(["--count", "-1"], standalone_mode=False)


def test_curriculum_and_synth_flags_come_from_their_configs(capsys):
    from ace.cli.options import field_help
    from ace_graph.frontier import FrontierConfig
    from synth.pipeline import SynthConfig
    from train.curriculum.core import CurriculumConfig

    assert main(["curriculum", "step", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("theta", "phi", "momentum", "min_rounds", "min_attempts", "level"):
        assert f"--{name.replace('_', '-')}" in out
        assert " ".join(field_help(CurriculumConfig)[name].split()[:4]) in out
    assert main(["synth", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for cls, names in ((SynthConfig, ("n", "seed", "plans", "rounds")), (FrontierConfig, ("min_support", "min_lift"))):
        for name in names:
            assert " ".join(field_help(cls)[name].split()[:3]) in out, name


def test_query_list_is_json_wide_and_shows_defaults(capsys):
    assert main(["query", "--list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "frontier" in rows and "ingest-rollouts" not in rows and "scope-delete" not in rows
    assert rows["frontier"]["defaults"] == {"level": "tool", "min_support": 20, "min_lift": 0.05,
                                            "min_prereq": 0.6, "limit": 20}
    assert rows["frontier"]["required"] == ["scope"]
    assert main(["query", "--list"]) == 0  # piped: not cut to 80 columns
    out = capsys.readouterr().out
    assert "tasks-with-composition" in out and "min_support=20" in out
    assert max(len(line) for line in out.splitlines()) > 80


def test_query_refuses_a_write_query_by_its_mode(capsys):
    assert main(["query", "scope-delete", "--scope", "a/b/c"]) == 1  # no write prefix in the name
    assert "Mode: write" in capsys.readouterr().err


def test_query_misspelled_name_is_one_line_with_the_nearest_read_queries(capsys):
    # Found by the second walkthrough of issue 36: the error listed every cypher/ file, write ones
    # included (ingest-rollouts, scope-delete, schema...), and no nearest name.
    assert main(["query", "weak-compositons", "--scope", "a/b/c"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: no named read query 'weak-compositons'")
    assert "nearest: weak-compositions" in err
    assert "ingest-rollouts" not in err and "scope-delete" not in err and "schema" not in err


def test_progress_without_a_tty_prints_lines(capsys):
    with Progress("ingesting x", 10, every=0.0) as p:
        for _ in range(3):
            p.advance()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["ingesting x: 1/10 (0 s)", "ingesting x: 2/10 (0 s)", "ingesting x: 3/10 (0 s)"]


def test_the_demo_never_calls_a_unit_mastered(monkeypatch):
    """Issue 9: no "mastered" label where no training happened; the demo's simulated policy never trains."""
    report = SimpleNamespace(round=2, decisions=[1, 2, 3], states={"active": 1, "mastered": 2, "locked": 0},
                             to_dict=lambda decisions=True: {"round": 2})
    monkeypatch.setattr(democmd.run, "curriculum", lambda store, experiment, scope: report)
    said: list[str] = []
    assert democmd._curriculum(None, "e", "e/sim/round-1", said.append) == {"round": 2}
    assert "mastered" not in said[0] and "2 at or above the mastery bar" in said[0]
    assert "Nothing is trained in this demo" in said[0]
