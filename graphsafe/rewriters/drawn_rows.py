"""A random draw over the selected rows (masked_rows.py), drawn by the region's wrapper into a
full-row buffer that the graphed core reads (`graphsafe graph`):

    class Router(nn.Module):                      # the module that draws over the rows it got
        def forward(self, x, rows):
            if self.training and self.jitter > 0:
                x = x * torch.empty_like(x).uniform_(a, b)   →  x = x * self._graphsafe_draw
            logits = self.gate(x)                             (gate: nn.Linear, width of x)

        def _graphsafe_draw_rows(self, rows):     # added: eager's draw, into ones on the other rows
            ...draws int(rows.sum()) rows of gate.in_features with the same call, scatters them...

`x[m]` has as many rows as the mask has True, and a random draw's numbers depend on its count
(CUDA's Philox offsets on numel): drawn on every row it gives other numbers than eager. Drawn
before the core, outside the graph, with the same count, width, dtype, device, generator and
call, each selected row gets eager's numbers; the core multiplies by the buffer (1 elsewhere).
The buffer is one tensor per shape, filled in place, so a graph captured on it sees each draw.
Only in the form proven here: `<torch>.empty_like(x).uniform_/normal_(...)` or
`<torch>.rand_like/randn_like(x)` of the forward's parameter `x`, 2-D with the rows first, not
rebound before, fed to an `nn.Linear` of the class (its `in_features` is the width), under
no condition or one `if` on `self` attributes and constants (the draw method tests the same),
the only random call in the class. Without a mask (None) eager draws on every row: the core
then draws itself (every row is a fixed count). The wrapper's order is wired by draw_order.py.

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses

DRAW_ROWS = "_graphsafe_draw_rows"  # the drawing module's method: draw(rows)
DRAWS = "_graphsafe_draws"  # each module on the way: its modules' draws in eager's call order
BUFFER = "_graphsafe_draw"

RANDOM_CALLS = frozenset({"uniform_", "normal_", "bernoulli_", "exponential_", "random_", "rand", "randn", "rand_like",
                     "randn_like", "randint", "randint_like", "bernoulli", "multinomial", "dropout", "normal",
                     "randperm"})
_IN_PLACE = frozenset({"uniform_", "normal_"})
_LIKE = {"rand_like": "rand", "randn_like": "randn"}


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A draw the wrapper makes: the edit of the draw and the method added to its class."""

    cls: str
    line: int
    replacement: str
    method: str


