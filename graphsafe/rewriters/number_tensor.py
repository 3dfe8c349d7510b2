"""GS402 in a callee: `torch.tensor([t] * n, device=d)`, `torch.tensor([t], ...)` or
`torch.tensor(t, ...)` built from a per-step number `t` → `torch.as_tensor(t, device=d)` repeated
to the same shape.

Once the core's per-step number is carried by a device scalar (graphed(numbers=)), `t` is a
0-dim device tensor on replay: `as_tensor` leaves it on the device (no host data to copy, so it
captures) and reads the current value every replay; called eagerly with a Python number it
builds the tensor as before. Same values and dtype (int64 for an int, the default float dtype
for a float, or the call's own `dtype=`); `.repeat(...)`/`.clone()` keep the result a fresh
tensor, as `torch.tensor` made one, so an in-place change of it never reaches the caller's
scalar."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.rewriters.boundary import _torch_name

_KEYWORDS = frozenset({"dtype", "device"})


def tensor_from_number(source: str, line: int, numbers: set[str]) -> tuple[str | None, str | None]:
    """(new source, None), or (None, why not) for the `torch.tensor(...)` call on `line`."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return None, f"cannot parse: {error.message}"
    torch = _torch_name(module)
    if torch is None:
        return None, "the file does not `import torch`"
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    rewriter = _Rewrite(torch, line, numbers, positions)
    new = module.visit(rewriter)
    if not rewriter.done:
        return None, f"line {line}: no `{torch}.tensor(...)` of a per-step number ({', '.join(sorted(numbers))}) " \
                     "in a form kept here ([t], [t] * n, t)"
    return new.code, None


class _Rewrite(cst.CSTTransformer):
    def __init__(self, torch: str, line: int, numbers: set[str], positions) -> None:
        self.torch, self.line, self.numbers, self.positions = torch, line, numbers, positions
        self.done = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if original not in self.positions or self.positions[original].start.line != self.line:
            return updated
        func = updated.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                and func.value.value == self.torch and func.attr.value == "tensor"):
            return updated
        positional = [a for a in updated.args if a.keyword is None]
        keywords = [a for a in updated.args if a.keyword is not None]
        if len(positional) != 1 or positional[0].star or not {a.keyword.value for a in keywords} <= _KEYWORDS:
            return updated
        shaped = self._shape(positional[0].value)
        if shaped is None:
            return updated
        number, method, count = shaped
        args = [cst.Arg(number)] + [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in keywords]
        args = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]] + \
            [args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        built = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("as_tensor")), args)
        self.done += 1
        return cst.Call(cst.Attribute(built, cst.Name(method)), [cst.Arg(count)] if count is not None else [])

    def _shape(self, data: cst.BaseExpression):
        """(the number, the method that gives torch.tensor's shape, its argument)."""
        if self._is_number(data):
            return data, "clone", None
        if isinstance(data, cst.List) and len(data.elements) == 1 and self._is_number(data.elements[0].value):
            return data.elements[0].value, "repeat", cst.Integer("1")
        if isinstance(data, cst.BinaryOperation) and isinstance(data.operator, cst.Multiply):
            for single, count in ((data.left, data.right), (data.right, data.left)):
                if isinstance(single, cst.List) and len(single.elements) == 1 and \
                        self._is_number(single.elements[0].value) and not isinstance(count, cst.List):
                    return single.elements[0].value, "repeat", count.with_changes(lpar=[], rpar=[])
        return None

    def _is_number(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value in self.numbers
