"""Hooks called by name: a method that looks a method of `self` up by a name it is given.

    def notify(self, method_name, **cb_kwargs):
        getattr(self, method_name)(self, **cb_kwargs)

    self.notify("on_batch_begin", batch=batch)     # runs self.on_batch_begin(...)

Trainers dispatch their per-batch hooks this way (skorch's `notify`, an event name handed to a
`call_event`): the call graph follows the string a caller passes as a call of that method on the
same object. Only a plain string literal names a hook; a name computed at run time is not followed.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import own_nodes


def dispatching_methods(cls: cst.ClassDef) -> dict[str, tuple[int, str]]:
    """Methods of `cls` that call `getattr(self, <parameter>)(...)` (or `getattr(self, p, d)(...)`):
    method name → (the parameter's position after `self`, its name)."""
    found: dict[str, tuple[int, str]] = {}
    for stmt in cls.body.body:
        if type(stmt) is not cst.FunctionDef or not stmt.params.params:
            continue
        params = [p.name.value for p in stmt.params.params]
        self_name, names = params[0], params[1:]
        for call in (n for n in own_nodes(stmt.body) if type(n) is cst.Call):
            inner = call.func
            if not (type(inner) is cst.Call and type(inner.func) is cst.Name and inner.func.value == "getattr"
                    and len(inner.args) in (2, 3) and not any(a.keyword or a.star for a in inner.args)):
                continue
            owner, attr = inner.args[0].value, inner.args[1].value
            if (type(owner) is cst.Name and owner.value == self_name and type(attr) is cst.Name
                    and attr.value in names):
                found[stmt.name.value] = (names.index(attr.value), attr.value)
                break
    return found


def named_hook(call: cst.Call, position: int, parameter: str) -> str | None:
    """The method name a call of a dispatching method passes (a string literal), or None."""
    value = None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if len(positional) > position and len(positional) == sum(1 for a in call.args if a.keyword is None):
        value = positional[position].value
    else:
        value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == parameter), None)
    if type(value) is cst.SimpleString:
        text = value.evaluated_value
        if isinstance(text, str) and text.isidentifier():
            return text
    return None
