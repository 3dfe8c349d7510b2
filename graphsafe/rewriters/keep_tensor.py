"""`.item()` / `float(t)` as an operand of tensor arithmetic → keep the tensor.

Also `v = t.item()` (or `float(t)`) when every read of `v` in the function is such an operand
(not a condition, not printed, not returned, not passed on): `v = t.reshape(())`.

    y = x * t.item()      →   y = x * t.reshape(())
    y = x - float(t)      →   y = x - t.reshape(())
    y = x + t.sum().item() →  y = x + t.sum()         (a full reduction is already 0-dim)

What makes it the same computation (CPU: tests/test_rewriter_keep_tensor.py; CUDA:
bench/scalar_fix_cuda.py on an H100 with torch 2.11):
- shape: `.item()` needs exactly one element; `.reshape(())` makes that element a 0-dim tensor,
  which broadcasts like a Python number (a `(1, 1)` tensor would not) and raises like `.item()`
  on more elements;
- values: for `x + v`, `x - v` and `x * v` with a float32 or float64 operand the kernel
  converts the scalar to the operation's math type whether it arrives as a Python number or
  as a 0-dim tensor: bitwise equal on CPU and CUDA. With a bfloat16/float16 operand it is equal
  on CPU only: CUDA rounds a 0-dim device tensor to the operand's dtype before the math, and
  uses a Python number in float32. `x / v` is not offered (CUDA multiplies by `1 / v` for a
  number and divides truly by a tensor), nor the scalar on the left (see _OPERATORS) or `**`
  (an integer exponent takes another kernel);
- dtype: a 0-dim tensor does not promote a dimensioned tensor of its own category or above,
  like a Python number. It differs when the other operand is an integer or bool tensor (a
  Python float gives the default dtype, a 0-dim float64 tensor keeps float64) or is itself
  0-dim of another floating dtype (bfloat16 loss + float32 0-dim → float32, + Python float →
  bfloat16). The analyzer does not know dtypes, ranks or devices, so the fix is unsafe:
  applied with `--unsafe-fixes`, after checking those cases.
`int(t)` is never rewritten: it truncates a float and changes the result's category.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from graphsafe.model import Applicability
from graphsafe.rewriters.edits import assignment_of

FixSpec = tuple[str, list[tuple[object, str]], Applicability]

# Operators for which `x OP number` and `x OP zero_dim_tensor` run the same kernel math.
# Only the right operand: Python runs `v * x` as `x.__rmul__(v)` (the scalar second), while
# `t * x` passes the 0-dim tensor first, and a float16/bfloat16 CPU kernel then rounds it to
# the operand's dtype before the math (1e30 becomes inf: 0 * 1e30 = 0, but 0 * inf = nan).
# No `/`: CUDA divides by a Python number as `x * (1 / v)` and by a tensor truly.
_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply)

# Reductions that return a 0-dim tensor when called without arguments.
_FULL_REDUCTIONS = frozenset("sum mean max min amax amin prod norm std var logsumexp".split())
def scalar_read(expr: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """The tensor whose value `expr` reads to the host (`t` in `t.item()` / `float(t)`), if any."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args:
        return func.value if not ctx.kind(func.value).not_tensor else None
    if isinstance(func, cst.Name) and func.value == "float" and len(expr.args) == 1:
        arg = expr.args[0]
        if arg.keyword is None and not arg.star and ctx.kind(arg.value).is_tensor:
            return arg.value
    return None


def _is_full_reduction(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in _FULL_REDUCTIONS
    )


def operand_fix(node: cst.BinaryOperation, operand: cst.BaseExpression, ctx) -> FixSpec | None:
    """The fix for `operand` (a `.item()`/`float()` read) of the arithmetic `node`, if offered."""
    source = scalar_read(operand, ctx)
    if source is None:
        return None
    other = node.left
    if operand is not node.right or not isinstance(node.operator, _OPERATORS) or not ctx.kind(other).is_tensor:
        return None
    if scalar_read(other, ctx) is not None:
        return None  # `a.item() * b.item()` is Python math: no tensor to keep
    code = ctx.code_for(source)
    if not _is_full_reduction(source):
        atomic = isinstance(source, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        code = f"{code}.reshape(())" if atomic else f"({code}).reshape(())"
    title = "Keep the tensor instead of reading it to the host (the result dtype can differ)"
    return (title, [(operand, code)], Applicability.UNSAFE, KEEP_REASON)


# --- `v = t.item()` whose every read is such an operand --------------------------------------

@dataclass
class _Binding:
    call: cst.Call
    source: cst.BaseExpression  # the tensor read (`t`)
    name: str
    assign: cst.Assign
    function: cst.FunctionDef
    place: object


@dataclass
class ScalarBindings:
    """`v = t.item()` / `v = float(t)` bindings and the reads seen in a safe position."""

    bindings: list[_Binding] = field(default_factory=list)
    safe_reads: set[int] = field(default_factory=set)


def note_safe_read(node: cst.BinaryOperation, ctx, state: ScalarBindings) -> None:
    if isinstance(node.right, cst.Name) and isinstance(node.operator, _OPERATORS) and ctx.kind(node.left).is_tensor:
        state.safe_reads.add(id(node.right))


def note_binding(call: cst.Call, ctx, state: ScalarBindings) -> bool:
    """Record `v = <call>` (the whole statement) for a decision at the end of the file."""
    assign = assignment_of(ctx, call)
    if assign is None:
        return False
    line = ctx.statement
    target = assign.targets[0].target
    function = next((u.node for u in reversed(ctx.scope.units) if u.is_function), None)
    source = scalar_read(call, ctx)  # kinds are known only while the function is walked
    if not isinstance(target, cst.Name) or not isinstance(function, cst.FunctionDef) or source is None:
        return False
    ctx.anchors[id(call)] = line  # where its code is written, for the fix built later
    state.bindings.append(_Binding(call, source, target.value, assign, function, ctx.here()))
    return True


def binding_fix(binding: _Binding, ctx, state: ScalarBindings) -> FixSpec | None:
    from graphsafe.rewriters.scalar_buffer import reads_of

    reads = reads_of(binding.function.body, binding.name, allowed=binding.assign)
    if not reads or any(id(read) not in state.safe_reads for read in reads):
        return None
    source = binding.source
    code = ctx.code_for(source, at=binding.call)
    if not _is_full_reduction(source):
        atomic = isinstance(source, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        code = f"{code}.reshape(())" if atomic else f"({code}).reshape(())"
    title = f"Keep `{binding.name}` a tensor: it only feeds tensor arithmetic (the result dtype can differ)"
    return (title, [(binding.call, code)], Applicability.UNSAFE, KEEP_REASON)


KEEP_REASON = "the value becomes a tensor where it was a Python number: its dtype and what code expecting a number does with it can change"
