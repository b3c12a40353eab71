"""``tau2:DOMAIN[,DOMAIN...]`` in the one task-spec grammar; commands refuse τ² tasks in one line."""

from __future__ import annotations

import pytest

from ace.cli import main
from ace_env.environments import BFCL, TAU2
from ace_env.errors import TaskLoadError
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set, load_tau2_task_set, parse_task_spec


def test_tau2_specs_parse():
    assert parse_task_spec("tau2:airline").tau2_domains == ("airline",)
    assert parse_task_spec("tau2:retail, telecom,retail").tau2_domains == ("retail", "telecom")
    assert parse_task_spec("tau2").tau2_domains == parse_task_spec("tau2:all").tau2_domains \
        == ("airline", "retail", "telecom")
    spec = parse_task_spec("tau2:airline")
    assert spec.categories == () and spec.path is None
    assert parse_task_spec("bfcl:base").tau2_domains == ()


@pytest.mark.parametrize("bad", ["tau2:", "tau2:hotel", "tau2:airline,", "tau2:base"])
def test_bad_tau2_specs_are_refused(bad):
    with pytest.raises(TaskLoadError, match="τ² domain"):
        parse_task_spec(bad)


def test_tau2_tasks_load_through_the_spec():
    tasks = load_tau2_task_set("tau2:retail,telecom")
    assert len(tasks) == 228 and all(t.startswith(("tau2:retail:", "tau2:telecom:")) for t in tasks)
    with pytest.raises(TaskLoadError, match="names no τ² tasks"):
        load_tau2_task_set("bfcl:base")


def test_commands_refuse_tau2_tasks_in_one_line(tmp_path, capsys):
    with pytest.raises(TaskLoadError, match="not supported by `this command` yet"):
        load_task_set("tau2:airline")
    # (`ace train sft` takes τ² tasks since issue 33: tests/unit/test_tau2_train.py)
    rc = main(["export", "--tasks", "tau2:airline", "--format", "trl", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1
    assert "τ² tasks are not supported by `ace export` yet" in err
    assert not (tmp_path / "m").exists()


def test_sim_takes_airline_and_retail_but_refuses_telecom(tmp_path, capsys):
    assert set(load_task_set("tau2:airline,retail", any_environment=True)) == set(load_tau2_task_set("tau2:airline,retail"))
    with pytest.raises(TaskLoadError, match="not telecom .*user's own actions"):
        load_task_set("tau2:airline,telecom", any_environment=True)
    assert main(["sim", "rollouts", "--tasks", "tau2:retail", "--n", "2", "--out", str(tmp_path / "r.jsonl")]) == 0
    capsys.readouterr()
    rc = main(["sim", "rollouts", "--tasks", "tau2:telecom", "--n", "2", "--out", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1 and "not telecom" in err, err
    # verify and ingest judge telecom rollouts (the user's calls stay the user's): the spec loads
    assert main(["verify", str(tmp_path / "r.jsonl"), "--tasks", "tau2:retail,telecom", "--json"]) == 0


def test_load_task_set_takes_no_environment_flag():
    """``any_environment`` names no environment, and the old ``tau2=`` flag is gone."""
    assert set(load_task_set("tau2:airline", any_environment=True)) == set(load_tau2_task_set("tau2:airline"))
    with pytest.raises(TaskLoadError, match="not supported"):
        load_task_set("tau2:airline")
    with pytest.raises(TypeError):
        load_task_set("tau2:airline", tau2=True)  # type: ignore[call-arg]


def test_every_task_of_a_spec_and_the_environment_a_spec_names():
    assert set(load_every_task("tau2:telecom")) == set(load_tau2_task_set("tau2:telecom"))  # telecom too
    assert list(load_every_task("bfcl:miss_param")) == list(load_task_set("bfcl:miss_param"))
    assert environment_of_spec("tau2:airline") is TAU2 and environment_of_spec("bfcl") is BFCL
    assert environment_of_spec(__file__) is None  # a file's tasks say their environment once loaded
