"""Which part of a core can be graphed when `graph` leaves data-dependent shapes in it.

A graph fixes every shape at capture. A boolean-mask read (`x[mask]`, GS108), `nonzero`,
`bincount`, `masked_select` (GS107) or a size read on the host (`x[:, :int(n.max())]`, GS105)
that no fixed-capacity rewrite covers is often the result the user reads (decoded token lists of
each utterance's length), or the work around it depends on its size (a random draw per selected
row). Then the region must be chosen smaller: the core's statements before the first line that
reaches such a blocker can be graphed. This says which line that is and what comes before it, or
that nothing does (the data-dependent shape comes first: a region inside what the core calls, or
a fixed capacity written by hand).

Reads only the diagnostics and the core's file: no torch (the static path)."""

from __future__ import annotations

import ast
from pathlib import Path

from graphsafe.model import Diagnostic

DATA_SHAPES = ("GS107", "GS108")  # a data-dependent output shape (always one, whatever the rewrite)


def smaller_region_advice(blocking: list[Diagnostic], core: str, core_path: str, source: str,
                          shown: str, shown_path=str) -> str | None:
    """A note for the summary when data-dependent shapes are left, or None. `blocking` are the
    scratch diagnostics still listed, `core` the core's display name in `core_path` (whose text
    is `source`), `shown` the core file as the user names it, `shown_path` a scratch path so."""
    shapes = [d for d in blocking if d.code in DATA_SHAPES]
    if not shapes:
        return None
    body = _core_body(source, core)
    if body is None:
        return None
    at: dict[int, list[Diagnostic]] = {}
    for d in blocking:
        for line in _core_line(d, core, core_path):
            at.setdefault(line, []).append(d)
    if not at:
        return None
    first = min(at)
    blocked = ", ".join(sorted({f"{shown_path(d.path)}:{d.start.line} {d.code}" for d in at[first]}))
    before = [s for s in body if s.end_lineno < first and not _docstring(s)]
    what = f"{len(shapes)} data-dependent shape(s) left (a graph fixes every shape at capture)"
    head = f"{what}; the first line of {core} that reaches a listed line is {shown}:{first} ({blocked})"
    if not before:
        return (f"{head}, its first statement: nothing before it can be graphed. Choose a region inside what "
                f"it calls that reaches none of the listed lines, or give these shapes a fixed capacity by hand "
                f"(masks, padded buffers)")
    end = before[-1].end_lineno
    span = f"{before[0].lineno}-{end}" if end != before[0].lineno else f"{end}"
    return (f"{head}: its work before that ({shown}:{span}) can be graphed as a region of its own (a function "
            f"that ends there), or give these shapes a fixed capacity by hand (masks, padded buffers)")


def _core_line(d: Diagnostic, core: str, core_path: str) -> list[int]:
    """The line of the core that reaches `d`: its own line, or the core's call on the chain."""
    if d.chain and d.chain[0] == core:
        if len(d.chain) == 1:
            return [d.start.line] if _same(d.path, core_path) else []
        if d.call_sites and d.call_sites[0].line > 0:
            return [d.call_sites[0].line]
    return []


def _same(a: str, b: str) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def _core_body(source: str, core: str) -> list[ast.stmt] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scope: list[ast.stmt] = tree.body
    *owners, name = core.split(".")
    for owner in owners:
        found = next((n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.name == owner), None)
        if found is None:
            return None
        scope = found.body
    function = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
                    None)
    return None if function is None else function.body


def _docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and isinstance(statement.value.value, str)
