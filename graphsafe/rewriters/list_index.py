"""`v[:, [-1]]` → `v[:, -1:]`: a literal list index as the slice that selects the same rows.

A Python list as an index becomes a CPU index tensor copied to the GPU, which capture refuses;
a slice of literals is a view, computed on the device. The values and the shape are the same
(one element keeps its dimension, like the list did). Unsafe: the list index gives a copy and
the slice a view of `v`, so an in-place write to either afterwards (`a += 1`, `v.zero_()`) is
seen through the other; and an index out of range gives an empty slice, where the list raised
an IndexError, or, on a tensor with no elements (nothing to check), kept a dimension of one
element.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability

REASON = ("a slice is a view of the tensor where the list index made a copy: an in-place write to either "
          "afterwards is seen through the other (and on a tensor with no elements an out-of-range index "
          "gives an empty dimension, where the list kept one)")


def literal_int(expr: cst.BaseExpression) -> int | None:
    """`3`, `-1`: an integer literal's value (None for anything else)."""
    if type(expr) is cst.Integer:
        return int(expr.evaluated_value)
    if (type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus
            and type(expr.expression) is cst.Integer):
        return -int(expr.expression.evaluated_value)
    return None


def slice_for(indices: list[int]) -> str | None:
    """The slice selecting exactly these indices in this order (one index, or a run of
    consecutive non-negative ones), or None where no slice does (`[2, 0]`, `[0, 2]`, `[-2, -1]`)."""
    if len(indices) == 1:
        k = indices[0]
        return "-1:" if k == -1 else f"{k}:{k + 1}"
    if all(k >= 0 for k in indices) and indices == list(range(indices[0], indices[0] + len(indices))):
        return f"{indices[0]}:{indices[-1] + 1}"
    return None


def list_index_fix(index: cst.List):
    """A fix replacing the list `[k]` (or `[a, a+1, ...]`) of an index by its slice, or None."""
    values = [literal_int(e.value) for e in index.elements]
    if not values or any(v is None or type(e) is not cst.Element for v, e in zip(values, index.elements)):
        return None
    replacement = slice_for(values)  # type: ignore[arg-type]
    if replacement is None:
        return None
    return (f"Index with the slice `{replacement}`", [(index, replacement)], Applicability.UNSAFE, REASON)
