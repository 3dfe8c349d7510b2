"""`repeat_interleave(x, repeats)` → `repeat_interleave(x, repeats, output_size=n)` when `n` is provable.

Only offered when `repeats` is written as a 1-D `torch.tensor([...])` of non-negative int
literals with at least two entries (and an integer or default dtype): torch then requires
`len(repeats)` to equal the input's size along `dim` (or its element count when `dim` is
None), and the output's size along `dim` is exactly `sum(repeats)`; a mismatched input raises
the same error with or without `output_size`. A single-entry `repeats` broadcasts (the
output size depends on the input) and a tensor built elsewhere is not read: no fix. A wrong
`output_size` silently produces garbage on CUDA, so nothing else is guessed.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability
from graphsafe.rewriters.keywords import keyword_fix
from graphsafe.rewriters.literals import literal_tensor

_INT_REPEATS = frozenset({None, "int64", "long", "int32", "int"})


def known_output_size(repeats: cst.BaseExpression, ctx) -> int | None:
    literal = literal_tensor(repeats, ctx)
    if literal is None or literal.dtype not in _INT_REPEATS or not isinstance(literal.values, list):
        return None
    values = literal.values
    if len(values) == 1 or not all(type(v) is int and v >= 0 for v in values):
        return None
    return sum(values)


def output_size_fix(call: cst.Call, repeats: cst.BaseExpression, ctx):
    size = known_output_size(repeats, ctx)
    if size is None:
        return None
    return (f"Pass `output_size={size}` (the sum of the literal repeats)",
            [keyword_fix(ctx, call, "output_size", str(size))], Applicability.SAFE)
