"""Every command in README.md and docs/cli.md runs, in docs/cli.md's order, against the real server.

docs/cli.md is written as one session: each example works because the ones before it made what it
reads.  This test runs that session in a fresh folder (holding `ace_env/demo_weakness.toml` and
`ace_env/tau2_airline_weakness.toml`, as the repository root does) on a wiped database, each line
through ``main([...])``, and checks that every command of the README is one of those lines.  Two things keep it affordable, both listed here:
``CHEAP`` (a cheaper form of a slow command, with why) and ``NOT_RUN`` (the only commands not run).
"""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from docblocks import bash_commands

from ace.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CLI_MD = ROOT / "docs" / "cli.md"

#: Commands no test runs, and why.  Keep it tiny.
NOT_RUN = {
    "ace db stop": "stops the server every other test uses; tests/integration/test_db_server.py stops its own",
    "make demo": "ace demo at its defaults, then a real SmolLM2 round of ace loop: 10+ minutes on 2 cores; "
                 "its commands run here in cheap form and tests/integration/test_demo.py runs its stages",
    "make test": "is the test suite that runs this test",
}

#: (text, replacement, why): applied to a command before it runs.
CHEAP = [
    ("hf:smollm2-135m", "hf:{tiny}", "a tiny random Qwen2 model built offline (train/tiny.py) runs the same code paths "
                                     "in seconds; the prepared SmolLM2 itself is run by tests/unit/test_smollm2.py"),
    ("ace demo", "ace demo --n 1000 --synth 6 --categories base --tau2-n 300",
     "the demo's defaults (4,000 + 1,500 rollouts, 120 tasks) take minutes; the same stages at a smaller size "
     "(tests/integration/test_demo.py runs the command at larger sizes and checks what it finds)"),
    ("ace serve vllm --model smollm2-135m --port 8000 --eager",
     "ace serve vllm --model smollm2-135m --port 8000 --eager --dry-run",
     "starting vLLM takes minutes; tests/integration/test_vllm.py serves and queries it"),
]

#: Commands that serve until stopped: started as a process, run until they answer, then stopped.
SERVERS = ("ace app",)


def commands(path: Path) -> list[str]:
    """The `ace`/`make` lines of a document's ```bash blocks, without trailing comments."""
    return bash_commands(path, ("ace", "make"))


def test_every_readme_command_is_a_docs_cli_command_or_listed():
    session = set(commands(CLI_MD))
    readme = commands(README)
    assert len(readme) >= 10
    missing = [c for c in readme if c not in session and c not in NOT_RUN]
    assert not missing, f"README commands that docs/cli.md does not run: {missing}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_until_it_answers(argv: list[str], tmp_path: Path) -> None:
    port = _free_port()
    if "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "ace.cli", *argv], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(1)
        raise AssertionError(f"ace {' '.join(argv)} did not answer within 120 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_docs_cli_session_runs_in_order(clean_db, tmp_path, monkeypatch, capsys):
    from train.tiny import build_tiny_model

    tiny = build_tiny_model(tmp_path / "models" / "tiny")
    work = tmp_path / "work"
    (work / "ace_env").mkdir(parents=True)
    shutil.copy(ROOT / "ace_env" / "demo_weakness.toml", work / "ace_env" / "demo_weakness.toml")
    # (no folder under work/ace_env: `python -m ace.cli` run here would import it as ace_env's subpackage)
    shutil.copy(ROOT / "ace_env" / "tau2_airline_weakness.toml", work / "ace_env" / "tau2_airline_weakness.toml")
    monkeypatch.chdir(work)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    ran = []
    for line in commands(CLI_MD):
        if line in NOT_RUN:
            continue
        command = line
        for text, replacement, _ in CHEAP:
            if text.startswith("hf:"):
                command = command.replace(text, replacement.format(tiny=tiny))
            elif command == text:
                command = replacement
        argv = shlex.split(command)[1:]
        if any(line.startswith(s) for s in SERVERS):
            _serve_until_it_answers(argv, tmp_path)
        else:
            rc = main(argv)
            out = capsys.readouterr()
            assert rc == 0, f"`{line}` (run as `{command}`) exited {rc}:\n{out.out[-2000:]}\n{out.err[-2000:]}"
        ran.append(line)
    assert len(ran) >= 30
