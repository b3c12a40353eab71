"""Every command in the README's Commands block names a real command and real flags."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from ace.cli import _register, app

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Commands"):]
    block = section[section.index("```bash") + 7: section.index("```", section.index("```bash") + 7)]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("ace")]


def _expand(line: str) -> list[list[str]]:
    """`ace db a | b [--x]` -> [[db, a], [db, b, --x]]; brackets dropped, `x|y` values kept as one token."""
    tokens = line.replace("[", " ").replace("]", " ").split()[1:]
    if "|" not in tokens:
        return [tokens]
    groups, current = [], []
    for t in tokens:
        if t == "|":
            groups.append(current)
            current = [tokens[0]]
        else:
            current.append(t)
    return groups + [current]


def test_readme_commands_exist_with_their_flags():
    _register()
    root = typer.main.get_command(app)
    lines = _commands()
    assert len(lines) >= 15
    for line in lines:
        for tokens in _expand(line):
            cmd, rest = root, list(tokens)
            while rest and hasattr(cmd, "commands") and rest[0] in cmd.commands:
                cmd = cmd.commands[rest.pop(0)]
            flags = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
            if cmd is root:
                assert rest and rest[0] == "--version", line
            used = [t for t in rest if re.match(r"^--?[a-z]", t)]
            unknown = [t for t in used if t not in flags]
            assert not unknown, f"{line}: {unknown} are not flags of `{cmd.name}`"
