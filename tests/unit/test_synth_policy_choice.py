"""Which policy `ace synth` rolls its tasks out with, from the scope's policy name or --policy."""

from __future__ import annotations

import random

import pytest

from ace.cli.synthcmd import load_synth_policy, scope_policy_spec
from ace_env.bfcl import load_tasks
from ace_env.verifier import verify
from ace_graph.errors import ConfigError
from train.engine import RolloutConfig, TaskRollouts
from train.policies import load_policy


def test_a_scopes_policy_name_maps_to_a_runnable_spec_or_a_clear_error():
    assert scope_policy_spec("sim") == "sim"
    assert scope_policy_spec("sim-demo_weakness") == "sim"
    assert scope_policy_spec("hf-smollm2-135m") == "hf:smollm2-135m"
    for name in ("hf-sft-1", "openai-smol", "mymodel"):
        with pytest.raises(ConfigError, match="cannot be run from its name"):
            scope_policy_spec(name)


def test_sim_specs_give_the_simulated_agent_directly(tmp_path):
    weakness = tmp_path / "w.toml"
    weakness.write_text("[defaults]\nerror = 0.0\n")
    policy, name = load_synth_policy(f"sim:{weakness}", None, RolloutConfig())
    assert name == f"sim:{weakness}" and not isinstance(policy, TaskRollouts)
    task = load_tasks("base")[0]
    assert verify(task, policy(task, random.Random(0))).reward == 1.0
    assert load_synth_policy("sim", weakness, RolloutConfig())[1] == f"sim:{weakness}"
    with pytest.raises(ConfigError, match="give it once"):
        load_synth_policy(f"sim:{weakness}", weakness, RolloutConfig())


def test_task_rollouts_batches_all_tasks_in_one_engine_run(tmp_path):
    weakness = tmp_path / "w.toml"
    weakness.write_text("[defaults]\nerror = 0.0\n")
    inner = load_policy(f"sim:{weakness}")
    seen: list[int] = []

    class Counting:
        spec = inner.spec

        def generate(self, conversations, config):
            seen.append(len(conversations))
            return inner.generate(conversations, config)

        def close(self):
            pass

    tasks = load_tasks("base")[:3]
    runner = TaskRollouts(Counting(), RolloutConfig(batch_size=6))
    out = runner.rollouts(tasks, 2, seed=5)
    assert [len(x) for x in out] == [2, 2, 2]
    assert all(verify(t, r).reward == 1.0 for t, rs in zip(tasks, out) for r in rs)
    assert max(seen) == 6  # the six conversations were generated together
    assert runner.name == inner.spec and len(runner.rows) == 6
