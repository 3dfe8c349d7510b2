"""The `__init__` a `@dataclass` generates: its parameters are the class's fields, in order.

Real code keeps objects in dataclasses (`CallbackContainer(callbacks)` with `callbacks:
List[Callback] = field(default_factory=list)`); calls on what a field holds reach the classes
the constructor's callers pass, as for a hand-written `self.callbacks = callbacks`."""

from __future__ import annotations

from typing import Callable

import libcst as cst

DATACLASS = "dataclasses.dataclass"
# field annotations naming plain values: nothing a call could be made on
_PLAIN = frozenset("int float bool str bytes complex".split())


def init_fields(node: cst.ClassDef, resolve: Callable[[cst.BaseExpression], str | None]
                ) -> tuple[tuple[str, cst.BaseExpression], ...] | None:
    """The parameters (name, annotation) of the `__init__` that `@dataclass` writes for `node`, or None where it
    writes none (not a dataclass, `init=False`, or the class defines its own `__init__`).
    Skipped: `ClassVar` annotations and `field(init=False)` fields."""
    if not any(_is_dataclass(d.decorator, resolve) for d in node.decorators):
        return None
    fields: list[tuple[str, cst.BaseExpression]] = []
    for stmt in node.body.body:
        if type(stmt) is cst.FunctionDef and stmt.name.value == "__init__":
            return None
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) is not cst.AnnAssign or type(small.target) is not cst.Name:
                continue
            if "ClassVar" in (resolve(_outer(small.annotation.annotation)) or ""):
                continue
            if small.value is not None and _not_in_init(small.value, resolve):
                continue
            fields.append((small.target.value, small.annotation.annotation))
    return tuple(fields)


def plain_value(annotation: cst.BaseExpression) -> bool:
    """`int`, `float`, `Optional[str]`...: a field that holds no object to call methods on."""
    if type(annotation) is cst.Subscript and type(annotation.value) is cst.Name and annotation.value.value == "Optional":
        inner = annotation.slice[0].slice
        return type(inner) is cst.Index and plain_value(inner.value)
    return type(annotation) is cst.Name and annotation.value in _PLAIN


def _is_dataclass(decorator: cst.BaseExpression, resolve) -> bool:
    target = decorator.func if type(decorator) is cst.Call else decorator
    if resolve(target) != DATACLASS:
        return False
    return not (type(decorator) is cst.Call and any(
        a.keyword is not None and a.keyword.value == "init" and type(a.value) is cst.Name and a.value.value == "False"
        for a in decorator.args))


def _not_in_init(value: cst.BaseExpression, resolve) -> bool:
    """`field(init=False)`."""
    return type(value) is cst.Call and resolve(value.func) == "dataclasses.field" and any(
        a.keyword is not None and a.keyword.value == "init" and type(a.value) is cst.Name and a.value.value == "False"
        for a in value.args)


def _outer(annotation: cst.BaseExpression) -> cst.BaseExpression:
    return annotation.value if type(annotation) is cst.Subscript else annotation
