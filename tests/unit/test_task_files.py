"""Issue 13, defect 5: a malformed task file gives one clean error naming file, line and field, everywhere."""

from __future__ import annotations

import json

import pytest

from ace.cli import main
from ace_env import bfcl
from ace_env.errors import TaskLoadError
from ace_env.tasksets import load_task_set


def _good() -> dict:
    task = next(t for t in bfcl.load_tasks("base") if t.id == "multi_turn_base_15")
    d = task.to_dict()
    d["id"], d["source"] = "mine_0", "user"
    return d


def _edit(**changes):
    def make():
        d = _good()
        for key, value in changes.items():
            if "." in key:  # turns.0.user -> d["turns"][0]["user"]
                head, i, field = key.split(".")
                d[head][int(i)][field] = value
            else:
                d[key] = value
        return d
    return make


CASES = {
    "unknown_tool": (_edit(tools=["touch", "no_such_function"]), "'tools' names unknown function(s) 'no_such_function'"),
    "config_not_object": (_edit(initial_config=[1, 2]), "'initial_config' must be an object"),
    "class_config_not_object": (_edit(initial_config={"GorillaFileSystem": "root"}),
                                "'initial_config.GorillaFileSystem' must be an object"),
    "user_not_list": (_edit(**{"turns.0.user": "hello"}), "'turns[0].user' must be a list of messages"),
    "ground_truth_string": (_edit(**{"turns.0.ground_truth": "touch(file_name='a')"}),
                            "'turns[0].ground_truth' must be a list of strings"),
    "unknown_class": (_edit(involved_classes=["NoSuchAPI"]), "'involved_classes' names unknown class"),
    "missing_turns": (lambda: {k: v for k, v in _good().items() if k != "turns"}, "'turns' is missing"),
    "not_an_object": (lambda: [1, 2, 3], "'task' must be a JSON object"),
    "bad_state": (_edit(initial_config={"GorillaFileSystem": {"root": {"x": {"type": "file"}}}}),
                  "'initial_config' cannot be loaded by BFCL"),
}


def _file(tmp_path, make):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(_good()) + "\n" + json.dumps(make()) + "\n")
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_loader_names_file_line_and_field(tmp_path, case):
    make, expected = CASES[case]
    path = _file(tmp_path, make)
    with pytest.raises(TaskLoadError) as e:
        load_task_set(str(path))
    assert str(e.value).startswith(f"{path}:2: ")
    assert expected in str(e.value)


def test_a_good_file_loads(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(_good()) + "\n")
    assert list(load_task_set(str(path))) == ["mine_0"]


@pytest.mark.parametrize("case", ["unknown_tool", "config_not_object", "user_not_list", "ground_truth_string"])
def test_every_entry_point_prints_one_line(tmp_path, capsys, case):
    path = _file(tmp_path, CASES[case][0])
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"rollout_id": "a", "task_id": "mine_0", "turns": []}) + "\n")
    commands = [
        ["verify", "--tasks", str(path), "--rollouts", str(rollouts)],
        ["synth", "check", str(path)],
        ["sim", "rollouts", "--tasks", str(path), "--n", "2", "--out", str(tmp_path / "sim.jsonl")],
        ["export", "--tasks", str(path), "--format", "bfcl", "--out", str(tmp_path / "export")],
    ]
    for argv in commands:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, (argv, err)
        assert f"{path}:2" in err.replace("\n", "")
    assert not (tmp_path / "export").exists() and not (tmp_path / "sim.jsonl").exists()
