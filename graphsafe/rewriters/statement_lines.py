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
    """Edits of one file, applied together, that keep its line count: a span replaced by text
    (the line breaks it held kept inside the new text's closing bracket), or whole statements
    emptied (their line endings kept)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self._starts = [0]
        for line in self.lines:
            self._starts.append(self._starts[-1] + len(line.encode("utf-8")))
        self._spans: list[tuple[int, int, str]] = []  # (start byte, end byte, text)
        self._removed: set[int] = set()

    def offset(self, line: int, column: int) -> int:
        return self._starts[line - 1] + column

    def replace(self, node: ast.AST, text: str) -> None:
        self.replace_span(self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset),
                          text)

    def replace_span(self, start: int, end: int, text: str) -> None:
        self._spans.append((start, end, text))

    def remove(self, statement: ast.stmt) -> None:
        self._removed.update(range(statement.lineno, statement.end_lineno + 1))

    def alone_on_its_lines(self, statement: ast.stmt) -> bool:
        """Nothing but blanks before it on its first line, and a comment at most after it."""
        first = self.lines[statement.lineno - 1].encode("utf-8")[:statement.col_offset]
        last = self.lines[statement.end_lineno - 1].encode("utf-8")[statement.end_col_offset:].strip()
        return not first.strip() and (not last or last.startswith(b"#"))

    def applied(self) -> str | None:
        """The new text, or None when two edits overlap."""
        raw = "".join(self.lines).encode("utf-8")
        spans = sorted(self._spans)
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            return None
        for start, end, text in reversed(spans):
            held = raw[start:end]
            breaks = held.count(b"\n")
            new = text.encode("utf-8")
            if breaks:  # inside brackets: the breaks and the last line's indentation, kept
                last = held.rpartition(b"\n")[2]
                kept = b"\n" * breaks + last[:len(last) - len(last.lstrip())]
                new = new[:-1] + kept + new[-1:] if new[-1:] in (b")", b"]") else new + kept
            raw = raw[:start] + new + raw[end:]
        lines = raw.decode("utf-8").splitlines(keepends=True)
        for line in self._removed:
            row = lines[line - 1]
            lines[line - 1] = row[len(row.rstrip("\r\n")):]  # the line ending alone
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
