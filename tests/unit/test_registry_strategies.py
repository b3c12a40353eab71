"""The strategy registry is the one place a strategy is declared, and every registered strategy's tasks verify (issue 24)."""

from __future__ import annotations

import random

import pytest

from ace_env import bfcl
from ace_env.tasks import Task
from ace_env.verifier import ground_truth_rollout, verify
from synth.checks.parts import flat_calls
from synth.pipeline import SynthConfig
from synth.planner import make_plans
from synth.registry import register_edit, targeted
from synth.strategies import STRATEGIES, register, synthesize


@pytest.fixture(scope="module")
def seeds() -> list[Task]:
    return bfcl.load_tasks("base")[::4]  # every class of BFCL


def test_a_duplicate_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register("depth", definition="x", needs="y")(lambda *a: None)
    with pytest.raises(ValueError, match="already has a random edit"):
        register_edit("depth")(lambda *a: None)


def test_every_strategy_declares_what_the_others_read():
    for name, spec in STRATEGIES.items():
        assert spec.name == name and spec.definition and spec.needs and spec.depth >= 2
    assert SynthConfig().strategies == targeted()
    assert set(targeted()) == {"ambiguity", "cascade", "depth", "distractor", "lookalike"}
    plans = make_plans([{"from": "a", "to": "b"}], {("a", "b"): ["s"]}, {}, 5, list(targeted()), random.Random(0))
    assert {p.strategy: p.depth for p in plans} == {n: STRATEGIES[n].depth for n in targeted()}


def test_every_registered_strategy_makes_tasks_whose_oracle_passes(seeds):
    """Walk the registry: each strategy, on a small seed set, makes at least one task, and every task made
    passes its own ground truth (reward 1.0)."""
    for name in STRATEGIES:
        made = 0
        for seed in seeds:
            flat = flat_calls(seed)
            for k in range(len(flat) - 1):
                task = synthesize(name, seed, (flat[k][3], flat[k + 1][3]), 0.5, random.Random(k))
                if task is None:
                    continue
                made += 1
                assert verify(task, ground_truth_rollout(task)).reward == 1.0, (name, task.id)
                if made >= 3:
                    break
            if made >= 3:
                break
        assert made, f"strategy {name} made no task on {len(seeds)} seeds"


def test_an_unknown_strategy_is_a_config_error_naming_the_known_ones():
    from ace_env.errors import ConfigError
    from synth.registry import get

    with pytest.raises(ConfigError, match="known: .*ambiguity"):
        get("no-such-strategy")
