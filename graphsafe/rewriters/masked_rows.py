"""A boolean-mask selection of rows, row-wise work, and the scatter back, run on every row with the
mask applied (`graphsafe graph`, what still blocks a core: GS108 on both ends):

    keep = mask.reshape(-1) if mask is not None else None
    t = x[keep] if keep is not None else x           →  t = x; rows = keep if keep is not None else <all True>
    w, e, aux = self.router(t)                        →  w, e, aux = self.router(t, rows)
    n = t.shape[0]                                    →  n = rows.sum()
    out = f(t) * w[:, :1]                                 (unchanged: row-wise)
    if keep is not None:
        full = torch.zeros_like(x)
        full[keep] = out                              →  full = torch.where(keep[:, None], out, full)
        out = full

and in the callee that got `t` (a parameter `rows` added), each reduction over the rows masked:
`v.mean(0)` → `torch.where(rows[:, None], v, 0).sum(0) / rows.sum()`, `v.sum(0)` likewise without
the division, `v.all()` → `(v | ~rows).all()`, `v.any()` → `(v & rows).any()`, `.shape[0]` →
`rows.sum()`. `F.one_hot(i)` without `num_classes`, whose `i` are `topk` indices along the last
axis of `p` and whose width only bounds `p[:, :top1.shape[1]]` in a product summed over that
width → `num_classes=p.shape[-1]` (the extra columns are zero in the one-hot, so each product
adds 0, and `p`'s extra columns get gradient 0 as when they were sliced off).

`x[mask]` has as many rows as the mask has True: a host read, and capture fails. What is equal:
every op between the selection and the scatter is proven to work row by row (elementwise
arithmetic, the last axis of Linear/LayerNorm/activations/softmax/topk/one_hot, indexing and
permuting the other axes, modules of the same file whose forward is such work), so each selected
row's result is the one eager computed, and the other rows are discarded by the scatter or by the
masked reductions (same sums; gradients 0 on the discarded rows as eager gave none). Refused, with
the line: an op not known to be row-wise, a row value stored on an attribute, read after the
scatter or passed where its rows would mix, a positive axis on a value of unknown rank, and a
random draw over the selected rows (its count is the number of True: drawn on every row it gives
other numbers; it must be drawn outside the graph: masked_rows_and_draws has the region's wrapper
draw it, drawn_rows.py). Unsafe: the unselected rows are computed too
(an error or a device assert there is new), and a count `rows.sum()` is a 0-dim tensor where
eager had an int (its arithmetic is the tensor's dtype). Keeps the line count.

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses

from graphsafe.rewriters.drawn_rows import DRAW_ROWS, DRAWS, RANDOM_CALLS, Drawn, buffered_draw
from graphsafe.rewriters.statement_lines import LineEdits, fresh_name, one_line, source_of


class Refused(Exception):
    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"{line}: {why}")
        self.line, self.why = line, why


@dataclasses.dataclass(frozen=True, eq=False)
class Rows:
    """A value whose axis `axis` (counted from the right: -1 the last) runs over the selected rows."""

    axis: int
    ndim: int | None
    mask: str  # a 1-D bool tensor's text, True on the selected rows of that axis
    index_of: object = None  # the Rows value whose last axis these are topk indices of


@dataclasses.dataclass(frozen=True, eq=False)
class Shape:
    of: Rows


COUNT = object()  # the number of selected rows
INT = object()  # a loop index over `range(...)`: a Python int

_ELEMENTWISE_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "to", "type_as", "pow", "abs", "exp", "log",
    "sigmoid", "tanh", "relu", "neg", "sqrt", "rsqrt", "square", "clone", "detach", "contiguous", "add", "sub",
    "mul", "div", "clamp", "clamp_min", "clamp_max", "masked_fill", "nan_to_num", "sin", "cos", "reciprocal",
    "add_", "mul_", "sub_", "div_", "copy_", "requires_grad_"})
_ELEMENTWISE_FUNCTIONS = frozenset({
    "empty_like", "isfinite", "isnan", "isinf", "silu", "relu", "gelu", "sigmoid", "tanh", "exp", "log", "abs",
    "sqrt", "rsqrt", "square", "neg", "sin", "cos", "zeros_like", "ones_like", "full_like", "where", "isclose",
    "maximum", "minimum", "clamp", "mul",
    "add", "sub", "div", "pow", "logical_and", "logical_or", "logical_not", "eq", "ne", "lt", "le", "gt", "ge",
    "nan_to_num", "softplus", "leaky_relu", "elu", "mish", "hardswish", "hardtanh"})
_LAST_AXIS = frozenset({"softmax", "log_softmax", "normalize"})  # act along `dim`, which must not be the rows'
_RANDOM = RANDOM_CALLS
# torch.nn modules that work on the last axis (or elementwise), row by row
_ROW_MODULES = frozenset({"Linear", "LayerNorm", "RMSNorm", "SiLU", "ReLU", "GELU", "Tanh", "Sigmoid", "Identity",
                          "Softmax", "LeakyReLU", "Mish", "Hardswish", "ELU", "Softplus"})
_MASKED_REDUCTIONS = frozenset({"sum", "mean", "all", "any"})


def masked_rows(source: str, lines: set[int]) -> tuple[str | None, list[int], list[str]]:
    """(new source, rewritten lines, refusals "line: why") for each `t = x[m]` on one of `lines`
    (GS108s) scattered back by a `full[m] = out` on another of them."""
    return masked_rows_and_draws(source, lines, draws=False)[:3]


def masked_rows_and_draws(source: str, lines: set[int], draws: bool = True):
    """masked_rows, and with `draws` a random draw over the selected rows drawn by the wrapper
    (drawn_rows.py) instead of refused: the 4th item lists (class, parameters) of each class given a
    `_graphsafe_draws(parameters)` method that makes its forward's draws in its order, which the
    caller must wire to the region's wrapper (or drop the rewrite)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, [], [], []
    text = source.splitlines(keepends=True)
    torch_name = _torch_alias(tree)
    refusals: list[str] = []
    done: list[int] = []
    drawers: list[tuple[str, list[str]]] = []
    edits: dict[tuple[int, int, int, int], str] = {}
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)] + [tree]:
        for function in [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            select = _selection(function, lines)
            if select is None:
                continue
            try:
                if torch_name is None:
                    raise Refused(select.lineno, "the file does not import torch")
                found = _Walk(tree, text, torch_name, cls if isinstance(cls, ast.ClassDef) else None, edits)
                found.allow_draws = draws
                found.selected(function, select, lines)
            except Refused as refused:
                refusals.append(f"{refused.line}: {refused.why}")
                continue
            for span, new in found.edits.items():  # a class end may get two methods
                edits[span] = edits[span] + new if span in edits and span[:2] == span[2:] else new
            drawers += found.drawers
            done += [select.lineno, found.scatter_line]
    if not edits:
        return None, [], refusals, []
    edit = LineEdits(source)
    for (start_line, start_col, end_line, end_col), new in edits.items():
        edit.replace_span(edit.offset(start_line, start_col), edit.offset(end_line, end_col), new)
    new_source = edit.applied()
    if new_source is None:
        return None, [], refusals + [f"{min(done)}: two rewrites of the same code overlap"], []
    return new_source, sorted(done), refusals, drawers


def _torch_alias(tree: ast.Module) -> str | None:
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
    return None


def _selection(function: ast.FunctionDef, lines: set[int]) -> ast.Assign | None:
    """`t = x[m] if m is not None else x` or `t = x[m]`, one line, on one of `lines`."""
    for statement in function.body:
        if (isinstance(statement, ast.Assign) and statement.lineno in lines and one_line(statement)
                and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)):
            value = statement.value
            picked = value.body if isinstance(value, ast.IfExp) else value
            if (isinstance(picked, ast.Subscript) and isinstance(picked.value, ast.Name)
                    and isinstance(picked.slice, ast.Name)):
                return statement
    return None


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


