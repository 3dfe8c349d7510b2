"""graphsafe's plain data ↔ LSP objects. Pure functions, no server state.

graphsafe positions are 1-based lines and 0-based columns counted in characters (code
points); LSP positions are 0-based lines and columns counted in the negotiated encoding's
code units (UTF-16 unless the client offers UTF-8 or UTF-32). Lines are graphsafe.lines': they
end at `\\r\\n`, `\\r` or `\\n` only (LSP's rule, and Python's), as for the analyzer.
"""

from __future__ import annotations

from typing import Callable, Iterable

from lsprotocol import types

from graphsafe.lines import BREAK, line_starts, lines_with_ends, offset_of, split_lines
from graphsafe.model import Diagnostic, Edit, Position, Severity

SOURCE = "graphsafe"
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def encoding_name(kind) -> str:
    """The negotiated `PositionEncodingKind` (or None: UTF-16, the LSP default) as a codec name."""
    value = getattr(kind, "value", kind) or UTF16
    return value if value in (UTF8, UTF16, UTF32) else UTF16


def units(text: str, encoding: str) -> int:
    """Length of `text` in the encoding's code units."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def to_client(lines: list[str], position: Position, encoding: str) -> types.Position:
    """A graphsafe position as an LSP position, clamped to the document."""
    index = position.line - 1
    if index < 0:
        return types.Position(line=0, character=0)
    if index >= len(lines):
        last = len(lines) - 1
        return types.Position(line=max(last, 0), character=units(lines[last], encoding) if lines else 0)
    line = lines[index]
    column = min(max(position.column, 0), len(line))
    return types.Position(line=index, character=units(line[:column], encoding))


def from_client(lines: list[str], position: types.Position, encoding: str) -> Position:
    """An LSP position as a graphsafe position (code-point column), clamped to the document."""
    if not lines:
        return Position(1, 0)
    index = min(max(position.line, 0), len(lines) - 1)
    line = lines[index]
    wanted = max(position.character, 0)
    if encoding == UTF32 or line.isascii():
        return Position(index + 1, min(wanted, len(line)))
    count = 0
    for column, char in enumerate(line):
        if count >= wanted:
            return Position(index + 1, column)
        count += units(char, encoding)
    return Position(index + 1, len(line))


def to_range(lines: list[str], start: Position, end: Position, encoding: str) -> types.Range:
    return types.Range(start=to_client(lines, start, encoding), end=to_client(lines, end, encoding))


def uri_or_path(path: str, uri_of: Callable[[str], str | None]) -> str:
    return uri_of(path) or path


def severity(code: str) -> types.DiagnosticSeverity:
    from graphsafe.rules import BY_CODE

    rule = BY_CODE.get(code)
    if rule is not None and rule.severity() is Severity.WARNING:
        return types.DiagnosticSeverity.Warning
    return types.DiagnosticSeverity.Error


def rule_url(code: str) -> str | None:
    from graphsafe.rules import BY_CODE

    rule = BY_CODE.get(code)
    return rule.url() if rule is not None else None


def region_note(diagnostic: Diagnostic) -> str:
    """`in capture region X: A → B → C` (the chain starts at the region root)."""
    region = diagnostic.region
    if region is None:
        return ""
    if diagnostic.chain:
        return f"in capture region {region.display}: {' → '.join(diagnostic.chain)}"
    return f"in capture region {region.display}"


def withheld_note(diagnostic: Diagnostic) -> str:
    """` (no fix offered: why)` when a rewriter declined, so the editor says why there is no quick fix."""
    fix = diagnostic.fix
    return f" (no fix offered: {fix.reason})" if fix is not None and not fix.offered and fix.reason else ""


def to_diagnostic(
    diagnostic: Diagnostic, lines: list[str], encoding: str, uri_of: Callable[[str], str | None]
) -> types.Diagnostic:
    start, end = diagnostic.start, diagnostic.end
    if (end.line, end.column) <= (start.line, start.column):
        # A point (GS000 at a syntax error): one character wide, so editors can underline it.
        line = lines[start.line - 1] if 0 < start.line <= len(lines) else ""
        end = Position(start.line, start.column + 1) if start.column < len(line) else start
    related = None
    if diagnostic.region is not None:
        region = diagnostic.region
        where = types.Position(line=max(region.line - 1, 0), character=0)
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri_or_path(region.path, uri_of), range=types.Range(start=where, end=where)),
                message=region_note(diagnostic),
            )
        ]
    for i, site in enumerate(diagnostic.call_sites):  # each call of the chain, for "go to"
        if site.line and i + 1 < len(diagnostic.chain):
            where = types.Position(line=site.line - 1, character=0)
            related = (related or []) + [types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri_or_path(site.path, uri_of), range=types.Range(start=where, end=where)),
                message=f"called from here: {diagnostic.chain[i]} calls {diagnostic.chain[i + 1]}")]
    for use in diagnostic.also:  # the same hazard's other uses (grouping.py)
        place = to_range(lines, use.start, use.end, encoding)
        related = (related or []) + [types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri_or_path(use.path, uri_of), range=place), message="also used here")]
    url = rule_url(diagnostic.code)
    return types.Diagnostic(
        range=to_range(lines, start, end, encoding),
        message=diagnostic.message + withheld_note(diagnostic),
        severity=severity(diagnostic.code),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related,
    )


def to_text_edits(edits: Iterable[Edit], lines: list[str], encoding: str) -> list[types.TextEdit]:
    return [types.TextEdit(range=to_range(lines, e.start, e.end, encoding), new_text=e.content) for e in edits]


def apply_text_edits(text: str, edits: Iterable[types.TextEdit], encoding: str) -> str | None:
    """`text` with LSP `edits` applied as a client applies them (ranges in the negotiated units,
    lines per graphsafe.lines); None when two edits overlap, which LSP forbids."""
    lines, starts = split_lines(text), line_starts(text)
    spans = sorted(
        (offset_of(from_client(lines, e.range.start, encoding), starts, len(text)),
         offset_of(from_client(lines, e.range.end, encoding), starts, len(text)), e.new_text)
        for e in edits
    )
    if any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:])):
        return None
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


def minimal_edit(old: str, new: str, encoding: str) -> types.TextEdit | None:
    """One edit turning `old` into `new`, spanning only the lines that differ (None: equal).

    Replacing the whole buffer would move the cursor and fold state in most editors.
    """
    if old == new:
        return None
    a, b = lines_with_ends(old), lines_with_ends(new)
    prefix = 0
    while prefix < len(a) and prefix < len(b) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < len(a) - prefix and suffix < len(b) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    start = types.Position(line=prefix, character=0)
    end_index = len(a) - suffix
    if end_index == len(a) and a and not BREAK.search(a[-1][-1:] or ""):
        # The change reaches the end of a document without a final line break: end on its last line.
        end = types.Position(line=len(a) - 1, character=units(a[-1], encoding))
    else:
        end = types.Position(line=end_index, character=0)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text="".join(b[prefix : len(b) - suffix]))


def range_overlaps(a: types.Range, b: types.Range) -> bool:
    """Inclusive overlap: a zero-width cursor at either end of a diagnostic touches it."""
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end
