"""Tables fit the console: numbers whole, names wrapped at their pieces, columns left out from the right and named."""

from __future__ import annotations

import io
import json

from rich.console import Console

from ace.cli import main
from ace.cli.render import (
    FIRST_WHOLE,
    UNBOUNDED_WIDTH,
    console,
    cut_cell,
    fit_columns,
    output_width,
    table,
    wrap_header,
)

WEAK = ["from", "to", "n", "failures", "composition_success", "target_success_elsewhere", "fragility",
        "fragility_low", "verdict", "method", "effect", "effect_low", "tool_effect", "missing", "view"]
ROW = ["get_zipcode_based_on_city", "estimate_distance", "412", "211", "0.488", "0.950", "0.462", "0.401",
       "composition", "estimate", "1.234", "0.999", "0.012", "", "tool"]


def _render(renderable, width: int) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False).print(renderable)
    return out.getvalue().splitlines()


def test_columns_keep_their_natural_width_when_they_fit():
    assert fit_columns(["a", "bb"], [5, 1], 80) == [5, 2]


def test_narrow_widths_keep_numbers_and_the_first_column_whole_and_leave_columns_out_from_the_right():
    cells = [len(v) for v in ROW]
    for width in (60, 80, 100, 140):
        widths = fit_columns(WEAK, cells, width, right=("n", "failures"))
        assert sum(widths) + 3 * len(widths) + 1 <= width
        assert 3 <= len(widths) < len(WEAK)
        assert widths[0] == min(len(ROW[0]), FIRST_WHOLE)
        assert all(w >= c for w, c in zip(widths[2:], cells[2:])), widths  # no number is cut
    assert len(fit_columns(WEAK, cells, 140)) > len(fit_columns(WEAK, cells, 80))


def test_headers_and_names_wrap_at_their_pieces():
    assert wrap_header("target_success_elsewhere", 9) == "target_\nsuccess_\nelsewhere"
    assert wrap_header("fragility_low", 13) == "fragility_low"
    assert wrap_header("get_zipcode_based_on_city", 14) == "get_zipcode_\nbased_on_city"
    assert wrap_header("a>b, c>d", 4) == "a>b,\nc>d"
    assert cut_cell("x" * 100, 10, lines=2) == "x" * 19 + "…"
    assert cut_cell("short", 10) == "short"


def test_a_table_printed_narrow_fits_and_names_what_it_left_out():
    lines = _render(table("weak-compositions (1 rows)", WEAK, [ROW], right=("n", "failures")), 80)
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    assert "get_zipcode_based_on_city" in text and "0.488" in text and "211" in text
    assert "left out to fit 80 columns" in text and "view" in text.split("left out")[1]
    wide = "\n".join(_render(table("t", WEAK, [ROW]), 400))
    assert "left out" not in wide and "tool_effect" in wide and "composition" in wide
    assert all("…" not in line for line in wide.splitlines())


def test_the_width_is_columns_else_the_terminal_else_unbounded(monkeypatch):
    monkeypatch.setenv("COLUMNS", "77")
    assert output_width(io.StringIO()) == 77
    assert console().width == 77
    monkeypatch.setenv("COLUMNS", "wide")  # not a number: ignored
    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.setattr("sys.stdin", io.StringIO())
    assert output_width(io.StringIO()) == UNBOUNDED_WIDTH
    monkeypatch.delenv("COLUMNS")
    assert output_width(io.StringIO()) == UNBOUNDED_WIDTH


def test_query_list_fits_columns_and_json_keeps_every_value(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["query", "--list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "weak-compositions" in out
    assert main(["query", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["purpose"] and r["columns"] for r in rows)