class _Walk:
    """Follows the rows from the selection to the scatter through one function and its callees."""

    def __init__(self, tree: ast.Module, text: list[str], torch_name: str, cls: ast.ClassDef | None,
                 edits: dict) -> None:
        self.tree, self.text, self.torch, self.cls = tree, text, torch_name, cls
        self.edits: dict[tuple[int, int, int, int], str] = {}
        self.scatter_line = 0
        self.callees: dict[str, str] = {}  # class name -> the mask parameter added to its forward
        self.allow_draws = False  # a random draw over the rows: drawn by the wrapper (drawn_rows.py)
        self.drawn: list[Drawn] = []  # shared with the callees' walks
        self.draw_sites: list[tuple[ast.Call, str]] = []  # calls of `self.<attribute>` whose forward draws
        self.drawers: list[tuple[str, list[str]]] = []

    # ---- the function with the selection
    def selected(self, function: ast.FunctionDef, select: ast.Assign, lines: set[int]) -> None:
        value = select.value
        picked = value.body if isinstance(value, ast.IfExp) else value
        source_name, mask_name = picked.value.id, picked.slice.id
        if isinstance(value, ast.IfExp) and not (_is_not_none(value.test, mask_name) and
                                                 isinstance(value.orelse, ast.Name) and value.orelse.id == source_name):
            raise Refused(select.lineno, "the selection's other arm is not the unselected value")
        env: dict[str, object] = {}
        self.function = function
        self.selecting = True
        index = function.body.index(select)
        ndim = None
        for statement in function.body[:index]:  # the mask must be 1-D, the source's rank known where it can be
            if _assigns(statement, mask_name) and not _flat_mask(statement.value, mask_name):
                raise Refused(select.lineno, f"`{mask_name}` is not proven a 1-D mask (`m.reshape(-1)`)")
            if _assigns(statement, source_name):
                ndim = _rank_of(statement.value)
        if not any(_assigns(s, mask_name) for s in function.body[:index]):
            raise Refused(select.lineno, f"`{mask_name}` is not proven a 1-D mask")
        rows = fresh_name(function, "rows")
        target = select.targets[0].id
        all_rows = (f"{self.torch}.ones({source_name}.shape[0], dtype={self.torch}.bool, "
                    f"device={source_name}.device)")
        made = (f"{rows} = {mask_name} if {mask_name} is not None else {all_rows}"
                if isinstance(value, ast.IfExp) else f"{rows} = {mask_name}")
        if ndim is None:
            raise Refused(select.lineno, f"the rank of `{source_name}` is not known (`x.view(-1, d)` proves it)")
        self.edit(select, f"{target} = {source_name}; {made}")
        env[target] = Rows(-ndim, ndim, rows)  # a 1-D mask keeps the source's rank
        self.rows_name, self.mask_name, self.source_name = rows, mask_name, source_name
        self.block(function.body[index + 1:], env, scatter=True)
        if not self.scatter_line:
            raise Refused(select.lineno, f"no `full[{mask_name}] = out` scatters the rows back")
        if self.draw_sites:
            self.draws_method(function, index)

    def draws_method(self, function: ast.FunctionDef, index: int) -> None:
        """`_graphsafe_draws(<parameters the mask is made of>)` on this class: the mask made as forward
        makes it, then each drawing callee's draw in the order forward calls them."""
        sites = list(dict.fromkeys(self.draw_sites))  # a loop body is walked twice
        if self.cls is None:
            raise Refused(sites[0][0].lineno, "a random draw over the selected rows outside a class")
        made = [s for s in function.body[:index] if _assigns(s, self.mask_name)]
        parameters = [a.arg for a in function.args.args[1:]]
        read = {n.id for n in ast.walk(made[0].value) if isinstance(n, ast.Name)} if len(made) == 1 else None
        if read is None or not read <= set(parameters) or not one_line(made[0]) \
                or any(_assigns(s, p) for s in function.body[:index] for p in read):
            raise Refused(sites[0][0].lineno, f"`{self.mask_name}` is not made from forward's parameters alone: the "
                                              "wrapper cannot draw over its rows")
        for node, _ in sites:
            if not any(any(n is node for n in ast.walk(s)) for s in function.body
                       if isinstance(s, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return))):
                raise Refused(node.lineno, "a module that draws over the selected rows is called under a loop or "
                                           "a branch: the order of its draws is not proven")
        wanted = [p for p in parameters if p in read]
        calls = "".join(f"\n        self.{attribute}.{DRAW_ROWS}({self.mask_name})" for _, attribute in sites)
        method = (f"\n    def {DRAWS}(self, {', '.join(wanted)}):\n"
                  f'        """`graphsafe graph`: the random draws forward makes over the selected rows, in its '
                  f'order."""\n        {source_of(self.text, made[0])}{calls}\n')
        self.insert_after_class(self.cls, method)
        self.drawers.append((self.cls.name, wanted))

    def insert_after_class(self, cls: ast.ClassDef, text: str) -> None:
        span = (cls.end_lineno + 1, 0, cls.end_lineno + 1, 0)
        if text not in self.edits.get(span, ""):  # a body walked twice (a loop) adds it once
            self.edits[span] = self.edits.get(span, "") + text

    # ---- statements
    def block(self, statements: list[ast.stmt], env: dict, scatter: bool = False) -> dict:
        scattered_at = None
        for position, statement in enumerate(statements):
            if scattered_at is not None:
                self.after_scatter(statement, env)
                continue
            if scatter and isinstance(statement, ast.If) and self.scatter_in(statement, env):
                scattered_at = position
                continue
            self.statement(statement, env)
        return env

    def after_scatter(self, statement: ast.stmt, env: dict) -> None:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and isinstance(env.get(node.id), Rows):
                raise Refused(node.lineno, f"`{node.id}` holds the selected rows and is read after the scatter")

    def scatter_in(self, branch: ast.If, env: dict) -> bool:
        """`if m is not None: full = zeros_like(x); full[m] = out; out = full` (the scatter)."""
        body = branch.body
        if not (_is_not_none(branch.test, self.mask_name) and not branch.orelse and len(body) in (2, 3)):
            return False
        made, written = body[0], body[1]
        if not (isinstance(made, ast.Assign) and len(made.targets) == 1 and isinstance(made.targets[0], ast.Name)
                and isinstance(made.value, ast.Call) and _called(made.value) == "zeros_like"
                and len(made.value.args) == 1 and isinstance(made.value.args[0], ast.Name)
                and made.value.args[0].id == self.source_name):
            return False
        full = made.targets[0].id
        if not (isinstance(written, ast.Assign) and one_line(written) and len(written.targets) == 1
                and isinstance(written.targets[0], ast.Subscript)
                and isinstance(written.targets[0].value, ast.Name) and written.targets[0].value.id == full
                and isinstance(written.targets[0].slice, ast.Name)
                and written.targets[0].slice.id == self.mask_name and isinstance(written.value, ast.Name)):
            return False
        out = env.get(written.value.id)
        if not (isinstance(out, Rows) and out.ndim and out.axis == -out.ndim and out.mask == self.rows_name):
            raise Refused(written.lineno, f"`{written.value.id}` is not proven to hold the selected rows on its "
                                          "first axis")
        where = _mask_text(self.mask_name, out)
        self.edit(written, f"{full} = {self.torch}.where({where}, {written.value.id}, {full})")
        self.scatter_line = written.lineno
        if len(body) == 3:
            last = body[2]
            if not (isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name)
                    and isinstance(last.value, ast.Name) and last.value.id == full):
                return False
            env.pop(last.targets[0].id, None)  # every row now; without a mask it was every row already
        return True

    def statement(self, statement: ast.stmt, env: dict) -> None:
        if isinstance(statement, ast.Assign):
            value = self.expr(statement.value, env)
            for target in statement.targets:
                self.bind(target, value, env, statement)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self.bind(statement.target, self.expr(statement.value, env), env, statement)
        elif isinstance(statement, ast.AugAssign):
            value = self.combine([self.expr(statement.target, env), self.expr(statement.value, env)], statement)
            self.bind(statement.target, value, env, statement)
        elif isinstance(statement, ast.Expr):
            self.expr(statement.value, env)
        elif isinstance(statement, ast.If):
            if isinstance(self.expr(statement.test, env), Rows):
                raise Refused(statement.lineno, "a branch on the selected rows")
            other = dict(env)
            self.block(statement.body, env)
            self.block(statement.orelse, other)
            for name in set(env) | set(other):
                if env.get(name) is not other.get(name) and (isinstance(env.get(name), Rows)
                                                             or isinstance(other.get(name), Rows)):
                    if _same(env.get(name), other.get(name)):
                        continue
                    raise Refused(statement.lineno, f"`{name}` holds the rows differently after each arm")
                env.setdefault(name, other.get(name))
        elif isinstance(statement, ast.For):
            if isinstance(self.expr(statement.iter, env), Rows):
                raise Refused(statement.lineno, "a loop over the selected rows")
            counted = isinstance(statement.iter, ast.Call) and _called(statement.iter) == "range"
            self.bind(statement.target, INT if counted and isinstance(statement.target, ast.Name) else None, env,
                      statement)
            for _ in range(2):  # twice: what the body carries round the loop
                self.block(statement.body, env)
            if statement.orelse:
                self.block(statement.orelse, env)
        elif isinstance(statement, ast.Return):
            if statement.value is not None:
                self.returned.append(self.expr(statement.value, env))
        elif isinstance(statement, (ast.Pass, ast.Assert)):
            if isinstance(statement, ast.Assert):
                raise Refused(statement.lineno, "an assert on the selected rows reads them on the host")
        else:
            raise Refused(statement.lineno, f"a `{type(statement).__name__}` statement is not followed")

    def bind(self, target: ast.AST, value, env: dict, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value if isinstance(value, tuple) and len(value) == len(target.elts) else \
                (None,) * len(target.elts)
            if isinstance(value, Rows):
                raise Refused(statement.lineno, "the selected rows unpacked")
            for element, one in zip(target.elts, values):
                self.bind(element, one, env, statement)
        elif value is not None and _has_rows(value):
            raise Refused(statement.lineno, "the selected rows stored outside the function's names")
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            if isinstance(target, ast.Subscript) and isinstance(self.expr(target.value, env), Rows):
                raise Refused(statement.lineno, "a write into the selected rows by index")

    # ---- expressions
    def expr(self, node: ast.AST, env: dict):
        self.env_now = env
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Constant):
            return None
        if isinstance(node, ast.Slice):
            parts = [self.expr(p, env) for p in (node.lower, node.upper, node.step) if p is not None]
            if any(_has_rows(p) for p in parts):
                raise Refused(node.lineno, "the selected rows as a slice bound")
            return None
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, env)
            if isinstance(base, Rows):
                if node.attr == "shape":
                    return Shape(base)
                if node.attr in ("dtype", "device", "is_cuda"):
                    return None
                if node.attr == "T" and base.ndim == 2:
                    return dataclasses.replace(base, axis=-1 - (base.axis + 2), index_of=None)
                raise Refused(node.lineno, f"`.{node.attr}` of the selected rows is not followed")
            return None
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left, env), self.expr(node.right, env)
            if isinstance(node.op, ast.MatMult) and (_has_rows(right) or (isinstance(left, Rows) and (
                    left.axis == -1 or left.ndim is None or left.ndim < 2))):
                raise Refused(node.lineno, "`@` that sums over the selected rows")
            if isinstance(node.op, ast.MatMult):
                return left
            return self.combine([left, right], node)
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand, env)
        if isinstance(node, ast.Compare):
            return self.combine([self.expr(node.left, env)] + [self.expr(c, env) for c in node.comparators], node)
        if isinstance(node, ast.BoolOp):
            values = [self.expr(v, env) for v in node.values]
            if any(_has_rows(v) for v in values):
                raise Refused(node.lineno, "`and`/`or` on the selected rows reads them on the host")
            return None
        if isinstance(node, ast.IfExp):
            if _has_rows(self.expr(node.test, env)):
                raise Refused(node.lineno, "a choice on the selected rows")
            a, b = self.expr(node.body, env), self.expr(node.orelse, env)
            if (_has_rows(a) or _has_rows(b)) and not _same(a, b):
                raise Refused(node.lineno, "the arms of a choice hold the rows differently")
            return a
        if isinstance(node, (ast.Tuple, ast.List)):
            values = tuple(self.expr(e, env) for e in node.elts)
            return values if any(_has_rows(v) for v in values) else None
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, (ast.JoinedStr, ast.Lambda, ast.Dict, ast.Set)):
            if any(isinstance(n, ast.Name) and _has_rows(env.get(n.id)) for n in ast.walk(node)):
                raise Refused(node.lineno, "the selected rows used where they are not followed")
            return None
        raise Refused(node.lineno, f"a `{type(node).__name__}` on the selected rows is not followed")

    def combine(self, values: list, node: ast.AST):
        rows = [v for v in values if isinstance(v, Rows)]
        if any(isinstance(v, Shape) for v in values):
            raise Refused(node.lineno, "the shape of the selected rows used as a value")
        if not rows:
            return COUNT if any(v is COUNT for v in values) else None
        first = rows[0]
        if any(r.axis != first.axis or r.mask != first.mask for r in rows[1:]):
            raise Refused(node.lineno, "values with the rows on different axes are broadcast together")
        ndims = {r.ndim for r in rows}
        others = [v for v in values if not isinstance(v, Rows)]
        ndim = first.ndim if len(ndims) == 1 and not others else (max(ndims) if None not in ndims and all(
            _scalar(v) for v in others) else None)
        return Rows(first.axis, ndim, first.mask)

    def subscript(self, node: ast.Subscript, env: dict):
        if (isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"):
            made = _module_made(self.tree, self.cls, node.value.attr)
            if isinstance(made, _Listed):
                if _has_rows(self.expr(node.slice, env)):
                    raise Refused(node.lineno, "the selected rows used as an index")
                return made.item
        base = self.expr(node.value, env)
        if isinstance(base, Shape):
            index = _int(node.slice)
            if index is None or base.of.ndim is None and index >= 0:
                raise Refused(node.lineno, "a size of the selected rows' value at an unknown axis")
            axis = index - base.of.ndim if index >= 0 else index
            if axis == base.of.axis:
                self.edit(node, f"{base.of.mask}.sum()")
                return COUNT
            return None
        index_value = self.expr(node.slice, env)
        if _has_rows(index_value):
            raise Refused(node.lineno, "the selected rows used as an index")
        if not isinstance(base, Rows):
            return None
        if base.ndim is None:
            raise Refused(node.lineno, "indexing a value of unknown rank that holds the rows")
        parts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(p, ast.Constant) and p.value is Ellipsis for p in parts):
            raise Refused(node.lineno, "`...` in an index of the selected rows is not followed")
        position = base.ndim + base.axis  # the rows' axis from the left
        new_position, ndim, axis_seen = position, base.ndim, 0
        for part in parts:
            if isinstance(part, ast.Constant) and part.value is None:
                ndim += 1
                if axis_seen <= position:
                    new_position += 1
                continue
            if axis_seen == position:
                if not (isinstance(part, ast.Slice) and part.lower is part.upper is part.step is None):
                    raise Refused(node.lineno, "an index that picks some of the selected rows")
            elif not isinstance(part, ast.Slice):
                if _int(part) is None and not (isinstance(part, ast.Name) and env.get(part.id) is INT):
                    raise Refused(node.lineno, "an index other than a number or a slice on a value with the rows")
                ndim -= 1
                if axis_seen < position:
                    new_position -= 1
            axis_seen += 1
        # picked elements of topk indices are still indices of the same axis
        return Rows(new_position - ndim, ndim, base.mask, base.index_of)

    def call(self, node: ast.Call, env: dict):
        name = _called(node)
        if name in _RANDOM:
            receiver = self.expr(node.func.value, env) if isinstance(node.func, ast.Attribute) else None
            arguments = [self.expr(a, env) for a in node.args]
            if _has_rows(receiver) or any(_has_rows(a) for a in arguments):
                drawn = self.by_the_wrapper(node, env)
                if drawn is not None:
                    return drawn
                raise Refused(node.lineno, "a random draw over the selected rows: its count is the number of "
                                           "True in the mask, so drawn on every row it gives other numbers (it "
                                           "must be drawn outside the graph, in the caller)")
        if isinstance(node.func, ast.Attribute):
            receiver = self.expr(node.func.value, env)
            if isinstance(receiver, Rows):
                return self.method(node, receiver, env)
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and self.cls is not None:
                return self.module_call(node, self.cls, node.func.attr, env)
        if isinstance(node.func, ast.Name) and isinstance(env.get(node.func.id), _Module):
            return self.module_call(node, None, env[node.func.id], env)
        arguments = [self.expr(a, env) for a in node.args]
        keywords = {k.arg: self.expr(k.value, env) for k in node.keywords}
        if not any(_has_rows(v) for v in arguments + list(keywords.values())):
            return None
        if not self.is_torch(node):
            raise Refused(node.lineno, f"`{name}` gets the selected rows and is not known to work row by row")
        return self.torch_function(node, name, arguments, keywords)

    def by_the_wrapper(self, node: ast.Call, env: dict):
        """The draw read from the buffer the wrapper fills (drawn_rows.py), or None (refused)."""
        if not self.allow_draws or self.cls is None or getattr(self, "selecting", False):
            return None
        drawn = buffered_draw(node, self.cls, self.function, self.torch,
                              lambda a: getattr(_module_made(self.tree, self.cls, a), "torch_class", None) == "Linear",
                              lambda n: source_of(self.text, n))
        if isinstance(drawn, str):
            raise Refused(node.lineno, f"a random draw over the selected rows, not drawn by the wrapper: {drawn}")
        self.edit(node, drawn.replacement)
        if drawn not in self.drawn:
            self.drawn.append(drawn)
        self.insert_after_class(self.cls, drawn.method)
        value = env.get(node.func.value.args[0].id if isinstance(node.func, ast.Attribute) and
                        isinstance(node.func.value, ast.Call) else node.args[0].id)
        return dataclasses.replace(value, index_of=None) if isinstance(value, Rows) else value

    def is_torch(self, node: ast.Call) -> bool:
        func = node.func
        while isinstance(func, ast.Attribute):
            func = func.value
        return isinstance(func, ast.Name) and func.id in (self.torch, "F", "nn")

    def torch_function(self, node: ast.Call, name: str, arguments: list, keywords: dict):
        rows = next(v for v in arguments + list(keywords.values()) if isinstance(v, Rows))
        first = arguments[0] if arguments else None
        if name == "one_hot":
            if not isinstance(first, Rows) or first.ndim is None:
                raise Refused(node.lineno, "a one-hot of a value of unknown rank")
            if len(node.args) < 2 and "num_classes" not in keywords:
                self.pending_one_hot.append((node, first, dict(self.env_now)))
            return Rows(rows.axis - 1, first.ndim + 1, rows.mask)
        if name in _LAST_AXIS or name == "logsumexp":
            dim = _dim_argument(node, 1)
            if dim is None or not isinstance(first, Rows) or self.axis_of(first, dim, node) == first.axis:
                raise Refused(node.lineno, f"`{name}` along the rows' axis (or an unknown one)")
            if name == "logsumexp":
                return self.reduced(first, dim, _keepdim(node), node)
            return first
        if name == "topk":
            dim = _dim_argument(node, 2, default=-1)
            if not isinstance(first, Rows) or self.axis_of(first, dim, node) == first.axis:
                raise Refused(node.lineno, "`topk` along the rows' axis")
            indices = dataclasses.replace(first, index_of=first) if self.axis_of(first, dim, node) == -1 else first
            return (first, indices)
        if name in _ELEMENTWISE_FUNCTIONS:
            return self.combine(arguments + list(keywords.values()), node)
        raise Refused(node.lineno, f"`{name}` gets the selected rows and is not known to work row by row")

    def axis_of(self, value: Rows, dim: int | None, node: ast.AST) -> int:
        if dim is None:
            raise Refused(node.lineno, "an axis that is not a number")
        if dim >= 0:
            if value.ndim is None:
                raise Refused(node.lineno, "a positive axis on a value of unknown rank")
            return dim - value.ndim
        return dim

    def reduced(self, value: Rows, dim: int, keepdim: bool, node: ast.AST) -> Rows:
        axis = self.axis_of(value, dim, node)
        if keepdim:
            return value
        return Rows(value.axis + 1 if axis > value.axis else value.axis,
                    None if value.ndim is None else value.ndim - 1, value.mask)

    def method(self, node: ast.Call, receiver: Rows, env: dict):
        name = node.func.attr
        arguments = [self.expr(a, env) for a in node.args]
        keywords = {k.arg: self.expr(k.value, env) for k in node.keywords}
        if name in _MASKED_REDUCTIONS:
            dims = _dims(node)
            if dims is False:
                raise Refused(node.lineno, f"`.{name}` over an axis that is not a number")
            if dims is None or any(self.axis_of(receiver, d, node) == receiver.axis for d in dims):
                return self.masked_reduction(node, receiver, name, dims)
            result = receiver
            for d in sorted(dims, key=lambda d: -self.axis_of(receiver, d, node)):
                result = self.reduced(result, d, _keepdim(node), node)
            return result
        if name in ("softmax", "log_softmax", "logsumexp", "cumsum", "argmax", "max", "min", "amax", "amin",
                    "norm", "topk", "std", "var", "prod"):
            dim = _dim_argument(node, 0 if name != "topk" else 1, default=-1 if name == "topk" else None)
            if dim is None or self.axis_of(receiver, dim, node) == receiver.axis:
                raise Refused(node.lineno, f"`.{name}` over the selected rows is not masked")
            if name == "topk":
                return (receiver, dataclasses.replace(receiver, index_of=receiver)
                        if self.axis_of(receiver, dim, node) == -1 else receiver)
            if name in ("softmax", "log_softmax", "cumsum"):
                return receiver
            result = self.reduced(receiver, dim, _keepdim(node), node)
            return (result, result) if name in ("max", "min") else result
        if name in _ELEMENTWISE_METHODS:
            if name in _RANDOM:
                raise Refused(node.lineno, "a random draw over the selected rows")
            combined = self.combine([receiver] + arguments + list(keywords.values()), node)
            same_values = name in ("long", "int", "clone", "detach", "contiguous", "to")
            return dataclasses.replace(combined, ndim=receiver.ndim,
                                       index_of=receiver.index_of if same_values else None)
        if name in ("t",) and receiver.ndim == 2:
            return Rows(-1 if receiver.axis == -2 else -2, 2, receiver.mask)
        if name == "permute":
            order = [_int(a) for a in node.args]
            if None in order or receiver.ndim is None or len(order) != receiver.ndim:
                raise Refused(node.lineno, "`permute` of a value of unknown rank")
            old = receiver.ndim + receiver.axis
            return Rows(order.index(old) - receiver.ndim, receiver.ndim, receiver.mask)
        if name == "flatten" and not node.args and receiver.ndim and receiver.axis == -receiver.ndim:
            if not isinstance(node.func.value, ast.Name):
                raise Refused(node.lineno, "a flattened value that is not a name")
            flat = f"{_mask_text(receiver.mask, receiver)}.expand_as({node.func.value.id}).flatten()"
            return Rows(-1, 1, flat)
        if name == "squeeze" or name == "unsqueeze":
            dim = _dim_argument(node, 0)
            if dim is None or receiver.ndim is None or dim < 0:
                raise Refused(node.lineno, f"`.{name}` without a known positive axis")
            position = receiver.ndim + receiver.axis
            if name == "squeeze":
                if dim == position:
                    raise Refused(node.lineno, "the rows' axis squeezed")
                return Rows(receiver.axis, receiver.ndim - 1, receiver.mask)
            return Rows(receiver.axis, receiver.ndim + 1, receiver.mask)
        if name in ("size", "dim", "numel"):
            if name == "size" and len(node.args) == 1:
                return self.size(node, receiver)
            if name == "dim":
                return None
            raise Refused(node.lineno, f"`.{name}()` of the selected rows is not followed")
        raise Refused(node.lineno, f"`.{name}` on the selected rows is not known to work row by row")

    def size(self, node: ast.Call, receiver: Rows):
        index = _int(node.args[0])
        if index is None or (index >= 0 and receiver.ndim is None):
            raise Refused(node.lineno, "a size of the rows' value at an unknown axis")
        if (index - receiver.ndim if index >= 0 else index) == receiver.axis:
            self.edit(node, f"{receiver.mask}.sum()")
            return COUNT
        return None

    def masked_reduction(self, node: ast.Call, value: Rows, name: str, dims) -> object:
        receiver = node.func.value
        if value.ndim is None:
            raise Refused(node.lineno, f"`.{name}` over the rows of a value of unknown rank")
        if not one_line(node):
            raise Refused(node.lineno, "a reduction over several lines")
        text = self.rewritten_text(receiver)
        if not isinstance(receiver, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            text = f"({text})"
        mask = _mask_text(value.mask, value)
        dim_text = ", ".join(source_of(self.text, a) for a in node.args)
        dim_kw = next((k for k in node.keywords if k.arg == "dim"), None)
        if dim_kw is not None:
            dim_text = f"dim={source_of(self.text, dim_kw.value)}"
        keep = next((k for k in node.keywords if k.arg == "keepdim"), None)
        tail = dim_text + (f", keepdim={source_of(self.text, keep.value)}" if keep is not None else "")
        if name == "all":
            self.edit(node, f"({text} | ~{mask}).all({tail})")
        elif name == "any":
            self.edit(node, f"({text} & {mask}).any({tail})")
        else:
            summed = f"{self.torch}.where({mask}, {text}, 0).sum({tail})"
            if name == "mean":
                count = f"{value.mask}.sum()"
                if dims is None or len(dims) != 1:
                    count = f"({count} * ({text}.numel() // {text}.shape[{value.axis}]))"
                    if value.ndim == 1:
                        count = f"{value.mask}.sum()"
                summed = f"({summed} / {count})"
            self.edit(node, summed)
        if dims is not None and len(dims) > 1:
            raise Refused(node.lineno, f"`.{name}` over the rows and other axes together")
        return None  # the rows' axis is reduced: what is left no longer runs over them

    # ---- callees
    def module_call(self, node: ast.Call, cls: ast.ClassDef | None, attribute, env: dict):
        arguments = [self.expr(a, env) for a in node.args]
        if any(_has_rows(self.expr(k.value, env)) for k in node.keywords):
            raise Refused(node.lineno, "the selected rows passed by keyword")
        made = attribute if isinstance(attribute, _Module) else _module_made(self.tree, cls, attribute)
        if isinstance(made, _Listed):
            raise Refused(node.lineno, f"`self.{attribute}` called with the selected rows is a list of modules")
        rows = [a for a in arguments if isinstance(a, Rows)]
        if not rows:
            return None
        if made is None:
            raise Refused(node.lineno, f"`self.{attribute}` gets the selected rows; what it is is not known")
        if made.torch_class is not None:
            if made.torch_class not in _ROW_MODULES:
                raise Refused(node.lineno, f"`nn.{made.torch_class}` is not known to work row by row")
            value = rows[0]
            if value.axis == -1:
                raise Refused(node.lineno, f"`nn.{made.torch_class}` along the rows' axis")
            return dataclasses.replace(value, index_of=None)
        if cls is not None and isinstance(attribute, str):
            elsewhere = [n for f in cls.body if isinstance(f, ast.FunctionDef) and f is not self.function
                         for n in ast.walk(f) if isinstance(n, ast.Attribute) and n.attr == attribute
                         and isinstance(n.value, ast.Name) and n.value.id == "self" and f.name != "__init__"]
            if elsewhere:  # another method calls it without the mask
                raise Refused(elsewhere[0].lineno, f"`self.{attribute}` is used outside the function with the rows")
        before = len(self.drawn)
        value = self.callee(node, made.cls, arguments)
        if len(self.drawn) > before:
            if not isinstance(attribute, str) or any(d.cls != made.cls.name for d in self.drawn[before:]):
                raise Refused(node.lineno, "a random draw over the selected rows deeper than the module called "
                                           "with them: the wrapper's order is not proven")
            self.draw_sites.append((node, attribute))
        return value

    def callee(self, node: ast.Call, cls: ast.ClassDef, arguments: list):
        forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
        if (forward is None or forward.args.vararg or forward.args.kwonlyargs or forward.args.defaults
                or len(forward.args.args) - 1 != len(arguments) or node.keywords):
            raise Refused(node.lineno, f"`{cls.name}.forward` is not followed")
        masks = {a.mask for a in arguments if isinstance(a, Rows)}
        if len(masks) != 1:
            raise Refused(node.lineno, "rows of several masks passed together")
        (mask,) = masks
        walk = _Walk(self.tree, self.text, self.torch, cls, {})
        walk.function = forward
        parameter = self.callees.get(cls.name) or fresh_name(forward, "rows")
        env = {}
        for parameter_node, value in zip(forward.args.args[1:], arguments):
            env[parameter_node.arg] = dataclasses.replace(value, mask=parameter, index_of=None) \
                if isinstance(value, Rows) else value
        walk.callees = self.callees
        walk.allow_draws, walk.drawn = self.allow_draws, self.drawn
        walk.block(forward.body, env)
        walk.finish_one_hot(forward, parameter)
        returned = walk.returned
        if any(not _same(returned[0], r) for r in returned[1:]):
            raise Refused(forward.lineno, f"`{cls.name}.forward` returns the rows differently")
        needs_mask = any(parameter in new for new in walk.edits.values())
        self.edits.update(walk.edits)
        if needs_mask:
            made = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id == cls.name]
            if len(made) != 1:  # another instance may be called without the mask
                raise Refused(node.lineno, f"`{cls.name}` is made in {len(made)} places of its file: its forward "
                                           "would get a new parameter where only this call passes it")
            if cls.name not in self.callees:
                self.callees[cls.name] = parameter
                last = forward.args.args[-1]
                self.insert_after(last, f", {parameter}")
            if not isinstance(mask, str) or not mask.isidentifier():
                raise Refused(node.lineno, "the mask of the rows passed is not a name")
            closing = (node.end_lineno, node.end_col_offset - 1, node.end_lineno, node.end_col_offset - 1)
            separator = ", " if node.args or node.keywords else ""
            self.edits[closing] = f"{separator}{mask}"
        value = returned[0] if returned else None
        return _with_mask(value, mask)

    @property
    def returned(self) -> list:
        return self.__dict__.setdefault("_returned", [])

    @property
    def pending_one_hot(self) -> list:
        return self.__dict__.setdefault("_one_hot", [])

    def finish_one_hot(self, function: ast.FunctionDef, parameter: str) -> None:
        """Each one-hot without num_classes: its width proven to only pad a product that is summed."""
        for node, indices, env in self.pending_one_hot:
            width_of = _one_hot_width(function, node)
            if (width_of is None or indices.ndim != 1 or indices.index_of is None
                    or env.get(width_of) is not indices.index_of):
                raise Refused(node.lineno, "`one_hot` without `num_classes` whose width is not proven to only "
                                           "pad a product summed over it")
            self.insert_after(node.args[0], f", num_classes={width_of}.shape[-1]")

    def insert_after(self, node: ast.AST, text: str) -> None:
        self.edits[(node.end_lineno, node.end_col_offset, node.end_lineno, node.end_col_offset)] = text

    def edit(self, node: ast.AST, text: str) -> None:
        self.edits[_span(node)] = text

    def rewritten_text(self, node: ast.AST) -> str:
        """A one-line node's text with the edits already made inside it (they become part of the
        edit that replaces it)."""
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        inside = sorted((span for span in self.edits if start <= span[:2] and span[2:] <= end), reverse=True)
        row = self.text[node.lineno - 1].encode("utf-8")
        raw = row[node.col_offset:node.end_col_offset]
        for span in inside:
            new = self.edits.pop(span).encode("utf-8")
            raw = raw[:span[1] - node.col_offset] + new + raw[span[3] - node.col_offset:]
        return raw.decode("utf-8")


