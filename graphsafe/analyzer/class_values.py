"""Names that hold a class rather than an instance of one.

`cls = FastAttention if fast else SlowAttention; self.attn = cls(d)` or a parameter defaulting
to a class (`def __init__(self, attn_cls=Attention)`): calling the name makes an instance of
any of those classes, which the call graph follows as if `Attention(d)` were written out.

The same holds for a class wrapped in `functools.partial(Block, dim=d)` (calling it builds a
`Block`), a class picked from a literal table (`{"a": A, "b": B}[name]`), and a conditional
with one branch the analysis cannot name (`partial(MuSGD, ...) if muon else getattr(optim,
name)`): the classes it can name are the candidates the call graph follows.

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


def class_choices(expr: cst.BaseExpression, class_named: Callable[[cst.BaseExpression], str | None],
                  partial_target: Callable[[cst.BaseExpression], cst.BaseExpression | None] = lambda _: None,
                  known: dict[str, tuple[str, ...]] | None = None, depth: int = 0) -> tuple[str, ...]:
    """The classes `expr` evaluates to: a class name, a conditional choosing between class names
    (a branch naming no class chooses none of them), a `partial` of a class, an entry of a
    literal table of classes, a name `known` holds classes for; () when it names no class."""
    if depth > 8:  # nested conditionals and partials of partials: deep enough for real code
        return ()
    tp = type(expr)
    if tp is cst.IfExp:
        found = [class_choices(b, class_named, partial_target, known, depth + 1) for b in (expr.body, expr.orelse)]
        return tuple(dict.fromkeys(c for choice in found for c in choice))
    if tp is cst.Call:
        target = partial_target(expr)
        return class_choices(target, class_named, partial_target, known, depth + 1) if target is not None else ()
    if tp is cst.Subscript and type(expr.value) in (cst.Dict, cst.List, cst.Tuple):
        return table_classes(expr.value, class_named)
    if tp is cst.Name and known and expr.value in known:
        return known[expr.value]
    name = class_named(expr)
    return (name,) if name else ()


def table_classes(table: cst.BaseExpression, class_named: Callable[[cst.BaseExpression], str | None]) -> tuple[str, ...]:
    """`{"a": A, "b": B}`, `[A, B]`, `(A, B)`: the classes of a literal table whose every entry
    names one; () otherwise (an entry spread in with `**`, a value that is no class)."""
    if type(table) is cst.Dict:
        values = [e.value if type(e) is cst.DictElement else None for e in table.elements]
    elif type(table) in (cst.List, cst.Tuple):
        values = [e.value if type(e) is cst.Element else None for e in table.elements]
    else:
        return ()
    names = [class_named(v) if v is not None else None for v in values]
    return tuple(dict.fromkeys(names)) if names and all(names) else ()


def class_valued_names(function: cst.FunctionDef, local_values: dict[str, list[cst.BaseExpression]],
                       class_named: Callable[[cst.BaseExpression], str | None],
                       partial_target: Callable[[cst.BaseExpression], cst.BaseExpression | None] = lambda _: None,
                       outer: dict[str, tuple[str, ...]] | None = None) -> dict[str, tuple[str, ...]]:
    """Name → the classes it may hold in `function`: parameters whose default names a class,
    locals every assignment of which names a class (or chooses between classes, or wraps one in
    a `partial`). A local may name another found before it (`cls = Impl; make = partial(cls)`)
    or a module-level one (`outer`)."""
    found: dict[str, tuple[str, ...]] = {}
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.default is not None:
            classes = class_choices(param.default, class_named, partial_target, outer)
            if classes:
                found[param.name.value] = classes
    return names_holding_classes(local_values, class_named, partial_target, found, outer)


def names_holding_classes(values: dict[str, list[cst.BaseExpression]],
                          class_named: Callable[[cst.BaseExpression], str | None],
                          partial_target: Callable[[cst.BaseExpression], cst.BaseExpression | None] = lambda _: None,
                          found: dict[str, tuple[str, ...]] | None = None,
                          outer: dict[str, tuple[str, ...]] | None = None) -> dict[str, tuple[str, ...]]:
    """Name → the classes it may hold, for names every assignment of which (`values`) names
    classes (`BlockFactory = partial(Block, dim=2)` at module level, `cls = Impl` in a function);
    `found` holds names known already (parameters), `outer` those of an enclosing scope."""
    found = dict(found or {})
    for name, assigned in values.items():
        # names found before this one count (`make = partial(cls, d)`, `cls = partial(cls, d)`)
        known = {**outer, **found} if outer else found
        choices = [class_choices(value, class_named, partial_target, known) for value in assigned]
        if all(choices):
            had = found.get(name, ())
            found[name] = tuple(dict.fromkeys((*had, *(c for choice in choices for c in choice))))
        else:
            found.pop(name, None)  # also bound to something else
    return found
