"""Every number flag of every ``ace`` command has a documented maximum, enforced before any work (issue 35,
defect 4: ``ace synth --rounds 1000000000`` grew to 4.7 GB, ``ace diagnose --probe-budget 10**12`` ran on).

The bound lives in one place: a config field's ``metadata`` (flags derived by ``options.config_options``) or
``options.number_option`` (flags typed in a command).  Both show it in ``--help`` and check it at parse time
(``options.bounded``); a command that types ``typer.Option(..., min=, max=)`` or no bound at all fails here.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import get_args

import pytest
import typer
from clitree import option_info, walk

from ace.cli import _register, app, main
from ace_env.errors import ConfigError
from ace_env.fields import bounds_text


def _kind(param) -> type | None:
    """int or float for a number option (``Optional[int]`` too), else None."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    for kind in (int, float):
        if annotation is kind or kind in get_args(annotation):
            return kind
    return None


def _bounds(param) -> dict:
    """The bounds a number option declares: ``number_option``'s, or its config field's metadata."""
    info = option_info(param)
    if hasattr(info, "ace_bounds"):
        return info.ace_bounds
    if hasattr(info, "ace_field"):
        cls, name, _ = info.ace_field
        return dict(next(f for f in fields(cls) if f.name == name).metadata)
    return {}


def _number_options():
    _register()
    out = []
    for name, cmd in walk(typer.main.get_command(app)):
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "is_flag", False) and _kind(p) is not None:
                out.append((name, cmd, p))
    return out


NUMBER_OPTIONS = _number_options()


def test_the_walk_sees_the_number_flags():
    seen = {(name, p.opts[0]) for name, _, p in NUMBER_OPTIONS}
    assert len(seen) > 100
    assert {("synth", "--rounds"), ("diagnose", "--probe-budget"), ("eval", "--max-turns"),
            ("db start", "--timeout"), ("train sft", "--epochs"), ("loop", "--rounds")} <= seen


@pytest.mark.parametrize("name,cmd,param", NUMBER_OPTIONS, ids=[f"{n} {p.opts[0]}" for n, _, p in NUMBER_OPTIONS])
def test_every_number_flag_has_a_maximum_enforced_before_any_work(name, cmd, param):
    bounds = _bounds(param)
    hi, lo = bounds.get("max"), bounds.get("min")
    assert hi is not None, f"`ace {name}` {param.opts}: no maximum; use options.number_option or a field's max"
    assert lo is not None, f"`ace {name}` {param.opts}: no minimum"
    assert param.max is None and param.min is None, f"`ace {name}` {param.opts}: bounds typed by hand"
    assert bounds_text(bounds) in param.help, (name, param.opts, param.help)  # documented in --help
    ctx = cmd.make_context(name, [], resilient_parsing=True)
    kind = _kind(param)
    assert param.process_value(ctx, str(hi)) == hi
    assert param.process_value(ctx, str(lo)) == lo
    over = hi + 1 if kind is int else hi * 2 + 1
    for bad in (over, lo - 1, *(("inf", "nan", "-inf") if kind is float else ())):
        with pytest.raises(ConfigError) as e:
            param.process_value(ctx, str(bad))
        message = str(e.value)
        assert "\n" not in message and param.opts[0] in message and "give a value" in message, message


@pytest.mark.parametrize("argv", [
    ["synth", "-e", "x", "--rounds", "1000000000", "--out", "t.jsonl"],
    ["diagnose", "-s", "a/b/c", "--probe-budget", "1000000000000"],
    ["diagnose", "-s", "a/b/c", "--rounds", "1000000000"],
    ["loop", "-e", "x", "-p", "hf:m", "--rounds", "1000000000"],
    ["train", "sft", "-t", "bfcl:base", "--out", "o", "--epochs", "1e308"],
    ["verify", "-t", "bfcl:base", "--call-timeout", "nan", "r.jsonl"],
    ["db", "start", "--timeout", "inf"],
    ["eval", "-p", "sim:", "-t", "bfcl:base", "-e", "e", "-c", "c", "--max-turns", "1000000000000"],
])
def test_the_reproductions_are_one_line_before_any_work(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")  # nothing may reach the database
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "must be at most" in err or "must be a finite number" in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_table_of_maxima_in_docs_cli_md_is_what_the_commands_enforce():
    """Each row of docs/cli.md's table (command, flag, range) is the command's own bound; the issue's flags are
    in it."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^  \| (`ace [a-z -]+`|every command with `--seed`) \| `(-[-a-zA-Z]+)` \| ([^|]+) \|$", doc,
                      re.MULTILINE)
    assert len(rows) >= 30, rows
    by_flag: dict[tuple[str, str], list[str]] = {}
    for name, _, p in NUMBER_OPTIONS:
        for flag in p.opts:
            by_flag.setdefault((name, flag), []).append(bounds_text(_bounds(p)))
    for command, flag, text in rows:
        if command.startswith("every"):
            found = [t for (name, f), ts in by_flag.items() if f == flag for t in ts]
            assert found and set(found) == {text.strip()}, (flag, set(found))
            continue
        name = command.strip("`").removeprefix("ace ")
        assert by_flag.get((name, flag)) == [text.strip()], (command, flag, text, by_flag.get((name, flag)))
    named = {(c.strip("`"), f) for c, f, _ in rows}
    assert {("ace synth", "--rounds"), ("ace diagnose", "--probe-budget")} <= named
