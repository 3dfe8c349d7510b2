"""A gradient reset by a fresh tensor → the existing gradient zeroed in place (`graph` only):

    if p.grad is not None:                           if p.grad is not None:
        p.grad = torch.zeros_like(p.grad)     →          with torch.no_grad(): p.grad.zero_()

GS401: inside a captured step the fresh tensor comes from the graph's pool and `p.grad` is left
bound to it, while the captured backward keeps accumulating into the gradient it found at capture,
which nothing zeroes on replay: every replay after the first adds to the previous step's
gradient (silently wrong). Zeroing in place keeps the one gradient tensor the graph reads.

Equal where the rewrite applies: the `if` proves the gradient exists (`zeros_like(None)` would
raise), `zeros_like` of the gradient itself keeps its shape, dtype, device, layout and strides, so
`p.grad` holds zeros of the same kind either way, and the next backward adds into zeros as before
(`torch.optim.Optimizer.zero_grad(set_to_none=False)` does the same). What differs is identity:
the old gradient tensor is zeroed rather than dropped, so code that kept a reference to it
(`g = p.grad` before the reset) sees zeros, and a gradient made with `create_graph=True` keeps its
autograd history. `graph` applies it to the core's reach only, where the step's gradients are the
graph's; anything else of the GS401 `X.grad = ...` form is left blocking, with why.

Proven by pattern only: the assignment is the first statement of `if X.grad is not None:`, alone
on its line, `X.grad = M.zeros_like(X.grad)` with one argument, X textually the same in all three.
The line count is kept (the later checks' lines stay right). Reads and writes only text: no torch
(the static path)."""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

from graphsafe.model import Diagnostic


@dataclasses.dataclass
class GradZeros:
    changed: list[str] = dataclasses.field(default_factory=list)  # "path:line: what"
    refused: list[str] = dataclasses.field(default_factory=list)  # "path:line: why"
    zeroed: dict[str, set[int]] = dataclasses.field(default_factory=dict)  # file → rewritten lines

    def settles(self, d: Diagnostic) -> bool:
        return d.code == "GS401" and d.start.line in self.zeroed.get(os.path.realpath(d.path), set())


def gradients_zeroed_in_place(diagnostics: list[Diagnostic], paths: list[Path]) -> GradZeros:
    """Rewrite, in the files at `paths`, the GS401 `X.grad = M.zeros_like(X.grad)` lines the
    diagnostics report, where the pattern proves them equal."""
    lines: dict[str, set[int]] = {}
    for d in diagnostics:
        if d.code == "GS401":
            lines.setdefault(os.path.realpath(d.path), set()).add(d.start.line)
    result = GradZeros()
    for path in paths:
        key = os.path.realpath(path)
        if key not in lines:
            continue
        try:
            text = Path(path).read_bytes().decode("utf-8")
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        source_lines = text.splitlines(keepends=True)
        edits: dict[int, str] = {}
        for statement, guard in _grad_assignments(tree, lines[key]):
            why = _refusal(statement, guard, source_lines, _torch_names(tree))
            if why is not None:
                result.refused.append(f"{key}:{statement.lineno}: `{ast.get_source_segment(text, statement)}` "
                                      f"kept (GS401): {why}")
                continue
            call = statement.value
            target = ast.get_source_segment(text, statement.targets[0])
            module = call.func.value.id
            edits[statement.lineno] = f"with {module}.no_grad(): {target}.zero_()"
            result.changed.append(f"{key}:{statement.lineno}: `{ast.get_source_segment(text, statement)}` → "
                                  f"`{edits[statement.lineno]}` (the gradient exists: zeroed in place)")
            result.zeroed.setdefault(key, set()).add(statement.lineno)
        if edits:
            for line, new in edits.items():
                old = source_lines[line - 1]
                indent = old[:len(old) - len(old.lstrip())]
                ending = old[len(old.rstrip("\r\n")):]
                source_lines[line - 1] = indent + new + ending
            Path(path).write_bytes("".join(source_lines).encode("utf-8"))
    return result


def _grad_assignments(tree: ast.Module, lines: set[int]):
    """(assignment, the `if` whose body holds it or None) for each `X.grad = ...` on a listed line."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno in lines and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr == "grad":
            parent = parents.get(id(node))
            guard = parent if isinstance(parent, ast.If) and node in parent.body else None
            yield node, guard


def _refusal(statement: ast.Assign, guard: ast.If | None, source_lines: list[str], torch_names: set[str]) -> str | None:
    """None when the assignment is a proven reset of an existing gradient, else why not."""
    target = statement.targets[0]
    call = statement.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "zeros_like"
            and isinstance(call.func.value, ast.Name)):
        return "the new value is not `torch.zeros_like(...)`: a fresh tensor the graph's backward does not write"
    if call.func.value.id not in torch_names:
        return f"`{call.func.value.id}` is not the torch module here"
    if len(call.args) != 1 or call.keywords or ast.unparse(call.args[0]) != ast.unparse(target):
        return "`zeros_like` is not of the gradient itself with no other argument: its kind may differ"
    if guard is None or guard.body[0] is not statement or guard.orelse:
        return "not the first statement of an `if <x>.grad is not None:`: the gradient is not proven to exist"
    test = guard.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
            and ast.unparse(test.left) == ast.unparse(target)):
        return "the `if` does not test `<x>.grad is not None` of the same gradient"
    if statement.lineno != statement.end_lineno \
            or source_lines[statement.lineno - 1].strip() != _segment(source_lines, statement).strip():
        return "the assignment does not stand alone on its line"
    return None


def _segment(source_lines: list[str], node: ast.stmt) -> str:
    line = source_lines[node.lineno - 1].encode("utf-8")
    return line[node.col_offset:node.end_col_offset].decode("utf-8")


def _torch_names(tree: ast.Module) -> set[str]:
    """The names the module binds to torch at its top level (`import torch`, `import torch as th`)."""
    return {alias.asname or alias.name for node in tree.body if isinstance(node, ast.Import)
            for alias in node.names if alias.name == "torch"}
