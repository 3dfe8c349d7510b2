"""The source snippet of ruff's `full` output: the diagnostic's lines with two lines of context
on either side, a line-number gutter, and carets under the reported range.

    |
  4 |     v = x.item()
    |         ^^^^^^^^ GS101
    |
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from graphsafe.analyzer.parsing import decode
from graphsafe.analyzer.reading import read_source
from graphsafe.model import Position
from graphsafe.report.style import PLAIN, Style

CONTEXT = 2  # lines shown before and after the range (ruff's)
MAX_RANGE_LINES = 6  # a longer range shows its first and last lines around an ellipsis
TAB = "    "


def _display(text: str) -> str:
    return text.replace("\t", TAB)


def _display_column(text: str, column: int) -> int:
    return len(_display(text[:column]))


def render_snippet(lines: list[str], start: Position, end: Position, label: str, style: Style = PLAIN) -> list[str]:
    """The snippet's lines (no trailing newlines); [] when the range is not in `lines`."""
    if not lines or not 1 <= start.line <= len(lines):
        return []
    last = min(max(end.line, start.line), len(lines))
    first_shown = max(1, start.line - CONTEXT)
    last_shown = min(len(lines), last + CONTEXT)
    width = len(str(last_shown))
    pad = " " * width
    out = [f"{pad} {style.gutter('|')}"]
    hidden = range(start.line + MAX_RANGE_LINES // 2, last - MAX_RANGE_LINES // 2 + 1) \
        if last - start.line + 1 > MAX_RANGE_LINES else range(0)
    for number in range(first_shown, last_shown + 1):
        if number in hidden:
            if number == hidden.start:
                out.append(f"{style.gutter('...')}")
            continue
        text = lines[number - 1]
        shown = _display(text).rstrip("\r\n")
        out.append(f"{style.gutter(str(number).rjust(width) + ' |')}" + (f" {shown}" if shown else ""))
        if start.line <= number <= last:
            from_column = start.column if number == start.line else len(text) - len(text.lstrip())
            to_column = end.column if number == last else len(text.rstrip("\r\n"))
            a = _display_column(text, from_column)
            b = max(_display_column(text, to_column), a + 1)  # an empty range still gets a caret
            tail = f" {label}" if number == last else ""
            out.append(f"{pad} {style.gutter('|')} " + " " * a + style.carets("^" * (b - a)) + tail)
    out.append(f"{pad} {style.gutter('|')}")
    return out


def source_reader(buffers: dict[str, str] | None = None) -> Callable[[str], list[str] | None]:
    """A file's lines for snippets, read once per file (`buffers`: texts not on disk, stdin);
    None for a file that cannot be read or decoded now (its diagnostics go without a snippet)."""
    cache: dict[str, list[str] | None] = {path: _lines(text) for path, text in (buffers or {}).items()}

    def lines(path: str) -> list[str] | None:
        if path not in cache:
            content = read_source(Path(path))
            try:
                cache[path] = None if isinstance(content, str) else _lines(decode(content))
            except (UnicodeDecodeError, SyntaxError, LookupError):
                cache[path] = None
        return cache[path]

    return lines


def _lines(text: str) -> list[str]:
    """The lines as diagnostics count them (at "\\n"; a "\\r" before it is not shown), without
    the empty piece after a final newline."""
    lines = text.removeprefix("\ufeff").split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines
