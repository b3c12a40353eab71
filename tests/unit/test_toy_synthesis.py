"""The toy environment (tests/toyenv.py) through ``ace synth``: its entry declares its synthesis (one strategy
and its check), the one registry registers it, and the one pipeline makes verified toy tasks, with nothing of it
outside its module.  The graph is stood in for (a scope's frontier and its tasks' groups); the rest is the
command as it runs."""

from __future__ import annotations

import json
import random

import pytest
import toyenv

from ace.cli import main, synthcmd
from ace_env.errors import TaskLoadError
from ace_env.tasksets import load_task_set
from synth.pipeline import SynthConfig, run, seeds_for, sim_policy, task_problems, write_tasks
from synth.registry import get, synthesis_of, table_for

#: The frontier the stand-in scope reports: the composition the toy's weakness file plants, and one more.
EDGES = [{"from": "put", "to": "incr"}, {"from": "incr", "to": "incr"}]


@pytest.fixture
def toy(monkeypatch):
    return toyenv.register(monkeypatch)


class FakeStore:
    """What ``ace synth`` asks of the graph, for a toy scope whose rollouts were made on the counter group."""

    def __init__(self):
        self.stored = []

    def run(self, name, **params):
        assert name == "scope-task-groups" and params == {"scope": "t/sim/round-0"}
        return [{"source": toyenv.NAME, "category": "counter", "tasks": 2}]

    def upsert_tasks(self, tasks):
        self.stored.extend(tasks)

    def upsert_plans(self, experiment, plans):
        pass

    def upsert_lineage(self, experiment, rows):
        pass


@pytest.fixture
def graph(monkeypatch):
    store = FakeStore()
    monkeypatch.setattr(synthcmd, "with_store", lambda fn: fn(store))
    monkeypatch.setattr(synthcmd, "_newest_scope", lambda s, experiment: f"{experiment}/sim/round-0")
    monkeypatch.setattr(synthcmd, "require_scope", lambda s, key, experiment: None)
    monkeypatch.setattr(synthcmd, "_edges", lambda s, key, targets, config: EDGES)
    return store


def test_its_entry_declares_its_strategy_and_check_and_the_registry_holds_them(toy):
    synthesis = synthesis_of(toy)
    assert synthesis is toyenv.SYNTHESIS and synthesis.schedule == "in_turn"
    assert list(table_for(toyenv.ToyTask)) == ["depth"]
    spec = get("depth", toyenv.ToyTask)
    assert [c.reason for c in spec.checks] == [toyenv.READ_BACK] and spec.task_type is toyenv.ToyTask


def test_the_one_pipeline_makes_checked_toy_tasks_with_pass_rates(toy, tmp_path):
    seeds = load_task_set("toy", any_environment=True)
    synthesis = synthesis_of(toy)
    by_target = seeds_for(synthesis, EDGES, seeds)
    assert by_target == {("put", "incr"): ["toy:put_then_incr"], ("incr", "incr"): ["toy:count_twice"]}
    weakness = toy.load_weakness(toyenv.composition_file(tmp_path), list(seeds.values()))
    policy = sim_policy(weakness, "sim:toy", turns=toy.simulate_turns)
    result = run(synthesis, toyenv.ToyTask, EDGES, seeds, by_target, policy,
                 SynthConfig(n=4, strategies=("depth",), seed=0, rollouts_per_task=4))
    assert [t.id.rsplit("-", 1)[0] for t in result.tasks] == ["toy:put_then_incr-depth", "toy:count_twice-depth"]
    assert result.summary()["per_strategy"]["depth"]["built"] == 2
    # a plan draws each of its seeds once; short of n, a seed that gave a task once more (the toy's depth makes
    # the same task again: a duplicate, not written)
    assert result.rejections == {"duplicate": 2} and result.attempted == 4
    for task in result.tasks:
        assert toyenv.replay([task])[task.group]["passed"] == 1  # its gold leaves the store it expects
        assert task.gold[-1][0] == "get" and task.provenance["policy"] == "sim:toy"
        assert 0.0 <= task.provenance["pass_rate"] <= 1.0
    # the planted composition (incr right after put, error 0.8) makes that task fail more often than not
    by_seed = {t.provenance["parents"][0]: t.provenance["pass_rate"] for t in result.tasks}
    assert by_seed["toy:put_then_incr"] < 0.5
    again = run(synthesis, toyenv.ToyTask, EDGES, seeds, None, policy,
                SynthConfig(n=4, strategies=("depth",), seed=0, rollouts_per_task=4))
    assert [t.to_dict() for t in again.tasks] == [t.to_dict() for t in result.tasks]  # seeded: the same tasks


