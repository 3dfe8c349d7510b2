"""Code that runs only where a tensor was tested to be on the CPU.

`if tensor.device.type == "cpu": return tensor.to(device, non_blocking=True)` is a helper's
host-to-device path: whenever it runs, it copies pageable host memory to the GPU (refused while
a stream is captured). The test may sit in a local flag (`moving = t.device.type == "cpu" and
device.type == "cuda"`, then `if moving:`); every binding of the flag must say so. This module
only answers "is `name` known to be a CPU tensor here, and by which test?"; GS402
(rules/memory.py) decides what to report.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.rules.syntax import string_value


def _is_cpu_text(expr: cst.BaseExpression) -> bool:
    text = string_value(expr)
    return text is not None and text.split(":")[0] == "cpu"


def _device_of(expr: cst.BaseExpression, name: str) -> bool:
    """`name.device`, `name.device.type` or `str(name.device)`."""
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "str" and len(expr.args) == 1:
        expr = expr.args[0].value
    if type(expr) is cst.Attribute and expr.attr.value == "type":
        expr = expr.value
    return (type(expr) is cst.Attribute and expr.attr.value == "device"
            and type(expr.value) is cst.Name and expr.value.value == name)


def _cpu_device(expr: cst.BaseExpression) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if type(expr) is cst.Call and expr.args and dotted_tail(expr.func) == "device":
        expr = expr.args[0].value
    return _is_cpu_text(expr)


def dotted_tail(expr: cst.BaseExpression) -> str | None:
    if type(expr) is cst.Attribute:
        return expr.attr.value
    return expr.value if type(expr) is cst.Name else None


def says_cpu(test: cst.BaseExpression, name: str) -> bool:
    """Is `test`, when true, a proof that the tensor `name` is on the CPU? (`name.is_cpu`,
    `name.device.type == "cpu"`, `str(name.device) == "cpu"`, `name.device == torch.device("cpu")`,
    or a conjunction holding one of them.)"""
    if type(test) is cst.BooleanOperation:
        if type(test.operator) is cst.And:
            return says_cpu(test.left, name) or says_cpu(test.right, name)
        return says_cpu(test.left, name) and says_cpu(test.right, name)
    if type(test) is cst.Attribute:
        return test.attr.value == "is_cpu" and type(test.value) is cst.Name and test.value.value == name
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if type(target.operator) is not cst.Equal:
            return False
        left, right = test.left, target.comparator
        return (_device_of(left, name) and _cpu_device(right)) or (_device_of(right, name) and _cpu_device(left))
    return False


def _flag_says_cpu(function: cst.FunctionDef, flag: str, name: str) -> bool:
    """Every binding of the local `flag` in `function` is a CPU test of `name` (at least one)."""
    found = False
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name and target.target.value == flag:
                    if not says_cpu(node.value, name):
                        return False
                    found = True
                elif flag in _bound_names(target.target):
                    return False
        elif type(node) in (cst.AugAssign, cst.AnnAssign) and flag in _bound_names(node.target):
            return False
        stack.extend(node.children)
    return found


def _bound_names(target: cst.BaseExpression) -> set[str]:
    if type(target) is cst.Name:
        return {target.value}
    if type(target) in (cst.Tuple, cst.List):
        return {n for e in target.elements for n in _bound_names(e.value)}
    return set()


def cpu_test(ctx, name: str) -> str | None:
    """The test (as written) under whose truth the current statement runs and which proves the
    local `name` is a CPU tensor, or None. Only the `if` blocks around the statement are read,
    the innermost first; `name` must not be rebound between the test and the statement other
    than by a conversion the caller has already judged (the caller passes the receiver)."""
    function = ctx.function_node
    if function is None:
        return None
    statement = ctx.statement
    while statement is not None and statement is not function:
        owner = ctx.enclosing_statement(statement)
        if type(owner) is cst.If and any(s is statement for s in owner.body.body):
            test = owner.test
            if says_cpu(test, name):
                return ctx.code_for(test)
            if type(test) is cst.Name and test.value not in ctx.params and _flag_says_cpu(function, test.value, name):
                return ctx.code_for(test)
        statement = owner
    return None
