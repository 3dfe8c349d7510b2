"""Names that hold a class rather than an instance of one.

`cls = FastAttention if fast else SlowAttention; self.attn = cls(d)` or a parameter defaulting
to a class (`def __init__(self, attn_cls=Attention)`): calling the name makes an instance of
any of those classes, which the call graph follows as if `Attention(d)` were written out.

A class a caller passes (`Model(impl_cls=SlowAttention)`) is followed project-wide: the call
site records the argument as a `C:<class>` slot (Unit.arg_kinds), and an attribute set by
calling the parameter (`self.attn = impl_cls()`) exports the slot `@new:<function>:<parameter>`
(ClassInfo.attr_slots), which the call graph resolves to the classes callers pass there.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

NEW_PID = "new:"  # see above: an instance of the class the callers pass for a parameter
CLASS_SLOT = "C:"  # an argument that is a class of the project (not an instance of it)


def class_choices(expr: cst.BaseExpression, class_named: Callable[[cst.BaseExpression], str | None]) -> tuple[str, ...]:
    """The classes `expr` evaluates to: a class name, or a conditional choosing between class
    names (a `None` branch chooses none); () when it may be anything else."""
    if type(expr) is cst.IfExp:
        branches = [b for b in (expr.body, expr.orelse) if not (type(b) is cst.Name and b.value == "None")]
        found = [class_choices(b, class_named) for b in branches]
        if not found or not all(found):
            return ()
        return tuple(dict.fromkeys(c for choice in found for c in choice))
    name = class_named(expr)
    return (name,) if name else ()


def class_valued_names(function: cst.FunctionDef, local_values: dict[str, list[cst.BaseExpression]],
                       class_named: Callable[[cst.BaseExpression], str | None]) -> dict[str, tuple[str, ...]]:
    """Name → the classes it may hold in `function`: parameters whose default names a class,
    locals every assignment of which names a class (or chooses between classes)."""
    found: dict[str, tuple[str, ...]] = {}
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.default is not None:
            classes = class_choices(param.default, class_named)
            if classes:
                found[param.name.value] = classes
    for name, values in local_values.items():
        choices = [class_choices(value, class_named) for value in values]
        if all(choices):
            had = found.get(name, ())
            found[name] = tuple(dict.fromkeys((*had, *(c for choice in choices for c in choice))))
        else:
            found.pop(name, None)  # also bound to something else
    return found
