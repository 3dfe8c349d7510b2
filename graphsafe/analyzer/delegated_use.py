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

An element passed on (`to_d(x, sigmas[i], d)` where `to_d` uses its `sigma` as a tensor) makes
the parameter a sequence of tensors (or a tensor): indexing it gives tensors (`if sigmas[i + 1] >
0:` is a tensor branch). A function of another file of the project (`utils.append_dims(sigma,
n)`) is asked through `outside_uses(dotted name, slot)`, which the walker answers from that
function's facts (Unit.tensor_params, through a pending id and a second walk, see returns.py).
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
    # (callee key, position or keyword, parameter passed, the call, passed as an element `p[i]`)
    passes: list[tuple[str, int | str, str, cst.Call, bool]] = field(default_factory=list)
    # the same for callees of other files of the project: (dotted name, slot, parameter, call, element)
    outside: list[tuple[str, int | str, str, cst.Call, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class Delegated:
    """Why a parameter is a tensor, and whether only its elements are known to be (`p[i]` passed on)."""
    reason: str
    elements: bool = False


def delegated_tensors(module: cst.Module, resolve: Callable, code_for: Callable[[cst.CSTNode], str],
                      outside: tuple[Callable, Callable, Callable[[str, int | str], bool]] | None = None
                      ) -> dict[int, dict[str, Delegated]]:
    """id of a def → its parameters that are tensors because it passes them (or their elements)
    to a function using them as tensors → why (none where there is nothing to say). `outside`:
    (a resolver through the module's imports, which asks nothing of the walk's own state;
    whether a name is imported; whether a function of another file uses a slot as a tensor)."""
    functions = _functions(module)
    target_resolve = outside[:2] if outside is not None else None
    outside_uses = outside[2] if outside is not None else None
    for function in functions.values():
        _note_passes(function, functions, target_resolve)
    if not any(f.passes or f.outside for f in functions.values()):
        return {}
    used: dict[str, dict[str, Delegated | None]] = {key: {} for key in functions}
    for key in {callee for function in functions.values() for callee, *_ in function.passes}:
        function = functions[key]  # only a callee's own uses decide anything
        names = set(function.positional) | function.named
        used[key] = dict.fromkeys(tensor_use.used_as_tensors(function.node.body, names, resolve))
    found: dict[str, dict[str, Delegated]] = {key: {} for key in functions}
    for key, function in functions.items():  # functions of other files: their facts decide
        for target, slot, name, call, element in function.outside:
            if name not in found[key] and outside_uses(target, slot):
                found[key][name] = used[key][name] = _delegated(name, call, target.rpartition(".")[2], element, code_for)
    changed = True
    while changed:
        changed = False
        for key, function in functions.items():
            for callee_key, slot, name, call, element in function.passes:
                if name in used[key]:
                    continue
                callee = functions[callee_key]
                received = _received(callee, slot)
                if received is None or received not in used[callee_key] or _elements_only(used[callee_key][received]):
                    continue
                reason = _delegated(name, call, callee.node.name.value, element, code_for)
                used[key][name] = found[key][name] = reason
                changed = True
    return {id(functions[key].node): names for key, names in found.items() if names}


def _elements_only(known: Delegated | None) -> bool:
    """A parameter known only to hold tensors (`p[i]` passed on) says nothing of what is passed as it."""
    return known is not None and known.elements


def _delegated(name: str, call: cst.Call, callee_name: str, element: bool, code_for) -> Delegated:
    code = " ".join(code_for(call).split())
    if len(code) > 60:
        code = code[:57] + "..."
    what = f"`{name}` holds tensors" if element else f"`{name}` is a tensor"
    return Delegated(f"{what}: `{code}` passes {'an element of it' if element else 'it'} where "
                     f"`{callee_name}` uses it as one", element)


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


def _passed_parameter(value: cst.BaseExpression, params: set[str], rebound: set[str]) -> tuple[str, bool] | None:
    """(parameter, as an element) for an argument that is a parameter not rebound before, or an
    element of one (`sigmas[i + 1]`; not a string key: `batch["x"]` is a dict's entry)."""
    element = False
    if type(value) is cst.Subscript and len(value.slice) == 1 and type(value.slice[0].slice) is cst.Index \
            and type(value.slice[0].slice.value) not in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        value, element = value.value, True
    if type(value) is not cst.Name or value.value not in params or value.value in rebound:
        return None
    return value.value, element


def _outside_target(func: cst.BaseExpression, resolve: tuple[Callable, Callable] | None) -> str | None:
    """The dotted name of a function of another module the call resolves to (`utils.append_dims`):
    `resolve` is (a resolver, whether a name is imported)."""
    if resolve is None or type(func) not in (cst.Name, cst.Attribute):
        return None
    head = func
    while type(head) is cst.Attribute:
        head = head.value
    resolve, imported = resolve
    if type(head) is not cst.Name or not imported(head.value):
        return None  # `self.model(x)`, a function of this module: not another module's
    name = resolve(func)
    if not name or "." not in name or name.startswith(("torch.", "numpy.", "math.", "builtins.", "typing.")):
        return None
    return name


def _note_passes(function: _Function, functions: dict[str, _Function], resolve: tuple | None = None) -> None:
    """The calls of `function` that pass one of its parameters (or an element of one), not
    rebound before, as is; with `resolve`, also those to functions of other modules."""
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
            target = None if key is not None else _outside_target(node.func, resolve)
            if key is not None and key != _own_key(function) or target is not None:
                for position, arg in enumerate(node.args):
                    if arg.star:
                        break
                    passed = _passed_parameter(arg.value, params, rebound)
                    if passed is None:
                        continue
                    slot = arg.keyword.value if arg.keyword is not None else position
                    if key is not None:
                        function.passes.append((key, slot, passed[0], node, passed[1]))
                    else:
                        function.outside.append((target, slot, passed[0], node, passed[1]))
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
