"""A size read on the host that trims a step input, moved to the wrapper: the trimmed tensor becomes
the core's input.

    def forward(self, feats, lengths):               def forward(self, feats, lengths):
        n = int(lengths.max())               →           n = (feats.size(1) if <capturing> else int(lengths.max()))
        feats = feats[:, :n]                             feats = feats[:, :n]

    def eval_step(model, feats, lengths):            def eval_step(model, feats, lengths):
        out = eval_step_core(model, feats, lengths)      feats_trimmed = feats[:, :int(lengths.max())]
                                                         out = eval_step_core(model, feats_trimmed, lengths)

`int(lengths.max())` waits for the device, so no graph holds it; but it reads the step's inputs
only, which the wrapper may read before the core (outside the graph). The wrapper trims the input
as the callee does, so the callee's own trim keeps the tensor as it is: while a stream is captured
the callee takes the size the wrapper cut (`feats.size(1)`, the same number), otherwise it reads
as before (the same code for every other caller, and for graphed()'s eager warm-up). A slice
bound past the end is clamped, so a trim applied twice is the trim once.

The pattern: a GS105 `n = int(EXPR)` of a function the core calls directly, at the start of its
body (a docstring may come first), EXPR reading only its parameters, followed by `Q = Q[:, ..., :n]`
(a parameter trimmed along one dimension, plain `:` before it), and `n` read nowhere else; the
core passes each of those parameters a parameter of its own, by position, in its first statement.

What the user gets: the core's input now has a shape per distinct trim. graphed() captures the
non-batch shape of its first call only unless asked for more, so the wiring asks for
`pad=False, shapes=TRIMMED_SHAPES`: each trimmed length gets a graph on its first call, later calls
of it replay, and past TRIMMED_SHAPES lengths a call runs eagerly (the summary says so). Each graph
costs memory in the one shared pool: the bound is the user's to change.

Static path: libcst only, no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from graphsafe.rewriters.boundary import _fresh, _peel_grad_mode, _torch_name, parsed_function

CAPTURING = "{t}.cuda.is_available() and {t}.cuda.is_current_stream_capturing()"  # False on a CPU-only torch
SIZE_READ = "GS105"
TRIMMED_SHAPES = 16  # graphed(shapes=...) the wiring asks for: at most this many trimmed lengths get graphs


@dataclass
class Trim:
    """One trim moved: where, and what the wrapper now does."""

    callee_path: str
    callee_line: int  # the size read, now skipped while capturing
    wrapper_line: str  # the statement added before the core call
    note: str


@dataclass
class TrimmedInputs:
    trims: list[Trim] = field(default_factory=list)

    def settles(self, path: str, line: int, code: str) -> bool:
        return code == SIZE_READ and any(Path(t.callee_path).resolve() == Path(path).resolve()
                                         and t.callee_line == line for t in self.trims)


def trim_in_wrapper(diagnostics, core: str, region_file: Path, region: str, core_name: str) -> TrimmedInputs:
    """Move each trim the pattern covers (the module docstring says which): `diagnostics` are the
    core's check on the scratch copy, `core` its display name, `region_file` the scratch file that
    holds the wrapper `region` and the core `core_name` (both rewritten in place)."""
    result = TrimmedInputs()
    for d in diagnostics:
        if d.code != SIZE_READ or len(d.chain) != 2 or d.chain[0] != core or not d.call_sites \
                or Path(d.call_sites[0].path).resolve() != region_file.resolve():
            continue
        trim = _one(Path(d.path), d.start.line, d.chain[1], region_file, region, core_name, d.call_sites[0].line)
        if trim is not None:
            result.trims.append(trim)
    return result


def _one(callee_file: Path, line: int, callee: str, region_file: Path, region: str, core_name: str,
         call_line: int) -> Trim | None:
    try:
        callee_text = callee_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = parsed_function(callee_text, callee)
    if found is None:
        return None
    module, positions, owner, function = found
    body, _ = _peel_grad_mode(function)
    body = body[1:] if body and _is_docstring(body[0]) else body
    if len(body) < 2 or positions[body[0]].start.line != line:
        return None
    read, trimmed = _read_and_trim(body[0], body[1], function)
    if read is None:
        return None
    size_name, expr, tensor, dim, slice_text = read
    params = [p.name.value for p in function.params.params]
    params = params[1:] if owner is not None else params  # a method: `self` is not passed
    expr_names = _names(expr)
    if not expr_names <= set(params) or tensor not in params or _loads(function, size_name) != 1:
        return None
    # the core's first statement calls it: map the callee's parameters to the core's arguments
    region_text = region_file.read_text(encoding="utf-8")
    core_found = parsed_function(region_text, f"{owner_prefix(region)}{core_name}")
    wrapper_found = parsed_function(region_text, region)
    if core_found is None or wrapper_found is None:
        return None
    _, core_positions, _, core_function = core_found
    core_body, _ = _peel_grad_mode(core_function)
    core_body = core_body[1:] if core_body and _is_docstring(core_body[0]) else core_body
    if not core_body or core_positions[core_body[0]].start.line != call_line:
        return None
    call = _single_call(core_body[0])
    core_params = [p.name.value for p in core_function.params.params]
    if call is None or any(a.keyword or a.star for a in call.args) or len(call.args) > len(params) \
            or not all(isinstance(a.value, cst.Name) and a.value.value in core_params for a in call.args):
        return None
    passed = {params[i]: a.value.value for i, a in enumerate(call.args)}
    if not (expr_names | {tensor}) <= set(passed):
        return None
    # the wrapper: its call of the core passes the same names by position
    _, wrapper_positions, _, wrapper_function = wrapper_found
    at = _core_call_in(wrapper_function, core_name, wrapper_positions)
    if at is None:
        return None
    statement, core_call = at
    core_index = core_params[1:] if core_params and core_params[0] == "self" else core_params
    if not all(passed[n] in core_index for n in expr_names | {tensor}):
        return None  # `self` passed on: not a step input the wrapper holds
    index = core_index.index(passed[tensor])
    if index >= len(core_call.args) or not isinstance(core_call.args[index].value, cst.Name) or any(
            not isinstance(core_call.args[core_index.index(passed[n])].value, cst.Name) for n in expr_names):
        return None
    outer = {n: core_call.args[core_index.index(passed[n])].value.value for n in expr_names}
    given = core_call.args[index].value
    fresh = _fresh(f"{given.value}_trimmed", wrapper_function)
    wrapper_expr = _renamed(cst.Module([]).code_for_node(expr), outer)
    bound = slice_text.replace(size_name, f"int({wrapper_expr})")
    added = f"{fresh} = {given.value}[{bound}]"
    # edits: the callee's read (skipped while capturing), then the wrapper (a line added, an argument renamed)
    value = body[0].body[0].value
    torch_name = _torch_name(module)
    if torch_name is None:
        return None  # the callee's file does not import torch: no capture to ask about
    new_value = f"({tensor}.size({dim}) if {CAPTURING.format(t=torch_name)} else {cst.Module([]).code_for_node(value)})"
    if positions[value].start.line != positions[value].end.line or \
            wrapper_positions[given].start.line != wrapper_positions[given].end.line:
        return None
    same_file = callee_file.resolve() == region_file.resolve()
    region_new = _splice(region_text, wrapper_positions[given], fresh)  # column edits first: no line moves
    if same_file:
        region_new = _splice(region_new, positions[value], new_value)
    first = wrapper_positions[statement].start
    lines = region_new.splitlines(keepends=True)
    indent = lines[first.line - 1][:len(lines[first.line - 1]) - len(lines[first.line - 1].lstrip())]
    lines.insert(first.line - 1, f"{indent}{added}  # graphsafe: the trim {callee_file.name}:{line} makes, on the "
                                 f"host before the graph\n")
    if not same_file:
        callee_file.write_text(_splice(callee_text, positions[value], new_value), encoding="utf-8")
    region_file.write_text("".join(lines), encoding="utf-8")
    now = line + (1 if same_file and line >= first.line else 0)  # the read's line after the added one
    note = (f"{callee_file.name}:{line}: the host size read `{cst.Module([]).code_for_node(value)}` trims "
            f"`{tensor}`: the wrapper now trims it before the core ({added}), and the read there is skipped "
            f"while a graph is captured. graphed(pad=False, shapes={TRIMMED_SHAPES}) captures a graph per trimmed "
            f"length, on that length's first call, and later calls of it replay: at most {TRIMMED_SHAPES} graphs, "
            f"all in one memory pool; a call of a further length runs eagerly (a RuntimeWarning, counted in "
            f".stats['past_shape_limit']); inputs padded to one length need one graph")
    return Trim(str(callee_file), now, added, note)


def owner_prefix(region: str) -> str:
    owner = region.rpartition(".")[0]
    return f"{owner}." if owner else ""




def _read_and_trim(first: cst.BaseStatement, second: cst.BaseStatement, function: cst.FunctionDef):
    """(n, EXPR, Q, dim, slice text) for `n = int(EXPR)` then `Q = Q[:, :n]`, else (None, None)."""
    one, two = _assign(first), _assign(second)
    if one is None or two is None:
        return None, None
    (n, value), (q, sliced) = one, two
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "int"
            and len(value.args) == 1 and not value.args[0].keyword and not value.args[0].star):
        return None, None
    if not (isinstance(sliced, cst.Subscript) and isinstance(sliced.value, cst.Name) and sliced.value.value == q):
        return None, None
    elements = sliced.slice
    for dim, element in enumerate(elements):
        s = element.slice
        if not isinstance(s, cst.Slice):
            return None, None
        empty = s.lower is None and s.upper is None and s.step is None
        if empty:
            continue
        if s.lower is None and s.step is None and isinstance(s.upper, cst.Name) and s.upper.value == n \
                and all(_empty(e.slice) for e in elements[dim + 1:]):
            text = cst.Module([]).code_for_node(sliced)
            return (n, value.args[0].value, q, dim, text[text.index("[") + 1:-1]), sliced
        return None, None
    return None, None


def _empty(s) -> bool:
    return isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None


def _assign(statement: cst.BaseStatement):
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
            and isinstance(statement.body[0], cst.Assign) and len(statement.body[0].targets) == 1 \
            and isinstance(statement.body[0].targets[0].target, cst.Name):
        return statement.body[0].targets[0].target.value, statement.body[0].value
    return None


def _single_call(statement: cst.BaseStatement) -> cst.Call | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        value = getattr(small, "value", None)
        if isinstance(small, (cst.Assign, cst.Expr, cst.Return)) and isinstance(value, cst.Call):
            return value
    return None


def _core_call_in(function: cst.FunctionDef, core_name: str, positions):
    """(statement, call) of the wrapper's one call of the core."""
    found = []
    for statement in function.body.body:
        for node in _calls(statement):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            if name == core_name and not any(a.keyword or a.star for a in node.args):
                found.append((statement, node))
    return found[0] if len(found) == 1 else None


