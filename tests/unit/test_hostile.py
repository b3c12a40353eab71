"""Issue 25's hostile inputs, through main(argv), with no services (the graph ones are in
tests/integration/test_hostile_graph.py).  Each test failed on the code before the fix.

Special files are made in the test's own folder (a FIFO, a symlink to it, and as root a
character device like /dev/null), never the machine's own /dev nodes: on the old code the
writers renamed a regular file over them.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ace.cli import main
from ace.errors import Stopped
from ace_env import bfcl
from ace_env.cache import TaskCache

WEAKNESS = Path(__file__).resolve().parents[2] / "ace_env" / "demo_weakness.toml"


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link-to-fifo"
    link.symlink_to(fifo)
    made = [fifo, link]
    if os.geteuid() == 0:
        dev = tmp_path / "null-device"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
        made.append(dev)
    return made


def _kind(path):
    return stat.S_IFMT(os.stat(path).st_mode)


WRITERS = {
    "sim": lambda out: ["sim", "rollouts", "--tasks", "bfcl:base", "--n", "2", "--out", str(out), "--force"],
    "rollout": lambda out: ["rollout", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:base", "--limit", "1", "--out", str(out),
                            "--force"],
    "synth": lambda out: ["synth", "-e", "x", "--out", str(out), "--force"],
    "export": lambda out: ["export", "--tasks", "bfcl:base", "--format", "trl", "--out", str(out), "--force"],
    "train-sft": lambda out: ["train", "sft", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "--out", str(out),
                              "--force"],
    "train-grpo": lambda out: ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "--out", str(out),
                               "--force"],
    "grpo-metrics": lambda out: ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base",
                                 "--out", str(out.parent / "grpo-out"), "--metrics-out", str(out)],
    "user-sim": lambda out: ["train", "user-sim", "-p", "hf:nothing-here", "--tasks", "bfcl:base",
                             "--out", str(out), "--force"],
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_out_refuses_special_files(writer, tmp_path, capsys):
    # Defect 1: `--out /dev/full --force` exited 0 and replaced the device node with a regular file.
    for target in _special_files(tmp_path):
        before = _kind(target)
        rc = main(WRITERS[writer](target))
        err = capsys.readouterr().err
        assert rc == 1, (writer, target, err)
        assert "regular file" in err and err.count("error:") == 1, err
        assert _kind(target) == before and os.path.lexists(target)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary file was left behind"


def test_the_task_writer_itself_refuses_special_files(tmp_path):
    # write_tasks is called by synth and the loop after their --out checks: it checks again, before the rename
    from ace_env.errors import ConfigError as EnvConfigError
    from synth.pipeline import write_tasks

    for target in _special_files(tmp_path):
        before = _kind(target)
        with pytest.raises(EnvConfigError, match="regular file"):
            write_tasks(target, bfcl.load_tasks("base")[:1])
        assert _kind(target) == before
    assert not list(tmp_path.glob("*.partial"))


def test_regular_file_still_replaced_with_force(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    out.write_text("old\n")
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "2", "--out", str(out), "--force", "--json"]) == 0
    assert len(out.read_text().splitlines()) == 2


# --------------------------------------------------------------------------- defect 4: deadlines and bounds


def _silent_listener():
    """A port that accepts connections and never says anything (not a Ray head node)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server, f"127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("where", ["closed", "silent", "not-http2"])
def test_ray_address_that_is_not_ray_fails_in_bounded_time(where, tmp_path, capsys, monkeypatch):
    # Defect 4: `ace verify ... --ray 127.0.0.1:1` retried forever (no overall timeout, no one-line error).
    monkeypatch.setenv("ACE_RAY_CONNECT_TIMEOUT", "2")
    server = None
    if where == "closed":
        address = "127.0.0.1:1"
    else:
        server, address = _silent_listener()
        if where == "not-http2":
            def answer():
                conn, _ = server.accept()
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                time.sleep(3)
                conn.close()
            threading.Thread(target=answer, daemon=True).start()
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text('{"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": []}\n')
    start = time.monotonic()
    try:
        rc = main(["verify", "--tasks", "bfcl:base", "--rollouts", str(rollouts), "--ray", address])
    finally:
        if server is not None:
            server.close()
    err = capsys.readouterr().err
    assert rc == 1 and time.monotonic() - start < 30, err
    assert err.count("error:") == 1 and "Ray" in err and address in err, err