@dataclasses.dataclass(frozen=True)
class _Module:
    torch_class: str | None = None
    cls: ast.ClassDef | None = None


def _module_made(tree: ast.Module, cls: ast.ClassDef | None, attribute: str) -> _Module | None:
    """What `self.<attribute>` is, from its one assignment in `__init__`: a torch.nn module or a
    class of this file (also each item of an `nn.ModuleList(C(...) for ...)`)."""
    if cls is None:
        return None
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return None
    made = [n.value for n in ast.walk(init) if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Attribute) and isinstance(n.targets[0].value, ast.Name)
            and n.targets[0].value.id == "self" and n.targets[0].attr == attribute]
    if len(made) != 1 or not isinstance(made[0], ast.Call):
        return None
    call = made[0]
    name = _called(call)
    if name in ("ModuleList", "Sequential") and call.args and isinstance(call.args[0], ast.GeneratorExp):
        inner = call.args[0].elt
        if not isinstance(inner, ast.Call):
            return None
        call, name = inner, _called(inner)
        listed = True
    else:
        listed = False
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    found = _Module(cls=classes[name]) if isinstance(call.func, ast.Name) and name in classes else (
        _Module(torch_class=name) if isinstance(call.func, ast.Attribute) else None)
    if found is not None and listed:
        return _Listed(found)
    return found


