"""Applying fixes: text edits → new source text. Pure functions shared by `fix` and the LSP.

Edits are ruff-like: (start, end, replacement) in 1-based lines and 0-based columns. Edits of
one round must not overlap; overlapping fixes wait for the next round (ruff applies fixes in
rounds until nothing changes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import libcst as cst

from graphsafe.analyzer.noqa import NOQA_COMMENT
from graphsafe.lines import line_starts, offset_of, split_lines
from graphsafe.model import Applicability, Diagnostic, Edit, Position


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    fix = diagnostic.fix
    if fix is None or not fix.edits:
        return False
    return fix.applicability is Applicability.SAFE or unsafe


@dataclass(frozen=True)
class Applied:
    text: str
    fixed: tuple[Diagnostic, ...]  # the diagnostics whose fixes went in
    skipped: tuple[Diagnostic, ...]  # overlapping: left for the next round


def _spans(text: str, starts: list[int], edits) -> list[tuple[int, int, str]]:
    return sorted((offset_of(e.start, starts, len(text)), offset_of(e.end, starts, len(text)), e.content) for e in edits)


def _replaced(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, content in sorted(spans, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def apply_fixes(text: str, diagnostics: list[Diagnostic], *, unsafe: bool = False) -> Applied:
    """Apply every applicable, non-overlapping fix to `text` (one round)."""
    starts = line_starts(text)
    chosen: list[tuple[int, int, Diagnostic, list[tuple[int, int, str]]]] = []
    skipped: list[Diagnostic] = []
    taken: list[tuple[int, int]] = []
    candidates = sorted((d for d in diagnostics if applicable(d, unsafe)), key=lambda d: d.sort_key)
    for d in candidates:
        spans = _spans(text, starts, d.fix.edits)
        if any(a < end and start < b or (a == b == start) for a, b, _ in spans for start, end in taken):
            skipped.append(d)
            continue
        taken.extend((a, b) for a, b, _ in spans)
        chosen.append((spans[0][0], spans[-1][1], d, spans))
    out = _replaced(text, [span for _, _, _, spans in chosen for span in spans])
    return Applied(out, tuple(d for _, _, d, _ in chosen), tuple(skipped))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """`text` with the edits of one fix (they never overlap) applied."""
    return _replaced(text, _spans(text, line_starts(text), edits))


def parses(text: str) -> bool:
    """Whether libcst (the analysis' parser) accepts `text`: fixed text must, before anyone gets it."""
    try:
        cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return False
    return True


def noqa_edit(text: str, line: int, code: str) -> Edit:
    """An edit that adds `# noqa: CODE` to `line` (or extends an existing noqa list)."""
    lines = split_lines(text)
    current = lines[line - 1] if 0 < line <= len(lines) else ""
    m = NOQA_COMMENT.search(current)
    if m is None:
        stripped = current.rstrip()  # replace trailing whitespace with the comment
        return Edit(Position(line, len(stripped)), Position(line, len(current)), f"  # noqa: {code}")
    if m.group("codes") is None:
        return Edit(Position(line, m.end()), Position(line, m.end()), "")  # bare noqa covers all
    codes = [c.strip() for c in m.group("codes").split(",") if c.strip()]
    if code not in codes:
        codes.append(code)
    return Edit(Position(line, m.start()), Position(line, m.end()), f"# noqa: {', '.join(codes)}")
