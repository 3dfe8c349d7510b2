"""A check that only warns and repairs → the repair made unconditional, the warning eager-only:

    if variance.lt(m).any():                       if not (torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()) and (variance.lt(m).any()):
        warnings.warn("negative variances")   →        warnings.warn("negative variances")
        variance = variance.clamp_min(m)           variance = variance.clamp_min(m)

The branch reads the tensor on the host (GS201: capture fails), but its repair is the identity
where the condition is false, so running it always computes the same values, and gradients (a
clamp passes the gradient where the value is inside the bound; nan_to_num where it is finite).
Proven by pattern only, with the bound textually the same and side-effect free:

| condition (T a name, M the bound; either side of the comparison) | repair, last in the body |
|---|---|
| `T.lt(M).any()`, `T.le(M).any()`, `(T < M).any()`, `(T <= M).any()`, `torch.any(T < M)` | `T = T.clamp_min(M)`, `T.clamp(min=M)`, `torch.clamp(T, min=M)`, `torch.clamp_min(T, M)` |
| the same with gt/ge/`>`/`>=` | the clamp_max forms |
| `not torch.isfinite(T).all()`, `not T.isfinite().all()`, `(~torch.isfinite(T)).any()` | `T = torch.nan_to_num(T, ...)`, `T.nan_to_num(...)` |

The rest of the body must be logging only (`warnings.warn`, `log.warning(...)`, `print`). The
warning keeps its test, now skipped while a CUDA graph is being captured: every eager call
(graphed()'s warm-up included, and every CPU run) warns exactly as before; replays repair
without warning. The one value difference: an integer T clamped by a float bound becomes float
where the original stayed integer when nothing was below the bound.

Applied to the `if` lines the core's reach reports as GS201, and to such checks in property
getters (`mvn.variance`: an attribute read the call graph does not follow). A GS201 `if` of the
reach that warns but whose repair is not proven the identity is refused with its line and why.
Reads and writes only text: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

from graphsafe.model import Diagnostic
from graphsafe.rewriters.host_callees import HOST_OUTPUT_CODES

CAPTURING = "torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()"
_LOG_METHODS = frozenset("warn warning info debug error critical exception log".split())
_LOWER = {"Lt": "min", "LtE": "min", "Gt": "max", "GtE": "max"}  # T < M: repaired by a lower bound M
_FLIPPED = {"Lt": "Gt", "LtE": "GtE", "Gt": "Lt", "GtE": "LtE"}
_METHODS = {"lt": "Lt", "le": "LtE", "gt": "Gt", "ge": "GtE"}


@dataclasses.dataclass
class Repairs:
    changed: list[str] = dataclasses.field(default_factory=list)  # "path:line: what", one per rewrite
    refused: list[str] = dataclasses.field(default_factory=list)  # "path:line: why"
    guarded: dict[str, set[int]] = dataclasses.field(default_factory=dict)  # file → the if's own lines

    def settles(self, d: Diagnostic) -> bool:
        """The GS201 of a rewritten `if` and the host output of its eager-only body."""
        lines = self.guarded.get(os.path.realpath(d.path), set())
        return d.start.line in lines and (d.code == "GS201" or d.code in HOST_OUTPUT_CODES)


def unconditional_repairs(diagnostics: list[Diagnostic], paths: list[Path]) -> Repairs:
    """Rewrite, in the files at `paths`, the warn-and-repair checks of the reach's GS201 lines
    and of property getters."""
    reach: dict[str, set[int]] = {}
    for d in diagnostics:
        if d.code == "GS201":
            reach.setdefault(os.path.realpath(d.path), set()).add(d.start.line)
    result = Repairs()
    for path in paths:
        key = os.path.realpath(path)
        try:
            text = Path(path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if key not in reach and "@property" not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        edits = []
        for node, in_reach in _candidates(tree, reach.get(key, set())):
            why = _refusal(node)
            if why is None and not _imports_torch(tree):
                why = "the file does not `import torch`"
            if why is not None:
                if in_reach and _warns(node):
                    result.refused.append(f"{key}:{node.lineno}: the warning's branch kept: {why}")
                continue
            edits.append(node)
            result.changed.append(f"{key}:{node.lineno}: `{ast.get_source_segment(text, node.body[-1])}` made unconditional; "
                                  "its warning skipped while capturing")
            result.guarded.setdefault(key, set()).update(range(node.lineno, node.body[-1].lineno))
        if edits:
            Path(path).write_bytes(_rewritten(text, edits).encode("utf-8"))
    return result


def _candidates(tree: ast.Module, lines: set[int]):
    """(if, in the reach) for every `if` on a reach line, and every `if` in a property getter."""
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.lineno in lines:
            seen.add(id(node))
            yield node, True
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
            for inner in ast.walk(node):
                if isinstance(inner, ast.If) and id(inner) not in seen and _warns(inner):
                    yield inner, False


def _warns(node: ast.If) -> bool:
    return any(_is_log(s) for s in node.body)


def _is_log(statement: ast.stmt) -> bool:
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    return (isinstance(func, ast.Name) and func.id in ("print", "warn")) or (
        isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS)


def _refusal(node: ast.If) -> str | None:
    """None when the `if` is a proven warn-and-repair check, else why not."""
    if node.orelse:
        return "it has an else branch"
    if len(node.body) < 2 or not all(_is_log(s) for s in node.body[:-1]):
        return "its body is not logging followed by one repair"
    repair = node.body[-1]
    if repair.lineno <= node.body[-2].end_lineno or repair.col_offset <= node.col_offset:
        return "the repair does not stand on a line of its own"
    if not (isinstance(repair, ast.Assign) and len(repair.targets) == 1 and isinstance(repair.targets[0], ast.Name)):
        return "the last statement is not `name = <repair>`"
    target = repair.targets[0].id
    tested = _tested(node.test)
    if tested is None:
        return "the condition is not a bound or finiteness test of one name (lt/le/gt/ge(...).any(), not isfinite(...).all())"
    name, kind, bound = tested
    if name != target:
        return f"the condition tests `{name}`, the repair rebinds `{target}`"
    repaired = _repair(repair.value, target)
    if repaired is None:
        return "the repair is not a clamp_min/clamp_max/clamp/nan_to_num of the tested name"
    if repaired[0] != kind or (bound is not None and ast.dump(repaired[1]) != ast.dump(bound)):
        return "the repair is not the identity where the condition is false (another bound or direction)"
    return None


def _tested(test: ast.expr):
    """(name, "min" | "max" | "finite", bound) for the condition forms of the table."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):  # not torch.isfinite(T).all()
        inner = test.operand
        if _method(inner, "all") and _finite_of(inner.func.value):
            return _finite_of(inner.func.value), "finite", None
        return None
    if _method(test, "any") and not test.args:
        inner = test.func.value
    elif (isinstance(test, ast.Call) and _is_torch(test.func, "any") and len(test.args) == 1 and not test.keywords):
        inner = test.args[0]
    else:
        return None
    if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Invert) and _finite_of(inner.operand):
        return _finite_of(inner.operand), "finite", None
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in _METHODS \
            and isinstance(inner.func.value, ast.Name) and len(inner.args) == 1 and not inner.keywords:
        op, name, bound = _METHODS[inner.func.attr], inner.func.value.id, inner.args[0]
    elif isinstance(inner, ast.Compare) and len(inner.ops) == 1 and type(inner.ops[0]).__name__ in _LOWER:
        op, left, right = type(inner.ops[0]).__name__, inner.left, inner.comparators[0]
        if isinstance(left, ast.Name) and _plain(right):
            name, bound = left.id, right
        elif isinstance(right, ast.Name) and _plain(left):
            name, bound, op = right.id, left, _FLIPPED[op]
        else:
            return None
    else:
        return None
    return (name, _LOWER[op], bound) if _plain(bound) else None


