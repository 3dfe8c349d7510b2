"""Reading `torch.tensor(<literal>, ...)` calls: the values a rewriter can reason about statically."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.rules.syntax import keyword, positional, string_value


@dataclass(frozen=True)
class LiteralTensor:
    call: cst.Call
    data: cst.BaseExpression
    values: object  # the Python value: number, bool, or nested lists of them
    dtype: str | None  # `torch.<name>` written as dtype=, if any
    device: cst.Arg | None


def number(expr: cst.BaseExpression) -> int | float | bool | None:
    """An int/float/bool literal (with an optional sign), else None."""
    sign = 1
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        sign = -1 if isinstance(expr.operator, cst.Minus) else 1
        expr = expr.expression
        if not isinstance(expr, (cst.Integer, cst.Float)):
            return None
    if isinstance(expr, cst.Integer):
        return sign * int(expr.value, 0)
    if isinstance(expr, cst.Float):
        return sign * float(expr.value)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _values(expr: cst.BaseExpression):
    if isinstance(expr, (cst.List, cst.Tuple)):
        items = []
        for element in expr.elements:
            if not isinstance(element, cst.Element):  # `*rest`
                return None
            value = _values(element.value)
            if value is None:
                return None
            items.append(value)
        return items
    return number(expr)


def _flat(values) -> list:
    if isinstance(values, list):
        return [v for item in values for v in _flat(item)]
    return [values]


def flat_values(literal: LiteralTensor) -> list:
    return _flat(literal.values)


def literal_tensor(expr: cst.BaseExpression, ctx, allowed_keywords=("dtype", "device")) -> LiteralTensor | None:
    """`torch.tensor(<numbers or nested lists of numbers>, dtype=torch.X, device=...)`, else None."""
    if not isinstance(expr, cst.Call) or ctx.resolve(expr.func) != "torch.tensor":
        return None
    args = positional(expr)
    if len(args) != 1 or any(a.star for a in expr.args):
        return None
    if any(a.keyword is not None and a.keyword.value not in allowed_keywords for a in expr.args):
        return None
    values = _values(args[0].value)
    if values is None:
        return None
    dtype = None
    dtype_arg = keyword(expr, "dtype")
    if dtype_arg is not None:
        name = ctx.resolve(dtype_arg.value) or ""
        if not name.startswith("torch.") or name.count(".") != 1:
            return None
        dtype = name.partition(".")[2]
    return LiteralTensor(expr, args[0].value, values, dtype, keyword(expr, "device"))


def literal_device(arg: cst.Arg | None, ctx) -> str | None:
    """The device a `device=` argument names when it is a literal ("cuda", torch.device("cpu")),
    "" when there is none (the default device), else None."""
    if arg is None:
        return ""
    value = arg.value
    text = string_value(value)
    if text is not None:
        return text
    if isinstance(value, cst.Call) and ctx.resolve(value.func) == "torch.device":
        args = positional(value)
        if len(args) == 1 and len(value.args) == 1:
            return string_value(args[0].value)
    return None
