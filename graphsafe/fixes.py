"""Applying fixes: text edits → new source text. Pure functions shared by `fix` and the LSP.

Edits are ruff-like: (start, end, replacement) in 1-based lines and 0-based columns. Edits of
one round must not overlap; overlapping fixes wait for the next round (ruff applies fixes in
rounds until nothing changes).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphsafe.analyzer.noqa import NOQA_COMMENT
from graphsafe.model import Applicability, Diagnostic, Edit, Position


def _offsets(text: str) -> list[int]:
    """Character offset of the start of each line (index 0 is line 1)."""
    starts = [0]
    position = text.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    return starts


def offset_of(position: Position, line_starts: list[int], text_length: int) -> int:
    if position.line - 1 >= len(line_starts):
        return text_length
    return min(line_starts[position.line - 1] + position.column, text_length)


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


def apply_fixes(text: str, diagnostics: list[Diagnostic], *, unsafe: bool = False) -> Applied:
    """Apply every applicable, non-overlapping fix to `text` (one round)."""
    line_starts = _offsets(text)
    chosen: list[tuple[int, int, Diagnostic, list[tuple[int, int, str]]]] = []
    skipped: list[Diagnostic] = []
    taken: list[tuple[int, int]] = []
    candidates = sorted((d for d in diagnostics if applicable(d, unsafe)), key=lambda d: d.sort_key)
    for d in candidates:
        spans = sorted(
            (offset_of(e.start, line_starts, len(text)), offset_of(e.end, line_starts, len(text)), e.content)
            for e in d.fix.edits
        )
        if any(a < end and start < b or (a == b == start) for a, b, _ in spans for start, end in taken):
            skipped.append(d)
            continue
        taken.extend((a, b) for a, b, _ in spans)
        chosen.append((spans[0][0], spans[-1][1], d, spans))
    edits = sorted((span for _, _, _, spans in chosen for span in spans), reverse=True)
    out = text
    for start, end, content in edits:
        out = out[:start] + content + out[end:]
    return Applied(out, tuple(d for _, _, d, _ in chosen), tuple(skipped))


def noqa_edit(text: str, line: int, code: str) -> Edit:
    """An edit that adds `# noqa: CODE` to `line` (or extends an existing noqa list)."""
    lines = text.splitlines()
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