def buffered_draw(node: ast.Call, cls: ast.ClassDef, forward: ast.FunctionDef, torch_name: str,
                  linear_of, source_of) -> Drawn | str:
    """The Drawn for the random call `node` in `cls.forward`, or why not (a reason). `linear_of(attribute)`
    tells whether `self.<attribute>` is an nn.Linear; `source_of(node)` gives a one-line node's text."""
    if node.lineno != node.end_lineno:
        return "a draw over several lines"
    like = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE else node
    if not (isinstance(like, ast.Call) and isinstance(like.func, ast.Attribute)
            and isinstance(like.func.value, ast.Name) and like.func.value.id == torch_name
            and len(like.args) == 1 and not like.keywords and isinstance(like.args[0], ast.Name)
            and (like.func.attr == "empty_like" if like is not node else like.func.attr in _LIKE)):
        return "a draw other than `empty_like(x).uniform_/normal_(...)` or `rand_like/randn_like(x)`"
    drawn = like.args[0].id
    parameters = [a.arg for a in forward.args.args[1:]]
    if drawn not in parameters:
        return f"`{drawn}` is not a parameter of `{cls.name}.forward`"
    statement = _statement_of(forward, node)
    if statement is None:
        return "a draw under a loop or a branch other than one `if` on attributes of self"
    condition = statement[1]
    if condition is not None and not _on_attributes(condition):
        return "a draw under a condition that reads more than attributes of self and constants"
    rebinds = [s for s in ast.walk(forward) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == drawn for t in _targets(s))]
    if any(s is not statement[0] for s in rebinds) or (rebinds and not _keeps_shape(statement[0], drawn, node)):
        return f"`{drawn}` is rebound in `{cls.name}.forward`: its shape where it is drawn is not proven"
    linears = [n.func.attr for n in ast.walk(forward) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" and len(n.args) == 1
               and isinstance(n.args[0], ast.Name) and n.args[0].id == drawn and not n.keywords
               and linear_of(n.func.attr)]
    if not linears:
        return f"`{drawn}`'s width is not proven (it feeds no nn.Linear of the class)"
    others = [n for n in ast.walk(cls) if isinstance(n, ast.Call) and n is not node and n is not like
              and _random_name(n)]
    if others:
        return f"another random call in `{cls.name}` (line {others[0].lineno}): the order of draws is not proven"
    layer = linears[0]
    text = source_of(node)
    start, end = like.col_offset - node.col_offset, like.end_col_offset - node.col_offset
    raw = text.encode("utf-8")
    made = (f"{torch_name}.empty(count, self.{layer}.in_features, dtype=weight.dtype, device=weight.device)"
            if like is not node else
            f"{torch_name}.{_LIKE[like.func.attr]}(count, self.{layer}.in_features, dtype=weight.dtype, "
            "device=weight.device)")
    draw = (raw[:start] + made.encode("utf-8") + raw[end:]).decode("utf-8")
    test = source_of(condition) if condition is not None else "True"
    method = f'''
    def {DRAW_ROWS}(self, rows):
        """`graphsafe graph`: forward's random draw over the selected rows (`rows`: 1-D bool), drawn
        as eager draws it (same count, width, call) before the graphed core, into a buffer of ones
        on every row that forward reads; without rows, forward draws on every row itself."""
        if rows is None or not ({test}):
            self.{BUFFER} = None
            return
        weight = self.{layer}.weight
        key = (rows.shape[0], self.{layer}.in_features, weight.dtype, weight.device)
        buffers = self.__dict__.setdefault("_graphsafe_draw_buffers", {{}})
        if key not in buffers:  # one buffer per shape, filled in place: a graph captured on it reads each draw
            buffers[key] = {torch_name}.ones(key[:2], dtype=weight.dtype, device=weight.device)
        count = int(rows.sum())
        with {torch_name}.no_grad():
            values = {draw}
            buffer = buffers[key]
            buffer.fill_(1.0)
            buffer[rows] = values
        self.{BUFFER} = buffer
'''
    replacement = f"({text} if self.{BUFFER} is None else self.{BUFFER})"
    return Drawn(cls.name, node.lineno, replacement, method)


def called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _random_name(call: ast.Call) -> bool:
    return called_name(call) in RANDOM_CALLS


def _targets(statement: ast.stmt) -> list[ast.AST]:
    return statement.targets if isinstance(statement, ast.Assign) else [statement.target]


def _keeps_shape(statement: ast.stmt, drawn: str, node: ast.Call) -> bool:
    """`x = x * <draw>` (the draw has x's shape: the product keeps it)."""
    value = getattr(statement, "value", None)
    return (isinstance(statement, ast.Assign) and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)
            and isinstance(value.left, ast.Name) and value.left.id == drawn and value.right is node)


def _statement_of(forward: ast.FunctionDef, node: ast.AST) -> tuple[ast.stmt, ast.expr | None] | None:
    """The statement holding `node` at the top of forward, or in the body of one top-level `if`
    without else (with its test)."""
    for statement in forward.body:
        if any(n is node for n in ast.walk(statement)):
            if isinstance(statement, (ast.Assign, ast.Expr, ast.AnnAssign)):
                return statement, None
            if isinstance(statement, ast.If) and not statement.orelse and \
                    not any(n is node for n in ast.walk(statement.test)):
                inner = next((s for s in statement.body if any(n is node for n in ast.walk(s))), None)
                if isinstance(inner, (ast.Assign, ast.Expr, ast.AnnAssign)):
                    return inner, statement.test
            return None
    return None


def _on_attributes(test: ast.expr) -> bool:
    """Only `self.<name>`, constants, comparisons, `and`/`or`/`not`: the same on the wrapper's side."""
    for n in ast.walk(test):
        if isinstance(n, ast.Name) and n.id != "self":
            return False
        if isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name) and n.value.id == "self"):
            return False
        if isinstance(n, (ast.Call, ast.Subscript, ast.NamedExpr, ast.Lambda)):
            return False
    return True
