"""Hooks called by name: a method that looks a method of `self` up by a name it is given.

    def notify(self, method_name, **cb_kwargs):
        getattr(self, method_name)(self, **cb_kwargs)

    self.notify("on_batch_begin", batch=batch)     # runs self.on_batch_begin(...)

Trainers dispatch their per-batch hooks this way (skorch's `notify`, an event name handed to a
`call_event`): the call graph follows the string a caller passes as a call of that method on the
same object. Only a plain string literal names a hook; a name computed at run time is not followed.

The same name is often dispatched to each of a collection of callbacks as well:

    for _, cb in self.callbacks_:
        getattr(cb, method_name)(self, **cb_kwargs)

Which callbacks the collection holds is the user's choice, so the call runs that method of every
project class that defines it (CallRef kind "hook").

A function of any module may dispatch so too (avalanche's `trigger_plugins(strategy, event)`,
Lightning's `_call_callback_hooks(trainer, hook_name)`): `getattr(p, event)(...)`, directly or
through a local (`fn = getattr(cb, hook_name)`, then `fn(...)`). Its unit records which
parameter names the hook (Unit.dispatches); a call passing a string literal there, in any file,
runs that method of every project class that defines it (CallRef kind "named", resolved by the
call graph, which knows the callee).
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.names import bound_names
from graphsafe.analyzer.nodes import own_nodes


def dispatching_methods(cls: cst.ClassDef) -> dict[str, tuple[int, str, str]]:
    """Methods of `cls` that call `getattr(self, <parameter>)(...)` (or `getattr(self, p, d)(...)`),
    or `getattr(item, <parameter>)(...)` with `item` a loop variable (each of a collection of
    callbacks): method name → (the parameter's position after `self`, its name, where the method
    is looked up: "self", "items" or "both")."""
    found: dict[str, tuple[int, str, str]] = {}
    for stmt in cls.body.body:
        if type(stmt) is not cst.FunctionDef or not stmt.params.params:
            continue
        params = [p.name.value for p in stmt.params.params]
        self_name, names = params[0], params[1:]
        nodes = list(own_nodes(stmt.body))
        items = {name.value for loop in nodes if type(loop) is cst.For for name in bound_names(loop.target)}
        on_self = on_items = None
        for call in (n for n in nodes if type(n) is cst.Call):
            inner = call.func
            if not (type(inner) is cst.Call and type(inner.func) is cst.Name and inner.func.value == "getattr"
                    and len(inner.args) in (2, 3) and not any(a.keyword or a.star for a in inner.args)):
                continue
            owner, attr = inner.args[0].value, inner.args[1].value
            if type(owner) is not cst.Name or type(attr) is not cst.Name or attr.value not in names:
                continue
            if owner.value == self_name:
                on_self = attr.value
            elif owner.value in items and owner.value not in params:
                on_items = attr.value
        if on_self is not None:
            found[stmt.name.value] = (names.index(on_self), on_self, "both" if on_items == on_self else "self")
        elif on_items is not None:
            found[stmt.name.value] = (names.index(on_items), on_items, "items")
    return found


def named_hook(call: cst.Call, position: int, parameter: str) -> str | None:
    """The method name a call of a dispatching method passes (a string literal), or None."""
    value = None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    # a `*args` spread moves the positions after it; a `**kwargs` one does not
    if len(positional) > position and not any(a.star == "*" for a in call.args):
        value = positional[position].value
    else:
        value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == parameter), None)
    if type(value) is cst.SimpleString:
        text = value.evaluated_value
        if isinstance(text, str) and text.isidentifier():
            return text
    return None


def dispatching_function(node: cst.FunctionDef, self_name: str | None, imported) -> str:
    """"<position>:<parameter>:<passed>" where function `node` calls `getattr(obj,
    <parameter>)(...)` (or binds it to a local and calls that) on anything but its own `self`
    or an imported module (`getattr(torch, name)`: `imported(name)`); "" for none. Positions
    count the parameters after `self` (as Unit.params); <passed> names, for each positional
    argument of the dispatched call, the parameter of `node` it hands on ("" for another value):
    `getattr(p, event)(strategy, **kwargs)` → "1:event:strategy"."""
    params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
    names = [p for p in params if p != self_name]
    nodes = list(own_nodes(node.body))
    bound: dict[str, str] = {}  # local → the parameter naming what `getattr` looked up
    for assign in (n for n in nodes if type(n) is cst.Assign and len(n.targets) == 1):
        looked_up = _getattr_of_parameter(assign.value, names, self_name, imported)
        if looked_up is not None and type(assign.targets[0].target) is cst.Name:
            bound[assign.targets[0].target.value] = looked_up
    for call in (n for n in nodes if type(n) is cst.Call):
        parameter = _getattr_of_parameter(call.func, names, self_name, imported)
        if parameter is None and type(call.func) is cst.Name:
            parameter = bound.get(call.func.value)
        if parameter is not None:
            passed = []
            for arg in call.args:
                if arg.star or arg.keyword is not None:
                    break
                passed.append(arg.value.value if type(arg.value) is cst.Name and arg.value.value in names else "")
            return f"{names.index(parameter)}:{parameter}:{','.join(passed)}"
    return ""


def handed_slots(dispatches: str, params: tuple[str, ...], slots: tuple[tuple[str, str], ...]
                 ) -> tuple[tuple[str, str], ...]:
    """The argument slots the dispatched method gets, from those the call of the dispatcher
    (`params`, its Unit.params) was given: position i gets what the dispatcher's parameter
    handed on at i was given (by position or keyword); the rest is not known."""
    passed = dispatches.split(":", 2)[2].split(",") if dispatches.count(":") >= 2 else []
    given = dict(slots)
    found = []
    for i, parameter in enumerate(passed):
        if not parameter:
            continue
        position = str(params.index(parameter)) if parameter in params else None
        value = given.get(position) if position is not None and position in given else given.get(parameter)
        if value is not None:
            found.append((str(i), value))
    return tuple(found)


def _getattr_of_parameter(expr: cst.BaseExpression, names: list[str], self_name: str | None,
                          imported) -> str | None:
    """The parameter of `getattr(obj, <parameter>)` (obj not `self`, nor an imported module), or None."""
    if not (type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "getattr"
            and len(expr.args) in (2, 3) and not any(a.keyword or a.star for a in expr.args)):
        return None
    owner, attr = expr.args[0].value, expr.args[1].value
    if type(attr) is not cst.Name or attr.value not in names:
        return None
    if type(owner) is cst.Name and (owner.value == self_name or imported(owner.value)):
        return None
    return attr.value


def literal_names(call: cst.Call) -> list[tuple[str, str]]:
    """(slot, name) of each argument of `call` that is a string literal naming a method (an
    identifier): slot is the position, or the keyword."""
    found = []
    for position, arg in enumerate(call.args):
        if arg.star:
            break
        if type(arg.value) is cst.SimpleString:
            text = arg.value.evaluated_value
            if isinstance(text, str) and text.isidentifier():
                found.append((arg.keyword.value if arg.keyword is not None else str(position), text))
    return found
