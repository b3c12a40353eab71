"""The dashboard's file listings open nothing but regular files under the workspace's runs/ (no services)."""

from __future__ import annotations

import os

from app import data


def test_synthesized_task_files_are_regular_files_under_runs(tmp_path, monkeypatch):
    """A link (to /etc/passwd), a FIFO, a folder named like a synthesized task file is not listed: the link was
    followed and its target opened; the FIFO failed every page showing a transcript or a task's text (h9)."""
    runs = tmp_path / "runs" / "e"
    runs.mkdir(parents=True)
    (runs / "synth-a.jsonl").write_text("")
    os.mkfifo(runs / "synth-fifo.jsonl")
    (runs / "synth-link.jsonl").symlink_to("/etc/passwd")
    (runs / "synth-dir.jsonl").mkdir()
    monkeypatch.setattr(data, "ace_home", lambda: tmp_path)
    assert data.synth_task_files() == [runs / "synth-a.jsonl"]
