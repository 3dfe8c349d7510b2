"""GS001 (unused noqa, ruff's RUF100): graphsafe codes in `# noqa:` comments that suppress nothing."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from graphsafe.model import Example
from graphsafe.rules.base import as_example
from graphsafe.rules.unused_noqa import UnusedNoqa
from tests.helpers import diagnostics, wrap

ON = {"extend_select": ("GS001",)}

STEP = textwrap.dedent("""\
    import torch

    def step(x: torch.Tensor):  # graphsafe: region
        v = x.item()  {noqa}
        return v
""")


def unused(source: str, **settings) -> list:
    return [d for d in diagnostics(source, **{**ON, **settings}) if d.code == "GS001"]


def fixed(source: str, **settings) -> str:
    outcome = fix_text(source, "example.py", Settings(**{**ON, **settings}), [], unsafe=False)
    assert outcome.error is None
    return outcome.fixed


def test_off_by_default_and_on_with_extend_select():
    source = STEP.format(noqa="# noqa: GS101, GS106")
    assert [d.code for d in diagnostics(source)] == []
    found = unused(source)
    assert [d.message for d in found] == ["Unused `noqa` directive (unused: `GS106`)"]
    assert (found[0].start.line, found[0].start.column) == (4, 18)


def test_a_used_code_or_prefix_is_not_reported():
    assert unused(STEP.format(noqa="# noqa: GS101")) == []
    assert unused(STEP.format(noqa="# noqa: GS1")) == []


def test_other_tools_codes_and_a_bare_noqa_are_left_to_them():
    assert unused("x = 1  # noqa: E501, F401\n") == []
    assert unused("x = 1  # noqa\n") == []


def test_codes_of_rules_that_are_off_are_non_enabled_and_unknown_codes_are_unknown():
    found = unused(STEP.format(noqa="# noqa: GS101, GS999"), ignore=("GS101",))
    assert found[0].message == "Unused `noqa` directive (non-enabled: `GS101`; unknown: `GS999`)"


def test_gs001_in_the_same_comment_suppresses_it():
    assert unused("x = 1  # noqa: GS101, GS001\n") == []


@pytest.mark.parametrize("noqa,after", [
    ("# noqa: GS106", "    v = x.item()\n"),  # the whole comment, and the spaces before it
    ("# noqa: GS106, E501", "    v = x.item()  # noqa: E501\n"),  # another tool's code stays
    ("# noqa: GS106 -- was a sync", "    v = x.item()  # -- was a sync\n"),  # the comment's text stays
])
def test_the_fix_removes_only_the_unused_codes(noqa, after):
    source = STEP.format(noqa=noqa).replace("x.item()", "x")
    assert fixed(source).splitlines(keepends=True)[3] == after.replace("x.item()", "x")


def test_the_fix_keeps_used_codes_and_removes_a_comment_line_of_its_own():
    assert "v = x.item()  # noqa: GS101\n" in fixed(STEP.format(noqa="# noqa: GS106, GS101"))
    source = "x = 1\n# noqa: GS101\ny = 2\n"
    assert fixed(source) == "x = 1\ny = 2\n"


def test_fixing_twice_changes_nothing_the_second_time():
    once = fixed(STEP.format(noqa="# noqa: GS106, GS102, GS101"))
    assert "# noqa: GS101\n" in once and fixed(once) == once


def test_a_noqa_on_a_continued_shell_command_that_is_used_is_not_reported():
    script = ("torchrun x.py --transformer-impl local \\\n    --cuda-graph-impl local \\\n"
              "    --bf16  # noqa: GS801, GS802\n")
    found = [d for d in diagnostics(script, "launch.sh", **ON) if d.code == "GS001"]
    assert [d.message for d in found] == ["Unused `noqa` directive (unused: `GS802`)"]


@pytest.mark.parametrize("example", [as_example(e) for e in UnusedNoqa.valid], ids=str)
def test_documented_valid_examples_are_silent(example):
    assert unused(wrap(example)) == []


@pytest.mark.parametrize("example", [as_example(e) for e in UnusedNoqa.invalid], ids=str)
def test_documented_invalid_examples_are_flagged_and_fixed_as_documented(example):
    assert len(unused(wrap(example))) == example.expect
    assert fixed(wrap(example)) == wrap(Example(example.fixed))


def test_a_noqa_inside_a_string_is_no_directive_to_report_or_edit():
    assert unused('s = "# noqa: GS101"\n') == []
    assert unused('s = """\n# noqa: GS101\n"""\n') == []
    assert [d for d in diagnostics('echo "# noqa: GS801"\n', "run.sh", **ON) if d.code == "GS001"] == []
