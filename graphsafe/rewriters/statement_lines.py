"""Line-keeping text edits of whole statements, for the `graph` rewriters that work on a callee's
scratch file with `ast` (the split's and the diagnostics' lines must stay right): a one-line
statement replaced by other code (its trailing comment kept) or emptied (its line ending kept).

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast


def one_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno


def source_of(lines: list[str], node: ast.AST) -> str:
    """The text of a one-line node (ast columns are UTF-8 byte offsets)."""
    row = lines[node.lineno - 1].encode("utf-8")
    return row[node.col_offset:node.end_col_offset].decode("utf-8")


class LineEdits:
    """Edits of one file's lines, applied together: each statement once, the line count kept."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self._edits: dict[int, tuple[int, int, str | None]] = {}  # line -> (start byte, end byte, text)

    def replace(self, statement: ast.stmt, text: str) -> None:
        self._edits[statement.lineno] = (statement.col_offset, statement.end_col_offset, text)

    def remove(self, statement: ast.stmt) -> None:
        self._edits[statement.lineno] = (0, 0, None)

    def applied(self) -> str:
        lines = list(self.lines)
        for line, (start, end, text) in self._edits.items():
            row = lines[line - 1]
            if text is None:
                lines[line - 1] = row[len(row.rstrip("\r\n")):]  # the line ending alone
                continue
            raw = row.encode("utf-8")
            lines[line - 1] = (raw[:start] + text.encode("utf-8") + raw[end:]).decode("utf-8")
        return "".join(lines)


def functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def names_used(node: ast.AST) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name)]


def bound_names(function: ast.AST) -> set[str]:
    """Every name a function binds or reads (to pick a fresh one)."""
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}


def fresh_name(function: ast.AST, wanted: str) -> str:
    taken = bound_names(function)
    name, number = wanted, 1
    while name in taken:
        number += 1
        name = f"{wanted}_{number}"
    return name
