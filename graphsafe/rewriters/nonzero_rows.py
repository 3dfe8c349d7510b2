"""GS107: the rows of a mask, used only to write one value into those rows (`graphsafe graph`,
before the split):

    rows = mask.nonzero(as_tuple=True)[0]          rows = mask
    table[rows] = value                       →    table.copy_(torch.where(rows.reshape(rows.shape[0], -1).any(1)
                                                       .reshape((-1,) + (1,) * (table.dim() - 1)), value, table))

`nonzero` has a data-dependent output size (a host read; capture fails). Writing one number into
the rows is a choice per row, `where` makes it on the device with fixed shapes.

What is equal: for a mask of one or more dimensions, `nonzero(as_tuple=True)[0]` lists the rows
(along dimension 0) holding a true element; `reshape(n, -1).any(1)` marks the same rows, and
`where` puts `value` in them and keeps the table elsewhere, written back in place (`copy_`:
same storage, dtype and shape; a value of another dtype is cast as the indexed write casts it).
Only where `value` is one number: a numeric literal or a per-step Python number the analyzer
reported (GS301 on exactly it), which `where` broadcasts like the indexed write does; the value is
now evaluated even when no row is chosen (an attribute read). Refused (left as it is): another
use of `rows`, a second binding of it, or the mask written between (rebound, augmented or an
in-place method), or a value that is not one number. Keeps the line count (the split's lines)."""

from __future__ import annotations

import dataclasses

import libcst as cst

from graphsafe.rewriters.parsed import parse_torch_module


@dataclasses.dataclass
class RowsResult:
    source: str | None  # None: nothing rewritten
    lines: list[int] = dataclasses.field(default_factory=list)  # the writes rewritten


def writes_by_mask(source: str, nonzero_at: set[tuple[int, int]], numbers_at: set[tuple[int, int]]) -> RowsResult:
    """Rewrite `rows = M.nonzero(as_tuple=True)[0]` (or `torch.nonzero(M, as_tuple=True)[0]`)
    whose value starts at one of `nonzero_at` ((line, column), columns from 0: the GS107s), when
    every use of `rows` is `T[rows] = V` with V a literal number or starting at one of
    `numbers_at` (the GS301s: a per-step Python number)."""
    parsed = parse_torch_module(source)
    if parsed is None:
        return RowsResult(None)
    module, torch, positions = parsed
    plans: dict[int, object] = {}  # id(node) -> replacement
    lines: list[int] = []
    for function in _functions(module):
        statements = _statements(function)
        for index, (line, small) in enumerate(statements):
            mask = _nonzero_rows(small, torch, positions, nonzero_at)
            if mask is None:
                continue
            rows = small.targets[0].target.value
            writes = _writes_of(statements[index + 1:], rows, mask, positions, numbers_at)
            if not writes:
                continue
            plans[id(small.value)] = cst.Name(mask)
            for write_line, write in writes:
                plans[id(write)] = _where_write(write, rows, torch)
                lines.append(positions[write_line].start.line)
    if not plans:
        return RowsResult(None)
    return RowsResult(module.visit(_Replace(plans)).code, sorted(lines))


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []

    class _Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    module.visit(_Collect())
    return found


def _statements(function: cst.FunctionDef) -> list[tuple[cst.SimpleStatementLine, cst.BaseSmallStatement]]:
    """The function's own simple statements in order (nested functions and classes left out)."""
    found: list = []

    class _Collect(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            found.extend((node, small) for small in node.body)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    function.visit(_Collect())
    return found


def _nonzero_rows(small, torch: str, positions, nonzero_at) -> str | None:
    """The mask's name when `small` is `rows = <mask>.nonzero(as_tuple=True)[0]` at a GS107."""
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
        return None
    value = small.value
    start = positions[value].start
    if (start.line, start.column) not in nonzero_at:
        return None
    if not (isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index)
            and isinstance(value.slice[0].slice.value, cst.Integer) and value.slice[0].slice.value.value == "0"):
        return None
    call = value.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "nonzero"):
        return None
    keywords = [a for a in call.args if a.keyword is not None]
    positional = [a for a in call.args if a.keyword is None]
    if len(keywords) != 1 or keywords[0].keyword.value != "as_tuple" or \
            not (isinstance(keywords[0].value, cst.Name) and keywords[0].value.value == "True"):
        return None
    owner = call.func.value
    if isinstance(owner, cst.Name) and owner.value == torch and len(positional) == 1:
        mask = positional[0].value
    elif not positional:
        mask = owner
    else:
        return None
    return mask.value if isinstance(mask, cst.Name) and mask.value != small.targets[0].target.value else None


def _writes_of(later, rows: str, mask: str, positions, numbers_at) -> list | None:
    """The statements `T[rows] = V` after the binding, when they are every use of `rows` and the
    mask is not written before the last of them; None otherwise."""
    writes, last = [], None
    for position, (_line, small) in enumerate(later):
        if _names_in(small, rows) == 0:
            continue
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and _indexed_by(small.targets[0].target, rows)
                and _names_in(small.value, rows) == 0 and _one_number(small.value, positions, numbers_at)):
            return None
        writes.append((_line, small))
        last = position
    if last is None:
        return None
    if any(_writes_name(small, mask) or _writes_name(small, rows) for _line, small in later[:last + 1]):
        return None
    return writes


def _indexed_by(target: cst.BaseExpression, rows: str) -> bool:
    return (isinstance(target, cst.Subscript) and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
            and isinstance(target.slice[0].slice.value, cst.Name) and target.slice[0].slice.value.value == rows
            and _names_in(target.value, rows) == 0)


def _one_number(value: cst.BaseExpression, positions, numbers_at) -> bool:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    start = positions[value].start
    return (start.line, start.column) in numbers_at and isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))


def _names_in(node: cst.CSTNode, name: str) -> int:
    count = 0

    class _Count(cst.CSTVisitor):
        def visit_Name(self, found: cst.Name) -> None:
            nonlocal count
            count += found.value == name

    node.visit(_Count())
    return count


def _writes_name(small: cst.BaseSmallStatement, name: str) -> bool:
    """Rebinding `name`, augmenting it, or calling an in-place method on it (`mask.fill_(...)`)."""
    if isinstance(small, cst.Assign) and any(_names_in(t.target, name) and isinstance(t.target, (cst.Name, cst.Tuple, cst.List))
                                            for t in small.targets):
        return True
    if isinstance(small, (cst.AugAssign, cst.AnnAssign)) and isinstance(small.target, cst.Name) and small.target.value == name:
        return True
    found = False

    class _InPlace(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            if isinstance(call.func, cst.Attribute) and call.func.attr.value.endswith("_") and \
                    not call.func.attr.value.endswith("__") and \
                    isinstance(call.func.value, cst.Name) and call.func.value.value == name:
                found = True

    small.visit(_InPlace())
    return found


def _where_write(write: cst.Assign, rows: str, torch: str) -> cst.BaseSmallStatement:
    table = cst.Module([]).code_for_node(write.targets[0].target.value)
    value = cst.Module([]).code_for_node(write.value)
    chosen = f"{rows}.reshape({rows}.shape[0], -1).any(1).reshape((-1,) + (1,) * ({table}.dim() - 1))"
    return cst.parse_statement(f"{table}.copy_({torch}.where({chosen}, {value}, {table}))\n").body[0]


class _Replace(cst.CSTTransformer):
    def __init__(self, plans: dict[int, object]) -> None:
        self.plans = plans

    def on_leave(self, original, updated):
        replacement = self.plans.get(id(original))
        return replacement if replacement is not None else updated
