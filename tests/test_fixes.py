"""Applying fix edits: ordering, overlap rounds, noqa edits."""

from graphsafe.fixes import apply_fixes, noqa_edit
from graphsafe.model import Applicability, Diagnostic, Edit, Fix, Position


def diag(line, col, end_col, content, applicability=Applicability.SAFE, code="GS101"):
    edit = Edit(Position(line, col), Position(line, end_col), content)
    return Diagnostic(code, "m", "f.py", Position(line, col), Position(line, end_col), fix=Fix("t", (edit,), applicability))


def test_edits_apply_from_the_end_and_keep_the_rest():
    text = "a = x.item()  # keep\nb = y.item()\n"
    out = apply_fixes(text, [diag(1, 4, 12, "x"), diag(2, 4, 12, "y")])
    assert out.text == "a = x  # keep\nb = y\n"
    assert len(out.fixed) == 2 and not out.skipped


def test_overlapping_fix_waits_for_next_round():
    text = "a = f(g(x))\n"
    out = apply_fixes(text, [diag(1, 4, 11, "F"), diag(1, 6, 10, "G")])
    assert out.text == "a = F\n" and len(out.skipped) == 1


def test_unsafe_only_when_asked():
    text = "a = b\n"
    d = diag(1, 4, 5, "c", Applicability.UNSAFE)
    assert apply_fixes(text, [d]).text == text
    assert apply_fixes(text, [d], unsafe=True).text == "a = c\n"


def test_noqa_edits():
    text = "x = a.item()   \ny = 2  # noqa: GS102\nz = 3  # noqa\n"
    assert noqa_edit(text, 1, "GS101") == Edit(Position(1, 12), Position(1, 15), "  # noqa: GS101")
    assert noqa_edit(text, 2, "GS101").content == "# noqa: GS102, GS101"
    assert noqa_edit(text, 3, "GS101").content == ""
