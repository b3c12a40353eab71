"""Issue 35's input-file, name and parse defects (5, 9, 10, 11), through the helpers and main(argv), with no
services.  Each test failed on the code before the fix:

* 5: a FIFO given as an input blocked forever, a socket gave a traceback, /dev/null read as "0 rollouts
  verified" (exit 0): every reader now goes through ``ace_env.workspace.check_readable`` (a regular file,
  ``stat``-ed, never opened first), and ``verify``/``ingest`` read a pipe as ``-``;
* 9: ``-P min_support=<5,000 digits>`` and a weakness TOML nested 100,000 deep gave tracebacks;
* 10: a newline or a control character was accepted in names, and ``ace loop status -e ..`` read ``runs/..``;
* 11: an empty or comment-only weakness file was accepted silently.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket

import pytest

from ace.cli import main
from ace.cli.graphcmd import parse_value
from ace_env import bfcl
from ace_env.errors import ConfigError
from ace_env.sim import load_weakness
from ace_env.verifier import ground_truth_rollout
from ace_env.workspace import MAX_NAME, check_name, check_readable
from ace_graph.ingest import MAX_ROUND, _round_from

CASE_SECONDS = 60  # a FIFO opened for reading blocks forever: the alarm turns that into a failure


@pytest.fixture(autouse=True)
def _no_hang():
    def hang(*_):
        raise TimeoutError("blocked: an input was opened before it was checked")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(CASE_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def specials(tmp_path):
    """A FIFO, a symlink to it, a listening Unix socket and the null device, by kind."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    sock.listen(1)
    yield {"FIFO": fifo, "FIFO (named pipe) (through a symlink)": tmp_path / "link", "socket": tmp_path / "sock",
           "character device": "/dev/null"}
    sock.close()


def _good_line(task_id: str = "multi_turn_base_0") -> str:
    task = next(t for t in bfcl.load_tasks("base") if t.id == task_id)
    return json.dumps({"rollout_id": "g", "task_id": task.id, "turns": ground_truth_rollout(task)}) + "\n"


def _one_error(rc: int, err: str) -> str:
    assert rc == 1, err
    assert "Traceback" not in err and err.count("error:") == 1 and err.strip().startswith("error:"), err
    return err


# --------------------------------------------------------------------------- defect 5: regular files only


def test_check_readable_accepts_regular_files_and_refuses_the_rest(tmp_path, specials):
    f = tmp_path / "r.jsonl"
    f.write_text("x\n")
    assert check_readable(f) == f
    assert check_readable(tmp_path, folder=True) == tmp_path
    for kind, path in specials.items():
        with pytest.raises(ConfigError) as e:
            check_readable(path, "rollout file")
        assert kind.split(" (through")[0] in str(e.value) and "not a regular file" in str(e.value), str(e.value)
    for path, why in ((tmp_path, "is a folder"), (tmp_path / "missing", "does not exist"),
                      (tmp_path / ("a" * 300), "File name too long"), ("-", "standard input")):
        with pytest.raises(ConfigError, match=why):
            check_readable(path)


@pytest.mark.parametrize("argv", [
    ["verify", "--tasks", "bfcl:base", "SPECIAL"],
    ["verify", "--tasks", "bfcl:base", "--rollouts", "SPECIAL"],
    ["ingest", "SPECIAL", "-e", "e", "-p", "p", "-c", "c"],
    ["synth", "check", "SPECIAL"],
    ["export", "--tasks", "SPECIAL", "--format", "trl", "--out", "OUT"],
    ["verify", "--tasks", "SPECIAL", "GOOD"],
    ["sim", "rollouts", "--tasks", "SPECIAL", "--n", "1", "--out", "OUT"],
    ["sim", "rollouts", "--tasks", "bfcl:base", "--n", "1", "--weakness", "SPECIAL", "--out", "OUT"],
    ["rollout", "-p", "sim:SPECIAL", "--tasks", "bfcl:base", "--limit", "1", "--out", "OUT"],
    ["demo", "--weakness", "SPECIAL", "--tau2-n", "0"],
    ["demo", "--tau2-weakness", "SPECIAL"],
])
def test_every_reader_refuses_a_special_file_in_one_line(argv, specials, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")  # refused before the database is needed
    good = tmp_path / "good.jsonl"
    good.write_text(_good_line())
    out = tmp_path / "out"
    for kind, special in specials.items():
        args = [str(special) if a == "SPECIAL" else str(good) if a == "GOOD" else str(out) if a == "OUT" else
                a.replace("SPECIAL", str(special)) for a in argv]
        err = _one_error(main(args), capsys.readouterr().err)
        assert kind.split(" (through")[0] in err and "not a regular file" in err, (args, err)
        assert not out.exists()


def test_a_fifo_inside_a_folder_of_rollouts_is_not_read(tmp_path, capsys):
    (tmp_path / "a.jsonl").write_text(_good_line())
    os.mkfifo(tmp_path / "b.jsonl")
    assert main(["verify", "--tasks", "bfcl:base", str(tmp_path), "--json"]) == 0
    assert [json.loads(line)["reward"] for line in capsys.readouterr().out.splitlines()] == [1.0]


def test_standard_input_is_read_as_dash(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(_good_line().encode())))
    assert main(["verify", "--tasks", "bfcl:base", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reward"] == 1.0
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    err = _one_error(main(["verify", "--tasks", "bfcl:base", "-", "-"]), capsys.readouterr().err)
    assert "named twice" in err
    err = _one_error(main(["synth", "check", "-"]), capsys.readouterr().err)  # a command that reads no pipe
    assert "does not read standard input" in err


# --------------------------------------------------------------------------- defect 9: numbers and nesting


def test_a_parameter_past_the_int_conversion_limit_is_one_line(capsys):
    with pytest.raises(ConfigError, match="5,000 characters"):
        parse_value("9" * 5000, "min_support")
    assert parse_value("12") == 12 and parse_value("[1") == "[1"
    err = _one_error(main(["query", "weak-compositions", "--scope", "a/b/c", "-P", "min_support=" + "9" * 5000]),
                     capsys.readouterr().err)
    assert len(err) < 300, err
    err = _one_error(main(["query", "weak-compositions", "--scope", "a/b/c", "-P", "min_support=" + "9" * 4000]),
                     capsys.readouterr().err)
    assert "64-bit" in err and len(err) < 300, err


@pytest.mark.parametrize("text, needle", [
    ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n", "nested too deeply"),
    ("[defaults]\nerror = " + "9" * 5000 + "\n", "cannot be read"),
])
def test_a_weakness_file_too_deep_or_too_long_is_one_line(text, needle, tmp_path, capsys):
    f = tmp_path / "w.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_weakness(f)
    err = _one_error(main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "1", "--weakness", str(f),
                           "--out", str(tmp_path / "r.jsonl")]), capsys.readouterr().err)
    assert needle in err and not (tmp_path / "r.jsonl").exists()


