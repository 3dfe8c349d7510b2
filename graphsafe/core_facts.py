"""Run-time facts for the core `graph` splits off a region.

`graphsafe trace --save-facts` recorded the region function (`SVI.step`) as it ran: among its
facts, the calls it made (`self.loss_and_grads`, an attribute the static call graph cannot
follow). After the split that function is the wrapper, with another source hash, and the tensor
work lives in a new function, the core (`SVI.step_core`), which has no facts at all: the core's
check then reached none of those callees and said nothing blocks capture. This gives the core the
region's recorded calls and values, in a facts file of the scratch copy, keyed to the core's source
hash; a callee named only in the wrapper's source (host work moved there: `torch_item(loss)`) is
left to the wrapper. Static path: no torch."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from graphsafe.analyzer.callgraph import _CALLED_AS_OBJECT  # what calling an object runs
from graphsafe.analyzer.run_facts import def_hashes


def facts_for_core(facts: Path | None, region_path: str, region: str, core: str, text: str,
                   scratch: Path) -> Path | None:
    """A facts file under `scratch` holding `facts` plus the region's entry copied to the core
    (`text`: the region's file after the split); `facts` itself when there is nothing to copy."""
    if facts is None:
        return None
    try:
        data = json.loads(facts.read_bytes())
        files = data["files"]
    except (OSError, ValueError, UnicodeDecodeError, RecursionError, KeyError, TypeError):
        return facts  # the core's check reports what is wrong with it
    posix = Path(region_path).resolve().as_posix()
    keys = [key for key in files if isinstance(key, str) and posix.endswith("/" + key)]
    if not keys:
        return facts
    functions = files[max(keys, key=len)].get("functions", {})
    entry = functions.get(region) if isinstance(functions, dict) else None
    hashes = [(first, digest) for (name, first), digest in def_hashes(text).items() if name == core]
    if not isinstance(entry, dict) or len(hashes) != 1 or core in functions:
        return facts
    core_node, wrapper_node = _function(text, core), _function(text, region)
    calls = [c for c in entry.get("calls", ()) if isinstance(c, str)
             and not (_could_call(wrapper_node, _callee_name(c)) and not _could_call(core_node, _callee_name(c)))]
    functions[core] = {"calls": calls, "values": entry.get("values", {}), "line": hashes[0][0],
                       "source_hash": hashes[0][1]}
    root = data.get("root")
    where = facts.resolve().parent
    data["root"] = os.path.relpath((where / root).resolve() if isinstance(root, str) else where.parent, scratch)
    out = scratch / "graphsafe-core-facts.json"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def _callee_name(call: str) -> str:
    """`pkg/util.py::Class.method` → `method`."""
    return call.rpartition("::")[2].rpartition(".")[2]


def _could_call(node: ast.AST | None, method: str) -> bool:
    """Whether a call in the function `node` could be the recorded call of `method`: one naming it
    (`x.method(...)`, `method(...)`), or, for `__call__`/`forward`, an object called (`self.bm(...)`,
    `fn(...)`) that is not a method of the function's own class."""
    if node is None:
        return False
    own = getattr(node, "own_methods", frozenset())
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        target = call.func
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None
        if name == method:
            return True
        if method in _CALLED_AS_OBJECT and name is not None and not (
                isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" and name in own):
            return True
    return False


def _function(text: str, qualname: str) -> ast.AST | None:
    """One function's node (`Class.method`), with `own_methods`: the names its class defines."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    body: list = tree.body
    node = None
    methods: frozenset = frozenset()
    for part in qualname.split("."):
        if isinstance(node, ast.ClassDef):
            methods = frozenset(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    node.own_methods = methods  # type: ignore[attr-defined]
    return node
