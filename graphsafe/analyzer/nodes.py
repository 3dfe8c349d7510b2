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
# Node types that never have children(): a traversal that has nothing to note on them skips them
LEAF_TYPES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis, cst.Pass,
                        cst.Break, cst.Continue})
_FIELDS: dict[type, tuple[str, ...]] = {}


def code_fields(tp: type) -> tuple[str, ...]:
    names = _FIELDS.get(tp)
    if names is None:
        names = () if tp in LEAF_TYPES else tuple(
            f.name for f in dataclasses.fields(tp) if not f.name.startswith("whitespace") and f.name not in _SKIP_FIELD
        )
        _FIELDS[tp] = names
    return names


_IS_NODE: dict[type, bool] = {}


def is_node_type(tp: type) -> bool:
    """`issubclass(tp, cst.CSTNode)`, memoised: isinstance against libcst's ABC-based classes
    goes through ABCMeta.__instancecheck__ (~0.3 us a call, tens of thousands per file)."""
    found = _IS_NODE.get(tp)
    if found is None:
        found = _IS_NODE[tp] = issubclass(tp, cst.CSTNode)
    return found


def node_types(base: type) -> frozenset[type]:
    """libcst's public classes below `base`, for `type(node) in ...` tests that avoid
    isinstance's ABCMeta path (libcst's concrete node classes have no subclasses)."""
    return frozenset(c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, base))


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The child nodes that hold code (no whitespace, comments or punctuation)."""
    known = _IS_NODE
    fields = _FIELDS.get(type(node))
    for name in code_fields(type(node)) if fields is None else fields:
        value = getattr(node, name)
        tp = type(value)
        if tp is tuple or tp is list:
            for item in value:
                flag = known.get(type(item))
                if flag or (flag is None and is_node_type(type(item))):
                    yield item
        else:
            flag = known.get(tp)
            if flag or (flag is None and is_node_type(tp)):
                yield value


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every code node below it, depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and the code nodes below it that run when it runs: not the bodies of nested
    functions, classes or lambdas."""
    stack = [root]
    while stack:
        current = stack.pop()
        if type(current) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        yield current
        stack.extend(children(current))


def is_number_literal(expr: cst.BaseExpression) -> bool:
    """`3`, `0.5`, `-1`: an integer or float literal, signed or not."""
    if type(expr) is cst.UnaryOperation:
        expr = expr.expression
    return type(expr) in (cst.Integer, cst.Float)
