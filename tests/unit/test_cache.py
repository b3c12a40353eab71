"""Oracle and tag caches: keyed by task content, bounded, on disk; tasks handed out are never shared."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ace_env import bfcl
from ace_env.cache import TaskCache, ace_version
from ace_env.oracle import ORACLES, oracle_for
from ace_env.tasks import Task
from ace_env.tasksets import load_task_set
from ace_graph.tagger import TAGS, tag_task

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private ACE_HOME, so disk entries are this test's own."""
    monkeypatch.setenv("ACE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACE_CACHE", raising=False)
    return tmp_path / "home"


def _task() -> Task:
    return next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_0")


# --------------------------------------------------------------------------- keyed by content


def test_a_task_edited_in_place_never_gets_a_stale_oracle_or_tags():
    task = _task()
    before = oracle_for(task)
    tags_before = tag_task(task)
    assert before.n_steps == task.n_steps and len([t for t in tags_before if t.tool]) == task.n_steps
    dropped = task.turns[0].ground_truth.pop()  # same source, same id, other content
    after = oracle_for(task)
    assert after.n_steps == task.n_steps == before.n_steps - 1
    assert dropped not in [s.call for s in after.turns[0].steps]
    assert len([t for t in tag_task(task) if t.tool]) == task.n_steps
    task.turns[0].ground_truth.append(dropped)  # and back: the first entries are found again
    assert oracle_for(task).n_steps == before.n_steps


def test_fingerprint_follows_content_only():
    a, b = _task(), _task()
    assert a is not b and a.fingerprint() == b.fingerprint()
    b.turns[1].user[0]["content"] += " please"
    assert a.fingerprint() != b.fingerprint()


def test_memory_cache_is_bounded_lru(home):
    built = []
    cache = TaskCache("test-lru", lambda t: built.append(t.id) or t.id, maxsize=3, sources=[])
    tasks = bfcl.load_tasks("base")[:5]
    for t in tasks:
        cache.get(t)
    assert len(cache) == 3 and built == [t.id for t in tasks]
    cache.get(tasks[2])  # recently used: kept
    cache.clear()
    assert len(cache) == 0
    assert ORACLES.maxsize == 1024 and TAGS.maxsize == 4096  # the real caches are bounded too


# --------------------------------------------------------------------------- tasks are not shared


def test_loaded_tasks_are_fresh_copies():
    a = bfcl.load_tasks("base")
    a[0].turns[0].ground_truth.clear()
    a[0].initial_config.clear()
    a.pop()
    b = bfcl.load_tasks("base")
    assert len(b) == 200 and b[0].turns[0].ground_truth and b[0].initial_config
    assert b[0] is not a[0] and b[0].turns is not a[0].turns
    s1, s2 = load_task_set("bfcl:base"), load_task_set("bfcl:base")
    s1["multi_turn_base_0"].tools.append("rm_everything")
    assert "rm_everything" not in s2["multi_turn_base_0"].tools
    assert "rm_everything" not in load_task_set("bfcl:all")["multi_turn_base_0"].tools


# --------------------------------------------------------------------------- on disk


def test_disk_cache_survives_the_process_and_tolerates_bad_entries(home):
    calls = []

    def build(task):
        calls.append(task.id)
        return {"id": task.id, "steps": task.n_steps}

    task = _task()
    first = TaskCache("test-disk", build, maxsize=8, sources=[__file__])
    assert first.get(task) == {"id": task.id, "steps": task.n_steps} and calls == [task.id]
    path = first.path(task.fingerprint())
    assert path.is_file() and path.is_relative_to(home / "cache" / "test-disk")
    assert ace_version() in str(path.parent.parent.name)
    assert not list(path.parent.glob("*.tmp"))  # written by rename: no temporary file left behind

    # a new cache (as in a new process) reads the entry instead of building it
    second = TaskCache("test-disk", build, maxsize=8, sources=[__file__])
    assert second.get(task) == {"id": task.id, "steps": task.n_steps} and calls == [task.id]
    assert second.disk_hits == 1 and second.builds == 0

    for bad in (b"", b"\x80\x05truncated", pickle.dumps(("something", "else")),
                pickle.dumps(("ace-task-cache/1", "test-disk", "0" * 64, "another task's entry"))):
        path.write_bytes(bad)
        fresh = TaskCache("test-disk", build, maxsize=8, sources=[__file__])
        assert fresh.get(task) == {"id": task.id, "steps": task.n_steps}  # rebuilt, not trusted
        assert fresh.builds == 1
    assert pickle.loads(path.read_bytes())[3] == {"id": task.id, "steps": task.n_steps}  # and rewritten

    # other code computing the entry (another source hash) uses another folder
    other = TaskCache("test-disk", build, maxsize=8, sources=[REPO / "tests" / "conftest.py"])
    assert other.folder() != first.folder()


def test_cache_off_writes_nothing(home, monkeypatch):
    monkeypatch.setenv("ACE_CACHE", "off")
    cache = TaskCache("test-off", lambda t: 1, maxsize=2, sources=[])
    cache.get(_task())
    assert not (home / "cache" / "test-off").exists()


_SCRIPT = """
from ace_env import bfcl
from ace_env.oracle import ORACLES, oracle_for
from ace_graph.tagger import TAGS, tag_task
tasks = bfcl.load_tasks("base")[:30]
for t in tasks:
    tag_task(t)
print(ORACLES.builds, TAGS.builds)
"""


def test_a_second_process_rebuilds_no_oracle_and_no_tags(home):
    env = dict(os.environ, ACE_HOME=str(home))
    env.pop("ACE_CACHE", None)
    run = [sys.executable, "-c", _SCRIPT]
    first = subprocess.run(run, capture_output=True, text=True, env=env, cwd=REPO, check=True).stdout.split()
    second = subprocess.run(run, capture_output=True, text=True, env=env, cwd=REPO, check=True).stdout.split()
    assert first == ["30", "30"]
    assert second == ["0", "0"]