@dataclasses.dataclass(frozen=True)
class _Listed:
    item: _Module


def _one_hot_width(function: ast.FunctionDef, call: ast.Call) -> str | None:
    """The name of `p` when the one-hot's indices are topk indices along `p`'s last axis and every
    use of the one-hot's name is `name.shape[1|-1]` bounding `p[:, :...]`, or a row reduction of
    it multiplied by a row reduction of that slice, the product summed whole."""
    holder = next((s for s in ast.walk(function) if isinstance(s, ast.Assign) and len(s.targets) == 1
                   and isinstance(s.targets[0], ast.Name) and any(n is call for n in ast.walk(s.value))), None)
    if holder is None:
        return None
    name = holder.targets[0].id
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    products = [n for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "sum" and not n.args and not n.keywords and isinstance(n.func.value, ast.BinOp)
                and isinstance(n.func.value.op, ast.Mult)]
    width = None
    covered: set[int] = set()
    for product in products:
        left, right = product.func.value.left, product.func.value.right
        for one, other in ((left, right), (right, left)):
            if _reduction_of(one, name) and _reduction_of(other, None):
                sliced = other.func.value
                if not (isinstance(sliced, ast.Subscript) and isinstance(sliced.value, ast.Name)
                        and isinstance(sliced.slice, ast.Tuple) and len(sliced.slice.elts) == 2):
                    continue
                rows_part, cols = sliced.slice.elts
                if not (isinstance(rows_part, ast.Slice) and rows_part.lower is rows_part.upper is None
                        and isinstance(cols, ast.Slice) and cols.lower is None and cols.step is None
                        and _shape_of(cols.upper, name)):
                    continue
                width = width or sliced.value.id
                if width != sliced.value.id:
                    return None
                covered.update(id(n) for n in ast.walk(product) if isinstance(n, ast.Name) and n.id == name)
    if width is None or any(id(u) not in covered for u in uses):
        return None
    return width


