"""GS402: `torch.tensor(<Python number>, dtype=..., device=<device>)` → `torch.full((), <number>,
dtype=..., device=<device>)`. The number becomes a fill kernel's argument instead of host memory
copied to the device, so it captures; the value and dtype are the same."""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability

_KEYWORDS = frozenset({"dtype", "device"})  # requires_grad, pin_memory, ...: not offered


def full_fix(node: cst.Call, ctx):
    """Offered for one positional argument that is a Python value (a number: not a tensor, list,
    tuple, string or comprehension) and only `dtype=`/`device=` keywords. Unsafe: for numbers in
    the dtype's range both calls give the same value and dtype (bool/int64/default float
    inferred alike), but `torch.full` raises for a number outside the range of an explicit
    dtype where `torch.tensor` rounds it (3.5e38 → inf in float32), and without a dtype
    `torch.tensor` takes a NumPy scalar's own dtype where `torch.full` takes the default one."""
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) != 1 or positional[0].star:
        return None
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    if not keywords <= _KEYWORDS:
        return None
    value = positional[0].value
    if not is_number(value, ctx):
        return None  # a list would make torch.full fail; a tensor would be read on the host
    rest = ", ".join(ctx.code_for(a, at=node).rstrip(", ") for a in node.args if a.keyword is not None)
    code = f"torch.full((), {ctx.code_for(value, at=node)}{', ' + rest if rest else ''})"
    return ("Fill a 0-dim tensor on the device (`torch.full((), value, ...)`)", [(node, code)],
            Applicability.UNSAFE, "without a dtype, `torch.full` takes the default dtype where `torch.tensor` took the value's own")


_NUMBER_FUNCTIONS = frozenset({"float", "int", "len", "round"})
# Operators a list, tuple or string does not have: with non-tensor operands the result is a number.
_NUMERIC_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.Power)


def is_number(expr: cst.BaseExpression, ctx) -> bool:
    """Whether `expr` is a Python number by its form: a numeric literal, a parameter declared a
    number, `float(...)`/`int(...)`/`len(...)`/`round(...)`, `math.*`, or arithmetic that only
    numbers support. A name or attribute of unknown type is not (it may hold a list)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return is_number(expr.expression, ctx)
    if isinstance(expr, cst.Name):
        return ctx.is_number_param(expr.value)
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value in _NUMBER_FUNCTIONS:
            return True
        return (ctx.resolve(expr.func) or "").startswith("math.")
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, _NUMERIC_OPERATORS):
            return not ctx.kind(expr.left).is_tensor and not ctx.kind(expr.right).is_tensor and (
                ctx.kind(expr.left).not_tensor and ctx.kind(expr.right).not_tensor)
        return is_number(expr.left, ctx) and is_number(expr.right, ctx)
    return False
