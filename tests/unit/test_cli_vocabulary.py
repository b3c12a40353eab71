"""The CLI speaks one vocabulary (issue 24), checked over every command, so a new one cannot forget it:

* every command that takes tasks takes ``--tasks/-t SPEC`` (``bfcl:base,miss_func``) through the shared
  option, parsed in ``ace_env``;
* every flag that sets a config field is derived from the dataclass: its default and help are the field's;
* one ``--out`` rule (:func:`ace_env.workspace.check_out`).
"""

from __future__ import annotations

import os
from dataclasses import MISSING, fields
from typing import get_args

import pytest
import typer
from clitree import option_info, walk

from ace.cli import _register, app, main
from ace.cli.options import budget_options, field_help
from ace_env.errors import ConfigError, TaskLoadError
from ace_env.tasksets import parse_task_spec
from ace_env.worker import Budget
from ace_env.workspace import check_out

#: Commands the issue names, plus every other command that takes tasks today.
TAKES_TASKS = {
    "rollout", "eval", "train sft", "train grpo", "train user-sim", "diagnose", "loop", "sim rollouts", "synth",
    "export", "verify", "ingest", "env replay",
}
#: Flags that set a config field; a command that types one by hand fails here.
CONFIG_FLAGS = {"--call-timeout", "--memory-limit", "--temperature", "--max-tokens", "--step-cap", "--n-per-task",
                "--epochs", "--lr", "--max-length", "--kv-cache-gib", "--max-model-len"}
#: Defaults a command sets apart from its dataclass, on purpose (command, field) -> value.
OVERRIDES = {("synth", "temperature"): 1.0, ("synth", "level"): "tool", ("synth", "limit"): 50}


def _commands():
    """(name, command) for every command and group of ``ace`` (a group's own options included)."""
    _register()
    return list(walk(typer.main.get_command(app)))


COMMANDS = _commands()


def _task_params(cmd) -> list:
    """Options that name a task set: a string option called ...tasks (or --seeds, its old name in synth)."""
    out = []
    for p in cmd.params:
        annotation = getattr(getattr(p, "type_descriptor", None), "annotation", None)
        if p.param_type_name == "option" and str in (annotation, *get_args(annotation)) \
                and (p.name.endswith("tasks") or "--seeds" in p.opts):
            out.append(p)
    return out


def test_every_command_that_takes_tasks_takes_dash_t_through_the_shared_option():
    taking = set()
    for name, cmd in COMMANDS:
        params = _task_params(cmd)
        for p in params:  # every task-set option is the shared one (grammar, help, parse-time check)
            assert getattr(option_info(p), "ace_tasks", False), f"`ace {name}` {p.opts}: use options.tasks_option"
        main_param = next((p for p in params if "--tasks" in p.opts), None)
        if main_param is None:
            assert not params, f"`ace {name}` takes tasks as {params[0].opts}, not --tasks/-t"
            continue
        taking.add(name)
        assert "-t" in main_param.opts, name
        ctx = cmd.make_context(name, ["-t", "bfcl:base,miss_func"], resilient_parsing=True)
        assert ctx.params[main_param.name] == "bfcl:base,miss_func", name
        assert parse_task_spec(ctx.params[main_param.name]).categories == ("base", "miss_func")
    assert TAKES_TASKS <= taking, TAKES_TASKS - taking


