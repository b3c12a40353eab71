"""The ``ace`` command line.

Each command group lives in its own module and keeps heavy imports inside the
command functions, so ``ace --help`` stays fast.  ``main(argv)`` returns an exit
code so tests can call it directly.
"""

from __future__ import annotations

import errno
import sys

import typer

from ace import __version__
from ace.errors import Stopped
from ace_env.redact import redact
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


_GROUPS = (
    "db", "envcmd", "democmd", "graphcmd", "cyphercmd", "simcmd", "synthcmd", "curriculumcmd", "exportcmd", "scopecmd", "rolloutcmd",
    "modelcmd", "traincmd", "grpocmd", "servecmd", "appcmd", "diagnosecmd", "loopcmd",
)


def _version(value: bool) -> None:
    if value:
        print(f"ace {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print ACE's version and exit."),
) -> None:
    """ACE finds where a tool-using agent breaks when it chains tools, and manufactures verifiable training tasks aimed there."""


def _register() -> None:
    """Import the command modules; each registers its commands on ``app``."""
    for optional in _GROUPS:
        try:
            __import__(f"ace.cli.{optional}")
        except ModuleNotFoundError as e:  # a group not built yet
            if e.name != f"ace.cli.{optional}":
                raise


def progress_bar(disable: bool = False):
    """The progress bar every long command shows on stderr (hidden with --json)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=disable,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (tests call ``main([...])``).

    Commands signal failure with ``typer.Exit(code)``; ACE's own errors are
    printed as one clean line (what, why, how to fix) with exit code 1.
    """
    _register()
    try:
        rv = app(args=argv, prog_name="ace", standalone_mode=False)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except typer.Abort:
        _print_error("aborted")
        return 1
    except typer.TyperException as e:  # a usage error (click's, vendored by typer): one line, and where to look
        if not hasattr(e, "format_message"):
            raise
        ctx = getattr(e, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        if e.format_message():  # empty when the help was shown for a bare group
            _print_error(f"{e.format_message()}{hint}")
        return getattr(e, "exit_code", 2)
    except (AceError, Stopped) as e:
        _print_error(str(e))
        return 1
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        where = f" writing {e.filename}" if e.filename else ""
        if e.errno == errno.EFBIG:  # past the largest file this system or its limits (ulimit -f) allow
            _print_error(f"a file grew past the largest size allowed here{where} (`ulimit -f`, or the file "
                         "system's own limit): give less input, or raise the limit")
        else:
            _print_error(f"no space left on the device{where}: free some disk space and run the command again")
        return 1
    except Exception as e:
        # The database's own errors (a wrong parameter type, a server that went
        # away mid-command) are reported in one line too; anything else is a bug.
        if type(e).__module__.split(".")[0] != "neo4j":
            raise
        _print_error(f"Neo4j: {getattr(e, 'message', None) or e} ({type(e).__name__})")
        return 1
    return rv if isinstance(rv, int) else 0


def _print_error(message: str) -> None:
    """One error line on stderr; the message is data (task ids, paths), never Rich markup, and never carries a
    credential (the environment's secrets and URL passwords are masked: :func:`ace_env.redact.redact`)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(redact(message))}", highlight=False)


def entry() -> None:  # pragma: no cover - console script wrapper
    sys.exit(main())
