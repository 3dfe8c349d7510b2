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
import re
from pathlib import Path

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
    core_words, wrapper_words = _words(text, core), _words(text, region)
    calls = [c for c in entry.get("calls", ()) if isinstance(c, str)
             and not (_callee_name(c) in wrapper_words and _callee_name(c) not in core_words)]
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


def _words(text: str, qualname: str) -> set[str]:
    """The identifiers of one function's source (`Class.method`), empty when not found."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    parts = qualname.split(".")
    body: list = tree.body
    node = None
    for part in parts:
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return set()
        body = node.body
    segment = ast.get_source_segment(text, node) or ""
    return set(re.findall(r"[A-Za-z_]\w*", segment))
