"""GS108 + GS107: a histogram of boolean-mask-filtered values, at a fixed capacity (`graphsafe graph`,
before the split):

    mask = (y >= 0) & (y < k)
    y = y[mask]                                  (a blank line: the filter goes into the index)
    p = p[mask]                                  (a blank line)
    idx = k * y + p                         →    idx = torch.where(mask, (k * y + p), (k**2)).flatten()
    m = torch.bincount(idx, minlength=k**2)      m = torch.zeros((k**2) + 1, dtype=torch.int64, device=idx.device)
                                                       .scatter_add_(0, idx.long(), torch.ones_like(idx, dtype=torch.int64))[:(k**2)]

`x[mask]` and `bincount` both have data-dependent output sizes (host reads; capture fails). Here
every element is kept and the ones the mask drops are counted in one extra bin past the end,
which is cut off: fixed shapes, no host read.

What is equal: the index expression is elementwise (`+`, `-`, `*` of the filtered names, numbers
and attributes), so filtering its inputs then computing it equals computing it then filtering;
counting is order-free, so `flatten()` of the masked index gives the same counts as the filtered
one. For values in `[0, minlength)` the counts, dtype (int64) and length (`minlength`) are
bincount's. Unsafe: a value at or past `minlength` made bincount's result longer; it is now an
index error (or, for the value `minlength` itself, counted in the cut-off bin), and a negative
value was an error in bincount and still is. Refused: a filtered name or the index used anywhere
else, a mask rebound in between, `weights=`, statements spanning several lines. Keeps the line
count (the split's lines)."""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import _local_names
from graphsafe.rewriters.parsed import parse_torch_module
from graphsafe.rewriters.nonzero_rows import _functions, _names_in, _statements, _writes_name

_ELEMENTWISE = (cst.Add, cst.Subtract, cst.Multiply)


def fixed_histogram(source: str, bincount_at: set[tuple[int, int]],
                    filter_at: set[tuple[int, int]]) -> tuple[str | None, list[int]]:
    """Rewrite the `torch.bincount(idx, minlength=n)` starting at one of `bincount_at` ((line,
    column), columns from 0: GS107s) whose index is computed from names filtered by one mask at
    `filter_at` (the GS108s). Returns (new source or None, the bincount lines)."""
    parsed = parse_torch_module(source)
    if parsed is None:
        return None, []
    module, torch, positions = parsed
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line, start column, end column, text); one line each
    blank: set[int] = set()
    done: list[int] = []
    for function in _functions(module):
        statements = [small for _line, small in _statements(function)]
        for index, small in enumerate(statements):
            call = _bincount(small, torch, positions, bincount_at)
            if call is None:
                continue
            plan = _plan(statements, index, call, positions, filter_at)
            if plan is None:
                continue
            mask, filters, binding, count = plan
            if any(not _one_line(positions[s]) for s in (*filters, binding, small)):
                continue
            idx = call.args[0].value.value
            expression = positions[binding.value]
            edits.append((expression.start.line, expression.start.column, expression.end.column,
                          f"{torch}.where({mask}, ({_code(binding.value)}), ({count})).flatten()"))
            at = positions[call]
            edits.append((at.start.line, at.start.column, at.end.column,
                          f"{torch}.zeros(({count}) + 1, dtype={torch}.int64, device={idx}.device).scatter_add_("
                          f"0, {idx}.long(), {torch}.ones_like({idx}, dtype={torch}.int64))[:({count})]"))
            blank.update(positions[s].start.line for s in filters)
            done.append(at.start.line)
    if not done:
        return None, []
    for line, start, end, text in sorted(edits, key=lambda e: (e[0], -e[1])):
        row = lines[line - 1]
        lines[line - 1] = row[:start] + text + row[end:]
    for line in blank:
        row = lines[line - 1]
        lines[line - 1] = row[len(row.rstrip("\r\n")):]  # the line ending alone
    return "".join(lines), sorted(done)


def _bincount(small, torch: str, positions, at) -> cst.Call | None:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            start = positions[call].start
            if (start.line, start.column) in at and _code(call.func) == f"{torch}.bincount":
                found.append(call)

    small.visit(_Find())
    if len(found) != 1:
        return None
    call = found[0]
    positional = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    if len(positional) != 1 or not isinstance(positional[0].value, cst.Name) or set(keywords) != {"minlength"}:
        return None
    return call


def _plan(statements, index: int, call: cst.Call, positions, filter_at):
    """(mask, the filter statements, the index's binding, minlength's code) or None."""
    idx = call.args[0].value.value
    count = _code(next(a.value for a in call.args if a.keyword is not None))
    earlier = statements[:index]
    binding_at = next((i for i in range(len(earlier) - 1, -1, -1) if _binds(earlier[i], idx)), None)
    if binding_at is None:
        return None
    binding = earlier[binding_at]
    if not _elementwise(binding.value) or _names_in(statements[index], idx) != 1 or \
            any(_names_in(s, idx) for s in statements[index + 1:]) or \
            any(_names_in(s, idx) for s in earlier[binding_at + 1:]):
        return None
    names = _local_names(binding.value)
    filters, mask = [], None
    for position in range(binding_at - 1, -1, -1):
        small = earlier[position]
        name = _bound_name(small)
        if mask is not None and name == mask:
            break  # the mask's own binding: the filters come after it
        by = _filter_mask(small, name, positions, filter_at) if name in names else None
        if by is None:
            if name in names:
                break  # where the name comes from: the filters come after it
            continue
        if mask is not None and by != mask:
            return None
        mask = by
        filters.append(small)
    if mask is None or mask in names:
        return None
    filtered = {_bound_name(f) for f in filters}
    first = earlier.index(filters[-1])
    between = [s for s in earlier[first:binding_at] if not any(s is f for f in filters)]
    if any(_names_in(s, n) for s in (*between, *statements[index:]) for n in filtered) or \
            any(_writes_name(s, mask) for s in between):
        return None
    return mask, filters, binding, count


def _binds(small, name: str) -> bool:
    return _bound_name(small) == name


def _bound_name(small) -> str | None:
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _filter_mask(small: cst.Assign, name: str, positions, filter_at) -> str | None:
    """`mask` when `small` is `name = name[mask]` at a GS108."""
    value = small.value
    if not (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value == name
            and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index)
            and isinstance(value.slice[0].slice.value, cst.Name)):
        return None
    start = positions[value].start
    return value.slice[0].slice.value.value if (start.line, start.column) in filter_at else None


def _elementwise(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Name, cst.Integer)):
        return True
    if isinstance(expr, cst.Attribute):
        return isinstance(expr.value, (cst.Name, cst.Attribute)) and _elementwise(expr.value)
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, _ELEMENTWISE + (cst.Power,)) and _elementwise(expr.left) and \
            _elementwise(expr.right) and (not isinstance(expr.operator, cst.Power) or not _local_names(expr) - {"self"})
    return False


def _one_line(where) -> bool:
    return where.start.line == where.end.line


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