def _reduction_of(node: ast.AST, name: str | None) -> bool:
    """`name.mean(dim=0)` / `.sum(0)`: over the first axis only (the one-hot's width is the last)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("mean", "sum")
            and _dims(node) in ([0],) and (name is None or (isinstance(node.func.value, ast.Name)
                                                            and node.func.value.id == name)))


def _shape_of(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and isinstance(node.value.value, ast.Name) and node.value.value.id == name
            and _int(node.slice) in (1, -1))


def _with_mask(value, mask: str):
    if isinstance(value, Rows):
        return dataclasses.replace(value, mask=mask, index_of=None)
    if isinstance(value, tuple):
        return tuple(_with_mask(v, mask) for v in value)
    if value is COUNT or isinstance(value, Shape):
        raise Refused(0, "a callee returns the row count")
    return value


def _mask_text(mask: str, value: Rows) -> str:
    """`mask` shaped to broadcast against `value` (its rows' axis at `value.axis`)."""
    position = value.ndim + value.axis
    if position == 0 and value.ndim == 1:
        return mask
    parts = ["None"] * value.ndim
    parts[position] = ":"
    return f"{mask}[{', '.join(parts)}]"


def _has_rows(value) -> bool:
    if isinstance(value, tuple):
        return any(_has_rows(v) for v in value)
    return isinstance(value, (Rows, Shape))


def _same(a, b) -> bool:
    if isinstance(a, Rows) and isinstance(b, Rows):
        return a.axis == b.axis and a.ndim == b.ndim and a.mask == b.mask
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a is b or (not _has_rows(a) and not _has_rows(b) and a is not COUNT and b is not COUNT)


def _scalar(value) -> bool:
    return value is None or value is COUNT


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return None


def _dim_argument(call: ast.Call, position: int, default: int | None = None) -> int | None:
    for keyword in call.keywords:
        if keyword.arg == "dim":
            return _int(keyword.value)
    if len(call.args) > position:
        return _int(call.args[position])
    return default


def _dims(call: ast.Call):
    """The reduced axes: None for all, False when one is not a number."""
    node = next((k.value for k in call.keywords if k.arg in ("dim", "axis")), call.args[0] if call.args else None)
    if node is None:
        return None
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    dims = [_int(p) for p in parts]
    return False if None in dims else dims


def _keepdim(call: ast.Call) -> bool:
    keep = next((k.value for k in call.keywords if k.arg == "keepdim"), None)
    return isinstance(keep, ast.Constant) and keep.value is True


def _is_not_none(test: ast.AST, name: str) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == name
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)


def _assigns(statement: ast.stmt, name: str) -> bool:
    return (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name)


def _flat_mask(value: ast.AST, name: str) -> bool:
    """`m.reshape(-1)` / `m.view(-1)` / `m.flatten()`, or that or None."""
    if isinstance(value, ast.IfExp):
        return _flat_mask(value.body, name) and isinstance(value.orelse, ast.Constant) and value.orelse.value is None
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and ((value.func.attr in ("reshape", "view") and len(value.args) == 1 and _int(value.args[0]) == -1)
                 or (value.func.attr == "flatten" and not value.args)))


def _rank_of(value: ast.AST) -> int | None:
    """The rank `x.view(-1, d)` / `x.reshape(a, b)` gives."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("view", "reshape") and value.args and not value.keywords
            and not any(isinstance(a, (ast.Starred, ast.Tuple, ast.List)) for a in value.args)):
        return len(value.args)
    return None

