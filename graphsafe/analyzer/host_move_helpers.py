"""Calls of a helper that moves a CPU tensor it is given to the GPU (GS402 at the call site).

`_to_device(t, device)` with `def _to_device(t, d): if t.device.type == "cpu": return t.to(d,
non_blocking=True)` in the project: the helper's own move is reported where it copies (its
branch tests the tensor is on the CPU, analyzer/cpu_tested.py), but each call in the region
hands it a value of its own, and the call is what the region's author changes (a device buffer
filled before replay). The walker sees only the call: a project function given a value that
may be a tensor (not a literal, a string or a known non-tensor). It reports it on a condition
the project pass decides (`holds`): a function the call resolves to copies the parameter that
value goes to (the CPU-tested move, or a call of such a helper handing the parameter on, a few
calls deep). A helper that builds a tensor from host data (`torch.as_tensor(data, device=d)`) is
host_copy_helpers' business: given a tensor, it copies nothing from the host.
"""

from __future__ import annotations

import builtins

import libcst as cst

from graphsafe.analyzer import host_copy_helpers

# Hit condition: (HOST_MOVE_HELPER, class of the calling code, slots "0,src", "kind|target" refs...)
HOST_MOVE_HELPER = "host-move-helper"
_LIBRARIES = ("torch.", "numpy.", "math.", "builtins.", "np.")
_DEPTH = 4  # helpers handing the tensor on to helpers
_MOVES = frozenset("to cuda".split())


def moved_parameter(name: str) -> str:
    """The words a GS402 report adds where what is moved to the GPU is the function's parameter
    `name` when it is a CPU tensor: what `holds` looks for in a callee's reports."""
    return f"(the `{name}` it is given, when that is a CPU tensor)"


def _may_be_host_tensor(expr: cst.BaseExpression, ctx) -> bool:
    """Could `expr` be a CPU tensor the helper moves? Not a literal, a string, a known
    non-tensor, a tensor just moved (`x.to(d)`, `x.cuda()`) or one made with `device=`."""
    if type(expr) in (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                      cst.List, cst.Tuple, cst.Dict, cst.Lambda):
        return False
    if type(expr) is cst.Name and expr.value in ("None", "True", "False"):
        return False
    last = expr.attr.value if type(expr) is cst.Attribute else expr.value if type(expr) is cst.Name else ""
    if last.endswith(("device", "dtype")):  # `x.device`, `dtype`: where and how, not what, is moved
        return False
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _MOVES:
        return False
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in ("tuple", "list", "len", "int", "float", "str"):
        return False
    if type(expr) is cst.Call and any(a.keyword is not None and a.keyword.value == "device" for a in expr.args):
        return False
    kind = ctx.kind(expr, note=False)
    return not kind.not_tensor


def condition(node: cst.Call, resolved: str | None, ctx) -> tuple[str, ...] | None:
    """The condition under which the call `node` moves a CPU tensor to the GPU through a project
    helper, or None where it is no candidate (a library call, nothing that may be a tensor)."""
    if resolved is not None and (resolved.startswith(_LIBRARIES) or "." not in resolved and hasattr(builtins, resolved)):
        return None
    if resolved is not None and "." in resolved and resolved.partition(".")[0] != ctx.module.partition(".")[0]:
        return None  # another package's function: not this project's helper
    slots = []
    for position, arg in enumerate(node.args):
        if arg.star:
            break
        if _may_be_host_tensor(arg.value, ctx):
            slots.append(arg.keyword.value if arg.keyword is not None else str(position))
    if not slots:
        return None
    refs = dict.fromkeys(f"{ref.kind}|{ref.target}" for ref in ctx.call_refs(node.func))
    return (HOST_MOVE_HELPER, ctx.class_key or "", ",".join(slots), *refs) if refs else None


def passed_on(node: cst.Call, ctx) -> list[str]:
    """The function's own parameters the call hands on as they are (`_to_device(data, d)` in a
    helper taking `data`): the report names them, so that callers of this helper are judged too."""
    return [a.value.value for a in node.args
            if not a.star and type(a.value) is cst.Name and a.value.value in ctx.params and _may_be_host_tensor(a.value, ctx)]


def holds(project, condition: tuple[str, ...], depth: int = 0) -> bool:
    """Does a function the call resolves to copy, on some path, one of the values the call
    passes in the slots named, to the GPU?"""
    for unit, names in host_copy_helpers.callee_parameters(project, condition):
        marks = [moved_parameter(n) for n in names]
        for hit in unit.hits:
            if hit.code != "GS402" or not any(m in hit.message for m in marks):
                continue
            if hit.condition is None:
                return True
            if hit.condition[0] == HOST_MOVE_HELPER and depth < _DEPTH and holds(project, hit.condition, depth + 1):
                return True
    return False
