"""A Python counter attribute advanced in place (`self.pos += n`, `self.count = total`) → a 0-dim
device tensor advanced in place (`self.pos.add_(n)`, `self.count.fill_(total)`).

A captured step that advances `self.pos += 1` advances it once, at capture; replays never do
(GS302), and every replay reads the value it had then (GS301). A tensor created where the
attribute is initialised and changed in place is advanced by every replay, and the tensor work
that reads it reads the current value on the device.

- the start `self.pos = 0` in `__init__` → a buffer (`register_buffer(..., persistent=False)`: it
  follows `.to(device)` and stays out of the state dict; made on `device` where `__init__` takes
  one, as a module built on its device is never moved) in an `nn.Module`, or
  `torch.tensor(0, dtype=..., device=device)` in a class whose `__init__` takes `device`; int64
  for an int, float64 for a float (the Python number's own precision);
- `self.pos += n` / `-=` / `*=` → `add_` / `sub_` / `mul_`; `self.pos = expr` elsewhere →
  `self.pos.fill_(expr)` (a number or a 0-dim tensor, the same storage every call);
- a read bound to a name (`start = self.pos`) → `self.pos.clone()`: the value of that moment, as
  the Python number was, not a view that later advances; a read in an f-string → `.item()`;
- reads in arithmetic, comparisons and tensor calls stay: they compute on the tensor.

Refused, with the line, when a use cannot be rewritten: a slice bound or index (`k[:, :self.pos]`
has a shape that changes per step), another augmented operator, `del`. Reads that need the host
(`int(self.pos)`, an `if` on it) are kept and listed: they sync, and belong outside the captured
step. Uses outside the class are the caller's business (graph_command re-checks them)."""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.rewriters.boundary import _torch_name

_IN_PLACE = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_"}
_HOST_CALLS = frozenset({"int", "float", "bool", "str", "range", "print", "round", "len"})


@dataclasses.dataclass
class CounterResult:
    source: str | None  # None: refused (or nothing to change)
    refusal: str | None = None  # "line N: why"
    host_reads: list[int] = dataclasses.field(default_factory=list)  # lines that read it on the host


def device_counter(source: str, class_name: str, attribute: str) -> CounterResult:
    """Rewrite `self.<attribute>` of `class_name` in `source` into a device counter."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return CounterResult(None, f"cannot parse: {error.message}")
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    lines = wrapper.resolve(PositionProvider)
    owner = next((s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == class_name), None)
    if owner is None:
        return CounterResult(None, f"no top-level class {class_name}")
    torch = _torch_name(module)
    if torch is None:
        return CounterResult(None, "the file does not `import torch`")
    start = _start(owner, attribute)
    if isinstance(start, str):
        return CounterResult(None, start)
    init, statement, value = start
    tensor = _initial_tensor(owner, init, attribute, value, torch)
    if tensor is None:
        return CounterResult(None, f"line {lines[statement].start.line}: {class_name} is not an nn.Module and its "
                                   f"__init__ takes no `device`: no device to keep `self.{attribute}` on")
    rewriter = _Rewrite(attribute, statement, tensor, lines)
    new_owner = owner.visit(rewriter)
    if rewriter.refusal:
        return CounterResult(None, rewriter.refusal)
    return CounterResult(module.deep_replace(owner, new_owner).code, None, sorted(set(rewriter.host_reads)))


def _start(owner: cst.ClassDef, attribute: str):
    """(`__init__`, the statement `self.A = <number>`, the number) or why not."""
    init = next((s for s in owner.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return f"{owner.name.value} has no __init__ that starts `self.{attribute}`"
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and _is_self_attr(small.targets[0].target,
                                                                                           attribute):
                if _number_literal(small.value) is None:
                    return f"{owner.name.value}.__init__ starts `self.{attribute}` with something not a number literal"
                return init, small, small.value
    return f"{owner.name.value}.__init__ does not start `self.{attribute}` (at its top level)"


def _number_literal(node: cst.BaseExpression) -> str | None:
    """"int" or "float" for a numeric literal, `-1` included."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    if isinstance(node, cst.Integer):
        return "int"
    if isinstance(node, cst.Float):
        return "float"
    return None


def _initial_tensor(owner: cst.ClassDef, init: cst.FunctionDef, attribute: str, value: cst.BaseExpression,
                    torch: str) -> cst.BaseSmallStatement | None:
    dtype = "int64" if _number_literal(value) == "int" else "float64"
    number = cst.Module([]).code_for_node(value)
    # a module built on its device (`KVCache(..., device=device)`, its buffers made with
    # `device=device`) is never moved by `.to()`: the counter is created there too
    takes_device = any(p.name.value == "device" for p in init.params.params + init.params.kwonly_params)
    on_device = ", device=device" if takes_device else ""
    if any("Module" in cst.Module([]).code_for_node(b.value) for b in owner.bases):
        code = (f'self.register_buffer("{attribute}", {torch}.tensor({number}, dtype={torch}.{dtype}{on_device}), '
                f"persistent=False)")
    elif takes_device:
        code = f"self.{attribute} = {torch}.tensor({number}, dtype={torch}.{dtype}, device=device)"
    else:
        return None
    return cst.parse_statement(code).body[0]


