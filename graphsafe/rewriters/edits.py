"""Edit targets a rule can name in a fix besides a single node."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.model import Applicability


@dataclass(frozen=True, eq=False)
class WholeLines:
    """The full lines of a statement, indentation and newline included (to delete it)."""

    statement: cst.SimpleStatementLine


def enclosing_statement_line(ctx, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The statement line being walked, if `node` is its only small statement's value."""
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if isinstance(small, cst.Expr) and small.value is node:
        return line
    return None


def removal_fix(ctx, line: cst.SimpleStatementLine, title: str):
    """Delete a statement line (unsafe: the program no longer does it); a block that would be
    left empty keeps a `pass` in its place."""
    if ctx.enclosing_block_size(line) == 1:
        return (title, [(line.body[0], "pass")], Applicability.UNSAFE)
    return (title, [(WholeLines(line), "")], Applicability.UNSAFE)
