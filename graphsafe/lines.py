"""The one line model of graphsafe: `\\r\\n`, `\\r` and `\\n` each end a line.

Python's tokenizer, libcst and the LSP count lines this way; `str.splitlines` does not (it also
breaks at \\f, \\v, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which Python code may hold in strings
and comments), and counting `\\n` alone puts a file with old Mac endings on one line. Every
line/column computed by the static path (diagnostics, fixes, noqa, GS000) and every conversion to
the LSP goes through here. Lines are 1-based, columns 0-based code points (model.Position).
"""

from __future__ import annotations

import re

from graphsafe.model import Position

BREAK = re.compile(r"\r\n|\r|\n")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines without their terminators; text ending in a break has an empty last line."""
    return BREAK.split(text)


def lines_with_ends(text: str) -> list[str]:
    """The lines with their terminators (no empty last line)."""
    return _LINES.findall(text)


def count_breaks(text: str) -> int:
    newlines = text.count("\n")
    if "\r" not in text:
        return newlines
    return newlines + text.count("\r") - text.count("\r\n")


def line_starts(text: str) -> list[int]:
    """Offset of the start of each line (index 0 is line 1)."""
    if "\r" not in text:  # the common case: a find loop is faster than the regular expression
        starts = [0]
        find = text.find
        position = find("\n")
        while position != -1:
            starts.append(position + 1)
            position = find("\n", position + 1)
        return starts
    return [0] + [m.end() for m in BREAK.finditer(text)]


def is_line_start(text: str, offset: int) -> bool:
    if offset == 0:
        return True
    before = text[offset - 1]
    return before == "\n" or before == "\r" and not text.startswith("\n", offset)


def position_at(text: str, offset: int) -> Position:
    """The line and column of `offset` in `text` (an offset between the two characters of `\\r\\n`
    is taken as the start of the next line)."""
    head = text[:offset]
    line = count_breaks(head) + 1
    last = max(head.rfind("\n"), head.rfind("\r"))
    return Position(line, offset - last - 1)


_BARE_LF = re.compile(r"(?<!\r)\n")


def with_newline(code: str, newline: str) -> str:
    """Code a rewriter wrote with `\\n` breaks, breaking with `newline` instead (the file's): a fix
    must not bring `\\n` into a file written with `\\r\\n` or `\\r`. Breaks copied from the file
    (an `\\r\\n` in a docstring) stay as they are."""
    return code if newline == "\n" or "\n" not in code else _BARE_LF.sub(newline, code)


def ending_of(text: str, starts: list[int], line: int) -> str:
    """The break that ends `line` (1-based) of `text`, given its `line_starts`; "" for a last line
    without one (or a line past the end)."""
    if not 0 < line <= len(starts):
        return ""
    end = starts[line] if line < len(starts) else len(text)
    found = BREAK.search(text, max(starts[line - 1], end - 2), end)
    return found.group() if found else ""


def offset_of(position: Position, starts: list[int], text_length: int) -> int:
    """The offset of `position`, given the text's `line_starts`, clamped to the text."""
    if position.line - 1 >= len(starts):
        return text_length
    return min(starts[position.line - 1] + position.column, text_length)