def _repair(value: ast.expr, name: str):
    """("min" | "max", bound) or ("finite", None) for the repair forms of the table."""
    if not isinstance(value, ast.Call):
        return None
    func, args, keywords = value.func, value.args, {k.arg: k.value for k in value.keywords}
    on_name = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name
    if on_name and not _is_torch(func, func.attr):  # T.clamp_min(M), T.clamp(min=M), T.nan_to_num(...)
        rest = args
    elif isinstance(func, ast.Attribute) and _is_torch(func, func.attr) and args \
            and isinstance(args[0], ast.Name) and args[0].id == name:  # torch.clamp(T, min=M)
        rest = args[1:]
    else:
        return None
    method = func.attr
    if method in ("clamp_min", "clamp_max") and len(rest) == 1 and not keywords:
        return method[-3:], rest[0]
    if method == "clamp" and not rest and len(keywords) == 1 and set(keywords) <= {"min", "max"}:
        (which, bound), = keywords.items()
        return which, bound
    if method == "nan_to_num" and set(keywords) <= {"nan", "posinf", "neginf"} and len(rest) <= 3:
        return "finite", None
    return None


def _finite_of(expr: ast.expr) -> str | None:
    """T for `torch.isfinite(T)` or `T.isfinite()`."""
    if isinstance(expr, ast.Call) and _is_torch(expr.func, "isfinite") and len(expr.args) == 1 \
            and isinstance(expr.args[0], ast.Name):
        return expr.args[0].id
    if _method(expr, "isfinite") and not expr.args and isinstance(expr.func.value, ast.Name):
        return expr.func.value.id
    return None


def _method(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == name \
        and not expr.keywords


def _is_torch(func: ast.expr, name: str) -> bool:
    return isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Name) \
        and func.value.id == "torch"


def _plain(expr: ast.expr) -> bool:
    """A bound that reads the same twice: a name, an attribute chain, a number."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name) or (isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)))


def _imports_torch(tree: ast.Module) -> bool:
    return any(isinstance(s, ast.Import) and any(a.name == "torch" and a.asname is None for a in s.names)
               for s in tree.body)


def _rewritten(text: str, nodes: list[ast.If]) -> str:
    """The guard before each test; each repair moved out of its body, one level up (the body's
    last statement, so no line moves). ast columns are UTF-8 byte offsets: edit bytes."""
    lines = text.encode("utf-8").splitlines(keepends=True)  # \n, \r\n, \r: ast's lines
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        repair = node.body[-1]
        shift = repair.col_offset - node.col_offset
        for i in range(repair.lineno - 1, repair.end_lineno):
            lines[i] = lines[i][shift:] if lines[i][:shift].strip() == b"" else lines[i]
        test = node.test  # `not (<capturing>) and (` before the test, `)` after it: no line moves
        opening = b"not (" + CAPTURING.encode() + b") and ("
        start, end = test.lineno - 1, test.end_lineno - 1
        lines[end] = lines[end][:test.end_col_offset] + b")" + lines[end][test.end_col_offset:]
        lines[start] = lines[start][:test.col_offset] + opening + lines[start][test.col_offset:]
    return b"".join(lines).decode("utf-8")