def test_its_declared_check_and_generic_check_reject_a_broken_task(toy):
    seeds = load_task_set("toy", any_environment=True)
    draft = toyenv.read_back(seeds["toy:count_twice"], ("incr", "incr"), 0.5, random.Random(0))
    task = toyenv._assemble(seeds["toy:count_twice"], ("incr", "incr"), "depth", draft)
    spec = get("depth", toyenv.ToyTask)
    assert task_problems(toyenv.SYNTHESIS, spec, task, draft, ("incr", "incr")) == []
    unread = dict(draft, gold=draft["gold"][:-1], expected=(("n", 2),))  # no read back, and a store it never leaves
    broken = toyenv._assemble(seeds["toy:count_twice"], ("incr", "incr"), "depth", unread)
    assert task_problems(toyenv.SYNTHESIS, spec, broken, unread, ("incr", "incr")) == ["gold_rejected", toyenv.READ_BACK]
    assert task_problems(toyenv.SYNTHESIS, spec, task, draft, ("put", "get")) == ["target_lost"]


def test_ace_synth_on_a_toy_scope_takes_its_seeds_from_the_scope(toy, graph, tmp_path, capsys):
    out = tmp_path / "toy.jsonl"
    assert main(["synth", "-e", "t", "--n", "2", "--seed", "0", "--out", str(out), "--json",
                 "--policy", f"sim:{toyenv.composition_file(tmp_path)}"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tasks"] == 2 and summary["by_strategy"] == {"depth": 2}
    assert summary["policy_source"] == "--policy" and "per_strategy" in summary
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["provenance"]["parents"] for r in rows] == [["toy:put_then_incr"], ["toy:count_twice"]]  # counter
    assert [t.id for t in graph.stored] == [r["id"] for r in rows]


def test_ace_synth_with_toy_seeds_and_the_scopes_policy(toy, graph, tmp_path, capsys):
    out = tmp_path / "toy.jsonl"
    assert main(["synth", "-e", "t", "--tasks", "toy:counter", "--n", "1", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tasks"] == 1 and summary["policy"] == "sim" and summary["policy_source"] == "the scope's policy"


def test_ace_synth_refuses_what_the_toys_synthesis_does_not_do(toy, graph, tmp_path, capsys):
    out = str(tmp_path / "x.jsonl")
    for extra, message in ((["--strategy", "lookalike"], "unknown strategy 'lookalike' for Toy key-value store tasks"),
                           (["--ray", "local"], "--ray: this environment synthesizes here"),
                           (["--policy", "hf:nothing"], "simulated agent only")):
        assert main(["synth", "-e", "t", "--tasks", "toy", "--out", out, *extra]) != 0, extra
        assert message in capsys.readouterr().err, extra


def test_ace_synth_check_reads_a_toy_task_file_through_its_entry(toy, tmp_path, capsys):
    """`ace synth check FILE` on the toy's tasks: read by its entry's `task_file`, checked by its synthesis; a task
    whose gold no longer leaves its store and one whose target is gone are invalid."""
    seeds = load_task_set("toy", any_environment=True)
    synthesis = synthesis_of(toy)
    policy = sim_policy(toy.load_weakness(toyenv.composition_file(tmp_path), list(seeds.values())), "sim:toy",
                        turns=toy.simulate_turns)
    made = run(synthesis, toyenv.ToyTask, EDGES, seeds, None, policy,
               SynthConfig(n=2, strategies=("depth",), seed=0, rollouts_per_task=2)).tasks
    path = tmp_path / "toy.jsonl"
    write_tasks(path, made)
    back = load_task_set(str(path), any_environment=True)
    assert len(made) == 2 and all(isinstance(t, toyenv.ToySynthTask) for t in back.values())
    assert [t.to_dict() for t in back.values()] == [t.to_dict() for t in made]  # read back as written
    assert [t.fingerprint() for t in back.values()] == [t.fingerprint() for t in made]
    with pytest.raises(TaskLoadError, match="not supported by"):  # a command that takes the default's tasks only
        load_task_set(str(path))

    assert main(["synth", "check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"tasks": 2, "valid": 2, "invalid": 0, "reasons": {}}

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["expected"] = {k: v + 1 for k, v in rows[0]["expected"].items()}  # a store its gold never leaves
    rows[1]["provenance"]["target_edge"] = "get>put"  # a composition its gold does not have
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["synth", "check", str(broken), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"tasks": 2, "valid": 0, "invalid": 2,
                                                   "reasons": {"gold_rejected": 1, "target_lost": 1}}
