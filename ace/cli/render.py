"""The CLI's output: Rich consoles as wide as the terminal, tables of plain-text cells that fit it, and
progress on stderr (a bar on a terminal, a line every few seconds otherwise)."""

from __future__ import annotations

import os
import re
import sys
import textwrap
import time
from typing import Any, Iterable

# --------------------------------------------------------------------------- output


def console(stderr: bool = False):
    """A Rich console as wide as :func:`output_width` says; tables (:func:`table`) fit it."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    tty = _isatty(stream)
    return Console(stderr=stderr, highlight=False, width=output_width(stream), soft_wrap=not tty)


def esc(value: Any) -> str:
    """``value`` as text that Rich prints literally (user data is never markup)."""
    from rich.markup import escape

    return escape("" if value is None else str(value))


def table(title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]], right: Iterable[str] = ()):
    """A table of plain-text cells (never markup) that fits the console it is printed on (:class:`FittedTable`)."""
    return FittedTable(title, columns, rows, right)


# --------------------------------------------------------------------------- tables that fit


#: The width of output that goes to no terminal when COLUMNS does not say one: wide, so a file keeps every column.
UNBOUNDED_WIDTH = 1000
#: Columns whose values are at most this wide (numbers, verdicts, most names) are never wrapped or cut.
SHORT_CELL = 14
#: The narrowest a column of longer text is made before columns are left out.
MIN_TEXT = 10
#: The first column (what a row is about: a name, a key) keeps values this wide whole.
FIRST_WHOLE = 32
#: A cell is cut after this many lines (``--json`` has every value whole).
MAX_CELL_LINES = 4


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def output_width(stream: Any = None) -> int | None:
    """How wide output may be: ``COLUMNS`` when set, else the terminal's (of ``stream``, or of stderr when
    ``stream`` is piped: ``ace query ... | less``), else :data:`UNBOUNDED_WIDTH` (a file keeps every column).
    ``None``: the terminal of ``stream`` itself, which Rich measures."""
    text = os.environ.get("COLUMNS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    stream = sys.stdout if stream is None else stream
    if _isatty(stream):
        return None
    for other in (sys.stderr, sys.stdin):
        if other is not stream and _isatty(other):
            try:
                return os.get_terminal_size(other.fileno()).columns
            except (AttributeError, ValueError, OSError):
                continue
    return UNBOUNDED_WIDTH


_BREAK_RE = re.compile(r"[^_\-/>,\s]+[_\-/>,\s]*|[_\-/>,\s]+")


def _pieces(text: str) -> list[str]:
    """``text``'s pieces, each ending where it may wrap: after `_`, `-`, `/`, `>`, `,` or a space."""
    return _BREAK_RE.findall(text) or [text]


def wrap_header(header: str, width: int) -> str:
    """``header`` (or a name) on as few lines of at most ``width`` cells as its pieces allow
    (``fragility_`` / ``low``; ``get_zipcode_`` / ``based_on_city``); a piece longer than ``width`` is
    left for the table to fold."""
    lines: list[str] = []
    for piece in _pieces(header):
        if lines and len(lines[-1]) + len(piece.rstrip()) <= width:
            lines[-1] += piece
        else:
            lines.append(piece)
    return "\n".join(line.rstrip() for line in lines)


