"""A compound condition on tensors as one boolean tensor expression (for a device-side check).

    diff.all() or (~diff).all()     →   torch.logical_or(diff.all(), (~diff).all())
    not (x < 0).any() and y.all()   →   torch.logical_and(~((x < 0).any()), y.all())

`torch._assert_async` takes one tensor, while `assert a or b` takes the truth of each operand
on the host. Each operand must be a plain tensor test (where.condition_code: a proven tensor,
pure, not a name bound by unpacking); `and`/`or` become `torch.logical_and`/`logical_or`, so
for one-element operands the result is true exactly when Python's would be (a nonzero value,
NaN included, is true for both). The difference: every operand is now evaluated, where Python
stopped at the first that decided; so an operand after the first must be one the ones before
it cannot be guarding (no indexing, no division of Python numbers: where._unguarded).
Reads only the tree and the analyzer's kinds: no torch (the static path)."""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import descendants

from graphsafe.rewriters.where import _unguarded, _uses_unpacked, condition_code


def device_condition(test: cst.BaseExpression, ctx) -> str | None:
    """`test` as a boolean tensor expression, or None when one of its operands is not a plain
    tensor test or may be guarded by an operand before it."""
    if isinstance(test, cst.BooleanOperation):
        left = device_condition(test.left, ctx)
        right = device_condition(test.right, ctx)
        if left is None or right is None or not _unguarded(test.right, test.left, ctx):
            return None
        function = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return f"torch.{function}({left}, {right})"
    if (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.BooleanOperation)):
        inner = device_condition(test.expression, ctx)
        return None if inner is None else f"torch.logical_not({inner})"
    return condition_code(test, ctx)


def formats_no_tensor(msg: cst.BaseExpression, ctx) -> bool:
    """A message built from Python values only: an f-string or `"...".format(...)` whose values
    hold no call, no known tensor and no name bound by unpacking (which may be a tensor whatever
    the analyzer guessed): `_assert_async` formats the message on every call, where assert did
    only on failure, so `dt.item()` or a tensor `y0` in it would be a host read each step."""
    if isinstance(msg, cst.FormattedString):
        values = [part.expression for part in msg.parts if isinstance(part, cst.FormattedStringExpression)]
    elif (isinstance(msg, cst.Call) and isinstance(msg.func, cst.Attribute) and msg.func.attr.value == "format"
          and isinstance(msg.func.value, cst.SimpleString)):
        if any(a.star for a in msg.args):
            return False
        values = [a.value for a in msg.args]
    else:
        return False
    return all(_plain_value(value, ctx) for value in values)


def _plain_value(value: cst.BaseExpression, ctx) -> bool:
    if any(isinstance(node, cst.Call) for node in (value, *descendants(value))):
        return False
    return not ctx.kind(value).is_tensor and not _uses_unpacked(value, ctx)


def assert_notes(applied, shown) -> list[str]:
    """graph's note for the asserts its fixes turned into device-side checks (nonfinite.assert_fix);
    `shown(path)`: the path as the user knows it."""
    lines = sorted({f"{shown(d.path)}:{d.start.line}" for d in applied
                    if d.fix is not None and d.fix.title.startswith("Check on the device")})
    if not lines:
        return []
    return [f"{len(lines)} assert(s) now checked on the device (torch._assert_async): bad input still fails, "
            f"asynchronously, as a device-side assert that ends the CUDA context ({', '.join(lines[:6])}"
            f"{', ...' if len(lines) > 6 else ''})"]
