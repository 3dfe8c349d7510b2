"""Distributed set-up in a file that captures (GS905, GS906): sharding and NCCL settings.

Collectives capture only when the process group's buffers stay where capture saw them. FSDP
that re-shards parameters after forward frees and re-gathers them every step; NCCL's graph
buffer registration assumes one contiguous allocation, which expandable segments break. Both
are decided where the model and environment are set up, so these rules look at whole files.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Consequence, Principle
from graphsafe.rules.base import Rule
from graphsafe.rules.config import _is_capture_call
from graphsafe.rules.streams import collective_name
from graphsafe.rules.syntax import environment_writes, keyword, literal

FSDP2 = frozenset({"torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
                   "torch.distributed._composable.fsdp.fully_shard.fully_shard",
                   "torch.distributed.fsdp._fully_shard.fully_shard"})
FSDP1 = frozenset({"torch.distributed.fsdp.FullyShardedDataParallel",
                   "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"})
_RESHARDING = ("FULL_SHARD", "HYBRID_SHARD")
_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group", "torch.distributed.new_group"})


class _FileRule(Rule):
    principle = Principle.CONFIG

    def __init__(self) -> None:
        self.captures = False

    def _note_capture(self, node: cst.Call, ctx) -> None:
        if _is_capture_call(node, ctx):
            self.captures = True


class FsdpReshardAfterForward(_FileRule):
    """## What it does
    In a file that captures CUDA graphs, flags FSDP2 `fully_shard(...)` without
    `reshard_after_forward=False` (its default is `True`) and FSDP1
    `FullyShardedDataParallel(...)` whose sharding strategy re-shards after forward.

    ## Why is this bad?
    Re-sharding after forward frees the gathered parameters and all-gathers them again in
    backward, on FSDP's own streams, with storage resizes and events recorded between steps.
    Inside a capture this work leaves state outside the graph (an all-gather event recorded
    before capture, freed storage the graph still points to): capture fails or replay reads
    parameters that are no longer gathered. Projects that capture FSDP steps (torchtitan) keep
    the parameters gathered with `reshard_after_forward=False` (pytorch/torchtitan#4143).

    ## Example
    ```python
    fully_shard(block)
    with torch.cuda.graph(g):
        loss = model(static_x).sum()
    ```

    ## Use instead
    ```python
    fully_shard(block, reshard_after_forward=False)
    ```

    ## Fix safety
    No automatic fix: keeping parameters gathered costs memory (ZeRO-2 instead of ZeRO-3).

    ## Precise semantics
    FSDP2: `torch.distributed.fsdp.fully_shard` (and its `_composable` path) with no
    `reshard_after_forward` or a literal `True`. FSDP1: `FullyShardedDataParallel` with no
    `sharding_strategy` (default `FULL_SHARD`) or `ShardingStrategy.FULL_SHARD`/`HYBRID_SHARD`.
    The file captures when it calls `torch.cuda.graph`, `make_graphed_callables` or
    `capture_begin`. A value computed at run time is not judged.
    """

    code = "GS905"
    name = "fsdp-reshard-after-forward"
    consequence = Consequence.CAPTURE_FAILS
    summary = "FSDP re-sharding parameters after forward in a file that captures CUDA graphs"
    message = "{what} re-shards parameters after forward in a file that captures CUDA graphs; {remedy}: {consequence}"
    words = ("fully_shard", "FullyShardedDataParallel")
    valid = (
        "from torch.distributed.fsdp import fully_shard\nfully_shard(self.net, reshard_after_forward=False)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = self.net(x)",
        "from torch.distributed.fsdp import fully_shard\nfully_shard(self.net)\nz = self.net(x)",
        "from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy\n"
        "m = FullyShardedDataParallel(self.net, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = m(x)",
    )
    invalid = (
        "from torch.distributed.fsdp import fully_shard\nfully_shard(self.net)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = self.net(x)",
        "from torch.distributed.fsdp import fully_shard\nfully_shard(self.net, reshard_after_forward=True)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = self.net(x)",
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nm = FSDP(self.net)\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = m(x)",
    )

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[cst.Call, str, str, object]] = []

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self._note_capture(node, ctx)
        name = ctx.resolve(node.func)
        if name in FSDP2:
            arg = keyword(node, "reshard_after_forward")
            if arg is None or literal(arg.value) is True:
                self.found.append((node, "`fully_shard(...)`", "pass `reshard_after_forward=False`", ctx.here()))
        elif name in FSDP1:
            arg = keyword(node, "sharding_strategy")
            strategy = None if arg is None else (arg.value.attr.value if isinstance(arg.value, cst.Attribute) else "")
            if strategy is None or strategy in _RESHARDING:
                self.found.append((node, "`FullyShardedDataParallel(...)`",
                                   "use `sharding_strategy=ShardingStrategy.SHARD_GRAD_OP`", ctx.here()))

    def end_module(self, ctx) -> None:
        if not self.captures:
            return
        for node, what, remedy, place in self.found:
            ctx.report(self, node, always=True, at=place, what=what, remedy=remedy)


class NcclGraphRegisterExpandableSegments(_FileRule):
    """## What it does
    In a file that captures CUDA graphs and uses `torch.distributed`, flags setting
    `PYTORCH_CUDA_ALLOC_CONF` to `expandable_segments:True` when the file does not set
    `NCCL_GRAPH_REGISTER=0`.

    ## Why is this bad?
    NCCL registers the buffers of collectives captured in a graph and assumes each is one
    contiguous allocation; expandable segments map memory in pieces and remap it, so replay
    can hit an illegal memory access or hang (pytorch/pytorch#158029). Megatron-Core refuses
    this combination on GPUs before Blackwell and asks for `NCCL_GRAPH_REGISTER=0`
    (GS806 checks Megatron recipes; this rule checks plain PyTorch scripts).

    ## Example
    ```python
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    dist.init_process_group("nccl")
    ```

    ## Use instead
    ```python
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    os.environ["NCCL_GRAPH_REGISTER"] = "0"
    dist.init_process_group("nccl")
    ```

    ## Fix safety
    No automatic fix: it changes how NCCL registers buffers (a possible zero-copy loss).

    ## Precise semantics
    The setting is `os.environ[...] = "..."`, `os.environ.setdefault(...)`, `os.putenv(...)` of
    `PYTORCH_CUDA_ALLOC_CONF` (or `PYTORCH_ALLOC_CONF`) with a literal containing
    `expandable_segments:True`. The file uses torch.distributed when it calls
    `init_process_group`, `new_group` or a collective GS901 knows. `NCCL_GRAPH_REGISTER` set to
    anything but a literal other than "0" (e.g. read from the environment) keeps it silent.
    """

    code = "GS906"
    name = "nccl-graph-register-expandable-segments"
    consequence = Consequence.SILENTLY_WRONG
    summary = "`expandable_segments:True` with captured collectives and without `NCCL_GRAPH_REGISTER=0`"
    message = ("`{variable}` enables expandable segments in a file that captures collectives; set "
               "`os.environ[\"NCCL_GRAPH_REGISTER\"] = \"0\"` too: {consequence}")
    words = ("expandable_segments",)
    valid = (
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
        "os.environ['NCCL_GRAPH_REGISTER'] = '0'\ntorch.distributed.init_process_group('nccl')\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    torch.distributed.all_reduce(x)",
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    z = x * 2",
    )
    invalid = (
        "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
        "torch.distributed.init_process_group('nccl')\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    torch.distributed.all_reduce(x)",
        "import os\nos.environ.setdefault('PYTORCH_CUDA_ALLOC_CONF', 'expandable_segments:True')\n"
        "os.environ['NCCL_GRAPH_REGISTER'] = '1'\ntorch.distributed.init_process_group('nccl')\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    torch.distributed.all_reduce(x)",
    )

    def __init__(self) -> None:
        super().__init__()
        self.distributed = False
        self.register_off = False
        self.settings: list[tuple[cst.CSTNode, str, object]] = []

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for key, value in environment_writes(node, ctx):
            self._note(node, key, value, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        self._note_capture(node, ctx)
        name = ctx.resolve(node.func)
        if name in _PROCESS_GROUP or collective_name(name) is not None:
            self.distributed = True
        for key, value in environment_writes(node, ctx):
            self._note(node, key, value, ctx)

    def _note(self, node: cst.CSTNode, key: cst.BaseExpression, value: cst.BaseExpression, ctx) -> None:
        variable, setting = literal(key), literal(value)
        if variable == "NCCL_GRAPH_REGISTER":
            self.register_off = self.register_off or setting is ... or str(setting).strip() == "0"
        elif variable in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") and isinstance(setting, str):
            if "expandable_segments:true" in setting.lower().replace(" ", ""):
                self.settings.append((node, variable, ctx.here()))

    def end_module(self, ctx) -> None:
        if not (self.captures and self.distributed) or self.register_off:
            return
        for node, variable, place in self.settings:
            ctx.report(self, node, always=True, at=place, variable=variable)


RULES = (FsdpReshardAfterForward, NcclGraphRegisterExpandableSegments)
