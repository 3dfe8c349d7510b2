"""Lazy initialisation reached for the first time during capture (GS710–GS712).

Libraries set themselves up on first use: Triton's autotuner benchmarks every config (and
synchronizes) on a kernel's first launch for a key, cuDNN's benchmark mode tries algorithms
for each new shape, symmetric memory exchanges handles between ranks on a buffer's first
rendezvous. Done during capture, that work either fails the capture or is recorded as if it
were part of the step. The cure is the same for all of them: run the step eagerly (warm-up)
before capturing. These rules fire where the text shows the first use inside the capture.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.nodes import descendants
from graphsafe.model import Consequence, Example, Principle
from graphsafe.rules.base import Callees, Rule
from graphsafe.rules.syntax import literal, positional

GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
AUTOTUNE = frozenset({"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"})
SYMM_MEM = "torch.distributed._symmetric_memory."


_KERNEL = ("import triton\nimport triton.language as tl\n\n\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\n"
           "def add_kernel(x, n):\n    pass\n\n\n")
_SYMM = "import torch.distributed._symmetric_memory as symm_mem\n\n\n"


@dataclass
class _Call:
    node: cst.Call
    callee: str
    function: str
    order: int
    in_capture: bool
    place: object


class _LazyInitRule(Rule):
    principle = Principle.CONFIG
    consequence = Consequence.CAPTURE_FAILS


class AutotuneFirstRunInCapture(_LazyInitRule):
    """## What it does
    Flags, inside a `torch.cuda.graph` block, the launch of a `@triton.autotune` kernel (or a
    call of a function of the same file that launches one) when the same function launches or
    calls it nowhere before the block.

    ## Why is this bad?
    The first launch of an autotuned kernel for a new key benchmarks every config, and the
    benchmark synchronizes: during capture that invalidates it
    (cudaErrorStreamCaptureInvalidated, triton-lang/triton#10596). A capture that survives
    would also record the benchmark runs. One eager launch with the same shapes before capture
    caches the chosen config.

    ## Example
    ```python
    with torch.cuda.graph(g):
        add_kernel[grid](x, y, out, n)
    ```

    ## Use instead
    ```python
    add_kernel[grid](x, y, out, n)  # warm-up: autotunes outside the capture
    with torch.cuda.graph(g):
        add_kernel[grid](x, y, out, n)
    ```

    ## Fix safety
    No automatic fix: the warm-up launch needs the capture's inputs.
    """

    code = "GS710"
    name = "autotune-first-run-in-capture"
    summary = "a `@triton.autotune` kernel first launched inside a `torch.cuda.graph` block"
    message = "`{callee}` runs Triton's autotuner on its first launch, here during capture: {consequence}"
    words = ("autotune",)
    valid = (
        Example(_KERNEL + "def step(x, n):\n    add_kernel[(1,)](x, n)\n    g = torch.cuda.CUDAGraph()\n"
                "    with torch.cuda.graph(g):\n        add_kernel[(1,)](x, n)\n", module=True),
        Example(_KERNEL + "def step(x, n):  # graphsafe: region\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
                "        y = x * n\n", module=True),
    )
    invalid = (
        Example(_KERNEL + "def step(x, n):  # graphsafe: region\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n"
                "        add_kernel[(1,)](x, n)\n", module=True),
        Example(_KERNEL + "def add(x, n):\n    add_kernel[(1,)](x, n)\n\n\ndef step(x, n):  # graphsafe: region\n"
                "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        add(x, n)\n", module=True),
    )

    def __init__(self) -> None:
        self.tuned: set[str] = set()  # autotuned kernels
        self.launchers: set[str] = set()  # functions of this file that launch one
        self.calls: list[_Call] = []
        self.order = 0

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx) -> None:
        for decorator in node.decorators:
            target = decorator.decorator
            target = target.func if isinstance(target, cst.Call) else target
            if ctx.resolve(target) in AUTOTUNE:
                self.tuned.add(node.name.value)
                return
        if self.tuned and any(_launched(c) in self.tuned for c in _calls_below(node.body)):
            self.launchers.add(node.name.value)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self.order += 1
        callee = _launched(node) or dotted(node.func)
        if callee in self.tuned or callee in self.launchers:
            self.calls.append(_Call(node, callee, ctx.function_key or "<module>", self.order,
                                    ctx.in_capture_block(), ctx.here()))

    def end_module(self, ctx) -> None:
        for call in _first_in_capture(self.calls):
            ctx.report(self, call.node, at=call.place, callee=call.callee)


class CaptureWithoutWarmup(_LazyInitRule):
    """## What it does
    Flags a `torch.cuda.graph` block that follows `torch.backends.cudnn.benchmark = True` in
    the same function when nothing the block calls ran between the two (no warm-up).

    ## Why is this bad?
    With benchmark mode on, cuDNN tries several algorithms the first time it sees a
    convolution shape, allocating workspaces and timing them. Reached first during capture,
    that search runs inside the capture: it fails ("operation not permitted when stream is
    capturing") or records the trial runs and their workspace into the graph. cuBLAS is alike:
    a process's first matmul creates its handle, which fails inside capture
    ("CUBLAS_STATUS_NOT_INITIALIZED", pytorch/pytorch#99397; the run-time classifier reports
    that under this code). An eager warm-up with the capture's shapes does all of it beforehand.

    ## Example
    ```python
    torch.backends.cudnn.benchmark = True
    with torch.cuda.graph(g):
        out = model(static_x)
    ```

    ## Use instead
    ```python
    torch.backends.cudnn.benchmark = True
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = model(static_x)
    ```

    ## Fix safety
    No automatic fix: the warm-up needs the capture's inputs.
    """

    code = "GS711"
    name = "capture-without-warmup"
    summary = "a capture with no warm-up after `cudnn.benchmark = True` (first-use set-up runs during capture)"
    message = ("`cudnn.benchmark` is on and nothing this capture calls ran since it was set: cuDNN searches "
               "algorithms during capture: {consequence}")
    words = ("benchmark",)
    valid = (
        "torch.backends.cudnn.benchmark = True\nfor _ in range(3):\n    self.net(x)\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    z = self.net(x)",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = self.net(x)",
    )
    invalid = (
        "torch.backends.cudnn.benchmark = True\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        "    z = self.net(x)",
    )

    def __init__(self) -> None:
        self.order = 0
        self.benchmark_on: dict[str, int] = {}  # function → order of `cudnn.benchmark = True`
        self.calls: list[tuple[str, str, int]] = []  # (function, callee, order) outside capture
        self.blocks: list[tuple[cst.Call, cst.With, str, int, object]] = []

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        self.order += 1
        if literal(node.value) is not True:
            return
        for target in node.targets:
            if ctx.resolve(target.target) == "torch.backends.cudnn.benchmark":
                self.benchmark_on[ctx.function_key or "<module>"] = self.order

    def visit_With(self, node: cst.With, ctx) -> None:
        self.order += 1
        for item in node.items:
            if isinstance(item.item, cst.Call) and ctx.resolve(item.item.func) in GRAPH_CONTEXTS:
                self.blocks.append((item.item, node, ctx.function_key or "<module>", self.order, ctx.here()))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self.order += 1
        callee = dotted(node.func)
        if callee is not None and not ctx.in_capture_block():
            self.calls.append((ctx.function_key or "<module>", callee, self.order))

    def end_module(self, ctx) -> None:
        for call, block, function, order, place in self.blocks:
            since = self.benchmark_on.get(function)
            if since is None or since > order:
                continue
            inside = {dotted(c.func) for c in _calls_below(block.body)} - {None}
            if not inside or any(f == function and since < o < order and c in inside for f, c, o in self.calls):
                continue
            ctx.report(self, call, always=True, at=place)


class SymmetricMemoryInRegion(_LazyInitRule):
    """## What it does
    Flags `symm_mem.empty(...)` inside a captured region, and `symm_mem.rendezvous(buf, ...)`
    there when `buf` is allocated in the same function (so its first rendezvous is in the
    region).

    ## Why is this bad?
    Allocating symmetric memory and a buffer's first rendezvous exchange handles between
    ranks and synchronize the stream: during capture they fail with
    cudaErrorStreamCaptureUnsupported (pytorch/pytorch#198140). Symmetric memory also comes
    from its own pool, not the graph's, so its address is not kept for replay. Later
    rendezvous of a buffer already rendezvoused eagerly hit a cache and capture fine.

    ## Example
    ```python
    buf = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
    handle = symm_mem.rendezvous(buf, group.group_name)
    ```

    ## Use instead
    Allocate and rendezvous once before capture (in `__init__` or set-up), keep the buffer,
    and copy into it inside the region.

    ## Fix safety
    No automatic fix.
    """

    code = "GS712"
    name = "symmetric-memory-in-region"
    summary = "symmetric-memory allocation or first rendezvous inside a captured region"
    message = "`{what}` {why} inside the captured region: {consequence}"
    valid = (
        Example(_SYMM + "def step(x):  # graphsafe: region\n    h = symm_mem.rendezvous(x, 'world')\n    return x\n",
                module=True),
        Example(_SYMM + "def setup(n):\n    buf = symm_mem.empty(n, device='cuda')\n"
                "    return symm_mem.rendezvous(buf, 'world')\n", module=True),
    )
    invalid = (
        Example(_SYMM + "def step(x):  # graphsafe: region\n    buf = symm_mem.empty(8, device='cuda')\n"
                "    h = symm_mem.rendezvous(buf, 'world')\n    return buf\n", module=True, expect=2),
    )
    calls = Callees(("empty", "rendezvous"))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func) or ""
        if not name.startswith(SYMM_MEM):
            return
        short = "symm_mem." + name[len(SYMM_MEM):]
        if name == SYMM_MEM + "empty":
            ctx.report(self, node, what=short, why="allocates symmetric memory (a handle exchange and a sync)")
        elif name == SYMM_MEM + "rendezvous":
            args = positional(node)
            if args and _allocated_here(args[0].value, ctx):
                ctx.report(self, node, what=short, why="is the first rendezvous of a buffer allocated")


def _allocated_here(expr: cst.BaseExpression, ctx) -> bool:
    """`symm_mem.empty(...)` itself, or a local name bound to one in the current function."""
    if isinstance(expr, cst.Call):
        return ctx.resolve(expr.func) == SYMM_MEM + "empty"
    if not isinstance(expr, cst.Name) or ctx.function_node is None:
        return False
    for node in descendants(ctx.function_node.body):
        if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                and ctx.resolve(node.value.func) == SYMM_MEM + "empty"
                and any(isinstance(t.target, cst.Name) and t.target.value == expr.value for t in node.targets)):
            return True
    return False


def _launched(call: cst.Call) -> str | None:
    """`kernel[grid](...)` → "kernel"."""
    return dotted(call.func.value) if isinstance(call.func, cst.Subscript) else None


def _first_in_capture(calls: list[_Call]) -> list[_Call]:
    """Calls in a capture block with no earlier call of the same callee, outside capture, in the
    same function."""
    warmed: dict[tuple[str, str], int] = {}
    for call in calls:
        if not call.in_capture:
            warmed.setdefault((call.function, call.callee), call.order)
    return [c for c in calls if c.in_capture and not warmed.get((c.function, c.callee), c.order + 1) < c.order]


def _calls_below(node: cst.CSTNode):
    return (n for n in descendants(node) if isinstance(n, cst.Call))


RULES = (AutotuneFirstRunInCapture, CaptureWithoutWarmup, SymmetricMemoryInRegion)
