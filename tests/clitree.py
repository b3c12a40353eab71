"""The `ace` command tree as tests walk it: every command with its path, and the typer info of each option."""

from __future__ import annotations

from typing import Any, Iterator


def walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(``"sub command"``, click command) for every command under ``cmd``, sorted, the root left out."""
    if path:
        yield " ".join(path), cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, path + (name,))


def option_info(param: Any) -> Any:
    """The typer OptionInfo a parameter was declared with (None for arguments and plain options)."""
    return getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
