"""The simulated agent on τ² tasks: gold agent actions with planted slips, verified step by step by ACE's τ²
verifier in the watched worker, recorded as the skill graph stores them."""

from __future__ import annotations

import json
import random

import pytest

from ace_env.errors import ConfigError
from ace_env.formats import parse_rollout
from ace_env.sim import parse_weakness
from ace_env.tau2.rollouts import Tau2Verifier
from ace_env.tau2.sim import agent_tools, check_sim_domains, load_tau2_weakness, simulate, simulate_one
from ace_env.tau2.tasks import load_tasks
from ace_graph.outcomes import FAIL, record
from ace_graph.tagger import tag_task

FROM, TO = "get_reservation_details", "update_reservation_flights"


def _spec(tasks, **composition):
    data = {"defaults": {"error": 0.0}}
    if composition:
        data["composition"] = [{"from": FROM, "to": TO, "error": 1.0, **composition}]
    return parse_weakness(data, known=agent_tools(tasks))


def _verified(tasks, rows):
    by_id = {t.id: t for t in tasks}
    with Tau2Verifier(by_id) as v:
        return [(by_id[r.task_id], r, verdict)
                for r, verdict in v.verify_stream(parse_rollout(row, i) for i, row in enumerate(rows, 1))]


def _first_pair(task) -> int | None:
    names = [a.name for a in task.agent_actions]
    return next((j for j in range(1, len(names)) if (names[j - 1], names[j]) == (FROM, TO)), None)


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_without_weaknesses_every_rollout_passes(domain):
    tasks = list(load_tasks(domain))
    spec = _spec(tasks)
    rows = [{"rollout_id": t.id, "task_id": t.id, "turns": [simulate_one(t, spec, random.Random(0))[0]]}
            for t in tasks]  # every task once
    results = _verified(tasks, rows)
    assert len(results) == len(tasks)
    failed = [(r.task_id, v.attribution, v.detail) for _, r, v in results if v.reward != 1.0]
    assert not failed
    assert all(v.matched_steps == v.oracle_steps for t, _, v in results if t.n_steps)


@pytest.mark.parametrize("kind", ["argument", "skip"])
def test_a_planted_composition_fails_at_exactly_its_step(kind):
    tasks = list(load_tasks("airline"))
    with_pair = [t for t in tasks if _first_pair(t) is not None]
    assert len(with_pair) == 2  # airline 7 and one more
    rows = list(simulate(tasks, 1000, _spec(tasks, kind=kind), seed=3))
    results = _verified(tasks, rows)
    hit = 0
    for (task, r, verdict), row in zip(results, rows):
        j = _first_pair(task)
        if j is None:
            assert verdict.reward == 1.0 and not row["meta"]["slips"], (r.task_id, verdict.detail)
            continue
        hit += 1
        slip = row["meta"]["slips"][0]
        assert (slip["index"], slip["tool"], slip["previous"], slip["cause"]) == (j, TO, FROM, "composition")
        assert slip["kind"] == kind
        assert verdict.reward == 0.0 and (verdict.failing_turn, verdict.failing_oracle_step) == (0, j), verdict
        tags = tag_task(task)
        rec = record(task, tags, verdict, "e/p/c", r.rollout_id, r.turns)
        assert (rec.fail_tool, rec.fail_prev_tool) == (TO, FROM)
        assert rec.steps[-1].outcome == FAIL and rec.steps[-1].flat == j
        assert tags[rec.steps[-1].prev].tool == FROM  # the predecessor is the previous gold call
        assert all(s.outcome != FAIL for s in rec.steps[:-1])
    assert hit >= 20


def test_same_seed_same_rollouts_and_the_schema_of_bfcl_sim():
    tasks = list(load_tasks("retail"))
    spec = parse_weakness({"defaults": {"error": 0.3}}, known=agent_tools(tasks))
    a = [json.dumps(r) for r in simulate(tasks, 40, spec, seed=7)]
    assert a == [json.dumps(r) for r in simulate(tasks, 40, spec, seed=7)]
    row = json.loads(a[0])
    assert set(row) == {"rollout_id", "task_id", "turns", "meta"} and row["task_id"].startswith("tau2:retail:")
    assert row["rollout_id"] == "sim-7-0" and len(row["turns"]) == 1
    assert any(r for r in a if json.loads(r)["meta"]["slips"])


def test_weakness_files_name_the_domains_tools(tmp_path):
    tasks = list(load_tasks("airline"))
    path = tmp_path / "w.toml"
    path.write_text('[[composition]]\nfrom = "cd"\nto = "update_reservation_flights"\nerror = 0.5\n')
    with pytest.raises(ConfigError, match="'cd' is not a τ² airline agent tool"):
        load_tau2_weakness(path, tasks)
    path.write_text(f'[[tool]]\nname = "{TO}"\nerror = 0.5\n')
    assert load_tau2_weakness(path, tasks).tools[TO].error == 0.5
    with pytest.raises(ConfigError, match="is not a BFCL multi-turn function"):
        parse_weakness({"tool": [{"name": TO, "error": 0.5}]})  # BFCL's sim is unchanged
    with pytest.raises(ConfigError, match="telecom"):
        check_sim_domains(load_tasks("telecom")[:1])
