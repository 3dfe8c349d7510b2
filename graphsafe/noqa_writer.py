"""`graphsafe check --add-noqa`: a `# noqa: CODES` comment on every line with a diagnostic.

Codes already in a line's noqa comment stay, and each code is added once (a second run adds
nothing: every diagnostic is suppressed by then). A line whose end is inside a multi-line
string or continued by a backslash, or with `# noqa` inside a string, cannot take a comment
and is left as it is (counted as skipped); in a shell script the comment goes on the last line of a continued command, which
covers all of it. Files are written as `fix` writes them (writing.py): in their own encoding,
only if unchanged on disk, never half-written, and a Python file only if it still parses.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from graphsafe.analyzer.grouping import each_use
from graphsafe.analyzer.noqa import NOQA_COMMENT
from graphsafe.analyzer.parsing import decode
from graphsafe.analyzer.reading import read_source
from graphsafe.fixer import one_name_per_file
from graphsafe.fixes import noqa_edit
from graphsafe.model import Diagnostic
from graphsafe.writing import SourceEncoding, write_fixed

# GS000 cannot be suppressed (a file that is not analysed), GS001 is about noqa comments themselves
NOT_SUPPRESSIBLE = frozenset({"GS000", "GS001"})


@dataclass
class NoqaOutcome:
    path: str
    added: int = 0  # lines given a new code
    skipped: list[int] = field(default_factory=list)  # lines that cannot take a comment
    error: str | None = None  # why the file was not written


def add_noqa(diagnostics: list[Diagnostic]) -> list[NoqaOutcome]:
    by_path: dict[str, dict[int, set[str]]] = {}
    for d in each_use(diagnostics):  # every use of a grouped hazard: a noqa holds back one use
        if d.code not in NOT_SUPPRESSIBLE:
            by_path.setdefault(d.path, {}).setdefault(d.start.line, set()).add(d.code)
    chosen = one_name_per_file(list(by_path))  # a file named twice (links) is edited once
    return [_add_to_file(Path(path), codes) for path, codes in sorted(by_path.items()) if path in chosen]


def _add_to_file(path: Path, codes_by_line: dict[int, set[str]]) -> NoqaOutcome:
    outcome = NoqaOutcome(str(path))
    original = read_source(path)
    if isinstance(original, str):
        outcome.error = f"cannot read: {original}"
        return outcome
    try:
        text = decode(original).removeprefix("\ufeff")
    except (UnicodeDecodeError, SyntaxError) as error:
        outcome.error = str(error)
        return outcome
    is_python = path.suffix != ".sh"
    new_text = with_noqa(text, codes_by_line, outcome, is_python)
    if new_text == text:
        return outcome
    if is_python and _parses(text) and not _parses(new_text):
        outcome.error, outcome.added = "adding noqa comments would break its syntax; file left unchanged", 0
        return outcome
    try:
        data = SourceEncoding.of(original).encode(new_text)
    except UnicodeEncodeError as error:
        outcome.error, outcome.added = f"cannot encode the comments: {error}", 0
        return outcome
    outcome.error = write_fixed(path, data, original)
    if outcome.error:
        outcome.added = 0
    return outcome


def with_noqa(text: str, codes_by_line: dict[int, set[str]], outcome: NoqaOutcome, is_python: bool = True) -> str:
    """`text` with the codes added to the noqa comments of their lines (lines end at "\\n"; a
    "\\r" before it stays)."""
    lines = text.split("\n")
    blocked, comments = _comment_places(text) if is_python else (set(), {})
    for number in sorted(codes_by_line):
        target = number if is_python else _end_of_command(lines, number)
        if not 1 <= target <= len(lines) or target in blocked or _continued(lines[target - 1]):
            outcome.skipped.append(number)
            continue
        line = lines[target - 1]
        body, cr = (line[:-1], "\r") if line.endswith("\r") else (line, "")
        found = NOQA_COMMENT.search(body)
        if is_python and found and found.start() < comments.get(target, len(body)):
            outcome.skipped.append(number)  # "# noqa" inside a string: editing it would change the program
            continue
        before = body
        for code in sorted(codes_by_line[number]):
            edit = noqa_edit(body, 1, code)
            body = body[: edit.start.column] + edit.content + body[edit.end.column:]
        if body != before:
            lines[target - 1] = body + cr
            outcome.added += 1
    return "\n".join(lines)


def _continued(line: str) -> bool:
    return line.rstrip("\r").endswith("\\")


def _end_of_command(lines: list[str], number: int) -> int:
    """A shell line continued by `\\`: the last line of its command (its noqa covers all)."""
    while 1 <= number < len(lines) and _continued(lines[number - 1]):
        number += 1
    return number


def _comment_places(text: str) -> tuple[set[int], dict[int, int]]:
    """(the lines whose end is inside a string token that goes on below: a comment there would
    be part of the string; line → the column where its comment starts)."""
    blocked: set[int] = set()
    comments: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            elif token.start[0] < token.end[0] and token.type not in (tokenize.NL, tokenize.NEWLINE):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # a file that does not tokenize: the parse check before writing decides
    return blocked, comments


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
