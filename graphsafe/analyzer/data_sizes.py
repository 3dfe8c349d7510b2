"""Data-dependent sizes: tensors whose shape depends on their values, and counts read from them.

`x[mask]`, `x.nonzero()`, `torch.where(c)`, `x.unique()` and `x.masked_select(m)` give a tensor
whose length depends on tensor data. Its size (`x.shape[0]`, `x.size(0)`, `x.numel()`, `len(x)`)
is a Python number read from the device, and a branch or loop on it (`if not n:`, `while
order.numel() > 0:`, `for i in idx:`) decides the path from data: a graph records one path.

The walker records, per function, the names bound to such tensors and the names bound to their
sizes (`n = x.shape[0]`), each with a printable reason (`record`). A loop's body is scanned
before its test (`loop_carried`): `order = rest[iou <= t]` inside `while order.numel() > 0:`
decides the next test. A rebinding at the top level of the function to anything else forgets
the name; one inside a branch does not (the other path still holds the data-sized value).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphsafe.analyzer.nodes import children

# Producers whose output length is the number of elements that pass a test.
_PRODUCER_METHODS = frozenset("nonzero argwhere unique unique_consecutive masked_select".split())
_PRODUCER_FUNCTIONS = frozenset(
    "torch.nonzero torch.argwhere torch.unique torch.unique_consecutive torch.masked_select".split()
)
# Methods that keep the rows of their receiver (a data-sized tensor stays one).
_ROW_KEEPING = frozenset(
    "float long int bool half double to clone detach contiguous view reshape flatten squeeze unsqueeze".split()
)
_SIZE_METHODS = frozenset("numel nelement".split())
_ORDERINGS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _is_mask(index: cst.BaseExpression, kind_of: Callable) -> bool:
    """An index that selects by a boolean mask: a known bool tensor, an element-wise comparison
    (`iou <= t`: a Python comparison is no index one would write), `~m`, or an entry of a bool
    tensor (`keep[i]` of a 2-d mask)."""
    tp = type(index)
    if tp is cst.Comparison:
        return all(isinstance(c.operator, _ORDERINGS) for c in index.comparisons) and not kind_of(index).not_tensor
    if tp is cst.UnaryOperation and isinstance(index.operator, cst.BitInvert):
        return kind_of(index.expression).is_tensor
    if tp is cst.Subscript:
        return kind_of(index.value).is_bool_tensor
    return kind_of(index).is_bool_tensor


def sized_reason(value: cst.BaseExpression, sized: dict[str, tuple[str, bool]], kind_of: Callable,
                 resolve: Callable, code_for: Callable) -> str | None:
    """Why `value` is a tensor whose length depends on its data, or None."""
    tp = type(value)
    if tp is cst.Name:
        found = sized.get(value.value)
        return found[0] if found is not None and not found[1] else None
    if tp is cst.Subscript:
        for element in value.slice:
            index = element.slice
            if type(index) is cst.Index and _is_mask(index.value, kind_of):
                return f"`{_short(code_for(value))}` selects by a boolean mask"
        if type(value.value) is cst.Name and any(type(e.slice) is cst.Slice for e in value.slice):
            return sized_reason(value.value, sized, kind_of, resolve, code_for)  # `rest = order[1:]`
        return None
    if tp is not cst.Call:
        return None
    func = value.func
    if type(func) is cst.Attribute:
        method = func.attr.value
        if method in _PRODUCER_METHODS and not kind_of(func.value).not_tensor and (
                kind_of(func.value).is_tensor or method == "nonzero"):
            return f"`{_short(code_for(value))}` has as many elements as pass a test"
        if method in _ROW_KEEPING:
            return sized_reason(func.value, sized, kind_of, resolve, code_for)
    name = resolve(func) or ""
    if name in _PRODUCER_FUNCTIONS or (name == "torch.where" and len(value.args) == 1):
        return f"`{_short(code_for(value))}` has as many elements as pass a test"
    return None


def size_reason(expr: cst.BaseExpression, sized: dict[str, tuple[str, bool]], kind_of: Callable,
                resolve: Callable, code_for: Callable) -> str | None:
    """Why `expr` is (or holds) a number read from tensor data: a size of a data-sized tensor
    (`x.shape[0]`, `x.size(0)`, `x.numel()`, `len(x)`), a tensor's value read on the host
    (`t.item()`, `int(t)`), a name bound to one, or arithmetic, comparisons, `not`, `min`/`max`/
    `abs`/`round` over one."""
    tp = type(expr)
    if tp is cst.Name:
        found = sized.get(expr.value)
        return found[0] if found is not None and found[1] else None
    if tp is cst.Subscript and type(expr.value) is cst.Attribute and expr.value.attr.value == "shape":
        return _of(expr.value.value, sized, kind_of, resolve, code_for)
    if tp is cst.Attribute and expr.attr.value == "shape":
        return _of(expr.value, sized, kind_of, resolve, code_for)
    if tp is cst.Call:
        func = expr.func
        if type(func) is cst.Attribute and func.attr.value in _SIZE_METHODS | {"size"}:
            return _of(func.value, sized, kind_of, resolve, code_for)
        if type(func) is cst.Name and func.value == "len" and len(expr.args) == 1:
            return _of(expr.args[0].value, sized, kind_of, resolve, code_for)
        read = _host_read(expr, kind_of, code_for)
        if read is not None:
            return read
        if type(func) is not cst.Name or func.value not in _NUMBER_CALLS or any(a.star or a.keyword for a in expr.args):
            return None
        parts = [a.value for a in expr.args]  # `min(num_dead, n)`, `abs(delta)`
    elif tp is cst.Comparison:
        parts = [expr.left, *(c.comparator for c in expr.comparisons)]
    elif tp is cst.BinaryOperation:
        parts = [expr.left, expr.right]
    elif tp is cst.UnaryOperation:
        parts = [expr.expression]
    else:
        return None
    for part in parts:
        found = size_reason(part, sized, kind_of, resolve, code_for)
        if found:
            return found
    return None


_NUMBER_CALLS = frozenset("min max abs round int float".split())
# numbers read from a tensor; `bool(t)` is left out: the Python bool it gives is the test itself,
# one cause with its read (GS105), as the tracer names it (tests/runtime/test_bool_naming.py)
_READ_CASTS = frozenset("int float".split())


def _host_read(call: cst.Call, kind_of: Callable, code_for: Callable) -> str | None:
    """`t.item()` (on anything not known to be host data), `int(t)`/`float(t)` of a tensor: a
    value copied from the device (its sync is GS101/GS105's), new on every step."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "item" and not call.args:
        if kind_of(func.value).not_tensor:
            return None
    elif not (type(func) is cst.Name and func.value in _READ_CASTS and len(call.args) == 1
              and not call.args[0].star and call.args[0].keyword is None and kind_of(call.args[0].value).is_tensor):
        return None
    return f"`{_short(code_for(call))}` {_READS}"


_READS = "reads a tensor's value on the host"


def read_list(value: cst.BaseExpression, kind_of: Callable, code_for: Callable) -> str | None:
    """`t.tolist()` of anything not known to be host data: a list of numbers copied from the
    device (its sync is GS102's), new on every step; why, or None."""
    if (type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "tolist"
            and not value.args and not kind_of(value.func.value).not_tensor):
        return f"`{_short(code_for(value))}` {_READS}"
    return None


def read_from_device(reason: str) -> bool:
    """Does a recorded number's reason go back to a value read from the device (not a size)?"""
    return _READS in reason


def _of(tensor: cst.BaseExpression, sized, kind_of, resolve, code_for) -> str | None:
    reason = sized_reason(tensor, sized, kind_of, resolve, code_for)
    if reason is None:
        return None
    name = _short(code_for(tensor))
    return f"the size of `{name}` depends on tensor data: {reason}" if type(tensor) is cst.Name else reason


def record(sized: dict[str, tuple[str, bool]], target: cst.BaseExpression, value: cst.BaseExpression,
           kind_of: Callable, resolve: Callable, code_for: Callable, top_level: bool) -> None:
    """Note what binding `target = value` makes of its names: a data-sized tensor, a size of one,
    or (at the function's top level) neither any more."""
    if type(target) in (cst.Tuple, cst.List):
        reason = sized_reason(value, sized, kind_of, resolve, code_for)
        for element in target.elements:  # `(idx,) = torch.nonzero(m, as_tuple=True)`
            if type(element.value) is cst.Name:
                if reason is not None:
                    sized[element.value.value] = (reason, False)
                elif top_level:
                    sized.pop(element.value.value, None)
        return
    if type(target) is not cst.Name:
        return
    reason = sized_reason(value, sized, kind_of, resolve, code_for)
    if reason is not None:
        sized[target.value] = (reason, False)
        return
    reason = size_reason(value, sized, kind_of, resolve, code_for)
    if reason is not None and type(value) is not cst.Comparison:
        sized[target.value] = (f"`{target.value} = {_short(code_for(value))}`: {reason}", True)
    elif top_level:
        sized.pop(target.value, None)


def record_added(sized: dict[str, tuple[str, bool]], target: cst.Name, value: cst.BaseExpression,
                 kind_of: Callable, resolve: Callable, code_for: Callable) -> None:
    """`count += n` with `n` a number read from tensor data: `count` holds one from then on."""
    reason = size_reason(value, sized, kind_of, resolve, code_for)
    if reason is not None and target.value not in sized:
        sized[target.value] = (f"`{target.value} += {_short(code_for(value))}`: {reason}", True)


def loop_carried(sized: dict[str, tuple[str, bool]], body: cst.CSTNode, kind_of: Callable,
                 resolve: Callable, code_for: Callable) -> None:
    """Names a loop's body rebinds to data-sized tensors (`order = rest[iou <= t]`) or advances by
    a number read from tensor data (`n = m.sum().item()`, then `count += n`): the loop's test (and
    the body's next pass) sees them so. Two passes: a body may use a name before it binds it."""
    for _ in range(2):
        before = len(sized)
        stack = [body]
        while stack:
            node = stack.pop()
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
                name = node.targets[0].target.value
                if name not in sized:
                    reason = sized_reason(node.value, sized, kind_of, resolve, code_for)
                    if reason is not None:
                        sized[name] = (reason, False)
                    elif type(node.value) is cst.Call and (read := _host_read(node.value, kind_of, code_for)):
                        sized[name] = (f"`{name} = {_short(code_for(node.value))}`: {read}", True)
            elif type(node) is cst.AugAssign and type(node.target) is cst.Name:
                record_added(sized, node.target, node.value, kind_of, resolve, code_for)  # `mask_count += delta`
            stack.extend(children(node))
        if len(sized) == before:
            return  # nothing new for the second pass to build on


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 50 else code[:47] + "..."
