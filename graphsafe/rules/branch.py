"""Data-dependent control flow (GS2xx): Python branching on tensor values."""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Consequence, Example, Principle
from graphsafe.analyzer.tensor_use import reason_in
from graphsafe.rewriters.nonfinite import assert_fix
from graphsafe.rewriters.where import if_expression_fix, if_statement_fix
from graphsafe.rules.base import Callees, Rule
from graphsafe.rules.gpu_only import is_builtin


def truth_tested(expr: cst.BaseExpression):
    """The operands whose truth value Python evaluates when `expr` is used as a condition."""
    if isinstance(expr, cst.BooleanOperation):
        yield from truth_tested(expr.left)
        yield from truth_tested(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from truth_tested(expr.expression)
    else:
        yield expr


def any_all_element(expr: cst.BaseExpression, ctx) -> tuple[str, cst.BaseExpression] | None:
    """`any(t.isnan().any() for t in ts)`, `all(mask)`: the builtin and an element it tests for
    truth (the comprehension's element, or the iterated value itself: iterating a tensor gives
    tensors). Python takes each element's truth value on the host."""
    if type(expr) is not cst.Call or type(expr.func) is not cst.Name or expr.func.value not in ("any", "all"):
        return None
    if len(expr.args) != 1 or expr.args[0].keyword is not None or expr.args[0].star:
        return None
    if not is_builtin(expr.func, expr.func.value, ctx) or expr.func.value in ctx.module_defs:
        return None
    arg = expr.args[0].value
    if type(arg) in (cst.GeneratorExp, cst.ListComp):
        ctx.bind_comprehension(arg)  # the element's kind depends on the loop's names
        return expr.func.value, arg.elt
    return expr.func.value, arg


def _host_tensors_only(test: cst.BaseExpression, ctx) -> bool:
    """Does `test` read tensors, each known to be in host memory (`total = probs.cpu().sum()`
    then `total == 0`)?"""
    tp = type(test)
    if tp is cst.BooleanOperation:
        return _host_tensors_only(test.left, ctx) and _host_tensors_only(test.right, ctx)
    if tp is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _host_tensors_only(test.expression, ctx)
    parts = [test.left, *(c.comparator for c in test.comparisons)] if tp is cst.Comparison else [test]
    tensors = [p for p in parts if not ctx.kind(p, note=False).not_tensor]
    return bool(tensors) and all(ctx.host_origin(p) is not None for p in tensors)


class TensorBranch(Rule):
    """## What it does
    Flags Python control flow on a tensor value inside a captured region: `if t:`, `while t:`,
    `assert t`, `a if t else b`, `t and u`, `not t`, such as `if (x > 0).any():`.

    ## Why is this bad?
    Python needs the tensor's truth value on the host, which waits for the GPU: capture fails.
    And a graph records one path: even if the value were known, replay would always take the
    branch seen at capture.

    ## Example
    ```python
    if loss > 10.0:
        loss = loss * 0.1
    ```

    ## Use instead
    ```python
    loss = torch.where(loss > 10.0, loss * 0.1, loss)
    ```

    ## Fix safety
    Unsafe. `torch.where` computes both arms and broadcasts them with the condition: where the
    arms or the condition differ in shape or dtype (`y / 2` on an integer `y`, a `(1,)`
    condition over 0-dim arms) the result differs from the arm the branch took, and gradients
    see NaN/inf from the unused arm. Not offered when an arm indexes, divides Python numbers
    or reads an attribute of an object not known to hold a tensor (the branch may guard it:
    `t[i + 1]` past the end), when the condition uses a name bound by tuple unpacking (it may be
    a Python bool: `.bool()` would raise), or unless the arms are side-effect-free tensor
    expressions assigning the same names (or both `return`).

    `assert t, "message"` (one tensor as the whole test; a plain string message, or an f-string
    of values not known to be tensors) becomes `torch._assert_async(t, "message")`, which
    captures: a true condition changes nothing; a
    false one raises a RuntimeError instead of an AssertionError on the CPU, and on CUDA fails as
    a device-side assert that ends the process's CUDA context (the error surfaces at the next
    sync). It also runs under `python -O`, which drops `assert`. An f-string message is
    formatted on every call instead of only on failure, and its values are those of the capture
    on every replay. Unsafe.

    ## Precise semantics
    The forms: `if t:`, `while t:`, `assert t`, `a if t else b`, `t and u`, `t or u`, `not t`,
    including `if (x > 0).any():`; the builtins `any`/`all` over tensors in such a test
    (`if any(torch.isnan(g).any() for g in grads):`, `assert all(torch.isfinite(x))`); and a
    chained comparison whose first pair holds a tensor (`t0 < t < t1` is `t0 < t and t < t1`).
    Also a test on a size that depends on tensor data, and a `for` loop over such a tensor: the
    length of `x[mask]`, `x.nonzero()`, `torch.where(c)`, `x.unique()` or `x.masked_select(m)`
    (`if not x.shape[0]:`, `n = len(x); if n > k:`, `while order.numel() > 0:` where the loop
    rebinds `order = rest[iou <= t]`, `for i in idx:`); the report names the selection. So is a
    test on a number read from the device (`n = (m & ~seen).sum().item()`, `int(t.max())`, or
    what is computed or accumulated from one: `min(n, k)`, `count += n`): the read itself is
    GS101's or GS105's, and the branch it decides is one more place recorded once at capture.

    An `assert` whose tensors are all known to be in host memory (built without `device=`, or
    copied there by `.cpu()`: analyzer/host_resident.py) is not reported: it reads no device
    value, and it only validates (the `if` that chooses a path on such a value is).
    """
    fixable = True

    code = "GS201"
    name = "tensor-branch"
    principle = Principle.STATIC
    consequence = Consequence.CAPTURE_FAILS
    summary = "Python `if`/`while`/`assert`/`and`/`or`/`not`/chained comparison on a tensor value"
    message = "{what} on {value} needs it on the host and records one branch: {consequence}"
    valid = (
        "if x.shape[0] > 1:\n    pass",
        "if y is None:\n    pass",
        "if x.dtype == torch.float16:\n    pass",
        "if n > 0:\n    pass",
        "z = torch.where(x > 0, x, y)",
        "if self.training:\n    pass",
        "if len(x) > 2:\n    pass",
        "if isinstance(x, torch.Tensor):\n    pass",
        "if any(p.grad is None for p in self.parameters()):\n    pass",
        "if all(s > 1 for s in x.shape):\n    pass",
        "ema = {k: 1.0 for k in range(n)}\nif ema[0] > 0:\n    pass",
        "ok = 0 < n < 10",
        "small = x.shape[0] < 4 < n",
    )
    invalid = (
        "if x.sum() > 0:\n    pass",
        "if (x > 0).any():\n    pass",
        "while x.max() > 1:\n    x = x / 2",
        Example("assert (x >= 0).all()", fixed='torch._assert_async((x >= 0).all(), "assertion failed")'),
        Example('assert x.max() < 10, "out of range"', fixed='torch._assert_async(x.max() < 10, "out of range")'),
        'assert x.max() < 10, f"max {x.max()}"',  # an f-string message would format a tensor: no fix
        Example('assert x.max() < 10, f"layer {self.index}"',
                fixed='torch._assert_async(x.max() < 10, f"layer {self.index}")'),
        "z = x if (x > 0).all() else y",
        "ok = not (x > 0).all()",
        "z = x.any() and y",
        "inside = y < x < y + 1.0",  # a chained comparison tests `y < x` in Python
        "if any(torch.isnan(p.grad).any() for p in self.parameters()):\n    pass",
        "if not all([torch.isfinite(g).all() for g in (x, y)]):\n    pass",
        "assert all(torch.isfinite(x))",
        "ema = {k: x[k] for k in range(n)}\nif ema[0] > 0:\n    pass",  # a dict of tensors
        Example("if x.sum() > 0:\n    z = x * 2\nelse:\n    z = x", fixed="z = torch.where(x.sum() > 0, x * 2, x)"),
        Example("z = x * 2 if (x > 0).all() else y", fixed="z = torch.where((x > 0).all(), x * 2, y)"),
        Example("y = x + 1\nif y.mean() > 1:\n    y = y / 2", fixed="y = x + 1\ny = torch.where(y.mean() > 1, y / 2, y)"),
        Example("if (x < 0).any():\n    return x.abs()\nelse:\n    return x", fixed="return torch.where((x < 0).any(), x.abs(), x)"),
    )

    @classmethod
    def format_message(cls, **fields: str) -> str:
        return super().format_message(**{"value": "a tensor value", **fields})

    def _check(self, test: cst.BaseExpression, ctx, what: str, fix=None) -> None:
        for operand in truth_tested(test):
            if ctx.kind(operand).is_tensor:
                # a callable: built only if kept
                ctx.report(self, operand, fix=fix, what=what + _why(operand, ctx))
                continue
            found = any_all_element(operand, ctx)
            if found is not None and ctx.kind(found[1]).is_tensor:
                ctx.report(self, operand, what=f"{what} through `{found[0]}(...)` of tensors")
                continue
            size = ctx.data_size_reason(operand)
            if size is not None:
                # `if not n:` with `n = x.shape[0]` after `x = x[mask]`: the count is tensor data
                ctx.report(self, operand, what=what, value=f"a number that depends on tensor data ({size})")

    def visit_If(self, node: cst.If, ctx) -> None:
        self._check(node.test, ctx, "`if`", fix=lambda: if_statement_fix(node, ctx))

    def visit_While(self, node: cst.While, ctx) -> None:
        ctx.note_loop_sizes(node.body)  # `order = rest[keep]` in the body decides the next test
        self._check(node.test, ctx, "`while`")

    def visit_For(self, node: cst.For, ctx) -> None:
        # `for i in idx:` with `idx = x.nonzero()`: the trip count is tensor data
        reason = ctx.data_size_reason(node.iter, tensor=True)
        if reason is not None:
            ctx.report(self, node.iter, what="a `for` loop",
                       value=f"a tensor whose length depends on its data ({reason})")

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        if _host_tensors_only(node.test, ctx):
            return
        self._check(node.test, ctx, "`assert`", fix=lambda: assert_fix(node, ctx))

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        self._check(node.test, ctx, "a conditional expression", fix=lambda: if_expression_fix(node, ctx))

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> None:
        # The left operand's truth decides whether the right one is evaluated.
        what = "`and`" if isinstance(node.operator, cst.And) else "`or`"
        for operand in truth_tested(node.left):
            if ctx.kind(operand).is_tensor:
                ctx.report(self, operand, what=what + _why(operand, ctx))

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        # `a < b < c` is `(a < b) and (b < c)`: the first comparison's truth is read in Python.
        if len(node.comparisons) < 2 or not isinstance(node.comparisons[0].operator, _ORDERING):
            return
        if ctx.kind(node.left).is_tensor or ctx.kind(node.comparisons[0].comparator).is_tensor:
            ctx.report(self, node, what="a chained comparison (`a < b < c` tests `a < b` in Python)" + _why(node, ctx))

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> None:
        if isinstance(node.operator, cst.Not):
            self._check(node.expression, ctx, "`not`")

    calls = Callees(names=("max", "min"))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        compared = extreme_operands(node, ctx)
        if compared is not None:
            # `max(d1, d2)`, `max([norm(t) for t in ts])`: Python compares the values with `>`
            # (a tuple of tensors: `max(norms)` compares its elements)
            tensor = next((v for v in compared if ctx.kind(v).is_tensor or ctx.kind(v).tag == "tensor-tuple"), None)
            if tensor is not None:
                ctx.report(self, node, what=f"Python `{node.func.value}(...)` (it compares its values with `<`)"
                           + _why(tensor, ctx))
            return


def extreme_operands(call: cst.Call, ctx) -> list[cst.BaseExpression] | None:
    """The values the builtin `max`/`min` compares in `call`: its arguments, or the elements of
    its one iterable (a comprehension's element, or the iterable itself: iterating a tensor gives
    tensors); None for another call or one with `key=`/`*args` (what is compared is not known)."""
    func = call.func
    if type(func) is not cst.Name or func.value not in ("max", "min") or not call.args:
        return None
    if any(a.star or (a.keyword is not None and a.keyword.value != "default") for a in call.args):
        return None
    if not is_builtin(func, func.value, ctx) or func.value in ctx.module_defs:
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    if len(positional) != 1:
        return positional
    only = positional[0]
    if type(only) in (cst.GeneratorExp, cst.ListComp):
        ctx.bind_comprehension(only)
        return [only.elt]
    if type(only) in (cst.List, cst.Tuple):
        return [e.value for e in only.elements]
    return [only]


def _why(expr: cst.BaseExpression, ctx) -> str:
    """` (`x` is a tensor: ...)` where the tensor-ness of a value in `expr` was inferred from its
    use or from a helper, for the message; "" where declared or plain."""
    reason = reason_in(expr, lambda e: ctx.kind(e, note=False))
    return f" ({reason})" if reason else ""


_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)

RULES = (TensorBranch,)
