"""The environment interface (ace_env/environments.py): one environment per task set, dispatched by task type."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ace.stages import simulate_to_file
from ace_env import bfcl
from ace_env.environments import (
    BFCL,
    ENVIRONMENTS,
    TAU2,
    ToolEnvironment,
    environment_named,
    environment_of,
    tool_catalogue_of,
    tool_info,
    verifier_for,
)
from ace_env.errors import ConfigError, TaskLoadError
from ace_env.sim import WeaknessSpec
from ace_env.tau2.rollouts import Tau2Verifier
from ace_env.tau2.tasks import load_tasks


def test_each_task_set_has_its_environment():
    assert environment_of(bfcl.load_tasks("base")[:3]) is BFCL
    assert environment_of(load_tasks("airline")[:3]) is TAU2
    assert environment_of([]) is BFCL
    assert environment_named("tau2") is TAU2


def test_mixed_and_unknown_are_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"mixes environments \(2 bfcl, 1 tau2 tasks\)"):
        environment_of([*bfcl.load_tasks("base")[:2], load_tasks("airline")[0]])
    with pytest.raises(ConfigError, match="unknown environment 'hotel'; use one of bfcl, tau2"):
        environment_named("hotel")
    with pytest.raises(ConfigError, match="belongs to no known environment"):
        environment_of(["not a task"])


def test_tool_info_comes_from_each_tools_environment():
    plain = tool_info([])
    assert plain["cd"][0] == "GorillaFileSystem"
    assert "book_reservation" not in plain  # τ² tools only when τ² tasks are given
    with_tau2 = tool_info(list(load_tasks("airline")[:1]))
    assert with_tau2["book_reservation"][0] == "tau2:airline"
    assert with_tau2["cd"] == plain["cd"]


def test_the_tool_catalogue_is_the_task_s_environment_s():
    """What BFCL's synthesis strategies read of the tools: the task's environment's catalogue, refused in one
    line for a task whose environment has none (τ²'s tools are no classes ACE instantiates)."""
    catalogue = tool_catalogue_of(bfcl.load_tasks("base")[0])
    assert catalogue is BFCL.tool_catalogue
    functions = catalogue.functions()
    assert len(functions) == 128 and functions["cd"].class_name == "GorillaFileSystem"
    fs = catalogue.instance("GorillaFileSystem", {"root": {"alex": {"type": "directory", "contents": {
        "notes.txt": {"type": "file", "content": "hi"}}}}})
    assert fs.ls()["current_directory_content"] == ["notes.txt"]
    assert catalogue.instance("MathAPI", {"ignored": 1}).add(2, 3) == {"result": 5}  # stateless: loads nothing
    with pytest.raises(TaskLoadError, match="Unknown BFCL class"):
        catalogue.instance("NoSuchAPI", {})
    assert TAU2.tool_catalogue is None
    with pytest.raises(ConfigError, match=r"τ²-bench task .*: its environment has no tool catalogue"):
        tool_catalogue_of(load_tasks("airline")[0])


def test_the_verifier_is_the_environment_s():
    tasks = {t.id: t for t in load_tasks("airline")[:2]}
    assert isinstance(verifier_for(tasks), Tau2Verifier)
    with pytest.raises(ConfigError, match="[Rr]ay"):
        verifier_for(tasks, None, "auto")


def test_replay_counts_per_group():
    out = BFCL.replay(bfcl.load_tasks("base")[:3] + bfcl.load_tasks("miss_func")[:2], None, None)
    assert {k: (v["tasks"], v["passed"]) for k, v in out.items()} == {"base": (3, 3), "miss_func": (2, 2)}
    out = TAU2.replay(load_tasks("airline")[:2], None, None)
    assert {k: (v["tasks"], v["passed"]) for k, v in out.items()} == {"airline": (2, 2)}


@dataclasses.dataclass(frozen=True)
class ToyTask:
    id: str


def test_a_third_environment_is_one_registry_entry(monkeypatch, tmp_path):
    """A new environment plugs in without edits to the commands: `simulate_to_file` (what `ace sim rollouts`
    runs) simulates its tasks through its own functions."""
    def toy_simulate(tasks, n, spec, seed, prefix):
        for k in range(n):
            yield {"rollout_id": f"{prefix}-{k}", "task_id": tasks[k % len(tasks)].id, "turns": [],
                   "meta": {"slips": [{"kind": "toy"}] if k % 2 else []}}

    toy = ToolEnvironment(name="toy", title="Toy", task_type=ToyTask, replay=lambda *a: {}, load_weakness=lambda p, t: None,
                          simulate=toy_simulate, simulate_turns=lambda *a: ([], []), verifier=lambda *a, **k: None,
                          tool_info=lambda tasks: {}, tagging="gold-actions", own_source=None, dialogues=False,
                          gold_steps=lambda task: 1, export_format="toy", results_spec=lambda path: None,
                          fill_hint="", load_spec=None, probes=False, demo_weakness=None)
    monkeypatch.setitem(ENVIRONMENTS, "toy", toy)
    tasks = [ToyTask("a"), ToyTask("b")]
    assert environment_of(tasks) is toy
    report = simulate_to_file(tasks, 4, WeaknessSpec(), 0, tmp_path / "r.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["a", "b", "a", "b"]
    assert (report.with_slips, report.slips) == (2, {"toy": 2})
