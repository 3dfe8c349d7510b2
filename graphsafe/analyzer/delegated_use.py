"""Tensor-ness handed down through calls: a parameter passed on, as is, to a function of the same
file that uses the receiving parameter as a tensor is a tensor too.

    def _check_timelike(name, t):
        assert isinstance(t, torch.Tensor)
    def check_inputs(y0, t):
        _check_timelike("t", t)
        if t[0] > t[1]: ...          # a tensor branch: `t` must be a tensor to get here

Anything else passed there fails in the callee, so the caller's parameter is one wherever the
call is reached. The reason is printable ("`t` is a tensor: `_check_timelike("t", t)` passes it
where `_check_timelike` uses it as one"). Followed through chains of such calls to a fixpoint:
module-level functions called by name, methods of the same class called through `self.`. A
parameter rebound before the call is not followed (the call passes the new value), nor one the
function tests with `isinstance` (it takes other types too); calls inside nested functions and
lambdas are not followed (they may run with other values).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from graphsafe.analyzer import tensor_use
from graphsafe.analyzer.nodes import LEAF_TYPES, children


@dataclass
class _Function:
    node: cst.FunctionDef
    positional: list[str]  # positional parameters, without `self`/`cls`
    named: set[str]  # every parameter a keyword can name
    class_name: str | None
    self_name: str | None
    # (callee key, position or keyword, parameter passed, the call)
    passes: list[tuple[str, int | str, str, cst.Call]] = field(default_factory=list)


def delegated_tensors(module: cst.Module, resolve: Callable, code_for: Callable[[cst.CSTNode], str]
                      ) -> dict[int, dict[str, str]]:
    """id of a def → its parameters that are tensors because it passes them to a same-file
    function using them as tensors → the printable reason (empty when there is none)."""
    functions = _functions(module)
    if len(functions) < 2:
        return {}
    for function in functions.values():
        _note_passes(function, functions)
    if not any(f.passes for f in functions.values()):
        return {}
    used: dict[str, dict[str, str]] = {key: {} for key in functions}
    for key in {callee for function in functions.values() for callee, _, _, _ in function.passes}:
        function = functions[key]  # only a callee's own uses decide anything
        names = set(function.positional) | function.named
        used[key] = {name: "" for name in tensor_use.used_as_tensors(function.node.body, names, resolve)}
    found: dict[str, dict[str, str]] = {key: {} for key in functions}
    changed = True
    while changed:
        changed = False
        for key, function in functions.items():
            for callee_key, slot, name, call in function.passes:
                if name in used[key]:
                    continue
                callee = functions[callee_key]
                received = _received(callee, slot)
                if received is None or received not in used[callee_key]:
                    continue
                code = " ".join(code_for(call).split())
                if len(code) > 60:
                    code = code[:57] + "..."
                callee_name = callee.node.name.value
                reason = f"`{name}` is a tensor: `{code}` passes it where `{callee_name}` uses it as one"
                used[key][name] = reason
                found[key][name] = reason
                changed = True
    return {id(functions[key].node): names for key, names in found.items() if names}


def _received(callee: _Function, slot: int | str) -> str | None:
    if isinstance(slot, int):
        return callee.positional[slot] if slot < len(callee.positional) else None
    return slot if slot in callee.named else None


def _functions(module: cst.Module) -> dict[str, _Function]:
    found: dict[str, _Function] = {}
    for stmt in module.body:
        if type(stmt) is cst.FunctionDef:
            found[stmt.name.value] = _function(stmt, None)
        elif type(stmt) is cst.ClassDef and isinstance(stmt.body, cst.IndentedBlock):
            for inner in stmt.body.body:
                if type(inner) is cst.FunctionDef:
                    found[f"{stmt.name.value}.{inner.name.value}"] = _function(inner, stmt.name.value)
    return found


def _function(node: cst.FunctionDef, class_name: str | None) -> _Function:
    params = node.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    named = {p.name.value for p in (*params.params, *params.kwonly_params)}
    self_name = None
    static = any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in node.decorators)
    if class_name is not None and not static and positional:
        self_name = positional.pop(0)
        named.discard(self_name)
    return _Function(node, positional, named, class_name, self_name)


def _callee_key(func: cst.BaseExpression, caller: _Function, functions: dict[str, _Function]) -> str | None:
    if type(func) is cst.Name:
        return func.value if func.value in functions and "." not in func.value else None
    if (type(func) is cst.Attribute and caller.self_name is not None and type(func.value) is cst.Name
            and func.value.value == caller.self_name):
        key = f"{caller.class_name}.{func.attr.value}"
        return key if key in functions else None
    return None


def _note_passes(function: _Function, functions: dict[str, _Function]) -> None:
    """The calls of `function` that pass one of its parameters, not rebound before, as is."""
    params = set(function.positional) | function.named
    if not params:
        return
    rebound: set[str] = set()

    def visit(node: cst.CSTNode) -> None:
        tp = type(node)
        if tp is cst.FunctionDef or tp is cst.ClassDef or tp is cst.Lambda:
            return
        if tp in (cst.For, cst.With):  # bound before the body runs
            rebound.update(_bound_names(node) & params)
        if tp is cst.Call and type(node.func) is cst.Name and node.func.value == "isinstance" and node.args:
            tested = node.args[0].value
            if type(tested) is cst.Name and not asserting:
                rebound.add(tested.value)  # takes other types too: `if isinstance(t, Tensor): f(t)`
        if tp is cst.Call:
            key = _callee_key(node.func, function, functions)
            if key is not None and key != _own_key(function):
                for position, arg in enumerate(node.args):
                    if arg.star:
                        break
                    value = arg.value
                    if type(value) is not cst.Name or value.value not in params or value.value in rebound:
                        continue
                    slot = arg.keyword.value if arg.keyword is not None else position
                    function.passes.append((key, slot, value.value, node))
        if tp is cst.Assert:
            asserting.append(node)
        for child in children(node):
            if type(child) not in LEAF_TYPES:  # most nodes of a body: nothing to note
                visit(child)
        if tp is cst.Assert:
            asserting.pop()
        # a binding counts from the end of its statement on (`t = f(t)` passes the parameter)
        if tp in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr):
            rebound.update(_bound_names(node) & params)

    asserting: list[cst.Assert] = []
    visit(function.node.body)


def _own_key(function: _Function) -> str:
    name = function.node.name.value
    return f"{function.class_name}.{name}" if function.class_name else name


def _bound_names(node: cst.CSTNode) -> set[str]:
    tp = type(node)
    if tp is cst.Assign:
        targets = [t.target for t in node.targets]
    elif tp in (cst.AnnAssign, cst.AugAssign, cst.NamedExpr):
        targets = [node.target]
    elif tp is cst.For:
        targets = [node.target]
    else:
        targets = [item.asname.name for item in node.items if item.asname is not None]
    names = set()
    stack = list(targets)
    while stack:
        target = stack.pop()
        if type(target) is cst.Name:
            names.add(target.value)
        elif type(target) in (cst.Tuple, cst.List):
            stack.extend(e.value for e in target.elements)
        elif type(target) is cst.StarredElement:
            stack.append(target.value)
    return names
