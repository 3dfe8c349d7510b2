"""Fast traversal of libcst trees.

libcst's `node.children` runs a visitor over every field (whitespace included) on each call,
which made it the most expensive line of several rules. We read the dataclass fields that can
hold code directly; whitespace and punctuation fields are skipped (comments are not children
here: use `node.children` where they matter).
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import libcst as cst

_SKIP_FIELD = frozenset(
    """comma lpar rpar semicolon header footer leading_lines lines_after_decorators newline
    colon dot equal star operator lbracket rbracket lbrace rbrace indent default_indent
    default_newline encoding has_trailing_newline trailing_whitespace first_line empty_lines
    last_line asynchronous""".split()
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def code_fields(tp: type) -> tuple[str, ...]:
    names = _FIELDS.get(tp)
    if names is None:
        names = tuple(
            f.name for f in dataclasses.fields(tp) if not f.name.startswith("whitespace") and f.name not in _SKIP_FIELD
        )
        _FIELDS[tp] = names
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The child nodes that hold code (no whitespace, comments or punctuation)."""
    for name in code_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif type(value) in (tuple, list):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every code node below it, depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))