def _is_self_attr(node: cst.CSTNode, attribute: str) -> bool:
    return (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
            and node.attr.value == attribute)


class _Rewrite(cst.CSTTransformer):
    def __init__(self, attribute: str, start: cst.Assign, tensor: cst.BaseSmallStatement, lines) -> None:
        self.attribute, self.start, self.tensor, self.lines = attribute, start, tensor, lines
        self.refusal: str | None = None
        self.host_reads: list[int] = []
        self._skip: set[int] = set()  # the `self.A` nodes already handled as targets or aliases
        self._subscripts = 0
        self._host = 0  # inside an f-string expression or a host call's arguments
        self._tests = 0  # inside an if/while/assert test

    def _line(self, node: cst.CSTNode) -> int:
        return self.lines[node].start.line if node in self.lines else 0

    def _refuse(self, node: cst.CSTNode, why: str) -> None:
        if self.refusal is None:
            self.refusal = f"line {self._line(node)}: {why}"

    def _method(self, target: cst.Attribute, name: str, value: cst.BaseExpression) -> cst.Expr:
        call = cst.Call(cst.Attribute(target, cst.Name(name)), [cst.Arg(value)])
        return cst.Expr(call, semicolon=cst.MaybeSentinel.DEFAULT)

    # targets ---------------------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if _is_self_attr(target.target, self.attribute):
                self._skip.add(id(target.target))
        if len(node.targets) == 1 and _is_self_attr(node.value, self.attribute) and \
                isinstance(node.targets[0].target, cst.Name):
            self._skip.add(id(node.value))  # an alias: cloned in leave_Assign

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        if original is self.start:
            return self.tensor
        mine = [t for t in original.targets if _is_self_attr(t.target, self.attribute)]
        if mine:
            if len(original.targets) != 1:
                self._refuse(original, f"`self.{self.attribute}` is one of several targets")
                return updated
            return self._method(updated.targets[0].target, "fill_", updated.value)
        if id(original.value) in self._skip:
            return updated.with_changes(value=cst.Call(cst.Attribute(updated.value, cst.Name("clone"))))
        return updated

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if _is_self_attr(node.target, self.attribute):
            self._skip.add(id(node.target))

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign):
        if not _is_self_attr(original.target, self.attribute):
            return updated
        name = _IN_PLACE.get(type(original.operator))
        if name is None:
            self._refuse(original, f"`self.{self.attribute}` is changed by an operator with no in-place "
                                   "tensor twin kept here")
            return updated
        return self._method(updated.target, name, updated.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if _is_self_attr(node.target, self.attribute):
            self._refuse(node, f"`self.{self.attribute}` is assigned with an annotation outside the start")

    def visit_Del(self, node: cst.Del) -> None:
        if _is_self_attr(node.target, self.attribute):
            self._refuse(node, f"`del self.{self.attribute}`")

    # reads -----------------------------------------------------------------------------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._subscripts += 1

    def leave_Subscript(self, original, updated):
        self._subscripts -= 1
        return updated

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        if mentions_self_attribute(node, self.attribute):
            self._refuse(node, f"`self.{self.attribute}` bounds a slice or picks an index: its shape or element "
                               "changes per step (a fixed-size buffer with a mask or index_copy_ is a hand edit)")

    def visit_FormattedStringExpression(self, node) -> None:
        self._host += 1

    def leave_FormattedStringExpression(self, original, updated):
        self._host -= 1
        if _is_self_attr(original.expression, self.attribute):
            self.host_reads.append(self._line(original))
            return updated.with_changes(expression=cst.Call(cst.Attribute(updated.expression, cst.Name("item"))))
        return updated

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in _HOST_CALLS and mentions_self_attribute(node, self.attribute):
            self.host_reads.append(self._line(node))

    def visit_If(self, node: cst.If) -> None:
        self._note_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._note_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._note_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._note_test(node.test)

    def _note_test(self, test: cst.BaseExpression) -> None:
        if mentions_self_attribute(test, self.attribute):
            self.host_reads.append(self._line(test))


def mentions_self_attribute(node: cst.CSTNode, attribute: str) -> bool:
    """Whether `self.<attribute>` occurs anywhere in `node`."""
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, attr: cst.Attribute) -> None:
            if _is_self_attr(attr, attribute):
                found.append(attr)

    node.visit(_Find())
    return bool(found)
