"""Calls of a helper that builds a device tensor from host data (GS402 at the call site).

`scalar_like(x, 0.0)` with `def scalar_like(p, v): return torch.tensor(v, device=p.device)` in
another module: the helper's own line is reported where it copies, but each call in the region
is a copy of its own, and the call is what the region's author changes (a tensor made once,
outside the step). The walker sees only the call: a project function (not torch, numpy, math
or a builtin) given a Python number. It reports it on a condition the project pass decides
(`holds`): one of the functions the call resolves to copies the parameter given that number
to the GPU itself (an unconditional GS402 of a factory whose data is the parameter), one call deep.
"""

from __future__ import annotations

import builtins

import libcst as cst

from graphsafe.analyzer.facts import CallRef

# Hit condition: (HOST_COPY_HELPER, class of the calling code, "kind|target" call refs...)
HOST_COPY_HELPER = "host-copy-helper"
# the words of GS402's on-device factory report (rules/memory.py HostDataTensor._factory)
_DEVICE_COPY = "copies host data to the GPU"
_LIBRARIES = ("torch.", "numpy.", "math.", "builtins.", "np.")


def _is_number(expr: cst.BaseExpression) -> bool:
    """`0.0`, `-1`, `float("inf")`, `0.0 if flag else 1.0`: a Python number written at the call."""
    if type(expr) is cst.IfExp:
        return _is_number(expr.body) and _is_number(expr.orelse)
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
        expr = expr.expression
    if type(expr) in (cst.Integer, cst.Float):
        return True
    return (type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in ("float", "int")
            and len(expr.args) == 1 and type(expr.args[0].value) is cst.SimpleString)


def condition(node: cst.Call, resolved: str | None, ctx) -> tuple[str, ...] | None:
    """The condition under which the call `node` copies host data through a helper, or None
    where it is no candidate (a library call, no Python number among its arguments)."""
    if resolved is not None and (resolved.startswith(_LIBRARIES) or "." not in resolved and hasattr(builtins, resolved)):
        return None
    if resolved is not None and "." in resolved and resolved.partition(".")[0] != ctx.module.partition(".")[0]:
        return None  # another package's function (`mlflow.log_metric("loss", 1.0)`): not this project's helper
    slots = []  # where the numbers go: positions, keywords
    for position, arg in enumerate(node.args):
        if arg.star:
            break
        if _is_number(arg.value):
            slots.append(arg.keyword.value if arg.keyword is not None else str(position))
    if not slots:
        return None
    refs = dict.fromkeys(f"{ref.kind}|{ref.target}" for ref in ctx.call_refs(node.func))
    return (HOST_COPY_HELPER, ctx.class_key or "", ",".join(slots), *refs) if refs else None


def copied_parameter(name: str) -> str:
    """The words GS402 adds where a factory's data is the function's parameter `name`."""
    return f"(the `{name}` it is given)"


def callee_parameters(project, condition: tuple[str, ...]):
    """For a helper-call condition (kind, class of the calling code, slots "0,src", "kind|target"
    refs...): each function the call resolves to, with the names of its parameters the slots fill."""
    class_key = condition[1] or None
    slots = condition[2].split(",")
    for raw in condition[3:]:
        ref = CallRef(*raw.split("|", 1))
        for key in project.callees(ref, class_key):
            unit = project.units[key].unit
            names = [unit.params[int(s)] if s.isdigit() and int(s) < len(unit.params) else s for s in slots]
            yield unit, [n for n in names if not n.isdigit()]


def holds(project, condition: tuple[str, ...]) -> bool:
    """Does a function the call resolves to copy one of the numbers the call passes to the GPU,
    on every call (an unconditional GS402 of a factory whose data is that parameter)?"""
    for unit, names in callee_parameters(project, condition):
        marks = [copied_parameter(n) for n in names]
        if any(hit.code == "GS402" and hit.condition is None and _DEVICE_COPY in hit.message
               and any(m in hit.message for m in marks) for hit in unit.hits):
            return True
    return False
