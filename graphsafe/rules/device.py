"""Device placement of a capture (GS904): the capture records the current device's work.

`torch.cuda.graph(g)` captures on a side stream of the *current* device. Kernels for tensors on
another GPU go to that GPU's own streams, which are not capturing: they run once, eagerly, and
the graph ends up empty or partial ("The CUDA Graph is empty", pytorch/pytorch#87894). A file
that puts its work on `cuda:1` and captures without `torch.cuda.device(1)` (or
`torch.cuda.set_device`) around the capture shows the mistake in its own text.
"""

from __future__ import annotations

import re

import libcst as cst

from graphsafe.analyzer.nodes import descendants
from graphsafe.model import Consequence, Principle
from graphsafe.rules.base import Callees, Rule
from graphsafe.rules.syntax import keyword, literal, positional

GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
SET_DEVICE = frozenset({"torch.cuda.set_device", "torch.set_default_device"})
_OTHER_GPU = re.compile(r"^cuda:([1-9][0-9]*)$")


class CaptureOnOtherDevice(Rule):
    """## What it does
    In a file that places work on a GPU other than `cuda:0` (`"cuda:1"`, `torch.device("cuda",
    1)`, `.cuda(1)`), flags `torch.cuda.graph(g)` outside a `with torch.cuda.device(...)` block,
    with no `stream=` argument, when the file never calls `torch.cuda.set_device`.

    ## Why is this bad?
    `torch.cuda.graph` captures on a side stream of the current device (cuda:0 unless changed).
    Work on tensors of another GPU is launched on that GPU's streams, which are not capturing:
    it runs once during capture and is not in the graph. The graph is empty or partial and
    `replay()` silently leaves the outputs as they were (pytorch/pytorch#87894), or capture fails
    when the two devices' work meets ("operation not permitted when stream is capturing").

    ## Example
    ```python
    model = Net().to("cuda:1")
    static_x = torch.randn(8, 16, device="cuda:1")
    with torch.cuda.graph(g):
        static_out = model(static_x)
    ```

    ## Use instead
    ```python
    with torch.cuda.device("cuda:1"):
        with torch.cuda.graph(g):
            static_out = model(static_x)
    ```

    ## Fix safety
    No automatic fix: which device the capture belongs to is the program's choice.

    ## Precise semantics
    Another GPU is seen from a string literal `"cuda:N"` with N >= 1 anywhere in the file,
    `torch.device("cuda", N)` and `x.cuda(N)` with a literal N >= 1. A capture is guarded by an
    enclosing `with torch.cuda.device(...)`/`torch.cuda.device_of(...)` block, by a `stream=`
    argument (the stream's device becomes current during capture), or by any
    `torch.cuda.set_device(...)`/`torch.set_default_device(...)` call in the file.
    """

    code = "GS904"
    name = "capture-on-other-device"
    principle = Principle.CONFIG
    consequence = Consequence.SILENTLY_WRONG
    summary = "`torch.cuda.graph` on the current device while the file's work is on another GPU"
    message = ("`torch.cuda.graph(...)` captures on the current device while this file puts work on `{device}`; capture "
               "inside `with torch.cuda.device(...)` for that GPU: {consequence}")
    words = ("cuda",)
    calls = Callees(("set_device", "set_default_device", "device", "cuda"))
    valid = (
        "model = self.net.to('cuda:1')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.device('cuda:1'):\n"
        "    with torch.cuda.graph(g):\n        z = model(x)",
        "model = self.net.to('cuda:0')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = model(x)",
        "torch.cuda.set_device(1)\nmodel = self.net.cuda(1)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        "    z = model(x)",
        "s = torch.cuda.Stream(device='cuda:1')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g, stream=s):\n"
        "    z = x * 2",
    )
    invalid = (
        "model = self.net.to('cuda:1')\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = model(x)",
        "dev = torch.device('cuda', 1)\nmodel = self.net.to(dev)\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    z = model(x)",
    )

    def __init__(self) -> None:
        self.other: str | None = None  # the first other-GPU spelling seen
        self.sets_device = False
        self.guarded: set[int] = set()
        self.captures: list[tuple[cst.Call, object]] = []

    def visit_SimpleString(self, node: cst.SimpleString, ctx) -> None:
        if self.other is not None or "cuda:" not in node.value:  # cheap test first: every string comes here
            return
        value = literal(node)
        if self.other is None and isinstance(value, str) and _OTHER_GPU.match(value):
            self.other = value

    def visit_With(self, node: cst.With, ctx) -> None:
        calls = [item.item for item in node.items if isinstance(item.item, cst.Call)]
        names = [ctx.resolve(call.func) for call in calls]
        if any(name in ("torch.cuda.device", "torch.cuda.device_of") for name in names):
            self.guarded.update(id(n) for n in _calls_below(node))  # the body, and later items of this `with`
        for call, name in zip(calls, names):
            if name in GRAPH_CONTEXTS and keyword(call, "stream") is None and len(positional(call)) < 3:
                self.captures.append((call, ctx.here()))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func)
        if name in SET_DEVICE:
            self.sets_device = True
        elif self.other is None:
            args = positional(node)
            if name == "torch.device" and len(args) == 2 and _gpu_index(args[1].value):
                self.other = f"cuda:{literal(args[1].value)}"
            elif (isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda" and len(args) == 1
                  and _gpu_index(args[0].value)):
                self.other = f"cuda:{literal(args[0].value)}"

    def end_module(self, ctx) -> None:
        if self.other is None or self.sets_device:
            return
        for call, place in self.captures:
            if id(call) not in self.guarded:
                ctx.report(self, call, always=True, at=place, device=self.other)


def _gpu_index(expr: cst.BaseExpression) -> bool:
    value = literal(expr)
    return type(value) is int and value >= 1


def _calls_below(node: cst.CSTNode):
    return (n for n in descendants(node) if isinstance(n, cst.Call))


RULES = (CaptureOnOtherDevice,)
