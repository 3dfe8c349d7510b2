"""The source snippet of the `full` output format: context, gutter, carets."""

from __future__ import annotations

from graphsafe.model import Position
from graphsafe.report.snippet import render_snippet


def test_carets_line_up_under_a_tab_indented_range():
    lines = ["def f(x):", "\tv = x.item()", "\treturn v"]
    out = render_snippet(lines, Position(2, 5), Position(2, 13), "GS101")
    assert out[2:4] == ["2 |     v = x.item()", "  |         ^^^^^^^^ GS101"]


def test_a_range_over_several_lines_underlines_each_and_labels_the_last():
    lines = ["y = f(", "    x.item(", "    )", "z = 1"]
    out = render_snippet(lines, Position(2, 4), Position(3, 5), "GS101")
    assert out == ["  |", "1 | y = f(", "2 |     x.item(", "  |     ^^^^^^^", "3 |     )",
                   "  |     ^ GS101", "4 | z = 1", "  |"]


def test_a_long_range_shows_its_ends_around_an_ellipsis():
    lines = [f"line{n}" for n in range(1, 21)]
    out = render_snippet(lines, Position(2, 0), Position(15, 3), "GS201")
    assert "..." in out and " 9 | line9" not in out and " 2 | line2" in out and "15 | line15" in out


def test_an_empty_range_gets_one_caret_and_a_range_outside_the_file_no_snippet():
    assert render_snippet(["x = (", ""], Position(1, 5), Position(1, 5), "GS000")[2] == "  |      ^ GS000"
    assert render_snippet(["x = 1"], Position(3, 0), Position(3, 1), "GS000") == []
