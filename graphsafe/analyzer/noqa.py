"""`# noqa` and `# noqa: GS101, GS2` comments, found by a cheap scan of the lines (ruff's syntax)."""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass

NOQA_COMMENT = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.IGNORECASE)


def noqa_lines(lines: list[str]) -> tuple[tuple[int, tuple[str, ...] | None], ...]:
    """(line number, codes or None for a bare `# noqa`) for every line carrying a noqa comment."""
    found = []
    for number, line in enumerate(lines, start=1):
        if "noqa" not in line and "NOQA" not in line:
            continue
        m = NOQA_COMMENT.search(line)
        if m is None:
            continue
        codes = m.group("codes")
        found.append((number, tuple(c.strip().upper() for c in codes.split(",")) if codes else None))
    return tuple(found)


def suppressed(code: str, line: int, noqa: dict[int, tuple[str, ...] | None]) -> bool:
    """A code is suppressed by a bare noqa, or by a listed code that is a prefix of it."""
    if line not in noqa:
        return False
    codes = noqa[line]
    return codes is None or any(code.startswith(c) for c in codes)


@dataclass(frozen=True)
class NoqaDirective:
    """A `# noqa: CODES` comment as written, for the unused-noqa check (GS001) and its fix:
    0-based columns of the whitespace before `#`, of `#` and of the end of the codes, and each
    code with its columns. It covers the lines `covers` (first, last): its own, or a continued
    shell command's."""

    line: int
    lead: int
    start: int
    end: int
    codes: tuple[tuple[str, int, int], ...]
    covers: tuple[int, int]
    trailing: bool  # more comment text follows the codes
    alone: bool  # the comment is all there is on its line


_CODE = re.compile(r"[A-Z]+[0-9]*", re.IGNORECASE)


def noqa_directives(lines: list[str], python: bool = True) -> tuple[NoqaDirective, ...]:
    """The `# noqa: CODES` comments of `lines` (a bare `# noqa` lists no code to find unused).
    A `# noqa` inside a string is no directive here: GS001's fix would edit the string."""
    found = []
    comments = None
    for number, line in enumerate(lines, start=1):
        if "noqa" not in line and "NOQA" not in line:
            continue
        m = NOQA_COMMENT.search(line)
        if m is None or m.group("codes") is None:
            continue
        if python:
            comments = _comment_columns(lines) if comments is None else comments
            if comments is not False and m.start() < comments.get(number, len(line)):
                continue
        elif _in_shell_quotes(line[: m.start()]):
            continue
        offset = m.start("codes")
        codes = tuple((c.group().upper(), offset + c.start(), offset + c.end()) for c in _CODE.finditer(m.group("codes")))
        before = line[: m.start()]
        found.append(NoqaDirective(number, len(before.rstrip()), m.start(), m.end(), codes, (number, number),
                                   trailing=bool(line[m.end():].strip()), alone=not before.strip()))
    return tuple(found)


def _comment_columns(lines: list[str]) -> dict[int, int] | bool:
    """Line → the column its comment starts at, by Python's tokenizer (False: it cannot
    tokenize the file; such a file is reported as GS000 and has no other diagnostic)."""
    feed = iter(line + "\n" for line in lines)
    columns: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(lambda: next(feed, "")):
            if token.type == tokenize.COMMENT:
                columns[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return False
    return columns


def _in_shell_quotes(text: str) -> bool:
    """An odd number of unescaped quotes before `#`: the `#` is quoted, not a comment."""
    text = text.replace("\\\\", "").replace('\\"', "").replace("\\'", "")
    return text.count('"') % 2 == 1 or text.count("'") % 2 == 1
