"""Static memory (GS402–GS407): host data, growing buffers, allocator work and kept outputs.

A graph replays fixed kernels on fixed addresses. These rules find code that needs a fresh
host-to-device copy, a new shape or a new allocation on every step, and code that keeps the
graph's output tensor past the next replay.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer import cpu_tested, host_batches, host_copy_helpers, host_move_helpers
from graphsafe.analyzer.host_resident import dtype_only
from graphsafe.analyzer import tensorness as T
from graphsafe.analyzer.names import bound_names, dotted
from graphsafe.model import Applicability, Consequence, Example, Principle
from graphsafe.rewriters.hoist import hoist_fix
from graphsafe.rewriters.list_index import list_index_fix
from graphsafe.rewriters.scalar_tensor import full_fix
from graphsafe.rules.base import Callees, Rule, last_parts
from graphsafe.rules.gpu_only import persistent_root
from graphsafe.rules.syntax import is_true as _is_true
from graphsafe.rules.syntax import keyword as _keyword
from graphsafe.rules.syntax import positional as _positional
from graphsafe.rules.syntax import string_value as _string

_HOST_DATA_FACTORIES = frozenset(
    "torch.tensor torch.as_tensor torch.asarray torch.from_numpy torch.frombuffer".split()
)
# `torch.FloatTensor([1.0, 2.0])` copies a Python list like torch.tensor does.
_LEGACY_CONSTRUCTORS = frozenset(
    f"{ns}.{cls}"
    for ns in ("torch", "torch.cuda")
    for cls in "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor "
    "ByteTensor CharTensor BoolTensor".split()
)
# Factories that make a CPU tensor unless given a device.
_CPU_FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye".split()
)
_ALLOCATOR_WORK = frozenset("empty_cache reset_peak_memory_stats reset_max_memory_allocated "
                            "reset_max_memory_cached reset_accumulated_memory_stats".split())
_ALLOCATOR_READS = frozenset(
    "memory_allocated max_memory_allocated memory_reserved max_memory_reserved memory_cached "
    "max_memory_cached memory_stats memory_stats_as_nested_dict memory_summary memory_snapshot "
    "mem_get_info list_gpu_processes".split()
)
_GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
_NOT_DATA = ("object", "modules", "stream-or-event", "config")


def _is_cuda_device(expr: cst.BaseExpression, ctx) -> bool:
    """`"cuda"`, `"cuda:1"`, `torch.device("cuda")`."""
    text = _string(expr)
    if text is not None:
        return text.split(":")[0] == "cuda"
    if isinstance(expr, cst.Call) and ctx.resolve(expr.func) == "torch.device":
        first = _positional(expr)
        return bool(first) and _is_cuda_device(first[0].value, ctx)
    return False


def _is_cpu_device(expr: cst.BaseExpression, ctx) -> bool:
    text = _string(expr)
    if text is not None:
        return text.split(":")[0] == "cpu"
    if isinstance(expr, cst.Call) and ctx.resolve(expr.func) == "torch.device":
        first = _positional(expr)
        return bool(first) and _is_cpu_device(first[0].value, ctx)
    return False


class _StaticMemoryRule(Rule):
    principle = Principle.STATIC


class HostDataTensor(_StaticMemoryRule):
    """## What it does
    Flags tensors made from host data inside a captured region: `torch.tensor([...])`,
    `torch.from_numpy(a)`, a host value moved to the GPU (`batch.cuda()`, `t.to("cuda")`), and
    indexing a tensor with a Python list (`v[:, [-1]]`).

    ## Why is this bad?
    Copying pageable host memory to the GPU is refused while a stream is captured: capture
    fails with "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the
    CPU tensor is pinned". A tensor built on the CPU without a device is not copied, but CPU
    work is not captured at all: its values are the ones seen at capture, on every replay
    (measured: `x * torch.tensor(v)` keeps the capture-time `v`); not reported for an attribute
    of self that nothing changes between steps (`torch.tensor(self.temperature)`: the values
    seen at capture are the run's). Literals are still reported: the fix hoists them out of
    the step, where they are built once.

    ## Example
    ```python
    scale = torch.tensor([0.5, 2.0], device="cuda")
    ids = batch["input_ids"].to("cuda")
    last = v[:, [-1]]
    ```

    ## Use instead
    Create constants once, outside the region, copy new host data into a static device
    buffer before `graph.replay()`, and index with slices:
    ```python
    scale = torch.tensor([0.5, 2.0], device="cuda")  # at set-up
    static_ids.copy_(batch["input_ids"], non_blocking=True)  # before replay
    last = v[:, -1:]
    ```

    ## Fix safety
    A `torch.tensor(<literals>)` in a method of a module-level class is hoisted into
    `__init__` (right after `super().__init__()`) as a plain attribute built by the same call,
    and the region reads the attribute. Offered only with a literal `device=` (or none) and
    when the shared tensor is only read by ops that build new tensors (no in-place op, no
    return or store of it). Safe when an explicit dtype or int/bool data fix the dtype and the
    device is "cpu" or "cuda:N"; unsafe otherwise (the default dtype, default device or
    current CUDA device are then read in `__init__` instead of at the call). Host data that is
    not a literal is left alone: copy it into a static buffer before replay.
    A 0-dim `torch.tensor(<Python number>, dtype=..., device=...)` that cannot be hoisted (its
    device comes from a tensor, say) becomes `torch.full((), <number>, dtype=..., device=...)`:
    a fill kernel, no host copy, same value and dtype for numbers in the dtype's range. Unsafe:
    `torch.full` raises for a number outside an explicit dtype's range where `torch.tensor`
    rounds it (to inf), and without a dtype `torch.tensor` takes a NumPy scalar's dtype where
    `torch.full` takes the default one. The number is still fixed at capture (GS301 reports it
    when it varies).
    A list of integer literals as an index becomes the slice selecting the same elements
    (`v[:, [-1]]` → `v[:, -1:]`, `[2]` → `2:3`, `[0, 1, 2]` → `0:3`): same values and shape,
    computed on the device. Unsafe: the slice is a view where the list gave a copy, so an
    in-place write to either afterwards is seen through the other (and on a tensor with no
    elements an out-of-range index, which the list accepts, gives an empty dimension). Lists
    no slice selects
    (`[0, 2]`, `[2, 0]`) get no fix.

    ## Precise semantics
    Flagged inside the region:
    - `torch.tensor(...)`, `torch.as_tensor(...)`, `torch.from_numpy(...)`,
      `torch.FloatTensor([...])`, `x.new_tensor([...])`;
    - `.cuda()` / `.to("cuda")` / `.to(device="cuda")` (or `.to(self.device)`, `.to(DEVICE)`
      where the file binds that name to a CUDA device, `"cuda" if torch.cuda.is_available() else
      "cpu"` included) of a value not known to be a device tensor already (a Python list, a
      batch from a data loader, a CPU tensor, a value of unknown kind);
    - `.to(x.device)` or `.to(self.device)` of a CPU tensor (`torch.ones(n)`, or `self.pages[k]` /
      `self.class_weights` where the class stores only such tensors there, `torch.tensor([...])`
      without a device included: a table of host pages, host-made constants);
    - `.to(x.device)`, `.to(self.device)` or `.cuda()` of rows picked with a host index
      (`self.table[ids.cpu()].to(ids.device)`, or a local bound to `ids.cpu()`: the table is on
      the host, and were it on the device the host index itself would be copied over);
    - indexing a tensor with a Python list (`v[:, [-1]]`), and a value of unknown kind indexed
      on several axes with a local list of ints (`out["logits"][rows, -1, :]`: only an array
      takes that index);
    - a call of a project helper given a Python number (`scalar_like(x, 0.0)`, `0.0 if f else
      1.0`) where the helper builds a device tensor from the parameter that number goes to
      (`return torch.tensor(value, device=p.device)`; analyzer/host_copy_helpers.py, one call
      deep): each call is a copy of its own. The helper's own line is reported too, naming the
      parameter;
    - a move to the GPU (`.to(device)`, `.cuda()`) of a tensor under a test that it is on the CPU
      (`if t.device.type == "cpu":`, `t.is_cpu`, `str(t.device) == "cpu"`, or a local flag every
      binding of which is such a test; analyzer/cpu_tested.py), and each call of such a helper,
      or of one handing the parameter on, given a value that may be a CPU tensor (not a literal,
      a known non-tensor or a tensor just moved; analyzer/host_move_helpers.py).

    A CPU tensor the function builds is followed through locals (analyzer/host_resident.py):
    `w = torch.arange(n)` (any torch factory without `device=`, window functions included, or a
    parameter defaulting to one: `window_fn=torch.hann_window`), ops that keep it on the host
    (`w[..., None]`, `w.unsqueeze(1)`, `rand.topk(k).indices`, `w.long()`, `w.to(torch.float32)`,
    `w + 1`), and a batch from a loop over a data loader (`for i, batch in enumerate(train_loader)`,
    an iterable named `...loader` or bound to `DataLoader(...)`, also through progress bars and
    locals bound to them, `pbar = TQDM(enumerate(loader))`, and what is unpacked from it).
    Flagged: such a value moved with `.to(...)`/`.cuda()`, converted with `.type_as(t)` (the
    copy to `t`'s device), or used to index a tensor of the region (`x[batch_indices]`); also an
    index that is a local list of Python ints (`[0, 2]`, `list(range(n))`, a comprehension over
    `range`, or `[]` grown only with such ints). The message says why the value is on the host.
    Such a batch handed to a helper of the project that moves its entries (`batch_to_device(batch,
    device)` with `batch[k] = v.to(device)` for `k, v in batch.items()`) is flagged at the call and
    at the helper's move, where a call from the code the regions reach (for a region root: any
    call) hands that parameter a loader's batch and none hands it a tensor of the step
    (analyzer/host_batches.py).
    Not flagged: an empty literal (`torch.tensor([], device=d)` copies no byte and captures), a
    factory given a device or `pin_memory=True`, a tensor of unknown origin (a
    parameter, a helper's result), a list that may hold tensors, and an attribute registered as
    a buffer.
    """

    fixable = True

    code = "GS402"
    name = "host-data-tensor"
    consequence = Consequence.CAPTURE_FAILS
    summary = "a tensor made from host data in the region (`torch.tensor`, `.to(\"cuda\")` of a list or CPU tensor)"
    message = "`{what}` {why}: {consequence}"
    valid = (
        "z = torch.zeros_like(x)",
        "z = torch.as_tensor(x, device=x.device)",
        "z = torch.tensor([], dtype=x.dtype, device=x.device)",
        # a CPU tensor of values that are the same on every step: nothing for replay to miss
        Example(
            "class Loss:\n    def __init__(self, temp: float):\n        self.temp = temp\n\n"
            "    def __call__(self, x: torch.Tensor):  # graphsafe: region\n"
            "        return x / torch.tensor(self.temp)\n",
            module=True,
        ),
        # a number parameter every call gives the same value: `atol` is a setting
        Example(
            "class Tol(torch.nn.Module):\n    def __init__(self, atol: float):\n        super().__init__()\n"
            "        self.register_buffer('atol', torch.tensor(atol))\n\n"
            "def step(x: torch.Tensor):  # graphsafe: region\n    return x * Tol(1e-7).atol.to(x.device)\n",
            module=True,
        ),
        "z = x.new_tensor(x)",
        Example(
            "class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.device = torch.device('cuda')\n\n"
            "    def forward(self, x: torch.Tensor):  # graphsafe: region\n"
            "        return x.to(self.device)",  # a tensor of the region: on the device already
            module=True,
        ),
        'lo = x.new_tensor(0.5, device="cpu").item()',
        'z = x.to("cuda")',
        "z = x.to(torch.float16)",
        "z = y.to(x.device)",  # a tensor of the region: already on the device
        "z = y[x.argmax(-1)].to(x.device)",  # a device index: a device table's rows
        "z = torch.rand(3, device=x.device).to(device)",  # made on the device already
        Example(
            "class C(torch.nn.Module):\n    def __init__(self, freqs):\n        super().__init__()\n"
            "        self.class_weights = torch.tensor([1.0 / f for f in freqs], device='cuda')\n\n"
            "    def forward(self, x: torch.Tensor):  # graphsafe: region\n"
            "        return x * self.class_weights.to(x.device)",
            module=True,
        ),
        "z = y[:, -1:]",
        "w = torch.arange(8)\nz = w.to(torch.float32)",  # a dtype conversion stays on the host
        "w = torch.arange(8, device=x.device)\nz = x[w]",  # made on the device
        "picked = []\npicked.append(y)\nz = x[picked]",  # may hold tensors
        "rows = [x, y]\nz = rows[0]",
        'm = torch.nn.Linear(2, 2).to("cuda")',
        Example('t = torch.tensor([1.0, 2.0], device="cuda")', region=False),
        Example('batch = {"ids": [1, 2]}\nids = batch["ids"].to("cuda")', region=False),
    )
    invalid = (
        't = torch.tensor([1.0, 2.0], device="cuda")',
        Example("def step(x: torch.Tensor, t: float):  # graphsafe: region\n    return x * torch.tensor(t)\n",
                module=True),
        'a = [1, 2]\nt = torch.as_tensor(a, device="cuda")',
        "import numpy as np\nt = torch.from_numpy(np.ones(3)).cuda()",
        'batch = {"ids": [1, 2]}\nids = batch["ids"].to("cuda", non_blocking=True)',
        "z = torch.zeros(3).cuda()",
        "z = x[x < y[:, [-1]]]",
        Example(
            "class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
            "    def forward(self, x):  # graphsafe: region\n"
            "        scale = torch.tensor([0.5, 2.0], device=\"cuda:0\")\n        return x * scale",
            module=True,
            fixed="class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self._scale_const = torch.tensor([0.5, 2.0], device=\"cuda:0\")\n\n"
            "    def forward(self, x):  # graphsafe: region\n"
            "        scale = self._scale_const\n        return x * scale",
        ),
        Example("scale = torch.tensor(x.shape[-1] ** -0.5, dtype=x.dtype, device=x.device)",
                fixed="scale = torch.full((), x.shape[-1] ** -0.5, dtype=x.dtype, device=x.device)"),
        "weights = torch.tensor(cfg.loss_weights, device=x.device)",  # may be a list: no fix
        'w = torch.FloatTensor([1.0, 2.0]).to(device="cuda")',
        "w = x.new_tensor([0.5, 2.0])",
        Example(
            "class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n"
            "    def forward(self, batch: dict):  # graphsafe: region\n"
            "        return {k: v.to(self.device) for k, v in batch.items()}",
            module=True,
        ),
        "g = torch.ones(x.size()).to(x.device)",  # a CPU tensor sent where the region's tensors live
        "rows = y[x.argmax(-1).cpu()].to(x.device)",  # rows picked with a host index
        "bg = torch.rand(3).to(device) if randomize else x",  # whatever `device` is bound to
        "w = torch.arange(8)\nw = w[..., None]\nz = x * w.to(x.device)",  # a local built on the CPU
        "sx = torch.arange(8).type_as(x)",  # copied to x's device
        "idx = torch.arange(4)\nz = x[idx]",  # a CPU index tensor copied over
        "idx = list(range(4))\nz = x[idx]",  # a list of ints becomes a CPU index tensor
        Example(
            "class C(torch.nn.Module):\n    def __init__(self, freqs):\n        super().__init__()\n"
            "        self.class_weights = torch.tensor([1.0 / f for f in freqs])\n\n"
            "    def forward(self, x: torch.Tensor):  # graphsafe: region\n"
            "        return x * self.class_weights.to(x.device)",
            module=True,
        ),
    )

    def __init__(self) -> None:
        self.moved: set[int] = set()  # factory calls reported with the `.to("cuda")` around them
        # what the class stores in `self.x` / `self.x[k]`: (class, attribute, "host" for a
        # pageable CPU tensor, "other" for anything else); a page table of CPU tensors
        self.stored: set[tuple[str, str, str]] = set()
        self.host_reasons: dict[tuple[str, str], str] = {}  # (class, attribute) → why it is a CPU tensor
        # `self.pages[k].to(p.device)`: decided in end_module, once every store is seen
        self.attribute_moves: list[tuple[cst.Call, str, str, object, str]] = []
        # names and `self` attributes bound to a CUDA device (the region runs on it)
        self.cuda_devices: set[tuple[str, str]] = set()

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if _cuda_when_captured(node.value, ctx):
            for target in node.targets:  # `self.device = torch.device("cuda")`, `device = "cuda" if ... else "cpu"`
                key = _device_key(target.target, ctx)
                if key is not None:
                    self.cuda_devices.add(key)
        for target in node.targets:
            attr = _self_attribute(target.target, ctx)
            empty = isinstance(node.value, (cst.Dict, cst.List, cst.DictComp, cst.ListComp)) or (
                isinstance(node.value, cst.Name) and node.value.value == "None")
            if attr is not None and not empty:  # `self.pages = {}`: the table, not what it holds
                pinned = _keyword(node.value, "pin_memory") is not None if isinstance(node.value, cst.Call) else False
                held = ctx.host_origin(node.value)
                host = not pinned and (held is not None or _host_data_call(node.value, ctx)
                                       or T.is_host_copy(node.value, ctx.resolve))
                if held is not None and not pinned:  # said in the report: why the attribute is on the host
                    shown = f"self.{attr}[...]" if type(target.target) is cst.Subscript else f"self.{attr}"
                    self.host_reasons.setdefault((ctx.class_key, attr), f"`{shown}` is {held}")
                if not pinned:  # a pinned page copies fine (GS406 is about pinning in the region)
                    self.stored.add((ctx.class_key, attr, "host" if host else "other"))

    def _names_cuda_device(self, expr: cst.BaseExpression, ctx) -> bool:
        key = _device_key(expr, ctx)
        return key is not None and (key in self.cuda_devices or ("<module>", key[1]) in self.cuda_devices)

    def end_module(self, ctx) -> None:
        for node, class_key, attr, place, shown in self.attribute_moves:
            if (class_key, attr, "host") in self.stored and (class_key, attr, "other") not in self.stored:
                held = self.host_reasons.get((class_key, attr))
                why = "copies host memory to the GPU, which is refused during capture unless it is pinned"
                if held is not None:  # `self.window = torch.hann_window(n)` in __init__, not a buffer
                    why = f"copies a CPU tensor to the GPU ({held}), which is refused during capture unless it is pinned"
                ctx.report(self, node, at=place, what=shown, why=why)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if id(node) in self.moved:
            return
        name = ctx.resolve(node.func)
        if name in _HOST_DATA_FACTORIES:
            self._factory(node, name, ctx)
        elif name in _LEGACY_CONSTRUCTORS:
            first = _positional(node)
            if first and isinstance(first[0].value, (cst.List, cst.Tuple, cst.ListComp)):
                self._factory(node, name, ctx)  # `torch.FloatTensor(3, 4)` (sizes) is not host data
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("cuda", "to"):
            self._to_device(node, ctx)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "type_as":
            # `torch.arange(w).type_as(feats[0])`: a CPU tensor converted to a device tensor's type
            # is copied to that tensor's device
            held = ctx.host_origin(node.func.value)
            first = _positional(node)
            # (its argument is a tensor by the API; one of the region's, so on the device)
            if (held is not None and len(first) == 1 and not ctx.kind(first[0].value).not_tensor
                    and ctx.host_origin(first[0].value) is None):
                ctx.report(self, node, what=f".type_as({ctx.code_for(first[0].value)})",
                           why=f"copies a CPU tensor to the GPU ({held}), which is refused during capture unless it is pinned")
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "new_tensor":
            # `logits.new_tensor([0.5, 2.0])`: host data copied to the receiver's device
            first = _positional(node) or [a for a in node.args if a.keyword is not None and a.keyword.value == "data"]
            device = _keyword(node, "device")
            if device is not None and _is_cpu_device(device.value, ctx):
                return  # a CPU tensor (`.new_tensor(a, device="cpu").item()`): no copy to the GPU
            if first and not ctx.kind(node.func.value).not_tensor and not ctx.kind(first[0].value).is_tensor:
                ctx.report(self, node, what=f"{ctx.code_for(node.func.value)}.new_tensor(...)",
                           why="copies host data to the GPU, which is refused during capture")
        else:
            helper = host_copy_helpers.condition(node, name, ctx)
            if helper is not None:  # `scalar_like(x, 0.0)`: decided where the project knows the helper
                ctx.report(self, node, condition=helper, what=f"{ctx.code_for(node.func)}(...)",
                           why="calls a helper that builds a tensor on the GPU from this host value, "
                           "a copy refused during capture")
                return
            handed = _host_batch_call(node, name, ctx)
            if handed is not None:  # `batch_to_device(batch, d)` with a data loader's batch
                ctx.report(self, node, condition=handed, what=f"{ctx.code_for(node.func)}(...)",
                           why="hands a data loader's batch (host memory) to a helper that copies it to the GPU, "
                           "a copy refused during capture unless it is pinned, of the capture's batch on every replay")
                return
            mover = host_move_helpers.condition(node, name, ctx)
            if mover is not None:  # `_to_device(params["src"], x.device)`: the helper copies CPU tensors over
                handed = "".join(f" {host_move_helpers.moved_parameter(p)}" for p in host_move_helpers.passed_on(node, ctx))
                ctx.report(self, node, condition=mover, what=f"{ctx.code_for(node.func)}(...)",
                           why="hands a value that may be a CPU tensor to a helper that copies CPU tensors to the GPU"
                           f"{handed}, a copy refused during capture unless it is pinned")

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        # `v[:, [-1]]`: PyTorch turns the list into a CPU index tensor and copies it over.
        if not ctx.kind(node.value).is_tensor and not _list_beside_other_axes(node, ctx):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and not isinstance(index.value, cst.List):
                held = ctx.host_index(index.value)
                if held is not None and ctx.host_origin(node.value) is None:
                    # `x[batch_indices]` with `batch_indices = torch.arange(b)` or a list of ints
                    ctx.report(self, index.value, what=f"[{ctx.code_for(index.value)}]",
                               why=f"indexes a device tensor with host memory ({held}): the index is copied to "
                               "the GPU, which is refused during capture")
                    return
            if isinstance(index, cst.Index) and isinstance(index.value, cst.List):
                ctx.report(
                    self, index.value, fix=list_index_fix(index.value),
                    what=f"[{', '.join(ctx.code_for(e.value) for e in index.value.elements)}]",
                    why="indexes a tensor with a Python list, which becomes a host tensor copied to the GPU, "
                    "refused during capture",
                )

    def _factory(self, node: cst.Call, name: str, ctx) -> None:
        first = _positional(node)
        if name in ("torch.as_tensor", "torch.asarray") and first and ctx.kind(first[0].value).is_tensor:
            return  # already a tensor: no host data involved
        if first and type(first[0].value) in (cst.List, cst.Tuple) and not first[0].value.elements:
            return  # `torch.tensor([], device=d)`: no element, so no byte is copied (captures fine)
        what = f"{name}(...)"
        device = _keyword(node, "device")
        on_device = name.startswith("torch.cuda.") or (device is not None and not _is_cpu_device(device.value, ctx))
        fix = hoist_fix(node, ctx) if name == "torch.tensor" else None
        if on_device:
            if fix is None and name == "torch.tensor" and ctx.resolve(cst.Name("torch")) == "torch":
                fix = full_fix(node, ctx)
            why = "copies host data to the GPU, which is refused during capture"
            if first and type(first[0].value) is cst.Name and first[0].value.value in ctx.params:
                # each caller's value is copied: host_copy_helpers reports calls passing numbers
                why = f"copies host data to the GPU {host_copy_helpers.copied_parameter(first[0].value.value)}, which is refused during capture"
            ctx.report(self, node, fix=fix, what=what, why=why)
        else:
            data = first[0].value if first else None
            condition = None
            if (name in ("torch.as_tensor", "torch.asarray") and type(data) is cst.Name and data.value in ctx.params
                    and ctx.kind(data).tag == "unknown"):
                return  # `torch.as_tensor(sigma)` of a parameter callers may give a tensor: a no-op then
            if type(data) is cst.Attribute and ctx.is_self(data.value) or (
                    type(data) is cst.Name and ctx.params.get(data.value) == T.SCALAR):
                # `torch.tensor(self.teacher_temp)`, `torch.tensor(atol)` with `atol: float`: only
                # where something changes it between steps (the callers, for a parameter)
                source = ctx.scalar_source(data)
                if source is None:
                    return
                condition = source.condition or None
            ctx.report(
                self, node, fix=fix, what=what, condition=condition,
                why="builds a CPU tensor from host data: CPU work is not captured, so replay keeps the values seen at capture",
                consequence=Consequence.SILENTLY_WRONG.value,
            )

    def _to_device(self, node: cst.Call, ctx) -> None:
        func = node.func
        method = func.attr.value
        shown = ".cuda()" if method == "cuda" else '.to("cuda")'
        if method == "to":
            target = _keyword(node, "device") or next(iter(_positional(node)), None)
            if target is None:
                return
        if (method == "cuda" or not dtype_only(node, ctx)) and not (method == "to" and _is_cpu_device(target.value, ctx)):
            moved = host_batches.moved_parameter(func.value, ctx.function_node, ctx.params)
            if (moved is not None and ctx.function_key and ctx.host_origin(func.value) is None
                    and not _host_indexed(func.value, ctx)):
                # decided where the project knows the callers: each hands `moved` a loader's batch
                ctx.report(self, node, condition=(host_batches.HOST_BATCH_PARAM, ctx.function_key, moved),
                           what=shown if method == "cuda" else f".to({ctx.code_for(target.value)})",
                           why=f"copies `{ctx.code_for(func.value)}` of `{moved}`, a data loader's batch (host memory) "
                           "as its callers hand it, to the GPU: refused during capture unless it is pinned")
        if type(func.value) is cst.Name and (method == "cuda" or not dtype_only(node, ctx)):
            test = cpu_tested.cpu_test(ctx, func.value.value)
            target_cpu = method == "to" and _is_cpu_device(target.value, ctx)
            if test is not None and not target_cpu:  # a helper's host-to-device path
                name = func.value.value
                given = f" {host_move_helpers.moved_parameter(name)}" if name in ctx.params else ""
                ctx.report(self, node, what=shown if method == "cuda" else f".to({ctx.code_for(target.value)})",
                           why=f"copies `{name}` to the GPU where `{test}` says it is a CPU tensor{given}, "
                           "which is refused during capture unless it is pinned")
                return
        if method == "to":
            # `.to(x.device)` with x a tensor of the region: the GPU the graph is captured on;
            # `.to(self.device)`, `.to(device=dev)`: a device the region runs on, whatever it is
            # bound to (a CPU tensor there is a host copy, or CPU work replay never redoes)
            follows = ctx.host_origin(func.value) is not None and (
                _is_tensor_device(target.value, ctx) or target.keyword is not None or _device_named(target.value))
            if not follows and not _is_cuda_device(target.value, ctx) and not self._names_cuda_device(target.value, ctx):
                if _host_indexed(func.value, ctx) and (_is_tensor_device(target.value, ctx) or _device_named(target.value)):
                    shown = f".to({ctx.code_for(target.value)})"
                    ctx.report(self, node, what=shown, why=_HOST_INDEXED_WHY)
                    return
                attr = _self_attribute(func.value, ctx)
                if attr is not None and (_is_tensor_device(target.value, ctx) or _device_named(target.value)):
                    shown = f".to({ctx.code_for(target.value)})"
                    self.attribute_moves.append((node, ctx.class_key, attr, ctx.here(), shown))
                return
            if follows:
                shown = f".to({ctx.code_for(target.value)})"
        receiver = func.value
        if isinstance(receiver, cst.Call):
            inner = ctx.resolve(receiver.func) or ""
            if inner in _HOST_DATA_FACTORIES or inner in _LEGACY_CONSTRUCTORS:
                self.moved.add(id(receiver))  # one report for `torch.tensor(...).cuda()`
                ctx.report(self, node, what=f"{inner}(...){shown}", why="copies host data to the GPU, which is refused during capture")
                return
        kind = ctx.kind(receiver)
        if kind.tag in _NOT_DATA:
            return  # a module's .to("cuda") moves parameters, not host data
        held = None if _cpu_factory_call(receiver, ctx) else ctx.host_origin(receiver)
        if held is not None:  # `w = torch.arange(n)` earlier, `idx = w[..., None]`: a CPU tensor
            ctx.report(self, node, what=shown,
                       why=f"copies a CPU tensor to the GPU ({held}), which is refused during capture unless it is pinned")
            return
        if kind.is_tensor and not _cpu_factory_call(receiver, ctx):
            if _host_indexed(receiver, ctx):
                ctx.report(self, node, what=shown, why=_HOST_INDEXED_WHY)
                return
            attr = _self_attribute(receiver, ctx)
            if attr is not None:  # `self.weights.cuda()`: a host copy where the class made it on the CPU
                self.attribute_moves.append((node, ctx.class_key, attr, ctx.here(), shown))
            return  # a tensor in the region: taken to be on the device already
        ctx.report(self, node, what=shown, why="copies host memory to the GPU, which is refused during capture unless it is pinned")



def _host_batch_call(node: cst.Call, resolved: str | None, ctx) -> tuple[str, ...] | None:
    """The condition under which the project call `node` hands a data loader's batch to a helper
    that moves it to the GPU (analyzer/host_batches.py), or None."""
    if resolved is not None and resolved.startswith(("torch.", "numpy.", "builtins.")):
        return None
    # a batch is handed on by name (`batch_to_device(batch, d)`): the cheap test first, on every call
    slots = [a.keyword.value if a.keyword is not None else str(i) for i, a in enumerate(node.args)
             if not a.star and type(a.value) is cst.Name and ctx.host_origin(a.value) is not None
             and (not ctx.kind(a.value).not_tensor or ctx.kind(a.value) == T.TENSOR_DICT)]  # a dict batch too
    if not slots or any(a.star for a in node.args):
        return None
    refs = dict.fromkeys(f"{ref.kind}|{ref.target}" for ref in ctx.call_refs(node.func))
    return (host_batches.HOST_BATCH_CALL, ctx.class_key or "", ",".join(slots), *refs) if refs else None


def _list_beside_other_axes(node: cst.Subscript, ctx) -> bool:
    """`out["logits"][rows, -1, :]` with `rows` a local list of Python ints: a value of unknown
    kind indexed on several axes with a list is an array (a list, dict or string raises on that
    index), and in a region an array is a tensor of the step. A value known not to be a tensor,
    or one index alone (`table[rows]` may be a dict lookup that fails), is left alone."""
    if len(node.slice) < 2 or ctx.kind(node.value).not_tensor or ctx.host_origin(node.value) is not None:
        return False
    for element in node.slice:
        index = element.slice
        if isinstance(index, cst.Index) and type(index.value) is cst.Name:
            held = ctx.host_index(index.value)
            if held is not None and "Python list" in held:
                return True
    return False

_HOST_INDEXED_WHY = ("gathers rows with a host index and copies them to the GPU (a host table's rows, or the "
                     "index itself for a device table), which is refused during capture")


def _host_indexed(expr: cst.BaseExpression, ctx) -> bool:
    """`table[ids.cpu()]` (or `table[cpu_ids]` with `cpu_ids = ids.cpu()` earlier in the
    function): rows picked with an index copied to the host. The table is a host one (a device
    table would take the device index); either way the step copies host memory to the GPU:
    the gathered rows, or the index when the table is on the device."""
    if type(expr) is not cst.Subscript:
        return False
    return any(type(e.slice) is cst.Index and ctx.is_host_tensor(e.slice.value) for e in expr.slice)


def _cuda_when_captured(expr: cst.BaseExpression, ctx) -> bool:
    """A CUDA device, or one chosen by availability (`"cuda" if torch.cuda.is_available() else
    "cpu"`, also inside `torch.device(...)`): a captured region runs on the GPU."""
    if type(expr) is cst.IfExp:
        return _cuda_when_captured(expr.body, ctx) or _cuda_when_captured(expr.orelse, ctx)
    if type(expr) is cst.Call and ctx.resolve(expr.func) == "torch.device":
        first = _positional(expr)
        return bool(first) and _cuda_when_captured(first[0].value, ctx)
    return _is_cuda_device(expr, ctx)


def _device_key(expr: cst.BaseExpression, ctx) -> tuple[str, str] | None:
    """Where a device value lives: `self.device` per class, a name per function (module)."""
    if type(expr) is cst.Attribute and ctx.is_self(expr.value) and ctx.class_key:
        return (ctx.class_key, f"self.{expr.attr.value}")
    if type(expr) is cst.Name:
        return (ctx.function_key if ctx.function_node is not None else "<module>", expr.value)
    return None


def _is_tensor_device(expr: cst.BaseExpression, ctx) -> bool:
    """`x.device` of a tensor `x`."""
    return isinstance(expr, cst.Attribute) and expr.attr.value == "device" and ctx.kind(expr.value).is_tensor


def _self_attribute(expr: cst.BaseExpression, ctx) -> str | None:
    """`self.pages` or `self.pages[key]`: the attribute's name."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute) and ctx.is_self(expr.value) and ctx.class_key:
        return expr.attr.value
    return None


def _device_named(expr: cst.BaseExpression) -> bool:
    """`device`, `self.device`, `cfg.train_device`: a name that says it holds a device."""
    name = expr.attr.value if type(expr) is cst.Attribute else expr.value if type(expr) is cst.Name else ""
    return name == "device" or name.endswith("_device")


def _host_data_call(expr: cst.BaseExpression, ctx) -> bool:
    """`torch.tensor([...])` without a device (or on the CPU): a CPU tensor of host data."""
    if type(expr) is not cst.Call or ctx.resolve(expr.func) not in _HOST_DATA_FACTORIES:
        return False
    first = _positional(expr)
    if first and ctx.kind(first[0].value).is_tensor:
        return False  # `torch.as_tensor(t)` of a tensor keeps its device
    device = _keyword(expr, "device")
    return device is None or _is_cpu_device(device.value, ctx)


def _cpu_factory_call(expr: cst.BaseExpression, ctx) -> bool:
    """`torch.zeros(3)` and friends without a device: a CPU tensor."""
    if not isinstance(expr, cst.Call):
        return False
    name = ctx.resolve(expr.func) or ""
    namespace, _, func = name.rpartition(".")
    if namespace != "torch" or func not in _CPU_FACTORIES:
        return False
    device = _keyword(expr, "device")
    return device is None or _is_cpu_device(device.value, ctx)


# Methods that give the same values (another dtype, device or layout): `kv = self.kv.float()`
# still holds the buffer's contents, so growing `kv` and storing it back grows the buffer.
_SAME_DATA = frozenset("to cuda float half bfloat16 double contiguous detach clone".split())


class _CopiesOf(dict):
    """unit key → {local: (what it copies: `self.kv` or a parameter's name, grown since?)}."""


def _root(expr: cst.BaseExpression) -> cst.BaseExpression:
    while type(expr) in (cst.Attribute, cst.Subscript):
        expr = expr.value
    return expr


class GrowingBuffer(_StaticMemoryRule):
    """## What it does
    Flags a tensor that outlives the step and is concatenated onto itself inside a captured
    region, so that it grows every step: `self.buf = torch.cat([self.buf, x])`.

    ## Why is this bad?
    The buffer gets a new, larger shape and a new address every step. A graph replays the
    shapes and addresses of capture: the attribute keeps the tensor made at capture (measured:
    after capture and replays, `self.buf` has only the rows appended before capture), and a
    grown parameter no longer fits the graph's static input. A local buffer that starts empty
    in the same call is fine: its shapes are the same on every replay.

    ## Example
    ```python
    self.tokens = torch.cat([self.tokens, next_token], dim=1)
    ```

    ## Use instead
    Preallocate the full buffer once and write into it at a position held in a device tensor:
    ```python
    self.tokens.index_copy_(1, self.pos, next_token)
    self.pos += 1
    ```

    ## Fix safety
    No automatic fix: the buffer's maximum size is a design decision.

    ## Precise semantics
    Flagged: `self.buf = torch.cat([self.buf, x])`, `cache = torch.cat((cache, kv), dim=1)`
    for a parameter `cache`, and the same with `torch.stack`/`hstack`/`vstack`/`dstack`/
    `column_stack`/`row_stack`/`concat`/`concatenate`.

    An entry of a dict or list that outlives the step grown the same way
    (`self.logs[k] = torch.vstack([self.logs[k], x])`) is GS404 too, and only GS404: the
    container keeps its keys (not a GS503 change to it), the tensor it holds grows. So is a
    copy of the buffer grown and stored back (`kv = self.kv.float()`, `.to(dev)`,
    `.contiguous()`, ... then `kv = torch.cat([kv, x])` and `self.kv = kv`, or
    `self.kv = torch.cat([kv, x])`), and a parameter moved the same way, grown onto itself and
    stored back on the attribute of its name (`cache = cache.to(dev)`,
    `cache = torch.cat([cache, x])`, `self.cache = cache`).

    A parameter joined with something else and stored
    (`self.ctx = torch.cat([ctx.float(), prefix])`) is a fresh tensor of the same shape every
    step: not reported.
    """

    code = "GS404"
    name = "growing-buffer"
    consequence = Consequence.SILENTLY_WRONG
    summary = "a buffer concatenated onto itself (`buf = torch.cat([buf, x])`) grows every step"
    message = "`{target}` is concatenated onto itself, so it grows every step while the graph replays one shape: {consequence}"
    valid = (
        "z = torch.cat([x, y])",
        "buf = x[:0]\nfor _ in range(4):\n    buf = torch.cat([buf, y])",
        "x = self.embed(x)\nx = torch.cat((self.cls, x), dim=1)",
        "z = torch.stack([x, y], dim=0)",
        Example("self.buf = torch.cat([self.buf, x])", region=False),
        "logs = {'a': x[:0]}\nlogs['a'] = torch.cat([logs['a'], y])",  # made in this call
        "ctx = x.float()\nself.ctx = torch.cat([ctx, y])",  # a fresh tensor each step
    )
    invalid = (
        "self.buf = torch.cat([self.buf, x])",
        "x = torch.cat((x, y), dim=1)",
        "self.hist = torch.stack([self.hist, y])",
        "self.log = torch.vstack([self.log, y[None]])",
        "self.logs['loss'] = torch.vstack([self.logs['loss'], y[None]])",
        Example("class C:\n    def step(self, x: torch.Tensor):  # graphsafe: region\n"
                "        kv = self.kv.float()\n        kv = torch.cat([kv, x])\n        self.kv = kv", module=True),
    )

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        # names rebound so far in this function, in source order
        rebound = ctx.file_state(dict).setdefault(ctx.unit_key, set())
        copies = ctx.file_state(_CopiesOf).setdefault(ctx.unit_key, {})
        if not (copies and self._check_copy_grown(node, ctx, copies)):
            self._check_concat(node, ctx, rebound)
        self._note_copies(node, ctx, rebound, copies)
        rebound.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

    @staticmethod
    def _origin(expr: cst.BaseExpression, ctx, rebound: set[str], copies: dict) -> tuple[str, bool] | None:
        """What `expr` is a copy of, and whether that copy has grown: `self.kv`,
        `self.kv.float()`, `cache.to(dev)` for a parameter `cache` (not rebound to anything
        else), or a local that holds one."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _SAME_DATA:
            expr = expr.func.value
        if type(expr) is cst.Name:
            if expr.value in copies:
                return copies[expr.value]
            return (expr.value, False) if expr.value in ctx.params and expr.value not in rebound else None
        shown = dotted(expr) if type(expr) is cst.Attribute else None
        return (shown, False) if shown is not None and ctx.is_self(_root(expr)) else None

    def _note_copies(self, node: cst.Assign, ctx, rebound: set[str], copies: dict) -> None:
        """`kv = self.kv.float()`: `kv` holds `self.kv`'s data; `kv = torch.cat([kv, new])`
        keeps that, marked grown (what `self.kv = kv` then stores back)."""
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
            for target in node.targets:  # `kv, pos = ...`: whatever they held before is gone
                for name in bound_names(target.target):
                    copies.pop(name.value, None)
            return
        local = node.targets[0].target.value
        origin = self._origin(node.value, ctx, rebound, copies)
        if origin is not None:
            copies[local] = origin
            return
        parts = T.concat_parts(node.value, ctx.resolve) if local in copies else None
        if parts and any(type(p) is cst.Name and p.value == local for p in parts):
            copies[local] = (copies[local][0], True)
        else:
            copies.pop(local, None)

    def _check_copy_grown(self, node: cst.Assign, ctx, copies: dict) -> bool:
        """`self.kv = kv` where `kv` is `self.kv.float()` grown by a concatenation onto itself,
        or `self.kv = torch.cat([kv, new])` directly; likewise `self.cache = cache` for a
        parameter `cache` moved with `cache.to(dev)` and then grown (`cache = torch.cat([cache,
        new])`): the attribute grows every step. (A parameter joined with something else and
        stored, `self.ctx = torch.cat([ctx, prefix])`, is a fresh tensor of the same shape.)"""
        for target in node.targets:
            shown = dotted(target.target) if type(target.target) is cst.Attribute else None
            if shown is None or not ctx.is_self(_root(target.target)):
                continue
            attr = shown.rpartition(".")[2]
            value = node.value
            if type(value) is cst.Name and value.value in copies:
                origin, grown = copies[value.value]
                if grown and origin in (shown, attr):
                    ctx.report(self, value, target=shown)
                    return True
            parts = T.concat_parts(value, ctx.resolve)
            if parts and any(type(p) is cst.Name and p.value in copies and copies[p.value][0] == shown for p in parts):
                ctx.report(self, value, target=shown)
                return True
        return False

    def _check_concat(self, node: cst.Assign, ctx, rebound: set[str]) -> None:
        value = node.value
        joined = T.concat_parts(value, ctx.resolve)
        if joined is None:
            return
        parts = {dotted(e) for e in joined}
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                # `self.logs[k] = torch.cat([self.logs[k], x])`: the entry's tensor grows
                # (the container keeps its keys); an entry of a container made in this call is fine
                if T.joined_onto_itself(target.target, value, ctx.resolve) and persistent_root(target.target, ctx):
                    ctx.report(self, value, target=ctx.code_for(target.target))
                    return
                continue
            shown = dotted(target.target)
            if shown is None or shown not in parts:
                continue
            if isinstance(target.target, cst.Name):
                local = target.target.value
                step = ctx.step_loop_carrying(local)
                if step is not None:  # `out = torch.cat((out, tok))` in a loop region: the next pass reads it
                    ctx.report(self, value, target=shown, condition=step.condition)
                    return
                # A local that started empty in this call has the same shapes every replay;
                # so has a parameter already rebound to this call's own tensor
                # (`x = self.embed(x)` then `x = torch.cat((cls, x), dim=1)`).
                if local in rebound or (local not in ctx.params and ctx.local_kind(local) is not None):
                    continue
            ctx.report(self, value, target=shown)
            return

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            ctx.file_state(dict).setdefault(ctx.unit_key, set()).add(node.target.value)
            ctx.file_state(_CopiesOf).setdefault(ctx.unit_key, {}).pop(node.target.value, None)


class AllocatorCallInRegion(_StaticMemoryRule):
    """## What it does
    Flags caching-allocator calls inside a captured region: `torch.cuda.empty_cache()`,
    `reset_peak_memory_stats()`, and reads of `memory_allocated()`, `max_memory_allocated()`,
    `memory_reserved()`, `memory_stats()`, `mem_get_info()` and friends.

    ## Why is this bad?
    They are host-side work on the allocator, not GPU work, so they are not captured: they
    run once, at capture, and never on replay. A memory statistic read in the region is the
    value at capture forever; `empty_cache()` frees nothing on later steps. (Measured on torch
    2.11: none of them makes capture fail; older versions could fail in `empty_cache()`.)

    ## Example
    ```python
    loss = model(x).mean()
    peak = torch.cuda.max_memory_allocated()
    ```

    ## Use instead
    Call them outside the region, around `graph.replay()`.

    ## Fix safety
    No automatic fix: moving the call changes what it measures.
    """

    code = "GS405"
    name = "allocator-call-in-region"
    consequence = Consequence.SLOWER
    summary = "`torch.cuda.empty_cache()` or a memory statistic read inside the region"
    message = "`{what}` {why}: {consequence}"
    valid = ("z = x.sum()", Example("torch.cuda.empty_cache()", region=False), "free = torch.cuda.is_available()")
    invalid = (
        "torch.cuda.empty_cache()",
        "used = torch.cuda.memory_allocated()",
        "free, total = torch.cuda.mem_get_info()",
        "torch.cuda.reset_peak_memory_stats()",
    )

    calls = Callees(_ALLOCATOR_WORK | _ALLOCATOR_READS)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func) or ""
        namespace, _, func = name.rpartition(".")
        if namespace not in ("torch.cuda", "torch.cuda.memory"):
            return
        if func in _ALLOCATOR_WORK:
            ctx.report(self, node, what=f"torch.cuda.{func}()", why="is allocator work on the host: it runs once, at capture, never on replay")
        elif func in _ALLOCATOR_READS:
            ctx.report(self, node, what=f"torch.cuda.{func}()", why="reads allocator state on the host: replay keeps the value seen at capture")


class PinMemoryInRegion(_StaticMemoryRule):
    """## What it does
    Flags pinning host memory inside a captured region: `t.pin_memory()` and torch factories
    called with `pin_memory=True`.

    ## Why is this bad?
    Pinning is host work: it runs once, at capture. A copy from the pinned buffer is captured
    with that buffer's address, so every replay copies from the host memory that capture saw,
    not the new data (measured on torch 2.11: capture succeeds, and replay keeps the old
    values). The pinned block is also returned to the host allocator after capture and may be
    reused for something else.

    ## Example
    ```python
    ids = host_ids.pin_memory().to("cuda", non_blocking=True)
    ```

    ## Use instead
    Allocate one pinned staging buffer outside the region, fill it on the host before
    `graph.replay()`, and copy from it inside the region:
    ```python
    staging = torch.empty(shape, dtype=torch.long, pin_memory=True)  # at set-up
    static_ids.copy_(staging, non_blocking=True)  # in the region
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS406"
    name = "pin-memory-in-region"
    consequence = Consequence.SILENTLY_WRONG
    summary = "pinning host memory (`.pin_memory()`, `pin_memory=True`) inside the region"
    message = "`{what}` pins host memory once, at capture; replay copies from that old buffer: {consequence}"
    valid = (
        "z = x.contiguous()",
        Example("buf = torch.empty(4, pin_memory=True)", region=False),
        "buf = torch.empty(4, pin_memory=False)",
    )
    invalid = (
        "h = y.tolist()\nt = torch.tensor(h).pin_memory()",
        "buf = torch.empty(4, pin_memory=True)",
    )

    calls = Callees({"pin_memory"}, keywords=("pin_memory",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "pin_memory" and not node.args:
            if ctx.kind(func.value).tag not in _NOT_DATA:
                ctx.report(self, node, what=".pin_memory()")
            return
        arg = _keyword(node, "pin_memory")
        if arg is None or not _is_true(arg.value):
            return
        name = ctx.resolve(func) or ""
        if name.startswith("torch.") and not name.endswith("DataLoader"):
            ctx.report(self, node, what=f"{name}(..., pin_memory=True)")


@dataclass
class _KeptUse:
    node: cst.CSTNode  # the expression that keeps the output (a Name or `self.x`)
    key: tuple[str, str]
    order: int
    place: object


class GraphOutputNotCloned(_StaticMemoryRule):
    """## What it does
    Flags keeping a graph's static output across replays without `.clone()`: appending it to a
    list, storing it in a dict or yielding it after `g.replay()`.

    ## Why is this bad?
    A captured graph writes its outputs into the same tensors on every replay. A list of
    "outputs" is a list of references to one tensor: after the loop, every element holds the
    last step's values. No error is raised.

    ## Example
    ```python
    with torch.cuda.graph(g):
        static_out = model(static_x)
    for batch in loader:
        static_x.copy_(batch)
        g.replay()
        outputs.append(static_out)
    ```

    ## Use instead
    ```python
        outputs.append(static_out.clone())
    ```

    ## Fix safety
    Keeping `.clone()` keeps what eager code would have kept (a tensor per step) at the cost of
    a copy: safe when the output is known to be a tensor; unsafe otherwise (a tuple of outputs
    has no `.clone()`).

    ## Precise semantics
    The output is a name bound inside a `torch.cuda.graph` block, or a tensor the block writes
    with `out.copy_(...)` or `out=out` (for `self.out`, also in a method of the class that the
    block calls). It is flagged when used after the block in the same function (or, for
    `self.x`, anywhere in the class) as `outputs.append(out)` (or `out.detach()`, the same
    memory), `outputs += [out]`, `outputs.append({"loss": out})`, `results[k] = out` or
    `yield out`. A rebinding in between (`out = out.clone()`) ends it, unless it is only on one
    branch of an `if` that the use is outside of (the eager fallback beside `g.replay()`).
    """

    code = "GS407"
    name = "graph-output-not-cloned"
    consequence = Consequence.SILENTLY_WRONG
    fixable = True
    summary = "a graph's static output kept across replays without `.clone()`"
    message = (
        "`{target}` is a graph output that the next replay overwrites in place; "
        "keep `{target}.clone()` instead: {consequence}"
    )
    valid = (
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
        "    g.replay()\n    outs.append(out.clone())",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
        "    g.replay()\n    out = out.clone()\n    outs.append(out)",
        "outs = []\nout = x * 2\nouts.append(out)",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nbuf = torch.zeros(3, 4)\nbuf[0] = out",
        "static_loss = torch.zeros(())\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        "    static_loss.copy_(x.sum())\nhistory = []\nfor _ in range(3):\n    g.replay()\n"
        "    history.append(static_loss.clone())",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
        "    g.replay()\n    outs += [out.clone()]",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
        "    g.replay()\n    outs.append(out.detach().cpu())",  # a copy (GS103 is not this rule)
    )
    invalid = (
        Example(
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
            "    g.replay()\n    outs.append(out.detach())",
            fixed="g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
            "    g.replay()\n    outs.append(out.clone().detach())",
        ),
        Example(
            "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
            "    g.replay()\n    outs.append(out)",
            fixed="g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
            "    g.replay()\n    outs.append(out.clone())",
        ),
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nresults = {}\nfor i in range(3):\n"
        "    g.replay()\n    results[i] = out",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nfor i in range(3):\n"
        "    g.replay()\n    yield out",
        Example(
            "class Runner:\n    def capture(self, x):\n        self.g = torch.cuda.CUDAGraph()\n"
            "        with torch.cuda.graph(self.g):\n            self.out = x * 2\n\n"
            "    def run(self, history):\n        self.g.replay()\n        history.append(self.out)\n",
            module=True,
        ),
        "static_loss = torch.zeros(())\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
        "    static_loss.copy_(x.sum())\nhistory = []\nfor _ in range(3):\n    g.replay()\n"
        "    history.append({'loss': static_loss})",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = x * 2\nouts = []\nfor _ in range(3):\n"
        "    g.replay()\n    outs += [out]",
        "g = None\nif x.is_cuda:\n    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        out = x * 2\n"
        "outs = []\nfor _ in range(3):\n    if g is not None:\n        g.replay()\n    else:\n        out = x * 2\n"
        "    outs.append(out)",
    )

    def __init__(self) -> None:
        self.active: bool | None = None  # does the file capture at all? (a cheap text check, once)
        self.order = 0
        # Flat logs, grouped by key at the end of the file: a what-if run of the walker copies
        # a rule's containers first, and a flat list of tuples is one C-level copy where a
        # dict of lists (one per name in the file) made that copy grow with every assignment.
        self.outputs: list[tuple[tuple[str, str], int, bool]] = []  # (key, order, is a tensor)
        self.rebinds: list[tuple[tuple[str, str], int, object]] = []  # (key, order, statement)
        self.uses: list[_KeptUse] = []
        # `self.static_loss.copy_(loss)` in a method the capture block calls (`self.train_step()`):
        # (class, method) pairs the blocks call, and (class, method, key) writes outside blocks
        self.block_methods: list[tuple[str, str]] = []
        self.method_writes: list[tuple[str, str, tuple[str, str]]] = []

    def _captures(self, ctx) -> bool:
        if self.active is None:
            source = getattr(ctx, "source", None)
            self.active = source is None or "graph" in source or "Graph" in source
        return self.active

    def _key(self, expr: cst.BaseExpression, ctx) -> tuple[str, str] | None:
        """Where a name lives: a local per function, `self.x` per class."""
        if isinstance(expr, cst.Name):
            return (ctx.function_key or "<module>", expr.value)
        if isinstance(expr, cst.Attribute) and ctx.is_self(expr.value) and ctx.class_key:
            return (ctx.class_key, f"self.{expr.attr.value}")
        return None

    def _bind(self, target: cst.BaseExpression, value_kind, ctx) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            element_kind = T.TENSOR if value_kind.tag == "tensor-tuple" else T.UNKNOWN
            for element in target.elements:
                self._bind(element.value, element_kind, ctx)
            return
        key = self._key(target, ctx)
        if key is None:
            return
        if ctx.in_capture_block():
            if not value_kind.not_tensor or value_kind == T.TENSOR_DICT:  # a dict holds outputs too
                self.outputs.append((key, self.order, value_kind.is_tensor))
        else:
            self.rebinds.append((key, self.order, ctx.statement))

    def _kept(self, expr: cst.BaseExpression, ctx) -> None:
        """Record the output names that `expr` keeps a reference to."""
        if ctx.in_capture_block():
            return
        if isinstance(expr, (cst.Tuple, cst.List)):
            values = [e.value for e in expr.elements]
        elif isinstance(expr, cst.Dict):  # `history.append({"loss": out})`
            values = [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
        else:
            values = [expr]
        for value in values:
            while (type(value) is cst.Call and type(value.func) is cst.Attribute and not value.args
                   and value.func.attr.value == "detach"):
                value = value.func.value  # `losses.append(out.detach())`: the same memory
            key = self._key(value, ctx)
            if key is not None:
                self.uses.append(_KeptUse(value, key, self.order, ctx.here()))

    def _block_call(self, value: cst.BaseExpression, ctx) -> None:
        """`self.train_step(...)` in a capture block: its in-place writes are graph outputs."""
        if (type(value) is cst.Call and type(value.func) is cst.Attribute and ctx.is_self(value.func.value)
                and ctx.class_key and ctx.in_capture_block()):
            self.block_methods.append((ctx.class_key, value.func.attr.value))

    def visit_Expr(self, node: cst.Expr, ctx) -> None:
        if self._captures(ctx):
            self._block_call(node.value, ctx)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not self._captures(ctx):
            return
        self.order += 1
        self._block_call(node.value, ctx)
        kind = ctx.kind(node.value, note=False)  # reports come in end_module: no what-if run
        for target in node.targets:
            tgt = target.target
            if isinstance(tgt, cst.Subscript) and not ctx.kind(tgt.value, note=False).is_tensor:
                self._kept(node.value, ctx)  # `results[i] = out` (a tensor's setitem copies values)
            else:
                self._bind(tgt, kind, ctx)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        if type(node.operator) is cst.AddAssign and type(node.value) in (cst.List, cst.Tuple) and self._captures(ctx):
            self.order += 1
            self._kept(node.value, ctx)  # `outputs += [out]`

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx) -> None:
        if not self._captures(ctx):
            return
        self.order += 1
        if node.value is not None:
            self._bind(node.target, ctx.kind(node.value, note=False), ctx)

    calls = Callees({"append", "appendleft", "insert", "extend", "copy_"}, keywords=("out",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if not self._captures(ctx):
            return
        func = node.func
        self._written(node, ctx)
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "appendleft", "insert", "extend"):
            return
        self.order += 1
        args = _positional(node)
        if not args:
            return
        kept = args[-1].value
        if func.attr.value == "extend" and not isinstance(kept, (cst.List, cst.Tuple)):
            return
        self._kept(kept, ctx)

    def _written(self, node: cst.Call, ctx) -> None:
        """`static_loss.copy_(loss)` or `torch.add(a, b, out=static_sum)` in the capture block:
        every replay writes that tensor in place, so it is a graph output like a bound name."""
        func = node.func
        written = [a.value for a in node.args if a.keyword is not None and a.keyword.value == "out"]
        if isinstance(func, cst.Attribute) and func.attr.value == "copy_":
            written.append(func.value)
        if not written:
            return
        in_block = ctx.in_capture_block()
        for target in written:
            key = self._key(target, ctx)
            if key is None:
                continue
            if in_block:
                self.order += 1
                self.outputs.append((key, self.order, True))
            elif key[1].startswith("self.") and ctx.function_name:
                self.method_writes.append((key[0], ctx.function_name, key))

    def visit_Yield(self, node: cst.Yield, ctx) -> None:
        if not self._captures(ctx):
            return
        self.order += 1
        if isinstance(node.value, cst.BaseExpression):
            self._kept(node.value, ctx)

    def end_module(self, ctx) -> None:
        outputs: dict[tuple[str, str], list[tuple[int, bool]]] = {}  # key → (order, is a tensor)
        for key, order, is_tensor in self.outputs:
            outputs.setdefault(key, []).append((order, is_tensor))
        called = set(self.block_methods)
        for class_key, method, key in self.method_writes:
            if (class_key, method) in called:  # `self.x` keys: any method, any order
                outputs.setdefault(key, []).append((0, True))
        rebinds: dict[tuple[str, str], list[tuple[int, object]]] = {}
        for key, order, statement in self.rebinds:
            rebinds.setdefault(key, []).append((order, statement))
        for use in self.uses:
            bindings = outputs.get(use.key)
            if not bindings:
                continue
            if use.key[1].startswith("self."):
                is_tensor = any(t for _, t in bindings)  # any method of the class, any order
            else:
                earlier = [(o, t) for o, t in bindings if o < use.order]
                if not earlier:
                    continue
                last, is_tensor = max(earlier)
                if any(last < r < use.order and _on_every_path(s, use.place.statement, ctx)
                       for r, s in rebinds.get(use.key, ())):
                    continue  # rebound (e.g. `out = out.clone()`) before being kept
            shown = use.key[1]
            # On a value not known to be a tensor (a tuple of outputs), `.clone()` may not exist.
            applicability = Applicability.SAFE if is_tensor else Applicability.UNSAFE
            reason = "" if is_tensor else "the kept value is not known to be a tensor: `.clone()` may not exist on it"
            fix = (f"Keep `{shown}.clone()`", [(use.node, f"{shown}.clone()")], applicability, reason)
            ctx.report(self, use.node, fix=fix, always=True, at=use.place, target=shown)


def _branches(statement, ctx) -> list[cst.CSTNode]:
    """The `if` statements whose blocks hold `statement`, innermost first."""
    found = []
    owner = ctx.enclosing_statement(statement)
    while owner is not None:
        if isinstance(owner, (cst.If, cst.Match)):
            found.append(owner)
        owner = ctx.enclosing_statement(owner)
    return found


def _on_every_path(rebind, use, ctx) -> bool:
    """Does a rebinding that comes before `use` run whenever `use` does? Not when it sits in a
    branch of an `if` that `use` is outside of: `else: out = step(x)` beside `g.replay()` leaves
    the replay path keeping the graph's output. (Loops count as run: a precision choice.)"""
    if rebind is None or use is None:
        return True
    enclosing_use = {id(b) for b in _branches(use, ctx)}
    return all(id(b) in enclosing_use for b in _branches(rebind, ctx))


RULES = (HostDataTensor, GrowingBuffer, AllocatorCallInRegion, PinMemoryInRegion, GraphOutputNotCloned)
