"""Hover: the documentation of the rule under the cursor, in a `# noqa: GS101` comment or a diagnostic."""

from __future__ import annotations

import re
from typing import Iterable

from lsprotocol import types

from graphsafe.analyzer.grouping import each_use
from graphsafe.model import Diagnostic, Position

_NOQA = re.compile(r"#\s*noqa\s*:", re.IGNORECASE)
_CODE = re.compile(r"\b[A-Za-z]+\d+\b")


def noqa_code_at(line: str, column: int) -> tuple[str, int, int] | None:
    """(code, start, end) of the code under `column` in the line's `# noqa: ...` list."""
    m = _NOQA.search(line)
    if m is None:
        return None
    after = m.end()
    for token in _CODE.finditer(line, after):
        if line[after : token.start()].strip(" ,\t"):
            break  # the code list ended
        if token.start() <= column <= token.end():
            return token.group().upper(), token.start(), token.end()
        after = token.end()
    return None


def _contains(d: Diagnostic, position: Position) -> bool:
    key = (position.line, position.column)
    return (d.start.line, d.start.column) <= key <= (d.end.line, d.end.column)


def rule_docs(code: str) -> str | None:
    from graphsafe.docs import rule_markdown
    from graphsafe.rules import BY_CODE

    rule = BY_CODE.get(code)
    return rule_markdown(rule) if rule is not None else None


def hover_markdown(lines: list[str], position: Position, diagnostics: Iterable[Diagnostic]) -> tuple[str, tuple[Position, Position]] | None:
    """Markdown for the hover at `position`, and the range it covers; None when nothing is there."""
    line = lines[position.line - 1] if 0 < position.line <= len(lines) else ""
    found = noqa_code_at(line, position.column)
    if found is not None:
        code, start, end = found
        docs = rule_docs(code)
        if docs:
            return docs, (Position(position.line, start), Position(position.line, end))
    under = [d for d in each_use(diagnostics) if _contains(d, position)]  # any use of a grouped hazard
    codes = list(dict.fromkeys(d.code for d in under))
    parts = [docs for docs in (rule_docs(c) for c in codes) if docs]
    if not parts:
        return None
    first = under[0]
    return "\n---\n\n".join(parts), (first.start, first.end)


def to_hover(markdown: str, range_: types.Range) -> types.Hover:
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown), range=range_)
