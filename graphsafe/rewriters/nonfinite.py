"""Checks kept on the device with `torch._assert_async`, which captures (checked on an H100,
torch 2.11: captured and replayed): the check stays, only where and when it fails changes.

- GS110: `clip_grad_norm_(..., error_if_nonfinite=True)` → the same clipping without the host
  check, followed by an assertion that the returned norm is finite;
- GS201: `assert <tensor condition>, "message"` → `torch._assert_async(<condition>, "message")`."""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability
from graphsafe.rewriters.keywords import keyword_fix
from graphsafe.rewriters.tensor_condition import device_condition, formats_no_tensor

MESSAGE = '"clip_grad_norm_: the total norm of the gradients is non-finite"'
TITLE_CHECK = "Check the norm on the device (`torch._assert_async`) instead of on the host"
TITLE_OFF = "Set `error_if_nonfinite=False` (check the returned norm after replay)"


def nonfinite_check_fix(node: cst.Call, ctx):
    """The device-side check where the call is a statement of its own (`clip_grad_norm_(...)`
    or `norm = clip_grad_norm_(...)`) and `torch` is imported; else the check turned off."""
    line = ctx.statement
    small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    if small is None or ctx.resolve(cst.Name("torch")) != "torch":
        return (TITLE_OFF, [keyword_fix(ctx, node, "error_if_nonfinite", "False")], Applicability.UNSAFE, OFF_REASON)
    call = node.with_changes(args=[
        a.with_changes(value=cst.Name("False")) if a.keyword is not None and a.keyword.value == "error_if_nonfinite"
        else a for a in node.args])
    if isinstance(small, cst.Expr) and small.value is node:
        code = f"torch._assert_async(torch.isfinite({ctx.code_for(call, at=node)}), {MESSAGE})"
        return (TITLE_CHECK, [(node, code)], Applicability.UNSAFE, ASSERT_REASON)
    if (isinstance(small, cst.Assign) and small.value is node and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)):
        name = small.targets[0].target.value
        indent = "".join(ctx.statement_indents.get(id(line), ()))
        code = (f"{ctx.code_for(small.with_changes(value=call), at=node)}\n"
                f"{indent}torch._assert_async(torch.isfinite({name}), {MESSAGE})")
        return (TITLE_CHECK, [(small, code)], Applicability.UNSAFE, ASSERT_REASON)
    return (TITLE_OFF, [keyword_fix(ctx, node, "error_if_nonfinite", "False")], Applicability.UNSAFE, OFF_REASON)


def assert_fix(node: cst.Assert, ctx):
    """`assert t, "msg"` where the test is one tensor, or tensor tests joined by `and`/`or`/`not`
    (one boolean tensor: rewriters/tensor_condition.py). The message is a plain string, or an
    f-string or `"...".format(...)` none of whose values is known to be a tensor:
    `_assert_async` takes it formatted on every call (assert formats it only on failure), so a
    tensor in it would be a host read each step; a Python value in it is frozen at capture,
    which is why the fix is unsafe anyway."""
    if ctx.resolve(cst.Name("torch")) != "torch":
        return None
    if isinstance(node.test, (cst.BooleanOperation, cst.UnaryOperation)):
        condition = device_condition(node.test, ctx)  # `a or b`, `not t`: one tensor (tensor_condition.py)
    else:
        condition = ctx.code_for(node.test) if ctx.kind(node.test).is_tensor else None
    if condition is None:
        return None
    msg = node.msg
    if msg is not None and not isinstance(msg, cst.SimpleString) and not formats_no_tensor(msg, ctx):
        return None
    message = ctx.code_for(msg) if msg is not None else '"assertion failed"'
    code = f"torch._assert_async({condition}, {message})"
    return ("Check on the device: `torch._assert_async` (fails as a device-side assert)", [(node, code)],
            Applicability.UNSAFE, ASSERT_REASON + "; it also runs under `python -O`")


OFF_REASON = "a non-finite gradient norm no longer raises"
ASSERT_REASON = "a failed check is a device-side assert that ends the CUDA context, not a catchable exception"