def test_sim_n_has_a_documented_maximum(tmp_path, capsys):
    # Defect 4: `ace sim rollouts --n 1000000000000` had no bound (525 MB in 85 s, and on).
    out = tmp_path / "r.jsonl"
    rc = main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "1000000000000", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and "10000000" in err.replace(",", "") and err.count("error:") == 1, err
    assert not list(tmp_path.iterdir())
    assert main(["sim", "rollouts", "--help"]) == 0
    assert "10,000,000" in capsys.readouterr().out


def _sim_process(out, n=5_000_000):
    return subprocess.Popen([sys.executable, "-m", "ace.cli", "sim", "rollouts", "--tasks", "bfcl:base", "--n", str(n),
                             "--out", str(out), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_temp(folder, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        temps = [p for p in folder.iterdir() if p.name.endswith(".tmp") and p.stat().st_size > 0]
        if temps:
            return temps
        time.sleep(0.1)
    raise AssertionError("the simulation never started writing")


def test_killed_sim_leaves_no_temporary_file(tmp_path):
    # Defect 4: a killed `ace sim rollouts` left its temporary file behind.
    out = tmp_path / "r.jsonl"
    proc = _sim_process(out)
    _wait_for_temp(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and err.count("error:") == 1 and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []
    # kill -9 cannot be caught: the next run to the same --out removes what it left.
    proc = _sim_process(out)
    _wait_for_temp(tmp_path, proc)
    proc.kill()
    proc.wait(timeout=60)
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", str(out), "--json"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.jsonl"]


def test_a_signal_while_a_cache_entry_loads_stops_the_command(tmp_path, monkeypatch):
    # CI, stop 28: SIGTERM reached `ace sim rollouts` while it read an oracle cache entry; the cache's
    # "unreadable entry: rebuild it" handler caught the signal's exception and the command carried on.
    monkeypatch.setenv("ACE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACE_CACHE", raising=False)
    task = bfcl.load_tasks("base")[0]
    assert TaskCache("test-stop", lambda t: t.id, maxsize=2, sources=[]).get(task) == task.id  # now on disk

    def interrupted(_file):
        raise Stopped("stopped by SIGTERM before it finished")

    monkeypatch.setattr(pickle, "load", interrupted)
    with pytest.raises(Stopped):
        TaskCache("test-stop", lambda t: t.id, maxsize=2, sources=[]).get(task)


def test_a_full_disk_is_one_error_line(tmp_path, capsys, monkeypatch):
    import ace.cli.simcmd

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ace.cli.simcmd, "simulate_to_file", full)
    rc = main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error:") == 1 and "no space left" in err and "Traceback" not in err, err


def test_standard_input_past_the_file_size_limit_is_one_error_line(capsys, monkeypatch):
    """`ace verify -` copies standard input to a file; an endless stream (`< /dev/zero`) under `ulimit -f` ended in
    an EFBIG traceback (h9's hostile run); it is one line, like a full disk."""
    import io

    def too_large(*_args, **_kwargs):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}\n")))
    monkeypatch.setattr("shutil.copyfileobj", too_large)
    rc = main(["verify", "--tasks", "bfcl:base", "-"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error:") == 1 and "largest size allowed" in err and "Traceback" not in err, err


# --------------------------------------------------------------------------- defect 5: names as written


def _fullwidth(name):
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in name)


def _respell(call, how):
    name, _, rest = call.partition("(")
    if how == "fullwidth-name":
        return _fullwidth(name) + "(" + rest
    if how == "math-sans-first-letter":  # U+1D5BA.. MATHEMATICAL SANS-SERIF SMALL A..Z, NFKC -> a..z
        return chr(0x1D5BA + ord(name[0]) - ord("a")) + name[1:] + "(" + rest
    key, sep, value = rest.partition("=")
    return name + "(" + _fullwidth(key) + sep + value


@pytest.mark.parametrize("obj", [{"name": "\u00b5"}, {"name": "ｌｓ"}, {"name": "cd", "arguments": {"ｆｏｌｄｅｒ": "a"}}])
def test_call_objects_refuse_names_python_would_read_as_others(obj):
    # Found by CI's fuzzing: {"name": "µ"} (MICRO SIGN, which Python reads as Greek mu) parsed as a call whose
    # rendering `µ()` the string parser then refused; an object's names follow the string rule now.
    from ace_env.calls import MalformedCall, parse_call

    parsed = parse_call(obj)
    assert isinstance(parsed, MalformedCall) and "not plain" in parsed.reason, parsed
    assert not isinstance(parse_call({"name": "cd", "arguments": {"folder": "µ"}}), MalformedCall)  # values are data


@pytest.mark.parametrize("how", ["fullwidth-name", "math-sans-first-letter", "fullwidth-keyword"])
def test_names_compare_exactly_as_written(how, tmp_path, capsys):
    # Defect 5: `ｔｏｕｃｈ(...)` and `𝗍ouch(...)` were credited as `touch` (reward 1.0): ast NFKC-normalises names.
    from ace_env import bfcl
    from ace_env.calls import MalformedCall, parse_call
    from ace_env.verifier import ground_truth_rollout

    task = next(t for t in bfcl.load_tasks("base")
                if any("=" in c and c[0].islower() for turn in ground_truth_rollout(t) for c in turn))
    turns = ground_truth_rollout(task)
    t, i = next((t, i) for t, calls in enumerate(turns) for i, c in enumerate(calls) if "=" in c and c[0].islower())
    respelled = _respell(turns[t][i], how)
    assert respelled != turns[t][i]
    assert isinstance(parse_call(respelled), MalformedCall)
    forged = [list(calls) for calls in turns]
    forged[t][i] = respelled
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "gt", "task_id": task.id, "turns": turns}, ensure_ascii=False) + "\n"
                        + json.dumps({"rollout_id": "forged", "task_id": task.id, "turns": forged},
                                     ensure_ascii=False) + "\n")
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(rollouts), "--json"]) in (0, 1)
    verdicts = {v["rollout_id"]: v for v in map(json.loads, capsys.readouterr().out.splitlines())}
    assert verdicts["gt"]["reward"] == 1.0
    assert verdicts["forged"]["reward"] < 1.0, verdicts["forged"]


