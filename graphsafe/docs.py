"""Rule documentation, generated from the rules themselves (CLI `rule`, docs/rules.md, LSP hover).

`python -m graphsafe.docs` rewrites docs/rules.md; a test checks it is current.
"""

from __future__ import annotations

import sys
from pathlib import Path

from graphsafe.rules import ALL_RULES
from graphsafe.rules.base import Rule, as_example

RULES_MD = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def rule_markdown(rule: type[Rule], heading: str = "#") -> str:
    lines = [
        f"{heading} {rule.code} {rule.name}",
        "",
        f"*{rule.summary}* — principle: **{rule.principle.value}**, consequence: **{rule.consequence.value}**, "
        f"severity: **{rule.severity().value}**" + (", fix available" if rule.fixable else ""),
        "",
    ]
    for line in rule.docs().splitlines():
        lines.append(heading + line if line.startswith("## ") else line)
    return "\n".join(lines).rstrip() + "\n"


def rule_json(rule: type[Rule]) -> dict:
    """A rule as ruff's `rule --output-format json` gives one."""
    return {
        "name": rule.name,
        "code": rule.code,
        "linter": "graphsafe",
        "summary": rule.summary,
        "message_formats": [rule.message],
        "fix": "Fix is sometimes available." if rule.fixable else "Fix is not available.",
        "explanation": rule.docs() + "\n",
        "preview": False,
        "principle": rule.principle.value,
        "severity": rule.severity().value,
        "enabled_by_default": rule.enabled_by_default,
    }


def rules_reference() -> str:
    parts = [
        "# graphsafe rules",
        "",
        "Generated from the rules' own documentation by `python -m graphsafe.docs`; do not edit by hand.",
        "",
        "| code | name | principle | consequence | summary |",
        "|---|---|---|---|---|",
    ]
    for rule in ALL_RULES:
        anchor = f"{rule.code.lower()}-{rule.name}"
        summary = rule.summary.replace("|", "\\|")
        parts.append(
            f"| [{rule.code}](#{anchor}) | {rule.name} | {rule.principle.value} | {rule.consequence.value} | {summary} |"
        )
    parts.append("")
    for rule in ALL_RULES:
        parts.append(rule_markdown(rule, heading="##"))
        examples = [as_example(e) for e in rule.invalid]
        if examples and all(e.module for e in examples):  # whole files (configuration checks)
            parts.append("Flagged:\n")
            parts.append("```python\n" + "\n\n".join(e.code for e in examples) + "\n```\n")
        elif examples:
            parts.append("Flagged (inside a capture region):\n")
            parts.append("```python\n" + "\n".join(e.code for e in examples) + "\n```\n")
    return "\n".join(parts)


def main() -> int:
    RULES_MD.parent.mkdir(exist_ok=True)
    RULES_MD.write_text(rules_reference(), encoding="utf-8")
    sys.stdout.write(f"wrote {RULES_MD}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
