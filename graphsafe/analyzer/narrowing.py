"""`isinstance` narrowing: inside `if isinstance(loss, ELBO):`, and after `if not isinstance(optim,
PyroOptim): raise ...`, a name of no known kind holds an object of the classes named, so calls on
it (and attributes bound to it) are followed to those classes' methods; `assert isinstance(self.x,
Tensor)` says an attribute holds a tensor."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphsafe.analyzer import tensorness as T

# Classes of the standard library, numpy and torch: narrowing to them says nothing the call
# graph follows, and tensor-ness has its own reading of `isinstance(x, Number)` and the like.
_LIBRARY_PREFIXES = ("torch.", "numbers.", "collections.", "typing.", "numpy.", "builtins.", "abc.", "enum.")


def _isinstance_call(expr: cst.BaseExpression) -> bool:
    return (type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "isinstance"
            and len(expr.args) == 2)


def narrowed(test: cst.BaseExpression, class_kind: Callable[[cst.BaseExpression], T.Kind]
             ) -> tuple[str, T.Kind, bool] | None:
    """(name, object kind, negated) of an `isinstance(name, C)` or `not isinstance(name, (C, D))`
    test on classes `class_kind` reads as objects of the program's classes; None otherwise."""
    negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
    call = test.expression if negated else test
    if not _isinstance_call(call) or type(call.args[0].value) is not cst.Name:
        return None
    classes = call.args[1].value
    options = [e.value for e in classes.elements] if type(classes) is cst.Tuple else [classes]
    refs: list[str] = []
    for option in options:
        kind = class_kind(option)
        if kind.tag != "object" or any(r.startswith(_LIBRARY_PREFIXES) for r in kind.refs):
            return None
        refs.extend(kind.refs)
    return call.args[0].value.value, T.instance_of(*refs), negated


def asserted_tensor_attribute(test: cst.BaseExpression, self_name: str, resolve) -> str | None:
    """`x` of `assert isinstance(self.x, Tensor)` (torch's Tensor, however imported): the author
    says the attribute holds a tensor."""
    if not _isinstance_call(test):
        return None
    subject, cls = test.args[0].value, test.args[1].value
    if (type(subject) is cst.Attribute and type(subject.value) is cst.Name and subject.value.value == self_name
            and resolve(cls) in ("torch.Tensor", "torch.nn.Parameter")):
        return subject.attr.value
    return None


def in_body(body: cst.BaseSuite, class_kind: Callable[[cst.BaseExpression], T.Kind]
            ) -> dict[int, tuple[str, T.Kind]]:
    """For a function body read statement by statement (the constructor's `self.x = ...` pre-pass):
    the narrowing each statement sees, by the statement's id: those inside `if isinstance(x, C):`,
    and those after an `if not isinstance(x, C): raise ...` at the body's top level."""
    found: dict[int, tuple[str, T.Kind]] = {}
    guard: tuple[str, T.Kind] | None = None
    for stmt in body.body:
        if guard is not None:
            _mark(stmt, guard, found)
        if type(stmt) is not cst.If:
            continue
        test = narrowed(stmt.test, class_kind)
        if test is None:
            continue
        name, kind, negated = test
        if not negated:
            for inner in stmt.body.body:
                _mark(inner, (name, kind), found)
        elif _leaves(stmt):
            guard = (name, kind)
    return found


def _mark(stmt: cst.CSTNode, narrowing: tuple[str, T.Kind], found: dict[int, tuple[str, T.Kind]]) -> None:
    found.setdefault(id(stmt), narrowing)
    for child in stmt.children:
        if isinstance(child, (cst.BaseSuite, cst.BaseStatement, cst.BaseSmallStatement, cst.Else)):
            _mark(child, narrowing, found)


def _leaves(node: cst.If) -> bool:
    body = node.body.body
    last = body[-1] if body else None
    if type(last) is cst.SimpleStatementLine:
        last = last.body[-1] if last.body else None
    return type(last) in (cst.Raise, cst.Return)
