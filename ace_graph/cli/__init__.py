"""The ``ace`` command line.

Each command group lives in its own module and keeps heavy imports inside the
command functions, so ``ace --help`` stays fast.  ``main(argv)`` returns an exit
code so tests can call it directly.
"""

from __future__ import annotations

import sys

import typer

from ace_graph.errors import AceError

app = typer.Typer(
    name="ace",
    help=(
        "ACE finds where a tool-using agent breaks when it chains tools, and "
        "manufactures verifiable training tasks aimed there.\n\n"
        "Typical flow: `ace db start`, `ace init`, `ace env replay bfcl`, "
        "`ace verify ...`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


_GROUPS = ("db", "envcmd", "graphcmd")


def _register() -> None:
    """Import the command modules; each registers its commands on ``app``."""
    for optional in _GROUPS:
        try:
            __import__(f"ace_graph.cli.{optional}")
        except ModuleNotFoundError as e:  # a group not built yet
            if e.name != f"ace_graph.cli.{optional}":
                raise


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of exiting."""
    _register()
    try:
        result = app(args=argv, standalone_mode=False)
    except AceError as e:
        from rich.console import Console

        Console(stderr=True).print(f"[bold red]error:[/] {e}")
        return 1
    except SystemExit as e:  # typer/click exit paths (--help, usage errors)
        return int(e.code or 0)
    except typer.Exit as e:
        return e.exit_code
    except Exception as e:  # click usage errors carry their own exit code
        import click

        if isinstance(e, click.ClickException):
            e.show()
            return e.exit_code
        if isinstance(e, click.exceptions.Abort):
            return 130
        raise
    return 0


def entry() -> None:  # pragma: no cover - console script wrapper
    sys.exit(main())