# --------------------------------------------------------------------------- defect 10: names


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\tb", "a\x1bb", "a\u2028b", "a\x7fb", "..", ".", "a/b", "",
                                 "x" * (MAX_NAME + 1)])
def test_a_name_is_one_line_of_printable_characters(bad):
    with pytest.raises(ConfigError, match="not a plain name") as e:
        check_name(bad, "--experiment")
    assert "\n" not in str(e.value) and len(str(e.value)) < 400


def test_plain_names_still_pass():
    for good in ("demo", "round-1.5", "hf-smollm2-135m", "gpt-4.1", "a b", "é", "x" * MAX_NAME):
        assert check_name(good) == good


@pytest.mark.parametrize("argv", [
    ["loop", "status", "-e", ".."],
    ["loop", "status", "-e", "a" * 300],
    ["loop", "status", "-e", "a\nb"],
    ["loop", "-e", "a\nb"],
    ["eval", "-p", "sim:", "-t", "bfcl:base", "-e", "a\nb", "--name", "a\nb", "-c", "c"],
    ["eval", "-p", "sim:", "-t", "bfcl:base", "-e", "e", "--name", "a\x1bb", "-c", "c"],
    ["eval", "-p", "sim:", "-t", "bfcl:base", "-e", "e", "--name", "", "-c", "c"],  # was the default name (h9)
    ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "--name", "", "--out", "OUT"],
    ["ingest", "ROLLOUTS", "-e", "e", "-p", "p", "-c", "a\nb"],
    ["ingest", "ROLLOUTS", "--scope", "e/p\tq/c"],
    ["diagnose", "--scope", "e/p/.."],
    ["curriculum", "step", "-e", "e\n", "--scope", "e/p/c"],
    ["synth", "-e", "a\nb", "--out", "OUT"],
    ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "--name", "a\nb", "--out", "OUT"],
    ["demo", "-e", "a\nb"],
])
def test_every_name_goes_through_check_name(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ACE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")  # refused before the database is needed
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(_good_line())
    argv = [str(rollouts) if a == "ROLLOUTS" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    err = _one_error(main(argv), capsys.readouterr().err)
    assert "not a plain name" in err, err
    assert not (tmp_path / "out").exists() and not list((tmp_path / "home").rglob("runs/*"))


# --------------------------------------------------------------------------- defect 11: empty weakness files


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n"])
def test_an_empty_or_comment_only_weakness_file_is_refused(text, tmp_path, capsys):
    f = tmp_path / "w.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="holds no weaknesses"):
        load_weakness(f)
    out = tmp_path / "r.jsonl"
    for argv in (["rollout", "-p", f"sim:{f}", "--tasks", "bfcl:base", "--limit", "1", "--out", str(out)],
                 ["sim", "rollouts", "--tasks", "bfcl:base", "--n", "1", "--weakness", str(f), "--out", str(out)],
                 ["sim", "rollouts", "--tasks", "tau2:airline", "--n", "1", "--weakness", str(f), "--out", str(out)]):
        err = _one_error(main(argv), capsys.readouterr().err)
        assert "holds no weaknesses" in err and not out.exists(), err


def test_a_checkpoints_round_is_its_last_ascii_digits_and_bounded():
    assert (_round_from("step-200"), _round_from("c2b7"), _round_from("base"), _round_from("c²")) == (200, 7, 0, 0)
    assert _round_from(f"r{MAX_ROUND}") == MAX_ROUND
    for name in (f"r{MAX_ROUND + 1}", "c99999999999999999999"):
        with pytest.raises(ConfigError, match="--round"):
            _round_from(name)


@pytest.mark.parametrize("home", ["FILE", "/dev/null", "9" * 5000])
def test_an_ace_home_that_cannot_be_a_folder_is_one_line(home, tmp_path, monkeypatch, capsys):
    """ACE_HOME naming a file, a device or a name too long was a FileExistsError/OSError traceback from every
    command (h9's hostile run)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("")
    monkeypatch.setenv("ACE_HOME", home)
    err = _one_error(main(["scopes"]), capsys.readouterr().err)
    assert "cannot be the workspace folder" in err and "set ACE_HOME" in err, err