def fit_columns(headers: list[str], cells: list[int], width: int, right: Iterable[str] = ()) -> list[int]:
    """Column widths for a table at most ``width`` cells wide (borders and padding included): one per column
    shown, the first ones (a query's columns come most important first).

    ``cells``: each column's widest value.  A column of short values (at most :data:`SHORT_CELL`, or a
    ``right``-aligned number) keeps them whole, and so does the first column up to :data:`FIRST_WHOLE`; a
    column of longer text may narrow to :data:`MIN_TEXT` and wrap; headers wrap at `_`.  Columns are left out from the right only when even that does not fit.
    Spare room widens the text columns first, then unwraps headers."""
    right = set(right)
    natural = [max(len(h), c, 1) for h, c in zip(headers, cells)]

    def overhead(k: int) -> int:
        return 3 * k + 1  # a space either side of each cell, and a border between and around them

    if sum(natural) + overhead(len(natural)) <= width:
        return natural
    header_min = [max(len(p.rstrip()) for p in _pieces(h)) for h in headers]
    short = [c <= SHORT_CELL or h in right for h, c in zip(headers, cells)]
    mins = [min(n, max(hm, c if s else MIN_TEXT)) for n, hm, c, s in zip(natural, header_min, cells, short)]
    mins[0] = min(natural[0], max(mins[0], FIRST_WHOLE))  # the first column names the row: whole when it can be
    k = len(mins)
    while k > 1 and sum(mins[:k]) + overhead(k) > width:
        k -= 1
    widths = mins[:k]
    spare = width - overhead(k) - sum(widths)
    for target in ([max(m, c) for m, c in zip(mins, cells)], natural):  # content first, then one-line headers
        grew = True
        while spare > 0 and grew:
            grew = False
            for i in range(k):
                if spare > 0 and widths[i] < target[i]:
                    widths[i] += 1
                    spare -= 1
                    grew = True
    return widths


def cut_cell(text: str, width: int, lines: int = MAX_CELL_LINES) -> str:
    """``text`` cut to about ``lines`` lines of ``width`` cells, ending in `…` when cut."""
    limit = max(1, width * lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fit_cell(text: str, width: int) -> str:
    """A cell's text for a column ``width`` wide: a long name wraps at its `_`/`-`/`/` pieces; cut after
    :data:`MAX_CELL_LINES` lines."""
    text = cut_cell(text, width)
    if len(text) > width and "\n" not in text and not any(c.isspace() for c in text):
        return wrap_header(text, width)
    return text


class FittedTable:
    """A Rich renderable: a table of plain-text cells sized when printed, to the console's width.

    Numbers and short values stay whole; longer text wraps (cut after :data:`MAX_CELL_LINES` lines);
    columns that do not fit even so are left out from the right, and a caption under the table names
    them.  ``--json`` output (never a table) has every value whole."""

    def __init__(self, title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]], right: Iterable[str] = ()):
        self.title = title
        self.columns = [str(c) for c in columns]
        self.rows = [["" if v is None else str(v) for v in row] for row in rows]
        self.right = set(right)

    def render(self, width: int):
        """The Rich table for a console ``width`` cells wide, and a caption when columns were left out."""
        from rich.cells import cell_len
        from rich.table import Table
        from rich.text import Text

        cells = [max((max((cell_len(x) for x in r[i].splitlines()), default=0) for r in self.rows if i < len(r)),
                     default=0) for i in range(len(self.columns))]
        widths = fit_columns(self.columns, cells, width, self.right)
        shown = self.columns[: len(widths)]
        left_out = self.columns[len(widths):]
        caption = None
        if left_out:
            caption = Text(textwrap.fill(f"{len(left_out)} more column(s) left out to fit {width} columns: "
                                         f"{', '.join(left_out)} (--json has every value; COLUMNS sets the width)",
                                         max(20, width)))
        t = Table(title=Text(self.title), caption=caption, caption_justify="left")
        for col, w in zip(shown, widths):
            t.add_column(Text(wrap_header(col, w)), justify="right" if col in self.right else "left",
                         overflow="fold", width=w)
        for row in self.rows:
            t.add_row(*(Text(_fit_cell(v, w)) for v, w in zip(row, widths)))
        return t

    def __rich_console__(self, console: Any, options: Any):
        yield self.render(options.max_width)


class Progress:
    """Progress on stderr: a live bar on a terminal, a plain line every few seconds otherwise.

    ``advance(n)`` may be called from several threads.
    """

    def __init__(self, description: str, total: int | None, disable: bool = False, every: float = 5.0):
        self.description, self.total, self.disable, self.every = description, total, disable, every
        self.done = 0
        self._bar = None
        self._task = None
        self._last = 0.0
        self._start = 0.0

    def __enter__(self) -> "Progress":
        self._start = self._last = time.monotonic()
        if self.disable:
            return self
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.description, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.disable:
            return
        if self._bar is not None:
            self._bar.advance(self._task, n)
            return
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._line(now)

    def _line(self, now: float) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        print(f"{self.description}: {self.done}{of} ({now - self._start:.0f} s)", file=sys.stderr, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
