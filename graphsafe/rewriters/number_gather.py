"""A callee's table read and choice by a per-step number the core carries as a device scalar
(graphed numbers=), `graphsafe graph` after the split:

    alpha_t = self.alphas[t]
      → self.alphas.index_select(0, torch.as_tensor(t, device=self.alphas.device).reshape(1)
                                 % self.alphas.shape[0]).squeeze(0)
    alpha_prev = self.alphas[prev_t] if prev_t >= 0 else self.final_alpha
      → torch.where(torch.as_tensor(prev_t >= 0, device=self.alphas.device), <gather of prev_t>,
                    self.final_alpha)

On replay `t` is a 0-dim device tensor: `table[t]` would read it on the host (capture fails) and
`... if prev_t >= 0 else ...` would record one branch. The gather and `where` read it on the
device; called eagerly with a Python int they compute the same as before.

What is equal (the differential tests check each):
- the gather: for an index `i` with `-n <= i < n` (n = the table's first dimension), `table[i]`
  and the gather have the same values, dtype, device and shape (`% n` is Python's modulo on an
  int64 tensor, so a negative index wraps as Python's does). The gather is a copy where `[i]`
  was a view: a later in-place write to the result no longer reaches the table. An index
  outside that range raised IndexError; it now reads `table[i % n]`.
- the choice: both arms are evaluated (each a gather as above, which cannot fail, or a tensor
  attribute or name), and `where` returns the chosen arm's values. Its dtype and shape are the
  arm's when both arms have one dtype and shape (torch.where promotes and broadcasts
  otherwise); the arms are proven tensors, their dtypes and shapes are not compared here.
A table or arm counts as a tensor when every assignment of it in the file is a torch call that
returns a tensor (`self.alphas = torch.cumprod(...)`, `register_buffer`, `nn.Parameter`).

- `torch.arange(s, s + n, ...)` → `s + torch.arange(n, ...)` (`(...).to(dtype)` when the call
  names a dtype): same values, dtype and device where `s` is a number or a 0-dim tensor on the
  call's device.

Refused, with the line: an index that is not one expression (`table[t, j]`), a table or arm not
known to be a tensor (a Python list's `[t]` stays a host read), a slice bound (a hand edit)."""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.tensorness import TENSOR_NON_TENSOR_METHODS, TORCH_NON_TENSOR, TORCH_TUPLE
from graphsafe.rewriters.boundary import _torch_name


@dataclasses.dataclass
class GatherResult:
    source: str | None  # None: nothing rewritten
    lines: list[int] = dataclasses.field(default_factory=list)  # lines rewritten (they now build tensors)
    refused: list[str] = dataclasses.field(default_factory=list)  # "line N: why"


