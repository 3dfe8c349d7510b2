"""A sync used only to record a metric → keep the value on the device; read it outside.

    self.losses.append(loss.item())   →   self.losses.append(loss.detach())
    self.last_loss = loss.item()      →   self.last_loss = loss.detach()

Offered when the statement is exactly `<container>.append(<t>.item())`: the value only goes
into a list for later reading. Unsafe: the list now holds 0-dim device tensors instead of
Python numbers. Each has the same value (`float(v)` gives exactly what `.item()` gave), but
code reading the list must convert it (`torch.stack(losses).tolist()` after the loop, one
sync instead of one per step), printing shows `tensor(...)`, sums of the list are computed
in the tensor's dtype rather than as Python floats, and each entry keeps a device tensor
alive. The host copy, and its wait for the GPU, happens where the list is read.

The same holds for a number stored in an attribute (`self.<name> = <t>.item()`, the whole
statement): the attribute then holds a 0-dim device tensor with the same value; `float()`,
`:.3f` formatting and arithmetic still work on it. In a captured step the attribute names the
graph's memory, so after each replay it holds that replay's value, where the number would have
stayed the one seen at capture.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability
from graphsafe.rewriters.edits import assignment_of


def append_item_fix(item_call: cst.Call, ctx):
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    append = small.value
    if not (isinstance(append.func, cst.Attribute) and append.func.attr.value == "append"):
        return None
    if len(append.args) != 1 or append.args[0].keyword is not None or append.args[0].star or append.args[0].value is not item_call:
        return None
    if ctx.kind(append.func.value).is_tensor:
        return None
    receiver = ctx.code_for(item_call.func.value)
    return ("Append the tensor (`.detach()`) and convert the list after the loop", [(item_call, f"{receiver}.detach()")],
            Applicability.UNSAFE, "the list then holds tensors where it held Python numbers")


def attribute_item_fix(item_call: cst.Call, ctx):
    small = assignment_of(ctx, item_call)
    if small is None:
        return None
    target = small.targets[0].target
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
        return None
    receiver = ctx.code_for(item_call.func.value)
    return ("Store the tensor (`.detach()`): read it with `float()` outside the step",
            [(item_call, f"{receiver}.detach()")], Applicability.UNSAFE,
            "the attribute then holds a tensor where it held a Python number")
