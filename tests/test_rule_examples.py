"""Every rule's own VALID/INVALID examples are executable tests, and the registry is sound."""

from __future__ import annotations

import re

import pytest

from graphsafe.rules import ALL_RULES, BY_CODE, CHECK_RULES
from graphsafe.rules.base import as_example
from tests.helpers import diagnostics, wrap

CASES_VALID = [(rule, as_example(e)) for rule in CHECK_RULES for e in rule.valid]
CASES_INVALID = [(rule, as_example(e)) for rule in CHECK_RULES for e in rule.invalid]


@pytest.mark.parametrize("rule,example", CASES_VALID, ids=lambda v: getattr(v, "code", "")[:40])
def test_valid_example_is_silent(rule, example):
    found = [d for d in diagnostics(wrap(example)) if d.code == rule.code]
    assert found == [], f"{rule.code} flagged valid code:\n{wrap(example)}"


@pytest.mark.parametrize("rule,example", CASES_INVALID, ids=lambda v: getattr(v, "code", "")[:40])
def test_invalid_example_is_flagged(rule, example):
    found = [d for d in diagnostics(wrap(example)) if d.code == rule.code]
    assert len(found) == example.expect, f"{rule.code} on:\n{wrap(example)}\ngot {found}"
    for d in found:
        if d.region is not None:  # configuration checks report where the capture is set up
            assert d.chain and d.chain[0].startswith(("step", "C.", "Norm.")), d.chain
        assert d.start.line > 5  # inside the snippet, after the prelude


def test_every_rule_has_examples_and_docs():
    for rule in CHECK_RULES:
        assert rule.valid and rule.invalid, rule.code
        sections = rule.doc_sections()
        for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
            assert heading in sections and sections[heading], f"{rule.code} lacks '{heading}'"


def test_codes_and_names_are_distinct_and_well_formed():
    codes = [r.code for r in ALL_RULES]
    names = [r.name for r in ALL_RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for rule in ALL_RULES:
        assert re.fullmatch(r"GS\d{3}", rule.code), rule.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert BY_CODE[rule.code] is rule


def test_messages_state_the_consequence():
    for rule in CHECK_RULES:
        assert "{consequence}" in rule.message, rule.code


CASES_FIXED = [(rule, as_example(e)) for rule in CHECK_RULES for e in rule.invalid if as_example(e).fixed is not None]


@pytest.mark.parametrize("rule,example", CASES_FIXED, ids=lambda v: getattr(v, "code", "")[:40])
def test_fix_gives_the_documented_code(rule, example):
    from graphsafe.config import Settings
    from graphsafe.fixer import fix_text
    from graphsafe.model import Example

    source = wrap(example)
    outcome = fix_text(source, "example.py", Settings(), [], unsafe=True)
    assert outcome.error is None, outcome.error
    expected = wrap(Example(example.fixed, region=example.region, module=example.module))
    assert outcome.fixed == expected
    # idempotent: nothing left to fix for this rule
    again = fix_text(outcome.fixed, "example.py", Settings(), [], unsafe=True)
    assert again.fixed == outcome.fixed
    assert not [d for d in again.remaining if d.code == rule.code]
