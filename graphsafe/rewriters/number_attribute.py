"""GS402 on `torch.tensor(self.x, dtype=..., device=...)` where `self.x` is a Python number set
once in `__init__` (`graphsafe graph`, on what still blocks capture):

    self.head_dim = config.n_embd // config.n_head     (in __init__: a number)
    torch.tensor(self.head_dim, dtype=q.dtype, device=q.device)
      → torch.full((), self.head_dim, dtype=q.dtype, device=q.device)

The number becomes a fill kernel's argument instead of host memory copied to the device (it
captures), as rewriters/scalar_tensor.py does for a number it can see; here the number is found
where the attribute is set. Same value and dtype for a Python int, float or bool (without a
dtype both calls infer int64, the default float, bool alike).

An attribute counts as a number when the class assigns it exactly once, in `__init__`, and no
line of the file assigns an attribute of that name elsewhere, from: a numeric literal,
`int()`/`float()`/`len()`/`round()`, `math.*`, an `__init__` parameter annotated `int`/`float`
(or defaulting to a number), a field `p.f` of an `__init__` parameter annotated with a class of
the same file whose body annotates `f: int` or `f: float`, an attribute of the class already
found a number, or arithmetic of these."""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import _chain
from graphsafe.rewriters.parsed import parse_torch_module

_NUMBER_TYPES = frozenset({"int", "float"})
_NUMBER_FUNCTIONS = frozenset({"int", "float", "len", "round"})
_KEYWORDS = frozenset({"dtype", "device"})


def number_attributes(module: cst.Module) -> dict[str, set[str]]:
    """{class name: attributes that hold a Python number set once in its `__init__`}."""
    fields = {c.name.value: _number_fields(c) for c in module.body if isinstance(c, cst.ClassDef)}
    elsewhere = _assigned_attributes(module)
    found: dict[str, set[str]] = {}
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef):
            continue
        init = next((f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None)
        if init is None:
            continue
        parameters = _number_parameters(init, fields)
        numbers: set[str] = set()
        for small in _init_assignments(init):
            target = small.targets[0].target
            name = target.attr.value
            if elsewhere.get(name, 0) == 1 and _is_number(small.value, parameters, numbers):
                numbers.add(name)
        found[cls.name.value] = numbers
    return found


def tensor_of_attribute(source: str, at: set[tuple[int, int]]) -> tuple[str | None, list[int]]:
    """Rewrite the `torch.tensor(self.x, ...)` calls that hold one of `at` ((line, column),
    columns from 0: the GS402s) where `self.x` is a number attribute of the enclosing class."""
    parsed = parse_torch_module(source)
    if parsed is None:
        return None, []
    module, torch, positions = parsed
    numbers = number_attributes(module)
    rewrite = _Rewrite(torch, positions, at, numbers)
    new = module.visit(rewrite)
    return (new.code, sorted(rewrite.lines)) if rewrite.lines else (None, [])


class _Rewrite(cst.CSTTransformer):
    def __init__(self, torch: str, positions, at, numbers) -> None:
        self.torch, self.positions, self.at, self.numbers = torch, positions, at, numbers
        self.classes: list[str] = []
        self.lines: list[int] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.classes.pop()
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        where = self.positions[original]
        if not self.classes or not any((where.start.line, where.start.column) <= at <= (where.end.line, where.end.column)
                                       for at in self.at):
            return updated
        if _chain(original.func) != f"{self.torch}.tensor":
            return updated
        positional = [a for a in original.args if a.keyword is None]
        if len(positional) != 1 or positional[0].star or \
                not {a.keyword.value for a in original.args if a.keyword is not None} <= _KEYWORDS:
            return updated
        value = positional[0].value
        if not (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"
                and value.attr.value in self.numbers.get(self.classes[-1], ())):
            return updated
        self.lines.append(where.start.line)
        shape = cst.Arg(cst.Tuple([]), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(func=cst.parse_expression(f"{self.torch}.full"), args=[shape, *updated.args])


def _number_fields(cls: cst.ClassDef) -> set[str]:
    """`f: int` / `f: float` annotated in a class body (a dataclass's fields)."""
    found = set()
    for line in cls.body.body:
        for small in (line.body if isinstance(line, cst.SimpleStatementLine) else ()):
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and \
                    _chain(small.annotation.annotation) in _NUMBER_TYPES:
                found.add(small.target.value)
    return found


def _number_parameters(init: cst.FunctionDef, fields: dict[str, set[str]]) -> dict[str, set[str] | None]:
    """{parameter: None (a number) or the number fields of its annotated class}."""
    found: dict[str, set[str] | None] = {}
    for p in [*init.params.posonly_params, *init.params.params, *init.params.kwonly_params]:
        annotation = _chain(p.annotation.annotation) if p.annotation else None
        if annotation in _NUMBER_TYPES or (annotation is None and isinstance(p.default, (cst.Integer, cst.Float))):
            found[p.name.value] = None
        elif annotation in fields:
            found[p.name.value] = fields[annotation]
    return found


def _init_assignments(init: cst.FunctionDef) -> list[cst.Assign]:
    """`self.x = value` statements at the top level of `__init__`'s body, in order."""
    found = []
    for line in init.body.body:
        for small in (line.body if isinstance(line, cst.SimpleStatementLine) else ()):
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                    isinstance(small.targets[0].target, cst.Attribute) and \
                    _chain(small.targets[0].target.value) == "self":
                found.append(small)
    return found


def _assigned_attributes(module: cst.Module) -> dict[str, int]:
    """How many statements of the file assign (or augment) an attribute of each name."""
    counts: dict[str, int] = {}

    def count(target) -> None:
        if isinstance(target, cst.Attribute):
            counts[target.attr.value] = counts.get(target.attr.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                count(element.value)

    class _Count(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                count(t.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            count(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            count(node.target)

        def visit_Call(self, node: cst.Call) -> None:  # setattr(obj, "x", ...) counts as a write of x
            if isinstance(node.func, cst.Name) and node.func.value == "setattr" and len(node.args) >= 2 and \
                    isinstance(node.args[1].value, cst.SimpleString):
                name = node.args[1].value.value.strip("'\"")
                counts[name] = counts.get(name, 0) + 2

    module.visit(_Count())
    return counts


def _is_number(expr: cst.BaseExpression, parameters: dict, numbers: set[str]) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _is_number(expr.expression, parameters, numbers)
    if isinstance(expr, cst.Name):
        return expr.value in parameters and parameters[expr.value] is None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        owner = expr.value.value
        if owner == "self":
            return expr.attr.value in numbers
        return owner in parameters and parameters[owner] is not None and expr.attr.value in parameters[owner]
    if isinstance(expr, cst.Call):
        chain = _chain(expr.func) or ""
        return chain in _NUMBER_FUNCTIONS or chain.startswith("math.")
    if isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator, (cst.MatrixMultiply,)):
        return _is_number(expr.left, parameters, numbers) and _is_number(expr.right, parameters, numbers)
    return False