def gather_by_number(source: str, uses: set[tuple[int, int]]) -> GatherResult:
    """Rewrite the reads of `table[...]` and the `a if ... else b` choices whose index or test
    uses a per-step number at one of `uses` ((line, column) of the name, columns from 0)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return GatherResult(None, refused=[f"cannot parse: {error.message}"])
    torch = _torch_name(module)
    if torch is None:
        return GatherResult(None, refused=["the file does not `import torch`"])
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    marked = _Marks(uses, positions)
    module.visit(marked)
    rewriter = _Rewrite(torch, marked.found, _tensor_names(module, torch), positions)
    new = module.visit(rewriter)
    lines = sorted(set(rewriter.lines))
    return GatherResult(new.code if lines else None, lines, rewriter.refused)


class _Marks(cst.CSTVisitor):
    """The Name nodes at the reported uses."""

    def __init__(self, uses: set[tuple[int, int]], positions) -> None:
        self.uses, self.positions = uses, positions
        self.found: set[int] = set()

    def visit_Name(self, node: cst.Name) -> None:
        where = self.positions.get(node)
        if where is not None and (where.start.line, where.start.column) in self.uses:
            self.found.add(id(node))


def _mentions(node: cst.CSTNode, marked: set[int]) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if id(name) in marked:
                found.append(name)

    node.visit(_Find())
    return bool(found)


def _tensor_names(module: cst.Module, torch: str) -> set[str]:
    """`self.A` and plain names whose every assignment in the file makes a tensor (a torch call, a
    tensor method on one, `nn.Parameter`), and `register_buffer("A", ...)` names as `self.A`."""
    values: dict[str, list[cst.BaseExpression | None]] = {}

    class _Assignments(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                name = dotted(target.target)
                if name is not None:
                    values.setdefault(name, []).append(node.value)
                elif isinstance(target.target, (cst.Tuple, cst.List)):
                    for element in target.target.elements:  # `a, b = ...`: unknown
                        inner = dotted(element.value)
                        if inner is not None:
                            values.setdefault(inner, []).append(None)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            name = dotted(node.target)
            if name is not None:
                values.setdefault(name, []).append(None)

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "register_buffer" and node.args and \
                    isinstance(node.args[0].value, cst.SimpleString) and dotted(func.value) == "self":
                values.setdefault(f"self.{node.args[0].value.evaluated_value}", []).append(
                    cst.Call(cst.Attribute(cst.Name(torch), cst.Name("empty"))))

    module.visit(_Assignments())
    return {name for name, made in values.items() if all(v is not None and _makes_tensor(v, torch) for v in made)}


def _makes_tensor(value: cst.BaseExpression, torch: str) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = dotted(func)
    if name is not None:
        namespace, _, last = name.rpartition(".")
        if namespace == torch:
            return last not in TORCH_NON_TENSOR and last not in TORCH_TUPLE and last[:1].islower()
        if name in (f"{torch}.nn.Parameter", "nn.Parameter", "Parameter"):
            return True
    if isinstance(func, cst.Attribute):  # `torch.zeros(n).to(device)`
        return func.attr.value not in TENSOR_NON_TENSOR_METHODS and func.attr.value not in TORCH_TUPLE and \
            _makes_tensor(func.value, torch)
    return False


class _Rewrite(cst.CSTTransformer):
    def __init__(self, torch: str, marked: set[int], tensors: set[str], positions) -> None:
        self.torch, self.marked, self.tensors, self.positions = torch, marked, tensors, positions
        self.lines: list[int] = []
        self.refused: list[str] = []
        self._gathers: dict[int, str] = {}  # id(new gather node) -> the table's code (for its device)
        self._targets: set[int] = set()  # subscripts written, not read

    def _line(self, node: cst.CSTNode) -> int:
        where = self.positions.get(node)
        return where.start.line if where is not None else 0

    def _code(self, node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets.add(id(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets.add(id(node.target))

    def visit_Del(self, node: cst.Del) -> None:
        self._targets.add(id(node.target))

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if not _mentions(original, self.marked) or _mentions(original.value, self.marked):
            return updated
        line = self._line(original)
        if id(original) in self._targets:
            self.refused.append(f"line {line}: `{self._code(original)}`: a write at a per-step index "
                                "(not rewritten: `index_copy_` at a device position is a hand edit)")
            return updated
        table = dotted(original.value)
        if len(original.slice) != 1 or not isinstance(original.slice[0].slice, cst.Index) or \
                original.slice[0].slice.star is not None:
            kind = "bounds a slice" if any(isinstance(e.slice, cst.Slice) for e in original.slice) \
                else "is one of several indexes"
            self.refused.append(f"line {line}: `{self._code(original)}`: the per-step number {kind} "
                                "(not rewritten: a fixed-size buffer with a mask is a hand edit)")
            return updated
        if table is None or table not in self.tensors:
            self.refused.append(f"line {line}: `{self._code(original)}`: `{self._code(original.value)}` is not "
                                "known to be a tensor (assigned from a torch call): not read on the device")
            return updated
        index = updated.slice[0].slice.value.with_changes(lpar=[], rpar=[])
        gather = cst.parse_expression(
            f"{table}.index_select(0, {self.torch}.as_tensor({self._code(index)}, device={table}.device)"
            f".reshape(1) % {table}.shape[0]).squeeze(0)").with_changes(lpar=updated.lpar, rpar=updated.rpar)
        self._gathers[id(gather)] = table
        self.lines.append(line)
        return gather

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """`torch.arange(s, s + n, ...)` with a per-step `s` → `s + torch.arange(n, ...)`: arange
        reads tensor bounds on the host; the sum has the same values and dtype (int64 for an
        int `s` or an int64 tensor, the default float dtype for a float `s` or a `dtype=`)."""
        positional = [a for a in original.args if a.keyword is None]
        if dotted(original.func) != f"{self.torch}.arange" or len(positional) != 2 or \
                any(a.star for a in original.args) or not _mentions(positional[0], self.marked):
            return updated
        start, end = (a.value for a in updated.args[:2])
        if not (isinstance(end, cst.BinaryOperation) and isinstance(end.operator, cst.Add) and
                end.left.deep_equals(start) and not end.lpar):
            self.refused.append(f"line {self._line(original)}: `{self._code(original)}`: an arange from a per-step "
                                "number not of the form `arange(s, s + n)`")
            return updated
        count = end.right.with_changes(lpar=[], rpar=[])
        rest = [a for a in updated.args[2:]]
        arange = updated.with_changes(args=[cst.Arg(count, comma=_comma() if rest else cst.MaybeSentinel.DEFAULT)]
                                      + rest)
        self.lines.append(self._line(original))
        total = cst.BinaryOperation(start, cst.Add(), arange)
        dtype = next((a.value for a in rest if a.keyword is not None and a.keyword.value == "dtype"), None)
        if dtype is None:
            return total.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        # arange(1.5, 4.5, dtype=torch.long) is [1, 2, 3]: the sum cast like it (a no-op for an int `s`)
        return cst.Call(cst.Attribute(total.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                                      cst.Name("to")), [cst.Arg(dtype)])

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        if not _mentions(original.test, self.marked):
            return updated
        line = self._line(original)
        devices = [self._tensor_device(arm) for arm in (updated.body, updated.orelse)]
        if None in devices:
            self.refused.append(f"line {line}: `{self._code(original)}`: a choice by a per-step number whose arms "
                                "are not both tensors (a gather or a tensor attribute): not made a torch.where")
            return updated
        test = updated.test.with_changes(lpar=[], rpar=[])
        condition = cst.parse_expression(f"{self.torch}.as_tensor({self._code(test)}, device={devices[0]}.device)")
        arms = [arm.with_changes(lpar=[], rpar=[]) for arm in (updated.body, updated.orelse)]
        where = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("where")),
                         [cst.Arg(condition, comma=_comma()), cst.Arg(arms[0], comma=_comma()), cst.Arg(arms[1])])
        self.lines.append(line)
        return where.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def _tensor_device(self, arm: cst.BaseExpression) -> str | None:
        """The code of a tensor whose device the arm is on: the gather's table, or the arm itself."""
        if id(arm) in self._gathers:
            return self._gathers[id(arm)]
        name = dotted(arm)
        return name if name is not None and name in self.tensors else None


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
