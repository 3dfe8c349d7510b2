"""A counter advanced when a host read of a tensor passes a threshold, advanced on the device
(`graphsafe graph`, what still blocks a core: GS105; the counter is already a device counter,
rewriters/callee_state.py):

    busiest = int(counts.max())                       →   busiest = counts.max().long()
    if busiest > self.warn * n / self.k:                   self.overflow_events.add_((busiest.double() > (self.warn * n / self.k)).to(self.overflow_events.dtype))
        self.overflow_events.add_(1)                       (a blank line)

`int(t)` reads the tensor on the host (capture fails) only to decide whether to count. Here the
test is a 0/1 tensor added to the counter: the same count, no host read, no branch. What is
equal: `.long()` truncates toward zero as `int()` does; the comparison runs in float64, where an
int64 count below 2**53 and a Python float compare as Python compares them. Unsafe: `int()` of a
nan/inf or of a tensor with several elements raised; now it does not; a counter left on the CPU
while the tensor is on the GPU now raises (callee_state's counters are buffers, moved with the
module). Only when the name is read
nowhere else, the `if` has no `else`, and its body is the one `.add_(<number>)` of the counter.
Keeps the line count.

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast

from graphsafe.rewriters.statement_lines import LineEdits, functions, one_line, source_of

_TESTS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


def counted_on_device(source: str, lines: set[int]) -> tuple[str | None, list[int]]:
    """The source with each `name = int(t)` on one of `lines` (GS105s) that only decides a device
    counter's `add_` counted on the device, and the `if` lines; (None, []) when none is."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, []
    text = source.splitlines(keepends=True)
    edits = LineEdits(source)
    done: list[int] = []
    seen: set[int] = set()  # a nested function's statements are walked with its parent's too
    for function in functions(tree):
        for read in ast.walk(function):
            planned = None if id(read) in seen else _plan(function, read, text, lines)
            seen.add(id(read))
            if planned is None or not edits.alone_on_its_lines(planned[2][0]):
                continue
            for statement, new in planned:
                if new is None:
                    edits.remove(statement)
                else:
                    edits.replace(statement, new)
            done.append(planned[1][0].lineno)
    new = edits.applied() if done else None
    return (new, sorted(done)) if new is not None else (None, [])


def _plan(function, read, text: list[str], lines: set[int]):
    if not (isinstance(read, ast.Assign) and read.lineno in lines and one_line(read) and len(read.targets) == 1
            and isinstance(read.targets[0], ast.Name) and isinstance(read.value, ast.Call)
            and isinstance(read.value.func, ast.Name) and read.value.func.id == "int"
            and len(read.value.args) == 1 and not read.value.keywords):
        return None
    name = read.targets[0].id
    loads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
    if len(loads) != 2:  # the binding and the test
        return None
    test = next((n for n in ast.walk(function) if isinstance(n, ast.If) and not n.orelse and len(n.body) == 1
                 and n.test.lineno == n.lineno == n.test.end_lineno and n.body[0].lineno > n.lineno
                 and any(m is loads[1] or m is loads[0] for m in ast.walk(n.test))), None)
    if test is None or test.lineno <= read.lineno:
        return None
    compare, add = test.test, test.body[0]
    if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1 and type(compare.ops[0]) in _TESTS):
        return None
    sides = [compare.left, compare.comparators[0]]
    if not any(isinstance(s, ast.Name) and s.id == name for s in sides):
        return None
    if not (isinstance(add, ast.Expr) and one_line(add) and isinstance(add.value, ast.Call)
            and isinstance(add.value.func, ast.Attribute) and add.value.func.attr == "add_"
            and len(add.value.args) == 1 and not add.value.keywords
            and isinstance(add.value.args[0], ast.Constant) and type(add.value.args[0].value) in (int, float)):
        return None
    counter = source_of(text, add.value.func.value)
    amount = add.value.args[0].value
    value = read.value.args[0]
    tensor = source_of(text, value)
    if not isinstance(value, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
        tensor = f"({tensor})"
    left, right = (f"{name}.double()" if isinstance(s, ast.Name) and s.id == name else f"({source_of(text, s)})"
                   for s in sides)
    op = _TESTS[type(compare.ops[0])]
    condition = f"({left} {op} {right}).to({counter}.dtype)"
    step = condition if amount == 1 else f"{condition} * {amount!r}"
    # the `if` header (from `if` to its colon) replaced by the add; the body's line emptied
    header = ast.Pass(lineno=test.lineno, end_lineno=test.lineno, col_offset=test.col_offset,
                      end_col_offset=_colon_end(text[test.lineno - 1], test.test.end_col_offset))  # a span only
    return [(read, f"{name} = {tensor}.long()"), (header, f"{counter}.add_({step})"), (add, None)]


def _colon_end(row: str, after: int) -> int:
    """The byte offset just past the `:` that ends an `if` header whose test ends at `after`."""
    raw = row.encode("utf-8")
    return raw.index(b":", after) + 1
