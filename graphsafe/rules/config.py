"""Configuration (GS702–GS709): how the capture is set up, usually outside any region.

These checks look at a whole file: the autocast context around a capture, DDP's construction
and warm-up, hooks on graphed modules, TE's FP8 context, the capture error mode, warm-up of
compiled functions. Most fire where the capture is set up, which is not inside a region, so
they report unconditionally (`always=True`); GS703 is the exception (it is about code that
runs inside the region).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer.argument_calls import GRAD_SCALERS
from graphsafe.analyzer.callgraph import REACHES_CAPTURE
from graphsafe.analyzer.nodes import children

from graphsafe.analyzer.names import dotted
from graphsafe.model import Applicability, Consequence, Example, Principle
from graphsafe.rewriters.keywords import keyword_fix
from graphsafe.rules.base import Callees, Rule
from graphsafe.rules.syntax import keyword as _keyword
from graphsafe.rules.syntax import literal as _literal
from graphsafe.rules.syntax import positional as _positional
from graphsafe.rules.syntax import environment_writes

GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
TORCH_GRAPHED_CALLABLES = frozenset({"torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables"})
TE_GRAPHED_CALLABLES = frozenset(
    {"transformer_engine.pytorch.make_graphed_callables", "transformer_engine.pytorch.graph.make_graphed_callables"}
)
GRAPHED_CALLABLES = TORCH_GRAPHED_CALLABLES | TE_GRAPHED_CALLABLES
AUTOCAST = frozenset(
    """torch.autocast torch.amp.autocast torch.cuda.amp.autocast torch.amp.autocast_mode.autocast
    torch.cuda.amp.autocast_mode.autocast""".split()
)
FP8_AUTOCAST = frozenset(
    """transformer_engine.pytorch.fp8_autocast transformer_engine.pytorch.fp8.fp8_autocast
    transformer_engine.pytorch.autocast transformer_engine.pytorch.quantization.autocast""".split()
)
STREAM_CONTEXTS = frozenset({"torch.cuda.stream", "torch.cuda.StreamContext", "torch.cuda.streams.StreamContext"})
HOOK_METHODS = frozenset(
    """register_forward_hook register_forward_pre_hook register_full_backward_hook
    register_full_backward_pre_hook register_backward_hook""".split()
)
NCCL_ASYNC_VARIABLES = frozenset({"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"})
DDP_WARMUP_ITERATIONS = 11  # PyTorch's CUDA-graph notes: DDP needs 11 eager iterations before capture


# ---------------------------------------------------------------------------- helpers
def _keyword_is(call: cst.Call, name: str, value: object) -> bool:
    arg = _keyword(call, name)
    return arg is not None and _literal(arg.value) == value


def _is_capture_call(call: cst.Call, ctx) -> bool:
    """`torch.cuda.graph(...)`, `make_graphed_callables(...)` or `g.capture_begin(...)`."""
    name = ctx.resolve(call.func)
    if name in GRAPH_CONTEXTS or name in GRAPHED_CALLABLES:
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "capture_begin"


def _is_ddp(call: cst.Call, ctx) -> bool:
    name = ctx.resolve(call.func) or ""
    return name.rpartition(".")[2] == "DistributedDataParallel"


def _calls_in(node: cst.CSTNode):
    """Calls executed inside `node`'s body: not those of nested functions, classes or lambdas."""
    stack = list(children(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(child, cst.Call):
            yield child
        stack.extend(children(child))


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    stack = [outer]
    while stack:
        node = stack.pop()
        if node is inner:
            return True
        stack.extend(children(node))
    return False


def _targets(target: cst.BaseExpression):
    """The plain names and attribute chains bound by an assignment target (through tuples)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _targets(element.value)
    elif dotted(target) is not None:
        yield target


def _mentions(ctx, *words: str) -> bool:
    """A cheap text pre-filter: does the file mention any of `words` at all?"""
    source = getattr(ctx, "source", None)
    return source is None or any(w in source for w in words)


class _ConfigRule(Rule):
    principle = Principle.CONFIG
    words: tuple[str, ...] = ()  # the rule has nothing to do in a file that mentions none of these

    def __init__(self) -> None:
        self.relevant: bool | None = None  # decided once per file, at the first node

    def _relevant(self, ctx) -> bool:
        if self.relevant is None:
            self.relevant = not self.words or _mentions(ctx, *self.words)
        return self.relevant


# ---------------------------------------------------------------------------- GS702
class AutocastCacheEnabled(_ConfigRule):
    """## What it does
    Flags a `torch.autocast(...)` block around a CUDA-graph capture (`torch.cuda.graph` or
    `make_graphed_callables`, directly or in a function the block calls) that does not pass
    `cache_enabled=False`.

    ## Why is this bad?
    Autocast caches the low-precision copies of the weights it casts, until the outermost
    autocast block exits. `make_graphed_callables` refuses to run under that cache ("does not
    support the autocast caching. Please set `cache_enabled=False`"): capture fails. A
    `torch.cuda.graph` captured under it records reads of the cast copies made during warm-up
    instead of the casts themselves; those copies are freed when the block exits, while
    replays keep reading their memory (measured on torch 2.11: after the block and a weight
    update, replay disagrees with eager; with `cache_enabled=False` it agrees).
    An autocast block *inside* the captured code is fine (its cache lives and dies within the
    capture) and is not flagged.

    ## Example
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16):
        graphed = torch.cuda.make_graphed_callables(model, (static_x,))
    ```

    ## Use instead
    ```python
    with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        graphed = torch.cuda.make_graphed_callables(model, (static_x,))
    ```

    ## Fix safety
    `cache_enabled=False` changes only whether casts are reused within the block; results are
    the same: safe.

    ## Precise semantics
    The autocast forms: `torch.autocast(...)`, `torch.cuda.amp.autocast`, `torch.amp.autocast`.
    The capture (a `torch.cuda.graph` capture or a `make_graphed_callables` call) counts when it
    is in the block itself, or in the body of a function of the same file that the block calls:
    `capture(g)`, `self.capture()`, or a method of a class of this file called on an instance of
    it, `trainer.capture(x)` with `trainer: Trainer` or `trainer = Trainer(...)`; also a few
    calls deep: `trainer.setup()` whose `self._capture()` captures; or a function or class of
    another file of the program that captures within three calls: `capture_graphs(g, model, x)`
    imported, `self.capturer.capture(x)`, reported as "a capture in a function it calls".
    """

    code = "GS702"
    name = "autocast-cache-enabled"
    consequence = Consequence.SILENTLY_WRONG
    fixable = True
    summary = "autocast around a capture without `cache_enabled=False`"
    message = "`{what}` around {capture} keeps autocast's weight-cast cache{detail}; pass `cache_enabled=False`: {consequence}"
    valid = (
        'with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):\n'
        "    g = torch.cuda.make_graphed_callables(self.net, (x,))",
        'with torch.autocast("cuda", dtype=torch.bfloat16):\n    z = x @ y',
        'with torch.autocast("cuda", enabled=False):\n    g = torch.cuda.make_graphed_callables(self.net, (x,))',
        Example(
            "def warm_up(f, x):\n    return f(x)\n\n\n"
            "with torch.autocast('cuda', dtype=torch.bfloat16):\n    y = warm_up(torch.sin, torch.ones(2))",
            module=True,
        ),
        "with torch.autocast('cpu'):\n    g = torch.cuda.make_graphed_callables(self.net, (x,))",
        # a method of the instance's class that does not capture
        Example(
            "class Trainer:\n    def step(self, x):\n        return x * 2\n\n"
            "    def capture(self, g, x):\n        with torch.cuda.graph(g):\n            return self.step(x)\n\n"
            "    def warm(self, x):\n        return self.step(x)\n\n\n"
            "def fit(trainer: Trainer, g, x):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        return trainer.warm(x)",
            module=True,
        ),
    )
    invalid = (
        Example(
            'with torch.autocast("cuda", dtype=torch.bfloat16):\n'
            "    g = torch.cuda.make_graphed_callables(self.net, (x,))",
            fixed='with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):\n'
            "    g = torch.cuda.make_graphed_callables(self.net, (x,))",
        ),
        Example(
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.amp.autocast(cache_enabled=True):\n"
            "    with torch.cuda.graph(g):\n        z = x @ y",
            fixed="g = torch.cuda.CUDAGraph()\nwith torch.cuda.amp.autocast(cache_enabled=False):\n"
            "    with torch.cuda.graph(g):\n        z = x @ y",
        ),
        Example(
            "import torch as th\nfrom torch.cuda import graph\ng = th.cuda.CUDAGraph()\n"
            "with th.autocast(\n    device_type='cuda',\n    dtype=th.float16,\n), graph(g):\n    z = x @ y",
            module=True,
        ),
        Example(
            "def capture(g, f, x):\n    with torch.cuda.graph(g):\n        return f(x)\n\n\n"
            "g = torch.cuda.CUDAGraph()\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "    y = capture(g, torch.sin, torch.ones(2, device='cuda'))",
            module=True,
        ),
        Example(
            "class Trainer:\n    def step(self, x):\n        return x * 2\n\n"
            "    def capture(self, g, x):\n        with torch.cuda.graph(g):\n            return self.step(x)\n\n"
            "    def warm(self, x):\n        return self.step(x)\n\n\n"
            "def fit(trainer: Trainer, g, x):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
            "        return trainer.capture(g, x)",
            module=True,
        ),
    )

    def visit_With(self, node: cst.With, ctx) -> None:
        for index, item in enumerate(node.items):
            call = item.item
            if not isinstance(call, cst.Call) or ctx.resolve(call.func) not in AUTOCAST:
                continue
            if _keyword_is(call, "enabled", False) or _cpu_autocast(call):
                continue
            cache = _keyword(call, "cache_enabled")
            if cache is not None and _literal(cache.value) is not True:
                continue  # False, or decided elsewhere
            capture = self._capture_under(node, index, ctx)
            condition = None
            if capture is None:
                # calls the project resolves (a helper or class of another file): reported if one
                # of them captures, a few calls deep
                condition = _capture_condition(node, index, ctx)
                if condition is None:
                    continue
                capture = "a capture in a function it calls"
            fix = ("Pass `cache_enabled=False`", [keyword_fix(ctx, call, "cache_enabled", "False")], Applicability.SAFE)
            if capture == "make_graphed_callables":
                ctx.report(
                    self, call, fix=fix, always=True, what=_short(ctx.resolve(call.func)), capture="`make_graphed_callables`",
                    detail=", which it refuses", consequence=Consequence.CAPTURE_FAILS.value,
                )
            else:
                ctx.report(
                    self, call, fix=fix, always=True, condition=condition, what=_short(ctx.resolve(call.func)),
                    capture=capture, detail=": the graph can read cast copies that are freed when the block exits",
                )

    @staticmethod
    def _capture_under(node: cst.With, index: int, ctx) -> str | None:
        """What this autocast block captures: later items of the same `with`, then its body."""
        calls = [i.item for i in node.items[index + 1:] if isinstance(i.item, cst.Call)]
        calls.extend(_calls_in(node.body))
        # `with autocast(...): capture(g, step)`: a function of this file that captures, or that
        # calls one (`trainer.fit_graphs()` → `self._capture()`), a few calls deep
        pending = [(call, None) for call in calls]
        seen: set[int] = set()
        for _ in range(_HELPER_DEPTH):
            deeper = []
            for call, owner in pending:
                found = _same_file_function(call, ctx) if owner is None else _helper_method(call, owner, ctx)
                if found is None or id(found[0]) in seen:
                    continue
                helper, helper_owner = found
                seen.add(id(helper))
                inner = list(_calls_in(helper.body))
                calls.extend(inner)
                deeper.extend((c, (helper_owner, _self_param(helper))) for c in inner)
            pending = deeper
        found = None
        for call in calls:
            name = ctx.resolve(call.func)
            if name in GRAPHED_CALLABLES:
                return "make_graphed_callables"
            if name in GRAPH_CONTEXTS:
                found = "a `torch.cuda.graph` capture"
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "capture_begin" and found is None:
                found = "a `capture_begin()` capture"
        return found


_HELPER_DEPTH = 3  # helpers looked into below an autocast block


def _capture_condition(node: cst.With, index: int, ctx) -> tuple[str, ...] | None:
    """The block's calls as the project resolves them (`capture_graphs(model, x)` imported,
    `trainer.capture(x)` on a class of another file): a condition that holds where one of them
    runs a capture within `_HELPER_DEPTH` calls (Project.reaches_capture)."""
    calls = [i.item for i in node.items[index + 1:] if isinstance(i.item, cst.Call)]
    calls.extend(_calls_in(node.body))
    refs = dict.fromkeys(f"{ref.kind}|{ref.target}" for call in calls for ref in ctx.call_refs(call.func))
    return (REACHES_CAPTURE, ctx.class_key or "", str(_HELPER_DEPTH), *refs) if refs else None


def _self_param(function: cst.FunctionDef) -> str | None:
    params = function.params.params
    return params[0].name.value if params else None


def _helper_method(call: cst.Call, owner, ctx):
    """Inside a helper reached from the block: a module function of this file (`capture(g)`)
    or a method of the helper's own class on its `self` (`self._capture()`); kinds of other
    receivers belong to the helper's scope, not known here."""
    func = call.func
    module = ctx.cst_module
    if type(func) is cst.Name and func.value in ctx.module_defs:
        return _function_in(module.body, func.value, None)
    owner_class, self_name = owner
    if (owner_class is not None and type(func) is cst.Attribute and type(func.value) is cst.Name
            and func.value.value == self_name):
        return _function_in(owner_class.body.body, func.attr.value, owner_class)
    return None


def _function_in(body, name: str, owner):
    function = next((n for n in body if type(n) is cst.FunctionDef and n.name.value == name), None)
    return None if function is None else (function, owner)


def _same_file_function(call: cst.Call, ctx):
    """The module-level function (`capture(g)`) or method of a class of this file that `call`
    runs: on `self` in the enclosing class (`self.capture(g)`), or on an instance known to be
    of one (`trainer.capture(g)` with `trainer: VocoderTrainer`, `trainer = VocoderTrainer()`),
    with the class whose method it is (None for a module function)."""
    func = call.func
    module = ctx.cst_module
    if module is None:
        return None
    if type(func) is cst.Name and func.value in ctx.module_defs:
        return _function_in(module.body, func.value, None)
    if type(func) is cst.Attribute:
        owner = _same_file_class(func.value, ctx)
        if owner is not None:
            return _function_in(owner.body.body, func.attr.value, owner)
    return None


def _same_file_class(receiver: cst.BaseExpression, ctx) -> cst.ClassDef | None:
    """The module-level class of this file that `receiver` is an instance of, if known."""
    if ctx.is_self(receiver) and ctx.class_key:
        class_names = {ctx.class_key.rpartition(".")[2]}
    else:
        kind = ctx.kind(receiver)
        prefix = f"{ctx.module}." if ctx.module else ""
        # only one class: a value that may be either of two classes runs either method
        if kind.tag != "object" or len(kind.refs) != 1 or not kind.refs[0].startswith(prefix):
            return None
        class_names = {kind.refs[0][len(prefix):]}
    return next((n for n in ctx.cst_module.body if type(n) is cst.ClassDef and n.name.value in class_names), None)


def _cpu_autocast(call: cst.Call) -> bool:
    device = _keyword(call, "device_type") or next(iter(_positional(call)), None)
    return device is not None and _literal(device.value) == "cpu"


def _short(name: str | None) -> str:
    return f"{name}(...)" if name else "autocast(...)"


# ---------------------------------------------------------------------------- GS703
@dataclass
class _ScalerCall:
    node: cst.Call
    receiver: str
    method: str
    optimizer: str | None
    place: object


class GradScalerInRegion(_ConfigRule):
    """## What it does
    Flags `scaler.step(optimizer)` inside a captured region, where `scaler` is a
    `torch.amp.GradScaler` / `torch.cuda.amp.GradScaler` built in the same file (or a name
    that ends in `scaler`).

    ## Why is this bad?
    `GradScaler.step` reads `found_inf` on the host to decide whether to skip the step: a
    device-to-host sync, so capture fails (measured: "operation failed due to a previous error
    during capture"). An optimizer built with `fused=True` takes `found_inf` on the device and
    is not flagged (measured: a fused, capturable Adam steps under a GradScaler in a graph).
    `scaler.scale()`, `unscale_()` and `update()` run on the device and capture fine.

    ## Example
    ```python
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    ```

    ## Use instead
    Use bf16 autocast (no loss scaling needed), or a fused, capturable optimizer:
    ```python
    opt = torch.optim.AdamW(params, lr=lr, fused=True, capturable=True)
    ```

    ## Fix safety
    No automatic fix: switching optimizers or precision is a design decision.
    """

    code = "GS703"
    name = "grad-scaler-in-region"
    consequence = Consequence.CAPTURE_FAILS
    summary = "`GradScaler.step()` inside the region reads `found_inf` on the host"
    message = "`{receiver}.step()` of a GradScaler reads `found_inf` on the host and waits for the GPU: {consequence}"
    valid = (
        "opt = torch.optim.SGD([x], lr=0.1)\nopt.step()",
        Example("scaler = torch.amp.GradScaler('cuda')\nopt = torch.optim.SGD([x], lr=0.1)\nscaler.step(opt)", region=False),
        "scaler = torch.amp.GradScaler('cuda')\nopt = torch.optim.AdamW([x], fused=True, capturable=True)\n"
        "scaler.step(opt)\nscaler.update()",
        "self.scheduler.step()",
    )
    invalid = (
        "scaler = torch.amp.GradScaler('cuda')\nopt = torch.optim.SGD([x], lr=0.1)\n"
        "scaler.scale(x.sum()).backward()\nscaler.step(opt)\nscaler.update()",
        "self.scaler.step(self.opt)",
        Example(
            "from torch.cuda.amp import GradScaler\n\n\nclass C:\n    def __init__(self, opt):\n"
            "        self.opt = opt\n        self.amp = GradScaler()\n\n"
            "    def step(self, loss):  # graphsafe: region\n        self.amp.scale(loss).backward()\n"
            "        self.amp.step(self.opt)\n",
            module=True,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.scalers: set[str] = set()
        self.fused: set[str] = set()
        self.calls: list[_ScalerCall] = []

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        name = ctx.resolve(value.func) or ""
        if name in GRAD_SCALERS:
            into = self.scalers
        elif name.startswith("torch.optim.") and _keyword_is(value, "fused", True):
            into = self.fused
        else:
            return
        for target in node.targets:
            into.update(dotted(t) for t in _targets(target.target))

    calls = Callees({"step"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "step":
            return
        receiver = dotted(func.value)
        if receiver is None:
            return
        args = _positional(node)
        optimizer = dotted(args[0].value) if args else None
        self.calls.append(_ScalerCall(node, receiver, func.attr.value, optimizer, ctx.here()))

    def end_module(self, ctx) -> None:
        for call in self.calls:
            last = call.receiver.rpartition(".")[2]
            if call.receiver not in self.scalers and last != "scaler" and not last.endswith("_scaler"):
                continue
            if call.optimizer is None or call.optimizer in self.fused:
                continue
            ctx.report(self, call.node, at=call.place, receiver=call.receiver)


# ---------------------------------------------------------------------------- GS704 / GS705
@dataclass
class _Loop:
    node: cst.For
    iterations: int | None
    function: str
    order: int
    place: object


@dataclass
class _Placed:
    node: cst.CSTNode
    place: object
    function: str = ""
    order: int = 0


class _DdpFileRule(_ConfigRule):
    """Shared bookkeeping: does this file capture graphs, and does it build DDP?"""

    words = ("DistributedDataParallel",)

    def __init__(self) -> None:
        super().__init__()
        self.captures = False
        self.ddp: list[_Placed] = []
        self.order = 0

    def _note_call(self, node: cst.Call, ctx) -> None:
        self.order += 1
        if _is_capture_call(node, ctx):
            self.captures = True
        if _is_ddp(node, ctx):
            self.ddp.append(_Placed(node, ctx.here(), ctx.function_key or "<module>", self.order))


class DdpCaptureSetup(_DdpFileRule):
    """## What it does
    In a file that captures CUDA graphs, flags `DistributedDataParallel(...)` built outside a
    `with torch.cuda.stream(side_stream):` block, and a warm-up loop `for _ in range(N)` with a
    literal `N` below 11 right before a capture.

    ## Why is this bad?
    PyTorch's notes on whole-network capture with DDP: DDP must be constructed on a side
    stream, and its warm-up must run at least 11 eager iterations before capture, so that its
    bucket rebuilding and internal allocations are finished. Otherwise capture can fail or
    record a step that later iterations no longer match.

    ## Example
    ```python
    model = DistributedDataParallel(model)
    for _ in range(3):
        train_step()
    with torch.cuda.graph(g):
        train_step()
    ```

    ## Use instead
    ```python
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        model = DistributedDataParallel(model)
        for _ in range(11):
            train_step()
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        train_step()
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS704"
    name = "ddp-capture-setup"
    consequence = Consequence.SLOWER
    summary = "DDP built off a side stream, or warmed up fewer than 11 iterations, before capture"
    message = "{what}: {consequence}"
    valid = (
        "from torch.nn.parallel import DistributedDataParallel as DDP\ns = torch.cuda.Stream()\n"
        "with torch.cuda.stream(s):\n    model = DDP(self.net)\n    for _ in range(11):\n        model(x).sum().backward()\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    model(x).sum().backward()",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(self.net)\nmodel(x).sum().backward()",
        "for _ in range(3):\n    z = x * 2\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = x * 2",
    )
    invalid = (
        "model = torch.nn.parallel.DistributedDataParallel(self.net)\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    model(x).sum().backward()",
        Example(
            "from torch.nn.parallel import DistributedDataParallel as DDP\ns = torch.cuda.Stream()\n"
            "with torch.cuda.stream(s):\n    model = DDP(self.net)\n    for _ in range(3):\n        model(x).sum().backward()\n"
            "torch.cuda.current_stream().wait_stream(s)\n"
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    model(x).sum().backward()",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.in_stream: set[int] = set()
        self.loops: list[_Loop] = []
        self.capture_starts: list[_Placed] = []

    def visit_With(self, node: cst.With, ctx) -> None:
        if not self._relevant(ctx):
            return
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            name = ctx.resolve(call.func)
            if name in STREAM_CONTEXTS:
                self.in_stream.update(id(c) for c in _calls_in(node.body))
            elif name in GRAPH_CONTEXTS:
                self.capture_starts.append(_Placed(node, ctx.here(), ctx.function_key or "<module>", self.order))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        self._note_call(node, ctx)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "capture_begin":
            self.capture_starts.append(_Placed(node, ctx.here(), ctx.function_key or "<module>", self.order))

    def visit_For(self, node: cst.For, ctx) -> None:
        if not self._relevant(ctx):
            return
        self.order += 1
        self.loops.append(_Loop(node, _range_length(node.iter, ctx), ctx.function_key or "<module>", self.order, ctx.here()))

    def end_module(self, ctx) -> None:
        if not (self.captures and self.ddp):
            return
        for built in self.ddp:
            if id(built.node) not in self.in_stream:
                ctx.report(
                    self, built.node, always=True, at=built.place,
                    what="DistributedDataParallel is built outside a `with torch.cuda.stream(...)` block in a file that "
                    "captures CUDA graphs; build it on a side stream",
                )
        for start in self.capture_starts:
            loops = [lp for lp in self.loops if lp.function == start.function and lp.order <= start.order]
            for loop in reversed(loops):
                if _contains(loop.node, start.node):
                    continue  # a loop around the capture, not a warm-up before it
                if loop.iterations is not None and loop.iterations < DDP_WARMUP_ITERATIONS:
                    ctx.report(
                        self, loop.node.iter, always=True, at=loop.place,
                        what=f"this warm-up runs {loop.iterations} iterations before capturing a DDP model; "
                        f"DDP needs at least {DDP_WARMUP_ITERATIONS}",
                    )
                break


def _range_length(expr: cst.BaseExpression, ctx) -> int | None:
    """How many times `for _ in range(<literals>)` runs; None if not literal."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "range"):
        return None
    values = [_literal(a.value) for a in expr.args]
    if any(type(v) is not int for v in values) or not values or any(a.keyword for a in expr.args):
        return None
    if len(values) == 1:
        return max(values[0], 0)
    step = values[2] if len(values) > 2 else 1
    return len(range(values[0], values[1], step)) if step else None


class NcclAsyncErrorHandling(_DdpFileRule):
    """## What it does
    In a file that captures CUDA graphs and builds DDP, flags setting
    `TORCH_NCCL_ASYNC_ERROR_HANDLING` or `NCCL_ASYNC_ERROR_HANDLING` to anything but `"0"`
    (`os.environ[...] = ...`, `os.environ.setdefault(...)`, `os.putenv(...)`).

    ## Why is this bad?
    PyTorch's notes on whole-network capture with DDP ask to turn NCCL's async error handling
    off before the process group is created: its watchdog thread queries events of NCCL work,
    which is illegal while a graph is being captured. PyTorch 2.2 and later keep captured
    work away from the watchdog, so on recent versions this is a risk rather than a certain
    failure.

    ## Example
    ```python
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
    dist.init_process_group("nccl")
    ```

    ## Use instead
    ```python
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    ```

    ## Fix safety
    No automatic fix: it changes how NCCL failures are reported.
    """

    code = "GS705"
    name = "nccl-async-error-handling"
    consequence = Consequence.SLOWER
    summary = "NCCL async error handling left on in a file that captures DDP graphs"
    message = "`{variable}` is set to {value} in a file that captures DDP graphs; set it to \"0\" before init_process_group: {consequence}"
    valid = (
        "import os\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "os.environ['TORCH_NCCL_ASYNC_ERROR_HANDLING'] = '0'\nmodel = DDP(self.net)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    model(x)",
        "import os\nos.environ['TORCH_NCCL_ASYNC_ERROR_HANDLING'] = '1'\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = x * 2",
    )
    invalid = (
        "import os\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "os.environ['TORCH_NCCL_ASYNC_ERROR_HANDLING'] = '1'\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n"
        "    model = DDP(self.net)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    model(x)",
        "import os\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "os.environ.setdefault('NCCL_ASYNC_ERROR_HANDLING', '3')\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n"
        "    model = DDP(self.net)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    model(x)",
    )

    def __init__(self) -> None:
        super().__init__()
        self.settings: list[tuple[cst.CSTNode, str, str, object]] = []

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not self._relevant(ctx):
            return
        for key, value in environment_writes(node, ctx):
            self._note(node, key, value, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        self._note_call(node, ctx)
        for key, value in environment_writes(node, ctx):
            self._note(node, key, value, ctx)

    def _note(self, node: cst.CSTNode, key: cst.BaseExpression, value: cst.BaseExpression, ctx) -> None:
        variable = _literal(key)
        if variable not in NCCL_ASYNC_VARIABLES:
            return
        setting = _literal(value)
        if setting is ... or str(setting).strip() == "0":
            return  # off, or decided at run time
        self.settings.append((node, variable, ctx.code_for(value), ctx.here()))

    def end_module(self, ctx) -> None:
        if not (self.captures and self.ddp):
            return
        for node, variable, value, place in self.settings:
            ctx.report(self, node, always=True, at=place, variable=variable, value=value)


# ---------------------------------------------------------------------------- GS706
@dataclass
class _Graphed:
    function: str
    class_key: str | None
    order: int


@dataclass
class _Hook:
    node: cst.Call
    module: str
    method: str
    function: str
    in_init: bool
    class_key: str | None
    order: int
    place: object


class HooksOnGraphedModule(_ConfigRule):
    """## What it does
    Flags a forward or backward hook registered on a module before that module is passed to
    `make_graphed_callables`.

    ## Why is this bad?
    `make_graphed_callables` refuses modules that already have hooks: "Modules must not have
    hooks registered at the time they are passed": capture fails. Hooks registered after
    graphing are allowed; they run eagerly around the graphed forward.

    ## Example
    ```python
    model.register_forward_hook(log_activations)
    model = torch.cuda.make_graphed_callables(model, (static_x,))
    ```

    ## Use instead
    ```python
    model = torch.cuda.make_graphed_callables(model, (static_x,))
    model.register_forward_hook(log_activations)
    ```

    ## Fix safety
    No automatic fix: moving a hook changes what it observes.

    ## Precise semantics
    The hooks: `register_forward_hook`, `register_forward_pre_hook`,
    `register_full_backward_hook`, `register_full_backward_pre_hook` or
    `register_backward_hook`. The module is matched by name: the registration comes earlier in
    the same function, or in the class's `__init__` for `self.<module>`.
    """

    code = "GS706"
    name = "hooks-on-graphed-module"
    consequence = Consequence.CAPTURE_FAILS
    summary = "a hook registered on a module before it is passed to `make_graphed_callables`"
    message = "`{module}.{method}()` before `{module}` is passed to make_graphed_callables, which refuses hooked modules: {consequence}"
    words = ("make_graphed_callables",)
    valid = (
        "net = torch.nn.Linear(4, 4)\nnet = torch.cuda.make_graphed_callables(net, (x,))\n"
        "net.register_forward_hook(print)",
        "net = torch.nn.Linear(4, 4)\nnet.register_forward_hook(print)\nz = net(x)",
        "net = torch.nn.Linear(4, 4)\nhead = torch.nn.Linear(4, 4)\nhead.register_forward_hook(print)\n"
        "net = torch.cuda.make_graphed_callables(net, (x,))",
    )
    invalid = (
        "net = torch.nn.Linear(4, 4)\nnet.register_forward_hook(print)\n"
        "net = torch.cuda.make_graphed_callables(net, (x,))",
        "a = torch.nn.Linear(4, 4)\nb = torch.nn.Linear(4, 4)\nb.register_full_backward_hook(print)\n"
        "a, b = torch.cuda.make_graphed_callables((a, b), ((x,), (y,)))",
        Example(
            "class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.body = torch.nn.Linear(4, 4)\n        self.body.register_forward_pre_hook(print)\n\n"
            "    def graph(self, x):\n        self.body = torch.cuda.make_graphed_callables(self.body, (x,))\n",
            module=True,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.order = 0
        self.graphed: dict[str, list[_Graphed]] = {}
        self.hooks: list[_Hook] = []

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        self.order += 1
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in HOOK_METHODS:
            module = dotted(func.value)
            if module is not None:
                self.hooks.append(_Hook(
                    node, module, func.attr.value, ctx.function_key or "<module>", ctx.function_name == "__init__",
                    ctx.class_key, self.order, ctx.here(),
                ))
            return
        if ctx.resolve(func) in GRAPHED_CALLABLES:
            args = _positional(node)
            if not args:
                return
            first = args[0].value
            elements = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
            for element in elements:
                module = dotted(element)
                if module is not None:
                    self.graphed.setdefault(module, []).append(
                        _Graphed(ctx.function_key or "<module>", ctx.class_key, self.order)
                    )

    def end_module(self, ctx) -> None:
        for hook in self.hooks:
            for graphed in self.graphed.get(hook.module, ()):
                earlier = graphed.function == hook.function and hook.order < graphed.order
                constructor = hook.in_init and hook.module.startswith("self.") and graphed.class_key == hook.class_key
                if earlier or constructor:
                    ctx.report(self, hook.node, always=True, at=hook.place, module=hook.module, method=hook.method)
                    break


# ---------------------------------------------------------------------------- GS707
@dataclass
class _CallSite:
    node: cst.Call
    callee: str
    function: str
    function_name: str | None
    order: int
    in_context: bool
    in_capture: bool
    place: object


class TeGraphOutsideFp8Autocast(_ConfigRule):
    """## What it does
    Flags calling a Transformer Engine graphed callable captured with FP8 on outside a
    `with te.fp8_autocast(...)` block.

    ## Why is this bad?
    The graph was captured with FP8 on. TE updates the FP8 scaling state (amax history,
    scales) when the FP8 autocast block exits; replayed outside it, the graph runs with scaling
    factors that are never updated, and the results drift with no error.

    ## Example
    ```python
    layer = te.make_graphed_callables(layer, (x,), fp8_enabled=True, fp8_recipe=recipe)
    out = layer(x)
    ```

    ## Use instead
    ```python
    with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
        out = layer(x)
    ```

    ## Fix safety
    No automatic fix: the recipe and process group to use are the user's.

    ## Precise semantics
    The callable is one returned by Transformer Engine's
    `make_graphed_callables(..., fp8_enabled=True)` (or `enabled=True`); the block is
    `with te.fp8_autocast(...)` or `with te.autocast(...)`, in the same file. A call inside a
    function that the file itself calls within such a block counts as inside.
    """

    code = "GS707"
    name = "te-graph-outside-fp8-autocast"
    consequence = Consequence.SILENTLY_WRONG
    summary = "a TE FP8 graphed callable replayed outside `fp8_autocast`"
    message = "`{callee}` is an FP8 graph from Transformer Engine, called outside `fp8_autocast`: its FP8 scaling state is not updated: {consequence}"
    words = ("make_graphed_callables",)
    valid = (
        "import transformer_engine.pytorch as te\nlayer = te.make_graphed_callables(self.net, (x,), fp8_enabled=True)\n"
        "with te.fp8_autocast(enabled=True):\n    out = layer(x)",
        "import transformer_engine.pytorch as te\nlayer = te.make_graphed_callables(self.net, (x,))\nout = layer(x)",
        Example(
            "import transformer_engine.pytorch as te\n\n\ndef build(net, x):\n"
            "    return te.make_graphed_callables(net, (x,), fp8_enabled=True)\n\n\n"
            "layer = te.make_graphed_callables(torch.nn.Linear(4, 4), (torch.ones(4),), fp8_enabled=True)\n\n\n"
            "def run(x):\n    return layer(x)\n\n\nwith te.fp8_autocast():\n    run(torch.ones(4))\n",
            module=True,
        ),
    )
    invalid = (
        "import transformer_engine.pytorch as te\nlayer = te.make_graphed_callables(self.net, (x,), fp8_enabled=True)\n"
        "out = layer(x)",
        "import transformer_engine.pytorch as te\nlayer = te.make_graphed_callables(self.net, (x,), enabled=True)\n"
        "with te.fp8_autocast(enabled=False):\n    out = layer(x)",
    )

    def __init__(self) -> None:
        super().__init__()
        self.order = 0
        self.graphed: dict[str, list[tuple[str, int]]] = {}  # name → (function, order) of its binding
        self.in_context: set[int] = set()
        self.called_in_context: set[str] = set()  # names of functions called inside fp8_autocast
        self.calls: list[_CallSite] = []

    def visit_With(self, node: cst.With, ctx) -> None:
        if not self._relevant(ctx):
            return
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and ctx.resolve(call.func) in FP8_AUTOCAST and not _keyword_is(call, "enabled", False):
                for inner in _calls_in(node.body):
                    self.in_context.add(id(inner))
                    callee = dotted(inner.func)
                    if callee is not None:
                        self.called_in_context.add(callee.rpartition(".")[2])

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not self._relevant(ctx):
            return
        value = node.value
        if not (isinstance(value, cst.Call) and ctx.resolve(value.func) in TE_GRAPHED_CALLABLES):
            return
        if not (_keyword_is(value, "fp8_enabled", True) or _keyword_is(value, "enabled", True)):
            return
        for target in node.targets:
            for bound in _targets(target.target):
                self.graphed.setdefault(dotted(bound), []).append((ctx.function_key or "<module>", self.order + 1))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        self.order += 1
        callee = dotted(node.func)
        if callee is not None:
            self.calls.append(_CallSite(
                node, callee, ctx.function_key or "<module>", ctx.function_name, self.order,
                id(node) in self.in_context, ctx.in_capture_block(), ctx.here(),
            ))

    def end_module(self, ctx) -> None:
        for call in self.calls:
            bindings = self.graphed.get(call.callee)
            if not bindings or call.in_context:
                continue
            if call.function_name is not None and call.function_name in self.called_in_context:
                continue
            here = [order for function, order in bindings if function == call.function]
            if here and all(order > call.order for order in here):
                continue  # called before it was bound here: the eager module
            ctx.report(self, call.node, always=True, at=call.place, callee=call.callee)


# ---------------------------------------------------------------------------- GS708
class CaptureErrorModeGlobal(_ConfigRule):
    """## What it does
    In a file that builds a `DataLoader(..., pin_memory=True)`, flags `torch.cuda.graph(g)` and
    `g.capture_begin()` without `capture_error_mode="thread_local"` (or `"relaxed"`).

    ## Why is this bad?
    The default mode, `"global"`, makes a capture fail when *any* thread makes a
    capture-unsafe CUDA call. The DataLoader's pin-memory thread allocates pinned host memory
    (`cudaHostAlloc`) whenever it stages a batch, so a capture that overlaps it fails at
    random with cudaErrorStreamCaptureUnsupported, and the error can also kill the
    pin-memory thread.

    ## Example
    ```python
    loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
    with torch.cuda.graph(g):
        static_out = model(static_x)
    ```

    ## Use instead
    ```python
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        static_out = model(static_x)
    ```

    ## Fix safety
    `"thread_local"` only stops other threads' CUDA calls from invalidating the capture; the
    captured work is the same: safe.
    """

    code = "GS708"
    name = "capture-error-mode-global"
    consequence = Consequence.SLOWER
    fixable = True
    summary = "capture in the global error mode while a pinned-memory DataLoader thread runs"
    message = "`{what}` captures in the global error mode while a pin-memory DataLoader thread makes CUDA calls: {consequence}"
    words = ("pin_memory",)
    valid = (
        "loader = torch.utils.data.DataLoader([x], pin_memory=True)\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g, capture_error_mode='thread_local'):\n    z = x * 2",
        "loader = torch.utils.data.DataLoader([x])\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = x * 2",
        "loader = torch.utils.data.DataLoader([x], pin_memory=True)\ng = torch.cuda.CUDAGraph()\n"
        "g.capture_begin(capture_error_mode='relaxed')\nz = x * 2\ng.capture_end()",
    )
    invalid = (
        Example(
            "loader = torch.utils.data.DataLoader([x], pin_memory=True)\ng = torch.cuda.CUDAGraph()\n"
            "with torch.cuda.graph(g):\n    z = x * 2",
            fixed="loader = torch.utils.data.DataLoader([x], pin_memory=True)\ng = torch.cuda.CUDAGraph()\n"
            "with torch.cuda.graph(g, capture_error_mode=\"thread_local\"):\n    z = x * 2",
        ),
        Example(
            "from torch.utils.data import DataLoader\nloader = DataLoader([x], pin_memory=True)\n"
            "g = torch.cuda.CUDAGraph()\ng.capture_begin(capture_error_mode='global')\nz = x * 2\ng.capture_end()",
            fixed="from torch.utils.data import DataLoader\nloader = DataLoader([x], pin_memory=True)\n"
            "g = torch.cuda.CUDAGraph()\ng.capture_begin(capture_error_mode=\"thread_local\")\nz = x * 2\ng.capture_end()",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.pinned_loader = False
        self.captures: list[tuple[cst.Call, str, object]] = []

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        func = node.func
        name = ctx.resolve(func) or ""
        if name.rpartition(".")[2] == "DataLoader" and _keyword_is(node, "pin_memory", True):
            self.pinned_loader = True
        elif name in GRAPH_CONTEXTS:
            if _global_mode(node, 3):
                self.captures.append((node, "torch.cuda.graph(...)", ctx.here()))
        elif isinstance(func, cst.Attribute) and func.attr.value == "capture_begin":
            if _global_mode(node, 1):
                self.captures.append((node, "capture_begin()", ctx.here()))

    def end_module(self, ctx) -> None:
        if not self.pinned_loader:
            return
        for node, what, place in self.captures:
            edit = keyword_fix(ctx, node, "capture_error_mode", '"thread_local"')
            fix = ('Capture with `capture_error_mode="thread_local"`', [edit], Applicability.SAFE)
            ctx.report(self, node, fix=fix, always=True, at=place, what=what)


def _global_mode(call: cst.Call, position: int) -> bool:
    """The capture runs in the global mode: `capture_error_mode` absent or "global"."""
    arg = _keyword(call, "capture_error_mode")
    if arg is None:
        positional = _positional(call)
        if len(positional) > position:
            arg = positional[position]
    return arg is None or _literal(arg.value) == "global"


# ---------------------------------------------------------------------------- GS709
class CompiledCapturedWithoutWarmup(_ConfigRule):
    """## What it does
    Flags a call, inside a `torch.cuda.graph` block, of a function compiled with
    `torch.compile` (a name bound to `torch.compile(...)` or a `@torch.compile` function) when
    the same function makes no call of it before the block.

    ## Why is this bad?
    The first call of a compiled function traces and compiles it: Dynamo, Inductor code
    generation, kernel loading, host-to-device copies of constants. Doing that during capture
    fails (measured: "Cannot copy between CPU and CUDA tensors during CUDA graph capture").
    A warm-up call before the capture compiles it outside.

    ## Example
    ```python
    step = torch.compile(train_step)
    with torch.cuda.graph(g):
        loss = step(static_x)
    ```

    ## Use instead
    ```python
    step = torch.compile(train_step)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            step(static_x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        loss = step(static_x)
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS709"
    name = "compiled-captured-without-warmup"
    consequence = Consequence.CAPTURE_FAILS
    summary = "a `torch.compile`d function first called during capture"
    message = "`{callee}` is compiled by torch.compile and first called during capture, so it compiles there: {consequence}"
    words = ("compile",)
    valid = (
        "f = torch.compile(torch.sin)\nf(x)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = f(x)",
        "f = torch.sin\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = f(x)",
        "f = torch.compile(torch.sin)\nfor _ in range(3):\n    f(x)\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    z = f(x)",
    )
    invalid = (
        "f = torch.compile(torch.sin)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = f(x)",
        "@torch.compile(dynamic=False)\ndef body(t):\n    return t.sin()\n\ng = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n    z = body(x)",
    )

    def __init__(self) -> None:
        super().__init__()
        self.order = 0
        self.compiled: set[str] = set()
        self.calls: list[_CallSite] = []

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx) -> None:
        if not self._relevant(ctx):
            return
        for decorator in node.decorators:
            target = decorator.decorator
            target = target.func if isinstance(target, cst.Call) else target
            if ctx.resolve(target) == "torch.compile":
                self.compiled.add(node.name.value)
                if ctx.class_key:
                    self.compiled.add(f"self.{node.name.value}")

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not self._relevant(ctx):
            return
        value = node.value
        if isinstance(value, cst.Call) and ctx.resolve(value.func) == "torch.compile":
            for target in node.targets:
                self.compiled.update(dotted(t) for t in _targets(target.target))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._relevant(ctx):
            return
        self.order += 1
        callee = dotted(node.func)
        if callee is not None:
            self.calls.append(_CallSite(
                node, callee, ctx.function_key or "<module>", ctx.function_name, self.order, False,
                ctx.in_capture_block(), ctx.here(),
            ))

    def end_module(self, ctx) -> None:
        warmed: dict[tuple[str, str], int] = {}  # (function, callee) → order of its first call outside capture
        for call in self.calls:
            if not call.in_capture and call.callee in self.compiled:
                warmed.setdefault((call.function, call.callee), call.order)
        for call in self.calls:
            if not call.in_capture or call.callee not in self.compiled:
                continue
            first = warmed.get((call.function, call.callee))
            if first is not None and first < call.order:
                continue
            ctx.report(self, call.node, at=call.place, callee=call.callee)


RULES = (
    AutocastCacheEnabled, GradScalerInRegion, DdpCaptureSetup, NcclAsyncErrorHandling, HooksOnGraphedModule,
    TeGraphOutsideFp8Autocast, CaptureErrorModeGlobal, CompiledCapturedWithoutWarmup,
)
