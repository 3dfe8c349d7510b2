"""An `assert` on `torch.allclose` kept on the device (`graphsafe graph`, what still blocks: GS109):

    assert torch.allclose(w.sum(-1), ones, atol=1e-4)   →   torch._assert_async(torch.isclose(w.sum(-1), ones, atol=1e-4).all(), "assertion failed")
    assert a.allclose(b), "drift"                        →   torch._assert_async(torch.isclose(a, b).all(), "drift")

`torch.allclose(a, b, rtol, atol, equal_nan)` is `torch.isclose(a, b, rtol, atol, equal_nan).all()`
read on the host (same defaults, same broadcasting); `_assert_async` takes that tensor and
captures. Unsafe, as every check graph moves to the device (rewriters/device_checks.py): a failed
check is a device-side assert that ends the CUDA context (a RuntimeError at once on the CPU), not
an AssertionError, and it also runs under `python -O`. Only an assert whose whole test is the call,
with a plain string message or none (`_assert_async` would format an f-string on every call).

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


def allclose_asserts(source: str, positions: set[tuple[int, int]]) -> tuple[str | None, list[int]]:
    """The source with each `assert` whose test is the GS109 call at (line, column) rewritten, and
    the lines rewritten; (None, []) when none is."""
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except (cst.ParserSyntaxError, ValueError):
        return None, []
    torch = _torch_name(wrapper.module)
    if torch is None:
        return None, []
    rewriter = _Rewriter(wrapper, positions, torch)
    new = wrapper.visit(rewriter)
    return (new.code, rewriter.lines) if rewriter.lines else (None, [])


def _torch_name(module: cst.Module) -> str | None:
    """The name `import torch` binds (`torch`, or its `as` alias), or None without one."""
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "torch":
                        return alias.asname.name.value if alias.asname else "torch"
    return None


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wrapper: MetadataWrapper, positions: set[tuple[int, int]], torch: str) -> None:
        super().__init__()
        self.positions_of = wrapper.resolve(PositionProvider)
        self.wanted = positions
        self.torch = torch
        self.lines: list[int] = []

    def leave_Assert(self, original: cst.Assert, updated: cst.Assert) -> cst.BaseSmallStatement:
        call = original.test
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) \
                or call.func.attr.value != "allclose":
            return updated
        start = self.positions_of[call].start
        if (start.line, start.column) not in self.wanted:
            return updated
        if original.msg is not None and not isinstance(original.msg, cst.SimpleString):
            return updated
        receiver = call.func.value
        if isinstance(receiver, cst.Name) and receiver.value == self.torch:
            arguments = list(call.args)  # torch.allclose(a, b, ...)
        else:  # a.allclose(b, ...)
            arguments = [cst.Arg(receiver), *call.args]
        if any(a.star for a in arguments):
            return updated
        isclose = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("isclose")), arguments)
        condition = cst.Call(cst.Attribute(isclose, cst.Name("all")))
        message = original.msg if original.msg is not None else cst.SimpleString('"assertion failed"')
        self.lines.append(start.line)
        return cst.Expr(cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("_assert_async")),
                                 [cst.Arg(condition), cst.Arg(message)]))
