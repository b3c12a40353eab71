"""Issue 25's hostile inputs, through main(argv), with no services (the graph ones are in
tests/integration/test_hostile_graph.py).  Each test failed on the code before the fix.

Special files are made in the test's own folder (a FIFO, a symlink to it, and as root a
character device like /dev/null), never the machine's own /dev nodes: on the old code the
writers renamed a regular file over them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ace.cli import main

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


def test_regular_file_still_replaced_with_force(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    out.write_text("old\n")
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "2", "--out", str(out), "--force", "--json"]) == 0
    assert len(out.read_text().splitlines()) == 2
