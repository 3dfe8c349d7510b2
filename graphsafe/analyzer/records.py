"""Record classes made by a call: `Info = namedtuple("Info", ["z", "turning"])`.

Code returns several results as a small record (`return _TreeInfo(z, r, turning, diverging)`)
and tests a field later (`if tree.turning or tree.diverging:`). A namedtuple made by
`collections.namedtuple` or `typing.NamedTuple("N", [("a", T), ...])` has no class body the
analysis could read, so its fields had no kind. Its constructor takes the fields in order and
keeps each one, exactly what this class would do:

    class Info:
        def __init__(self, z, turning):
            self.z = z
            self.turning = turning

so the walker reads that class in its place (built here, never written anywhere): a field
holds what the callers pass there, decided project-wide like any constructor argument
(analyzer/returns.py, `arg:` ids). Field defaults (`defaults=`) and `_replace` are not followed:
a call that leaves a field to its default makes that field unknown, as for any parameter.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

MAKERS = ("collections.namedtuple", "typing.NamedTuple")


def record_class(stmt: cst.BaseSmallStatement, resolve: Callable[[cst.BaseExpression], str | None]) -> cst.ClassDef | None:
    """The class `Name = namedtuple("Name", fields)` stands for, or None for any other statement
    (or fields the source does not spell out as literal names)."""
    if type(stmt) is not cst.Assign or len(stmt.targets) != 1 or type(stmt.targets[0].target) is not cst.Name:
        return None
    call = stmt.value
    if type(call) is not cst.Call or resolve(call.func) not in MAKERS:
        return None
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    fields_arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("field_names", "fields")),
                      positional[1] if len(positional) > 1 else None)
    fields = _field_names(fields_arg) if fields_arg is not None else None
    if not fields or not all(f.isidentifier() and not f.startswith("_") for f in fields) or len(set(fields)) != len(fields):
        return None
    name = stmt.targets[0].target.value
    body = "".join(f"        self.{f} = {f}\n" for f in fields)
    return cst.ensure_type(cst.parse_statement(f"class {name}:\n    def __init__(self, {', '.join(fields)}):\n{body}"),
                           cst.ClassDef)


def _field_names(expr: cst.BaseExpression) -> list[str] | None:
    """`["a", "b"]`, `("a", "b")`, `"a b"`, `"a, b"`, `[("a", T), ("b", U)]` (typing.NamedTuple)."""
    if isinstance(expr, cst.SimpleString):
        text = expr.evaluated_value
        return text.replace(",", " ").split() if isinstance(text, str) else None
    if type(expr) not in (cst.List, cst.Tuple):
        return None
    names = []
    for element in expr.elements:
        value = element.value
        if type(value) is cst.Tuple and len(value.elements) == 2:  # `("a", torch.Tensor)`
            value = value.elements[0].value
        if not isinstance(value, cst.SimpleString) or not isinstance(value.evaluated_value, str):
            return None
        names.append(value.evaluated_value)
    return names


def constructor_unit(key: str, record: cst.ClassDef, made: cst.CSTNode, unit_class):
    """The call-graph node of the record's constructor (`Info.__init__`, at the line that makes the
    class): the calls that build records resolve to it, so its parameters get their callers' kinds."""
    init = cst.ensure_type(record.body.body[0], cst.FunctionDef)
    params = tuple(p.name.value for p in init.params.params[1:])
    unit = unit_class(f"{key}.__init__", f"{record.name.value}.__init__", key, made, True)
    unit.params = params
    unit.required_tail = len(params)
    return unit


def kept_argument(classes: tuple[str, ...], attr: str, attr_pids: dict[str, dict[str, str | None]], arg_pid: str) -> str | None:
    """The constructor parameter a field of an instance of a class of this file keeps
    (`self.turning = turning` in `__init__`, or a record's field): its id, whose kind the
    callers decide project-wide; None where the class (or which one) is not known."""
    if len(classes) != 1:
        return None
    pid = attr_pids.get(classes[0], {}).get(attr)
    return pid if pid and pid.startswith(arg_pid) else None
