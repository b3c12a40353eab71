"""One synthesis contract (issue 33, item 3): the one registry declares, for every environment's strategies,
the builder and the checks that belong to each; the task checks run exactly the declared ones."""

from __future__ import annotations

import dataclasses

import pytest

from ace_env import bfcl
from ace_env.tasks import Task
from ace_env.tau2 import strategies as tau2_strategies
from ace_env.tau2 import synthesis as tau2_synthesis
from ace_env.tau2.tasks import Tau2Task
from ace_env.tau2.tasks import load_tasks as load_tau2
from synth import (
    pipeline,
    strategies,  # noqa: F401  (registers BFCL's strategies)
)
from synth.checks import parts
from synth.checks.parts import executes_cleanly
from synth.registry import REGISTRY, Check, Spec, get, strategies_for, table_for
from synth.taskcheck import check_task

table_for(Tau2Task)  # τ²'s entry declares its strategies: registered on first use

#: What each strategy must declare, written down once more here: a check wired to the wrong strategy, or
#: dropped, fails the walk.
DECLARED = {
    Task: {
        "ambiguity": (), "depth": (), "random": (), "probe": (),
        "lookalike": (parts.LOOKALIKE_NOT_SHOWN, parts.LOOKALIKE_ID_IN_TEXT),
        "cascade": (parts.CASCADE_MISSES_VALUE, parts.CASCADE_RECOVERY_IN_TEXT),
        "distractor": (parts.DISTRACTOR_NOT_NEW, parts.DISTRACTOR_UNSTATED, parts.DISTRACTOR_NAMED,
                       parts.DISTRACTOR_MOOT),
    },
    Tau2Task: {
        "ambiguity": (tau2_strategies.STILL_NAMED, tau2_strategies.NOT_ONE, tau2_strategies.MISS_NOT_LIVE,
                      tau2_strategies.SHORTCUT_RIGHT),
        "distractor": (tau2_strategies.TRAP_NOT_LIVE,), "cascade": (tau2_strategies.SHORTCUT_RIGHT,),
        "depth": (tau2_strategies.ANSWER_IN_SCENARIO, tau2_strategies.SHORTCUT_RIGHT),
        "lookalike": (tau2_strategies.NOT_TOLD_APART, tau2_strategies.TRAP_NOT_LIVE,
                      tau2_strategies.NOT_UNIQUE),
    },
}


def test_every_strategy_of_every_environment_declares_its_builder_and_checks():
    assert set(DECLARED) <= set(REGISTRY)  # (a test's toy environment may have registered its own too)
    for kind in DECLARED:
        table = REGISTRY[kind]
        assert list(table) and set(table) == set(DECLARED[kind]), kind
        for name, spec in table.items():
            assert isinstance(spec, Spec) and spec.name == name and spec.task_type is kind
            assert callable(spec.build) and spec.definition and spec.needs and spec.depth >= 2
            assert all(isinstance(c, Check) and callable(c.find) for c in spec.checks)
            assert tuple(c.reason for c in spec.checks) == DECLARED[kind][name], (kind.__name__, name)
    # τ²'s strategies bear their BFCL counterparts' names and depths, and come in the plans' order
    assert list(REGISTRY[Tau2Task]) == ["ambiguity", "distractor", "cascade", "depth", "lookalike"]
    assert all(s.depth == REGISTRY[Task][n].depth for n, s in REGISTRY[Tau2Task].items())
    # which strategies apply is asked of the task's kind
    seed = bfcl.load_tasks("base")[0]
    tau2_seed = load_tau2("airline")[0]
    assert strategies_for(seed) is REGISTRY[Task] and strategies_for(tau2_seed) is REGISTRY[Tau2Task]


@pytest.fixture
def recorded(monkeypatch):
    """Every declared check of the registry replaced by one that records its call and always finds a problem."""
    calls: list[tuple[str, str, str]] = []
    for kind in DECLARED:
        for name, spec in REGISTRY[kind].items():
            def planted(check: Check, kind=kind, name=name) -> Check:
                def find(candidate):
                    calls.append((kind.__name__, name, check.reason))
                    return [f"planted {check.reason}"]
                return dataclasses.replace(check, find=find)
            monkeypatch.setattr(spec, "checks", tuple(planted(c) for c in spec.checks))
    return calls


def test_check_task_runs_exactly_the_declared_checks_of_the_tasks_strategy(recorded):
    seed = next(t for t in bfcl.load_tasks("base") if executes_cleanly(t)[0])
    for name, spec in REGISTRY[Task].items():
        recorded.clear()
        task = Task.from_dict({**seed.to_dict(), "provenance": {**seed.provenance, "strategy": name}})
        result = check_task(task)
        assert recorded == [("Task", name, r) for r in DECLARED[Task][name]], name
        assert all(r in result.reasons for r in DECLARED[Task][name])
        others = {r for n, rs in DECLARED[Task].items() if n != name for r in rs} - set(DECLARED[Task][name])
        assert not others & set(result.reasons), name
        assert all(f"planted {r}" in result.notes for r in DECLARED[Task][name])
    recorded.clear()
    check_task(seed)  # a seed (no strategy) runs none of them
    assert recorded == []


def test_the_tau2_check_runs_exactly_the_declared_checks_of_the_tasks_strategy(recorded, monkeypatch):
    monkeypatch.setattr(tau2_synthesis, "check_gold", lambda task: [])  # the generic oracle check, not wired here

    def check(task, draft, target, name):
        return pipeline.task_problems(tau2_synthesis.SYNTHESIS, get(name, Tau2Task), task, draft, target)

    seed = next(t for t in load_tau2("airline") if len(t.agent_actions) >= 2)
    actions = seed.agent_actions
    target = (actions[0].name, actions[1].name)
    for name in REGISTRY[Tau2Task]:
        recorded.clear()
        reasons = check(seed, None, target, name)
        assert recorded == [("Tau2Task", name, r) for r in DECLARED[Tau2Task][name]], name
        assert reasons == list(DECLARED[Tau2Task][name])
    recorded.clear()
    assert check(seed, None, ("no_such_tool", "other"), "depth") == [pipeline.TARGET_LOST]
    assert recorded == []  # a task that lost its target is rejected before any strategy check