def _calls(node: cst.CSTNode):
    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.calls: list[cst.Call] = []

        def visit_Call(self, call: cst.Call) -> None:
            self.calls.append(call)

    collector = Collect()
    node.visit(collector)
    return collector.calls


def _names(node: cst.CSTNode) -> set[str]:
    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: set[str] = set()

        def visit_Name(self, name: cst.Name) -> None:
            self.names.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # `lengths.max`: the receiver only
            return False

    collector = Collect()
    node.visit(collector)
    return collector.names


def _loads(function: cst.FunctionDef, name: str) -> int:
    """How often `name` occurs in the function's body besides its binding."""
    count = sum(1 for n in _all_names(function.body) if n == name)
    return count - 1  # the binding `n = ...`


def _all_names(node: cst.CSTNode) -> list[str]:
    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: list[str] = []

        def visit_Name(self, name: cst.Name) -> None:
            self.names.append(name.value)

    collector = Collect()
    node.visit(collector)
    return collector.names


def _renamed(text: str, names: dict[str, str]) -> str:
    expr = cst.parse_expression(text)

    class Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=names.get(updated.value, updated.value))

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return True

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
            return updated.with_changes(attr=original.attr)  # `.max` is no name to rename

    return cst.Module([]).code_for_node(expr.visit(Rename()))


def _splice(text: str, where, new: str) -> str:
    """`text` with the node at `where` (a single line) replaced by `new`."""
    lines = text.splitlines(keepends=True)
    start, end = where.start, where.end
    line = lines[start.line - 1]
    lines[start.line - 1] = line[:start.column] + new + line[end.column:]
    return "".join(lines)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString)
