"""Every command in README.md and docs/cli.md names a real command and real flags (no services needed).

tests/integration/test_cli_docs.py runs them; this catches a renamed flag without a database.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer
from docblocks import bash_commands

from ace.cli import _register, app

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "docs" / "cli.md")


def test_documented_commands_exist_with_their_flags():
    _register()
    root = typer.main.get_command(app)
    lines = [line for doc in DOCS for line in bash_commands(doc)]
    assert len(lines) >= 40
    for line in lines:
        cmd, rest = root, shlex.split(line)[1:]
        while rest and hasattr(cmd, "commands") and rest[0] in cmd.commands:
            cmd = cmd.commands[rest.pop(0)]
        if cmd is root:
            assert rest == ["--version"], line
            continue
        assert not hasattr(cmd, "commands") or not cmd.commands or cmd.invoke_without_command, f"{line}: no subcommand"
        flags = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        unknown = [t for t in rest if re.match(r"^--?[a-zA-Z]", t) and t.split("=")[0] not in flags]
        assert not unknown, f"{line}: {unknown} are not flags of `{cmd.name}`"
