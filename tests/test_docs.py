"""The rules reference is generated from the rules and must be current."""

from graphsafe.docs import RULES_MD, rule_markdown, rules_reference
from graphsafe.rules import ALL_RULES


def test_rules_reference_is_current():
    assert RULES_MD.read_text(encoding="utf-8") == rules_reference(), (
        "docs/rules.md is stale: run `python -m graphsafe.docs`"
    )


def test_every_rule_is_documented():
    text = RULES_MD.read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"## {rule.code} {rule.name}" in text
        assert rule_markdown(rule).startswith(f"# {rule.code} {rule.name}")
