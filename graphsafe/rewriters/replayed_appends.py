"""A history a callee of the core keeps on itself (`graphsafe graph`, what still blocks):

    self.act_history.append(h.detach().abs().mean())   # GS503 in a submodule's forward

A graph records the append once, at capture. graphed() settles it at run time
(runtime/attribute_state.py): it takes the capture's appends off the object's list attribute and,
after each replay, appends copies of them holding that replay's values, so the list grows call by
call as in eager. That holds when what is appended is tensor work (its value is in the graph's
memory); an appended name or number keeps blocking (it may be a host value the replay never
recomputes).

Reads only the diagnostics and the scratch files: no torch (the static path)."""

from __future__ import annotations

import ast
import re

from graphsafe.model import Diagnostic

_APPEND = re.compile(r"^`self\.(\w+)\.append\(\)` changes `self\.\1`, an attribute of self")
# methods whose result is a tensor when their receiver is one (what a history typically keeps)
_TENSOR_METHODS = frozenset("""detach clone mean sum abs float half double norm max min std var
    amax amin pow sqrt exp log flatten reshape view""".split())


def settled_by_replayed_append(d: Diagnostic, sources) -> bool:
    """GS503 on `self.<list>.append(<tensor work>)`: graphed() appends again after each replay."""
    if d.code != "GS503" or not _APPEND.match(d.message):
        return False
    tree = sources.tree(d.path)
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.Call) and node.lineno == d.start.line and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append" and len(node.args) == 1 and not node.keywords):
            return _tensor_work(node.args[0])
    return False


def _tensor_work(node: ast.expr) -> bool:
    """`h.detach().abs().mean()`, `torch.stack(...)`: a call whose result is a tensor."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = node.func.value
    if isinstance(receiver, ast.Name) and receiver.id == "torch":
        return True
    return node.func.attr in _TENSOR_METHODS and not _host_value(receiver)


def _host_value(node: ast.expr) -> bool:
    """A receiver that is plainly a host value: a literal, or a call of `.item()`/`.tolist()`."""
    if isinstance(node, ast.Constant):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"item", "tolist", "numpy"})


def replayed_append_note(d: Diagnostic) -> str:
    name = _APPEND.match(d.message).group(1)
    return (f"{d.path}:{d.start.line}: `self.{name}.append(...)`: graphed() appends a copy of this replay's "
            f"value after each replay (the list grows call by call, as in eager)")