@pytest.mark.parametrize("argv", [
    ["rollout", "-t", "bfcl:base,nope", "--out", "x.jsonl"],
    ["eval", "-t", "bfcl:", "-e", "e", "-c", "c"],
    ["train", "sft", "-t", "no/such/file.jsonl", "--out", "runs/x"],
    ["sim", "rollouts", "--tasks", "bfcl:base,,miss_func", "--n", "1", "--out", "x.jsonl"],
])
def test_a_bad_spec_is_one_error_before_any_work(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: task set") and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_spec_grammar_lives_in_ace_env(tmp_path):
    assert parse_task_spec("bfcl").categories == ("all",)
    assert parse_task_spec("bfcl:miss_param, base").categories == ("miss_param", "base")
    f = tmp_path / "t.jsonl"
    f.write_text("")
    assert parse_task_spec(str(f)).path == f
    for bad in ("", "bfcl:", "bfcl:base,", "bfcl:nope", "base", str(tmp_path / "missing.jsonl")):
        with pytest.raises(TaskLoadError) as e:
            parse_task_spec(bad)
        assert "\n" not in str(e.value)


def _derived():
    for name, cmd in COMMANDS:
        for p in cmd.params:
            if hasattr(option_info(p), "ace_field"):
                yield name, p, option_info(p)


def test_every_derived_flag_has_its_fields_default_and_help():
    seen = 0
    for name, param, info in _derived():
        cls, field_name, default = info.ace_field
        f = next(f for f in fields(cls) if f.name == field_name)
        if f.default is MISSING and f.default_factory is MISSING:  # a required flag
            assert default is ... and param.required, (name, param.opts)
            seen += 1
            continue
        field_default = f.default if f.default is not MISSING else f.default_factory()
        expected = OVERRIDES.get((name, field_name), field_default)
        assert default == expected, f"`ace {name}` {param.opts}: default {default!r}, {cls.__name__}.{field_name} "
        if info.default is None and field_default is not None:  # from the environment, then the field: the help shows the field's
            assert info.show_default == str(field_default), (name, param.opts)
        else:
            assert param.default == expected, (name, param.opts, param.default)
        assert field_help(cls)[field_name] in param.help, (name, param.opts)
        seen += 1
    assert seen > 60


def test_config_flags_are_never_typed_by_hand():
    for name, cmd in COMMANDS:
        for p in cmd.params:
            if set(p.opts) & CONFIG_FLAGS:
                assert hasattr(option_info(p), "ace_field"), f"`ace {name}` {p.opts} is typed by hand"


def test_budget_flags_fall_back_to_the_environment(monkeypatch):
    seen = {}

    @budget_options()
    def cmd(budget: Budget = None):
        seen["budget"] = budget

    monkeypatch.setenv("ACE_CALL_TIMEOUT", "3")
    cmd(call_seconds=None, memory_mb=None)
    assert seen["budget"] == Budget(call_seconds=3.0)
    cmd(call_seconds=5.0, memory_mb=64)
    assert seen["budget"] == Budget(call_seconds=5.0, memory_mb=64)


def test_bounds_are_the_configs(capsys):
    # one rule, in __post_init__: eval now refuses what rollout refused
    for argv in (["rollout", "-t", "bfcl:base", "--out", "x.jsonl", "--step-cap", "999"],
                 ["eval", "-t", "bfcl:base", "-e", "e", "-c", "c", "-G", "5000"],
                 ["serve", "vllm", "--port", "70000", "--dry-run"]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "must be at most" in err and "give a value from" in err, err


# --------------------------------------------------------------------------- the --out rule


def test_out_refuses_what_exists_unless_force(tmp_path):
    f = tmp_path / "a.jsonl"
    assert check_out(f) == f and not f.exists()  # nothing left behind (the probe is removed)
    f.write_text("x")
    with pytest.raises(ConfigError, match="--force"):
        check_out(f)
    assert check_out(f, force=True) == f
    with pytest.raises(ConfigError, match="is a folder"):
        check_out(tmp_path, force=True)
    with pytest.raises(ConfigError, match="is a file"):
        check_out(f, force=True, directory=True)
    assert list(tmp_path.iterdir()) == [f]


def test_out_folders(tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    assert check_out(d, directory=True) == d  # an empty folder is fine without --force
    (d / "x").write_text("x")
    with pytest.raises(ConfigError, match="--force"):
        check_out(d, directory=True)
    check_out(d, force=True, directory=True)
    with pytest.raises(ConfigError, match="earlier"):  # with a marker, only an earlier output is replaced
        check_out(d, force=True, directory=True, marker=".ace-export")
    monkeypatch.chdir(d)
    for protected in (d, tmp_path):  # never the current folder, or one holding it
        with pytest.raises(ConfigError, match="current folder"):
            check_out(protected, force=True, directory=True)


def test_out_creates_missing_folders_and_refuses_the_rest(tmp_path):
    deep = tmp_path / "runs" / "x" / "r.jsonl"
    assert check_out(deep) == deep
    assert (tmp_path / "runs" / "x").is_dir() and not deep.exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder|Not a directory"):
        check_out(tmp_path / "file" / "sub" / "r.jsonl")
    with pytest.raises(ConfigError, match="climbs out"):
        check_out(tmp_path / "runs" / ".." / ".." / "r.jsonl")
    with pytest.raises(ConfigError, match="character device"):
        check_out("/dev/null", force=True)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # root writes anywhere
            with pytest.raises(ConfigError, match="cannot"):
                check_out(ro / "sub" / "r.jsonl")
    finally:
        ro.chmod(0o700)


def test_every_writer_uses_the_one_rule(tmp_path, capsys):
    """sim, rollout, train sft, export: an existing --out is refused the same way, before any work."""
    f = tmp_path / "r.jsonl"
    f.write_text("x")
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    for argv in (["sim", "rollouts", "-t", "bfcl:base", "--n", "1", "--out", str(f)],
                 ["rollout", "-p", "sim:x.toml", "-t", "bfcl:base", "--out", str(f)],
                 ["train", "sft", "-t", "bfcl:base", "--out", str(d)],
                 ["export", "-t", "bfcl:base", "--format", "trl", "--out", str(d)]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "exists; pick another --out or pass --force" in err, (argv, err)