# --------------------------------------------------------------------------- defect 8: no silent accepts


def _line(rid="a", task="multi_turn_base_0", turns=None, **extra):
    return json.dumps({"rollout_id": rid, "task_id": task, "turns": turns if turns is not None else [[]], **extra})


BAD_LINES = {
    "invalid-utf8-in-a-key": b'{"rollout\xff_id": "a", "task_id": "multi_turn_base_0", "turns": [[]]}\n',
    "duplicate-json-key": b'{"rollout_id": "a", "rollout_id": "b", "task_id": "multi_turn_base_0", "turns": [[]]}\n',
    "duplicate-rollout-id": (_line("a") + "\n" + _line("a") + "\n").encode(),
    "nan-argument": b'{"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": [[{"name": "cd", "arguments": {"folder": NaN}}]]}\n',
    "infinity-argument": b'{"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": [[{"name": "cd", "arguments": {"folder": -Infinity}}]]}\n',
    "overflowing-float": b'{"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": [[{"name": "cd", "arguments": {"folder": 1e400}}]]}\n',
    "5mb-rollout-id": (_line("x" * 5_000_000) + "\n").encode(),
    # a lone surrogate decodes in Python but is no character: the graph's driver failed on it with a traceback (h9)
    "lone-surrogate-in-rollout-id": (_line("a\ud800") + "\n").encode(),
    "lone-surrogate-in-an-argument": b'{"rollout_id": "a", "task_id": "multi_turn_base_0", "turns": [[{"name": "cd", "arguments": {"folder": "\\udfff"}}]]}\n',
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_lines_are_errors_not_silently_accepted(case, tmp_path, capsys):
    # Defect 8: each of these exited 0 (a mangled key, the last duplicate key, a dropped duplicate id,
    # NaN/Infinity/1e400 arguments, a 5 MB id echoed in full).
    path = tmp_path / "r.jsonl"
    path.write_bytes(BAD_LINES[case])
    argv = ["verify", "--tasks", "bfcl:base", "--rollouts", str(path), "--json"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "line" in err and len(err) < 1000, err
    assert main(argv + ["--skip-invalid"]) == 0
    assert "skipped:" in capsys.readouterr().err


@pytest.mark.parametrize("call", ["cd(folder=1e400)", "cd(folder=-1e400)",
                                  {"name": "cd", "arguments": '{"folder": NaN}'},
                                  {"function": {"name": "cd", "arguments": '{"folder": Infinity}'}}])
def test_non_finite_argument_in_a_call_is_malformed(call):
    from ace_env.calls import MalformedCall, parse_call

    parsed = parse_call(call)
    assert isinstance(parsed, MalformedCall) and "NaN or infinite" in parsed.reason


def test_verify_json_on_an_empty_file_says_so(tmp_path, capsys):
    # Defect 8: `verify --json` on an empty file printed nothing at all.
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert main(["verify", "--tasks", "bfcl:base", "--rollouts", str(path), "--json"]) == 0
    out = capsys.readouterr()
    assert out.out == "" and "warning: 0 rollouts verified" in out.err


@pytest.mark.parametrize("argv", [
    ["verify", "--tasks", "bfcl:", "--rollouts", "ROLLOUTS"],
    ["sim", "rollouts", "--tasks", "bfcl:", "--n", "1", "--out", "OUT"],
    ["rollout", "-p", "sim:", "--tasks", "bfcl:base", "--limit", "1", "--out", "OUT"],
    ["rollout", "-p", "openai:", "--tasks", "bfcl:base", "--limit", "1", "--out", "OUT"],
    ["rollout", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:base", "--limit", "1", "--seed", "-1", "--out", "OUT"],
])
def test_empty_names_and_negative_seed_are_refused(argv, tmp_path, capsys):
    # Defect 8: `--tasks bfcl:` (empty category), `-p sim:` (empty path) and `rollout --seed -1` were accepted.
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(_line() + "\n")
    argv = [str(rollouts) if a == "ROLLOUTS" else str(tmp_path / "out.jsonl") if a == "OUT" else a for a in argv]
    assert main(argv) in (1, 2)
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "out.jsonl").exists()


def test_rollout_whose_every_request_failed_exits_non_zero(tmp_path, capsys):
    # Defect 8: `rollout -p openai:m@http://127.0.0.1:1/v1` exited 0 although every request failed.
    # Issue 35 defect 3: it now stops at the outage, and writes no file.
    out = tmp_path / "r.jsonl"
    rc = main(["rollout", "-p", "openai:m@http://127.0.0.1:1/v1", "--tasks", "bfcl:base", "--limit", "1",
               "--out", str(out), "--request-retries", "0"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("error:") == 1 and "did not answer after 1 attempt" in err, err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- defect 6: plain names


@pytest.mark.parametrize("argv", [
    ["eval", "-p", f"sim:{WEAKNESS}", "-e", "..", "--name", "..", "-c", "X", "--tasks", "bfcl:base", "--limit", "1"],
    ["eval", "-p", f"sim:{WEAKNESS}", "-e", "e", "--name", "..", "-c", "../X", "--tasks", "bfcl:base", "--limit", "1"],
    ["eval", "-p", f"sim:{WEAKNESS}", "-e", "e", "-c", "../../X", "--tasks", "bfcl:base", "--limit", "1",
     "--gold-prefix", "--generate"],
    ["ingest", "ROLLOUTS", "-e", "..", "-p", "p", "-c", "c"],
    ["ingest", "ROLLOUTS", "--scope", "./p/c"],
    ["ingest", "ROLLOUTS", "-e", "e", "-p", "p", "-c", ".."],
    ["verify", "--tasks", "bfcl:base", "--rollouts", "ROLLOUTS"],  # a control: no name involved, it works
    ["loop", "-e", ".."],
    ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "-e", "..", "--out", "OUT"],
    ["train", "grpo", "-p", "hf:nothing-here", "--tasks", "bfcl:base", "--name", ".", "--out", "OUT"],
])
def test_names_that_are_path_components_must_be_plain(argv, tmp_path, capsys, monkeypatch):
    # Defect 6: `ace eval -e .. --name .. -c X` wrote $ACE_HOME/X.jsonl outside runs/ and stored the scope ../../X.
    home = tmp_path / "home" / "deep" / "ace"
    monkeypatch.setenv("ACE_HOME", str(home))
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(_line() + "\n")
    argv = [str(rollouts) if a == "ROLLOUTS" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    rc = main(argv)
    err = capsys.readouterr().err
    if argv[0] == "verify":
        assert rc == 0, err
        return
    assert rc == 1 and err.count("error:") == 1 and "plain" in err, err
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    assert written == [], written


def test_scope_key_refuses_dot_names():
    from ace_graph.errors import ConfigError
    from ace_graph.store import scope_key

    for parts in ((".", "p", "c"), ("e", "..", "c"), ("e", "p", "a/b"), ("e", "p", "")):
        with pytest.raises(ConfigError, match="plain"):
            scope_key(*parts)
    assert scope_key("e", "p", "round-1.5") == "e/p/round-1.5"


# --------------------------------------------------------------------------- defect 9: workers die with their parent


def _stat(pid):
    """(state, parent pid, start time) of a process from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _dead(proc_id):
    """Gone, or a zombie (dead; only its exit status is left for a parent that may never reap it)."""
    pid, started = proc_id
    st = _stat(pid)
    return st is None or st[2] != started or st[0] == "Z"  # another start time: the pid was reused


def _children(pid):
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None and st[1] == pid:
                out.append((int(entry.name), st[2]))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_forked_workers_die_with_their_killed_parent(tmp_path):
    # Defect 9: after a kill -9 of `ace ingest`, its forked verifier worker was reported alive 0.5 s later.
    # kill -9 at several points (the task file's oracle check, then verification); each time every child
    # must be dead (gone or a zombie) soon after the parent's death.
    from ace_env import bfcl
    from ace_env.verifier import ground_truth_rollout

    tasks = tmp_path / "tasks.jsonl"
    base = bfcl.load_tasks("base")[:20]
    tasks.write_text("".join(json.dumps({**t.to_dict(), "id": f"u{i}", "source": "user"}) + "\n"
                             for i, t in enumerate(base)))
    rollouts = tmp_path / "r.jsonl"
    with open(rollouts, "w") as f:
        for k in range(30000):  # long enough that every kill point below falls inside the run
            i = k % len(base)
            f.write(json.dumps({"rollout_id": f"r{k}", "task_id": f"u{i}", "turns": ground_truth_rollout(base[i])}) + "\n")
    killed = 0
    for delay in (0.0, 0.25, 0.5, 1.0, 1.5):
        proc = subprocess.Popen([sys.executable, "-m", "ace.cli", "verify", "--tasks", str(tasks), "--rollouts",
                                 str(rollouts), "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        kids = []
        while time.monotonic() < deadline and proc.poll() is None and not kids:
            kids = _children(proc.pid)
            time.sleep(0.02)
        time.sleep(delay)
        kids = set(kids) | set(_children(proc.pid))
        if proc.poll() is not None:  # it finished before the kill: nothing to test at this point
            continue
        proc.kill()
        proc.wait()
        limit = time.monotonic() + 2.0  # typically 0.03-0.1 s; generous for a loaded 2-core machine
        while time.monotonic() < limit and not all(_dead(k) for k in kids):
            time.sleep(0.01)
        assert kids, delay
        assert all(_dead(k) for k in kids), (delay, [(k, _stat(k[0])) for k in kids if not _dead(k)])
        killed += 1
    assert killed >= 3


@pytest.mark.parametrize("flag", ["-G", "--max-tokens", "--step-cap", "--batch-size"])
def test_rollout_size_flags_have_a_bound(flag, tmp_path, capsys):
    # Defect 4 (every size flag a bound): these took any number.
    out = tmp_path / "r.jsonl"
    rc = main(["rollout", "-p", f"sim:{WEAKNESS}", "--tasks", "bfcl:base", "--limit", "1", flag, "10" * 7,
               "--out", str(out)])
    err = capsys.readouterr().err
    # one line naming the flag (exit 1: the config's own bound, see CHANGELOG)
    assert rc == 1 and err.count("error:") == 1 and flag in err, err
    assert not out.exists()


def test_export_library_refuses_special_files(tmp_path):
    # Defect 1: train.export.export() (what `ace export` and the loop call) checks the rule itself too.
    from ace_env import bfcl
    from ace_graph.errors import AceError
    from train.export import export

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(AceError, match="regular file"):
        export(bfcl.load_tasks("base")[:1], "trl", fifo, force=True)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_worker_without_prctl_still_dies_with_its_parent(tmp_path):
    # The fallback where PR_SET_PDEATHSIG is not available: a thread that watches the parent.
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "import ace_env.worker as worker\n"
        "class NoPrctl:\n"
        "    def __init__(self, *a, **k): raise OSError('no prctl here')\n"
        "worker.ctypes.CDLL = NoPrctl\n"
        "parent = os.getpid()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    worker._die_with_parent(parent)\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(child, flush=True)\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    started = _stat(child)[2]
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    limit = time.monotonic() + 3
    while time.monotonic() < limit and not _dead((child, started)):
        time.sleep(0.05)
    assert _dead((child, started))
