"""Loop counters: Python numbers that take a new value on every pass of a loop.

A caller that drives the steps from a loop passes its callee a loop position (`for step in
range(n): self.search_step(x, step)`, `for i, batch in enumerate(loader)`, `t += 1` in a
`while`): a number whatever the callee declares, and a different one on each call. The project
pass makes the callee's parameter a per-step value from such an argument (issue 18, point 1);
the description travels with the argument so the report can name where the value comes from.

Only values that are numbers by their shape count: a loop over batches or modules binds no
counter, and a counter goes through arithmetic with numbers (`step + 1`, `i % k`, `int(t)`),
not through calls whose result is not known here (`lr_at(it)`).
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children

_NUMBER_CALLS = frozenset({"int", "float", "abs", "min", "max", "round"})
_NUMBERS = (cst.Integer, cst.Float)
_TEXT = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def loop_counters(node: cst.For | cst.While) -> dict[str, str]:
    """The names a loop counts with, each with how: the target of `for i in range(...)`, the
    index of `for i, x in enumerate(...)`, the element of a literal list of numbers, and a
    local the body advances by a number (`t += 1`, `t = t + dt`)."""
    found: dict[str, str] = {}
    if type(node) is cst.For:
        target, iterable = node.target, node.iter
        if type(iterable) is cst.Call and type(iterable.func) is cst.Name:
            shown = f"for {_code(target)} in {iterable.func.value}(...)"
            if iterable.func.value == "range" and type(target) is cst.Name:
                found[target.value] = f"the loop counter of `{shown}`"
            elif (iterable.func.value == "enumerate" and type(target) in (cst.Tuple, cst.List) and target.elements
                    and type(target.elements[0].value) is cst.Name):
                found[target.elements[0].value.value] = f"the index of `{shown}`"
        elif (type(target) is cst.Name and type(iterable) in (cst.List, cst.Tuple) and iterable.elements
                and all(_literal_number(e.value) for e in iterable.elements)):
            found[target.value] = f"each number of `for {target.value} in {_code(iterable)}`"
    for name, how in _advanced_in(node.body).items():
        found.setdefault(name, f"advanced with `{how}` on every pass of a loop")
    return found


def counter_in(expr: cst.BaseExpression, counters: dict[str, str]) -> str | None:
    """How `expr` varies per pass where it is a number computed from a counter (`step`,
    `step + 1`, `(i + 1) % k`, `min(i, n)`), else None."""
    if not counters:
        return None
    found: list[str] = []
    if not _number_of(expr, counters, found) or not found:
        return None
    name = found[0]
    described = f"`{name}` is {counters[name]}"
    return described if type(expr) is cst.Name else f"`{_code(expr)}` is computed from it: {described}"


def derived(name: str, expr: cst.BaseExpression, counters: dict[str, str]) -> str | None:
    """What `name = expr` makes `name`, where `expr` is computed from a counter."""
    found: list[str] = []
    if not counters or not _number_of(expr, counters, found) or not found:
        return None
    if found[0] == name:  # `t = t + dt`: still the same counter
        return counters[name]
    return f"computed from `{found[0]}`, {counters[found[0]]}"


def _number_of(expr: cst.BaseExpression, counters: dict[str, str], found: list[str]) -> bool:
    """Is `expr` number arithmetic over counters and literals? Collects the counters it reads.
    An attribute or a name that is not a counter is not known to be a number here: no."""
    tp = type(expr)
    if tp is cst.Name:
        if expr.value in counters:
            found.append(expr.value)
            return True
        return False
    if tp in _NUMBERS:
        return True
    if tp is cst.BinaryOperation:
        if type(expr.left) in _TEXT or type(expr.right) in _TEXT:
            return False  # `"layer%d" % i`: a string
        # one side may be a setting (`step % self.k`, `i * stride`): the counter makes it vary
        left = _number_of(expr.left, counters, found)
        right = _number_of(expr.right, counters, found)
        return (left or right) and bool(found) and not isinstance(expr.operator, cst.MatrixMultiply)
    if tp is cst.UnaryOperation:
        return _number_of(expr.expression, counters, found)
    if tp is cst.Call and type(expr.func) is cst.Name and expr.func.value in _NUMBER_CALLS and expr.args:
        return any([_number_of(a.value, counters, found) for a in expr.args]) and bool(found)
    return False


def _advanced_in(body: cst.BaseSuite) -> dict[str, str]:
    """Locals a loop body advances by a number literal: `t += 1`, `t -= 1`, `t = t + 1`."""
    found: dict[str, str] = {}
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda) or isinstance(node, cst.BaseExpression):
            continue
        if tp is cst.AugAssign and type(node.target) is cst.Name and _literal_number(node.value) \
                and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            found.setdefault(node.target.value, _code(node))
        elif tp is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            name, value = node.targets[0].target.value, node.value
            if (type(value) is cst.BinaryOperation and isinstance(value.operator, (cst.Add, cst.Subtract))
                    and type(value.left) is cst.Name and value.left.value == name and _literal_number(value.right)):
                found.setdefault(name, _code(node))
        stack.extend(children(node))
    return found


def _literal_number(expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.UnaryOperation:
        expr = expr.expression
    return type(expr) in _NUMBERS


def _code(node: cst.CSTNode) -> str:
    text = cst.Module(body=()).code_for_node(node).strip()
    return text if len(text) <= 40 else text[:37] + "..."
