"""The rules reference is generated from the rules and must be current; each rule's docs open
with a short "What it does" a user can apply, the exact details kept in "Precise semantics"."""

import textwrap

import pytest

from graphsafe.docs import RULES_MD, rule_markdown, rules_reference
from graphsafe.rules import ALL_RULES
from graphsafe.rules.base import Rule

# `graphsafe rule CODE`, the LSP hover and docs/rules.md show the docstring's lines as written;
# a line longer than this wraps on screen, so it counts as the lines it wraps to.
RENDER_WIDTH = 100
WHAT_IT_DOES_MAX_LINES = 4


def rendered_lines(text: str, width: int = RENDER_WIDTH) -> int:
    """How many lines `text` takes on a screen `width` columns wide (blank lines included)."""
    return sum(len(textwrap.wrap(line, width)) or 1 for line in text.strip().splitlines())


def layout_problems(rule: type[Rule]) -> list[str]:
    """What is wrong with the shape of a rule's docs: "What it does" first, non-empty and at
    most four lines on screen; "Precise semantics", if any, after it and non-empty."""
    sections = rule.doc_sections()
    headings = list(sections)
    problems = []
    if not rule.docs().startswith("## What it does\n"):
        problems.append("the docs do not start with '## What it does'")
    what = sections.get("What it does", "")
    if not what:
        problems.append("'What it does' is missing or empty")
    elif rendered_lines(what) > WHAT_IT_DOES_MAX_LINES:
        problems.append(f"'What it does' takes {rendered_lines(what)} lines at {RENDER_WIDTH} columns "
                        f"(at most {WHAT_IT_DOES_MAX_LINES}): move the details to '## Precise semantics'")
    if "Precise semantics" in sections:
        if "What it does" in sections and headings.index("Precise semantics") < headings.index("What it does"):
            problems.append("'Precise semantics' comes before 'What it does'")
        if not sections["Precise semantics"]:
            problems.append("'Precise semantics' is empty")
    return problems


def test_rules_reference_is_current():
    assert RULES_MD.read_text(encoding="utf-8") == rules_reference(), (
        "docs/rules.md is stale: run `python -m graphsafe.docs`"
    )


def test_every_rule_is_documented():
    text = RULES_MD.read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"## {rule.code} {rule.name}" in text
        assert rule_markdown(rule).startswith(f"# {rule.code} {rule.name}")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_docs_open_with_a_short_what_it_does_and_precise_semantics_after_it(rule):
    assert layout_problems(rule) == [], rule.code


def test_rendered_lines_counts_wrapped_and_blank_lines():
    assert rendered_lines("one line") == 1
    assert rendered_lines("a\n\nb") == 3
    assert rendered_lines("word " * 40) == 2  # 200 characters wrap to two lines of 100


class _LongWhatItDoes(Rule):
    """## What it does
    Flags one thing, in four lines as written.
    The second line is too long for the screen: it runs on past the hundredth column, and so it wraps, as a terminal shows it.
    That makes four lines on screen so far,
    and this one is the fifth.

    ## Why is this bad?
    Nobody can apply it.
    """


class _SemanticsFirst(Rule):
    """## Precise semantics
    Every detail.

    ## What it does
    Flags one thing.
    """


class _NoWhatItDoes(Rule):
    """## Why is this bad?
    Nobody knows what it flags.
    """


class _ShortWithSemantics(Rule):
    """## What it does
    Flags one thing.

    ## Why is this bad?
    It breaks capture.

    ## Precise semantics
    Every detail.
    """


def test_layout_problems_names_a_long_or_missing_what_it_does_and_semantics_first():
    assert layout_problems(_LongWhatItDoes) == [
        "'What it does' takes 5 lines at 100 columns (at most 4): move the details to '## Precise semantics'"]
    assert layout_problems(_SemanticsFirst) == [
        "the docs do not start with '## What it does'", "'Precise semantics' comes before 'What it does'"]
    assert layout_problems(_NoWhatItDoes) == [
        "the docs do not start with '## What it does'", "'What it does' is missing or empty"]
    assert layout_problems(_ShortWithSemantics) == []
