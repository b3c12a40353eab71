"""The command line is derived from configs (issue 33, item 4): every flag's default is written once.

A flag is one of three kinds, told apart by what ``ace/cli/options.py`` leaves on its typer info:

* derived from a config dataclass's field (``options.config_options``: ``ace_field``): its default, help and
  bounds are the field's;
* one of the shared flags of ``options.py`` (``--json``, ``--out``, ``--force``, ``--tasks``, ``-e/-p/-c``,
  ``--scope``, ``--format``, ``--strict``: ``ace_shared``), written there once;
* typed by hand in a command (``typer.Option(...)``, ``options.number_option(...)``).

This test walks every command (tests/clitree.py) and fails on a hand-typed flag that :data:`HAND_TYPED` does not
list, on a listed flag that is no longer hand-typed (the list only shrinks: take it out), and on a default that
differs from its config field's, or from the named constant its flag stands for (:data:`CONSTANTS`), unless
:data:`ON_PURPOSE` or :data:`TO_DECIDE` says why.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Optional

import pytest
import typer
from clitree import option_info, walk
from typer.testing import CliRunner

from ace.cli import _register, app, main
from ace.cli.appcmd import AppConfig
from ace.cli.options import config_options
from ace_graph.stats import MIN_LIFT, MIN_SUPPORT, NEAR_SUCCESS
from train.policies import DEFAULT_POLICY

#: Flags still typed by hand, command -> flags (first spelling).  Converting one (a config field, or a shared
#: option) means taking it out of here; the test fails until it is.  The command files named in the comments
#: belong to other owners this session (/work/OWNERS.md); their flags wait here.
HAND_TYPED: dict[str, set[str]] = {}

#: A flag of this name stands for this constant: its default is the constant, wherever it is declared.
CONSTANTS = {
    "--min-support": ("ace_graph.stats.MIN_SUPPORT", MIN_SUPPORT),
    "--min-lift": ("ace_graph.stats.MIN_LIFT", MIN_LIFT),
    "--near-success": ("ace_graph.stats.NEAR_SUCCESS", NEAR_SUCCESS),
    "--policy": ("train.policies.DEFAULT_POLICY", DEFAULT_POLICY),
}

#: (command, flag) -> the default it has on purpose, apart from its field's or constant's, and why.
ON_PURPOSE = {
    ("synth", "--temperature"): (1.0, "a model's rollouts sample (above 0, so a task can pass sometimes)"),
    ("synth", "--limit"): (50, "the frontier synthesis attacks is wider than the query's (synthcmd.SYNTH_FRONTIER)"),
    ("loop", "--min-support"): (1, "LoopConfig.min_support: the loop's small evaluations need 1"),
    ("eval", "--min-support"): (5, "one checkpoint's evaluation on tens of tasks: at 20 attempts most compositions "
                                   "of a small run would not be listed (decided in issue 33; the tables say the support; "
                                   "rolloutcmd.EVAL_MIN_SUPPORT)"),
    ("diagnose", "--policy"): (None, "no default: the policy of the scope diagnosed"),
    ("synth", "--policy"): (None, "no default: the policy that made the scope's rollouts"),
    ("ingest", "--policy"): (None, "the scope's policy name (-p of -e/-p/-c), not a policy spec"),
}

#: (command, flag) -> its default today, which differs from its constant's; fixing it changes what the command
#: does, so its owner decides (issue 33).  The list only shrinks.
TO_DECIDE: dict[tuple[str, str], object] = {}


def _commands():
    _register()
    return list(walk(typer.main.get_command(app)))


COMMANDS = _commands()


def _options():
    """(command, click option, its typer info) for every option of every command."""
    return [(name, p, option_info(p)) for name, cmd in COMMANDS for p in cmd.params if p.param_type_name == "option"]


OPTIONS = _options()


def _hand_typed() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, p, info in OPTIONS:
        if not hasattr(info, "ace_field") and not hasattr(info, "ace_shared"):
            out.setdefault(name, set()).add(p.opts[0])
    return out


def test_the_walk_sees_every_kind_of_flag():
    kinds = {"field": 0, "shared": 0, "hand": 0}
    for _, _, info in OPTIONS:
        kinds["field" if hasattr(info, "ace_field") else "shared" if hasattr(info, "ace_shared") else "hand"] += 1
    assert len(OPTIONS) > 240 and kinds["field"] > 20 and kinds["shared"] > 20, kinds
    assert kinds["hand"] == sum(len(flags) for flags in HAND_TYPED.values()), kinds  # shrinks with the list
    names = {name for name, _ in COMMANDS}
    assert {"app", "curriculum step", "serve vllm", "model prepare", "synth", "train grpo"} <= names


def test_no_flag_is_typed_by_hand_that_the_list_does_not_name():
    found = _hand_typed()
    new = {k: sorted(v - HAND_TYPED.get(k, set())) for k, v in found.items() if v - HAND_TYPED.get(k, set())}
    assert not new, ("flags typed by hand in a command; derive them from a config dataclass "
                     f"(options.config_options) or use a shared option of options.py: {new}")


def test_the_list_of_hand_typed_flags_only_shrinks():
    found = _hand_typed()
    gone = {k: sorted(v - found.get(k, set())) for k, v in HAND_TYPED.items() if v - found.get(k, set())}
    assert not gone, f"no longer typed by hand (or gone): take them out of HAND_TYPED: {gone}"


def _field_default(cls, name):
    f = next(f for f in fields(cls) if f.name == name)
    if f.default is MISSING and f.default_factory is MISSING:
        return ...  # a required flag
    return f.default if f.default is not MISSING else f.default_factory()


def test_every_derived_flag_defaults_to_its_field():
    seen = 0
    for name, p, info in OPTIONS:
        if not hasattr(info, "ace_field"):
            continue
        cls, field_name, default = info.ace_field
        expected = _field_default(cls, field_name)
        if default != expected:  # a per-command override (config_options(defaults=...)) must be listed
            assert ON_PURPOSE.get((name, p.opts[0]), (expected,))[0] == default, \
                f"`ace {name}` {p.opts[0]}: default {default!r}, {cls.__name__}.{field_name} says {expected!r}"
        shown = p.default if info.default is not None else default  # env-resolved flags show their default
        if default is ...:  # a required flag: click has no default, and asks for it
            assert p.required and p.default is None, (name, p.opts, p.default)
        else:
            assert shown == default, (name, p.opts, p.default, default)
        seen += 1
    assert seen > 100


def _default(p, info):
    return info.ace_field[2] if hasattr(info, "ace_field") and info.default is None else p.default


def test_a_flag_that_stands_for_a_constant_defaults_to_it():
    seen, differ = set(), {}
    for name, p, info in OPTIONS:
        flag = next((f for f in p.opts if f in CONSTANTS), None)
        if flag is None:
            continue
        const, value = CONSTANTS[flag]
        default = _default(p, info)
        seen.add((name, flag))
        if default == value:
            continue
        if (name, flag) in ON_PURPOSE:
            assert ON_PURPOSE[(name, flag)][0] == default, (name, flag, default)
        else:
            differ[(name, flag)] = default
    assert differ == TO_DECIDE, (f"defaults that differ from their constant ({CONSTANTS}); use the constant, or "
                                 f"list why in ON_PURPOSE; a fixed one leaves TO_DECIDE: {differ}")
    assert {("synth", "--min-support"), ("eval", "--min-support"), ("ingest", "--near-success"),
            ("rollout", "--policy"), ("train sft", "--policy")} <= seen, seen


def test_every_listed_exception_is_a_flag_that_differs_today():
    """ON_PURPOSE and TO_DECIDE name flags that exist, with the default they have: a stale entry fails."""
    defaults = {(name, p.opts[0]): _default(p, info) for name, p, info in OPTIONS}
    for key, (value, why) in ON_PURPOSE.items():
        assert key in defaults and defaults[key] == value and why, (key, defaults.get(key))
    for key, value in TO_DECIDE.items():
        assert key in defaults and defaults[key] == value, (key, defaults.get(key))


def test_the_commands_of_this_slice_type_no_flag_by_hand():
    found = _hand_typed()
    for name in ("app", "curriculum status", "curriculum step", "model prepare", "model list", "serve vllm"):
        assert name not in found and name not in HAND_TYPED, (name, found.get(name))


# --------------------------------------------------------------------------- the mechanism


@dataclass(frozen=True)
class _Needs:
    count: int = field(metadata={"help": "How many.", "min": 0, "max": 5})
    name: str = field(default="x", metadata={"help": "A name."})


def test_a_field_without_a_default_is_a_required_flag():
    seen = {}
    cli = typer.Typer(add_completion=False)

    @cli.command()
    @config_options(_Needs)
    def go(config: _Needs = None):
        seen["config"] = config

    runner = CliRunner()
    assert runner.invoke(cli, ["--count", "4"]).exit_code == 0 and seen["config"] == _Needs(count=4)
    missing = runner.invoke(cli, ["--name", "y"])
    assert missing.exit_code == 2 and "--count" in missing.output
    assert "[required]" in runner.invoke(cli, ["--help"], env={"COLUMNS": "200"}).output
    with pytest.raises(Exception, match="--count must be at most 5"):
        runner.invoke(cli, ["--count", "6"], catch_exceptions=False)


@dataclass(frozen=True)
class _Files:
    plan: Path = field(default=Path("/etc/plan.toml"), metadata={"help": "A plan."})


def test_a_path_field_is_a_path_flag_with_its_default():
    seen = {}
    cli = typer.Typer(add_completion=False)

    @cli.command()
    @config_options(_Files)
    def go(config: _Files = None):
        seen["config"] = config

    runner = CliRunner()
    assert runner.invoke(cli, []).exit_code == 0 and seen["config"] == _Files()
    assert runner.invoke(cli, ["--plan", "x.toml"]).exit_code == 0 and seen["config"].plan == Path("x.toml")
    assert "[default: /etc/plan.toml]" in runner.invoke(cli, ["--help"], env={"COLUMNS": "200"}).output


@dataclass(frozen=True)
class _Run:
    dry_run: bool = field(default=False, metadata={"help": "Print only.", "negatable": False})
    fast: bool = field(default=True, metadata={"help": "Go fast."})
    files: Optional[list[Path]] = field(default=None, metadata={"help": "Files; repeatable."})
    size: int = field(default=3, metadata={"help": "How many.", "min": 1, "max": 9})


def _probe():
    seen = {}
    cli = typer.Typer(add_completion=False)

    @cli.command()
    @config_options(_Run, param="run", in_place=True)
    def go(first: str = typer.Option("a", "--first"), run: _Run = None, last: str = typer.Option("z", "--last")):
        seen.update(first=first, run=run, last=last)

    return cli, seen


def test_config_options_builds_switches_lists_and_bounds_from_fields():
    cli, seen = _probe()
    runner = CliRunner()
    result = runner.invoke(cli, ["--dry-run", "--no-fast", "--files", "a", "--files", "b", "--size", "9"])
    assert result.exit_code == 0, result.output
    assert seen == {"first": "a", "last": "z",
                    "run": _Run(dry_run=True, fast=False, files=[Path("a"), Path("b")], size=9)}
    assert runner.invoke(cli, []).exit_code == 0 and seen["run"] == _Run()
    assert runner.invoke(cli, ["--no-dry-run"]).exit_code == 2  # a one-way switch has no --no- form
    with pytest.raises(Exception, match="--size must be at most 9"):
        runner.invoke(cli, ["--size", "10"], catch_exceptions=False)


def test_in_place_flags_stand_where_the_command_declares_the_config():
    cli, _ = _probe()
    order = [p.opts[0] for p in typer.main.get_command(cli).params]
    assert order == ["--first", "--dry-run", "--fast", "--files", "--size", "--last"], order


def test_before_stands_a_field_among_the_commands_own_flags():
    seen = {}
    cli = typer.Typer(add_completion=False)

    @cli.command()
    @config_options(_Run, param="run", in_place=True, before={"size": "last", "fast": "middle"})
    def go(run: _Run = None, first: str = typer.Option("a", "--first"), middle: str = typer.Option("m", "--middle"),
           last: str = typer.Option("z", "--last")):
        seen.update(run=run, first=first, last=last)

    order = [p.opts[0] for p in typer.main.get_command(cli).params]
    assert order == ["--dry-run", "--files", "--first", "--fast", "--middle", "--size", "--last"], order
    assert CliRunner().invoke(cli, ["--size", "2", "--no-fast", "--last", "y"]).exit_code == 0
    assert seen == {"run": _Run(fast=False, size=2), "first": "a", "last": "y"}
    with pytest.raises(TypeError, match="before="):
        config_options(_Run, before={"size": "nowhere"})(lambda config=None: None)


def test_a_field_that_is_not_a_scalar_needs_a_none_default():
    @dataclass(frozen=True)
    class Bad:
        names: list = field(default_factory=list)

    with pytest.raises(TypeError, match="Bad.names"):
        config_options(Bad)(lambda config=None: None)


def test_ace_app_takes_its_flags_from_app_config(monkeypatch, tmp_path, capsys):
    """The dashboard's flags are AppConfig's; what it passes on to Streamlit is what it did with typed flags."""
    calls = []
    monkeypatch.setattr("os.execve", lambda exe, cmd, env: calls.append((cmd, env)))
    metrics = tmp_path / "m.jsonl"
    metrics.write_text("{}\n")
    assert main(["app", "--host", "0.0.0.0", "--ttl", "5", "--metrics", str(metrics)]) == 0
    cmd, env = calls.pop()
    assert cmd[cmd.index("--server.address") + 1] == "0.0.0.0"
    assert cmd[cmd.index("--server.port") + 1] == str(AppConfig().port) == "8501"
    assert env["ACE_APP_TTL"] == "5" and env["ACE_APP_METRICS"] == f'["{metrics.resolve()}"]'
    assert main(["app"]) == 0
    cmd, env = calls.pop()
    assert env["ACE_APP_TTL"] == "30" and env["ACE_APP_METRICS"] == "[]"
    assert main(["app", "--port", "0"]) == 1 and "--port must be at least 1" in capsys.readouterr().err


def test_serve_dry_run_is_a_one_way_switch(capsys):
    assert main(["serve", "vllm", "--dry-run", "--port", "8123"]) == 0
    out = capsys.readouterr().out
    assert "--port 8123" in out and out.startswith("policy: openai:")
    assert main(["serve", "vllm", "--no-dry-run"]) == 2
