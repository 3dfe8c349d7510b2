"""`--statistics`: how many diagnostics of each code, as ruff's table (or its JSON)."""

from __future__ import annotations

import json
from collections import Counter

from graphsafe.model import Diagnostic
from graphsafe.report.formats import fixable
from graphsafe.report.style import PLAIN, Style
from graphsafe.rules import BY_CODE


def statistics(diagnostics: list[Diagnostic], unsafe_fixes: bool = False) -> list[dict]:
    """Per code, most frequent first: code, name, count, and whether any of them is fixable."""
    counts = Counter(d.code for d in diagnostics)
    fixable_codes = {d.code for d in diagnostics if fixable(d, unsafe_fixes)}
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = BY_CODE.get(code)
        rows.append({"code": code, "name": rule.name if rule else "", "count": count, "fixable": code in fixable_codes})
    return rows


def format_statistics(diagnostics: list[Diagnostic], output_format: str, *, unsafe_fixes: bool = False,
                      fix_command: str = "`graphsafe check --fix`", style: Style = PLAIN) -> str:
    rows = statistics(diagnostics, unsafe_fixes)
    if output_format in ("json", "json-lines"):
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    count_width = max(len(str(r["count"])) for r in rows)
    code_width = max(len(r["code"]) for r in rows)
    any_fixable = any(r["fixable"] for r in rows)
    lines = []
    for r in rows:
        mark = ("[*] " if r["fixable"] else "[ ] ") if any_fixable else ""
        lines.append(f"{style.bold(str(r['count']).rjust(count_width))}\t{style.code(r['code'].ljust(code_width))}\t"
                     f"{mark}{r['name']}")
    if any_fixable:
        lines.append(f"[*] fixable with {fix_command}")
    return "\n".join(lines) + "\n"
