"""Host work in a function the region calls: the call's line counts as host work for the split.

    def denoise_step(self, x, t):                  def progress(self, i, t, x):
        ...                                            log.info("step %d (t=%d)", i, t)
        x = self.scheduler.step(eps, t, x)
        self.progress(self.scheduler.step_index, t, x)

`log.info` runs once at capture and never on replay (GS501), but it is reported in `progress`,
not on a line of the region, so the split (rewriters/boundary.py) would keep the call in the
core. A bare call statement of the region (its result unused) whose callees' every diagnostic
is host output or a host read (logging, print, an f-string of a tensor, `.item()`, `.cpu()`,
a sync, file I/O, a progress bar) is host work like a direct `log.info`: the split moves it to
the wrapper when it commutes with the core statements after it, with the values it reads
returned by the core. Only a call of one function that changes nothing: no attribute, item or
global written, no in-place or container method, no other method of its object called (ignite's
`self._check_type(output)` sets `self._type`, which the core reads after it). What it reads
inside is not compared with the core statements after it: a value it logs may be read later
than before. State changes (a counter, an append, host randomness) and tensor hazards keep the
call where it is: they are rewritten in the callee (rewriters/callee_state.py) or listed.
Reads only text: no torch (the static path)."""

from __future__ import annotations

import ast
import os

from graphsafe.model import Diagnostic
from graphsafe.rewriters.boundary import _MUTATORS  # methods that change their receiver

# host output and host reads: moving the call after the core changes when they happen, not what
HOST_OUTPUT_CODES = frozenset("GS101 GS102 GS103 GS104 GS105 GS106 GS109 GS501 GS504 GS505".split())


def host_callee_lines(diagnostics: list[Diagnostic], region: str, defined: str, region_path,
                      source: str) -> dict[int, set[str]]:
    """{line of the region: the codes its callees report} for the bare call statements at the
    top level of the region's function that reach nothing but host output. `region`: the name
    the call chains start with; `defined`: the function as `source` (the file at `region_path`)
    defines it ("f" or "Class.method")."""
    here = os.path.realpath(region_path)
    reached: dict[int, set[str]] = {}
    callees: dict[int, set[tuple[str, str]]] = {}  # line -> (callee, its file); a deeper chain: ("", "")
    for d in diagnostics:
        if len(d.chain) < 2 or d.chain[0] != region or not d.call_sites:
            continue
        site = d.call_sites[0]
        if site.line and os.path.realpath(site.path) == here:
            reached.setdefault(site.line, set()).add(d.code)
            callees.setdefault(site.line, set()).add((d.chain[1], d.path) if len(d.chain) == 2 else ("", ""))
    bare = _bare_calls(source, defined)
    return {line: codes for line, codes in reached.items() if codes <= HOST_OUTPUT_CODES and line in bare
            and len(callees[line]) == 1 and _changes_nothing(*next(iter(callees[line])))}


def _changes_nothing(callee: str, path: str) -> bool:
    """Whether the one function `callee` ("f" or "Class.method", in `path`) only reads and calls:
    no attribute, item or global written, no in-place or container method, no other method of
    its own object called (`self._check_type(...)` that sets `self._type` must stay where the
    core reads it after). Moving such a call after the core changes when its output appears,
    not what the core computes."""
    if not callee:
        return False
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    function = _function(tree, callee)
    if function is None:
        return False
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete)):
            return False
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(not isinstance(t, ast.Name) for t in targets):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in _MUTATORS or (method.endswith("_") and not method.endswith("__")):
                return False
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                return False
    return True


def _function(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The top-level function or method `qualname` ("f" or "Class.method")."""
    owner, _, name = qualname.rpartition(".")
    scope = tree.body
    if owner:
        scope = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), [])
    return next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)


def _bare_calls(source: str, region: str) -> set[int]:
    """The lines of the call statements (`self.progress(...)`, not `y = f(...)`) directly in the
    body of the function `region`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    function = _function(tree, region)
    if function is None:
        return set()
    return {line for s in function.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
            for line in range(s.lineno, (s.end_lineno or s.lineno) + 1)}
