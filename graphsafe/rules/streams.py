"""Stream and collective rules (GS9xx): work that leaves the capturing stream.

A capture records the kernels launched on the capturing stream and on streams that join it.
Collectives are the most reported failure family in real projects (NCCL under capture needs a
warmed-up process group; host-waiting collectives fail outright), and a side stream forked in
the region must join the capturing stream again before the capture ends ("capturing stream
has unjoined work", cudaErrorStreamCaptureUnjoined, 904).
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children, descendants
from graphsafe.model import Consequence, Principle
from graphsafe.rules.base import Callees, Rule

# torch.distributed's collectives and point-to-point calls, by the names its modules export.
_DISTRIBUTED = frozenset(
    """all_reduce all_gather all_gather_into_tensor _all_gather_base reduce_scatter reduce_scatter_tensor
    _reduce_scatter_base broadcast reduce all_to_all all_to_all_single gather scatter barrier monitored_barrier
    send recv isend irecv batch_isend_irecv all_gather_object broadcast_object_list gather_object
    scatter_object_list all_reduce_coalesced all_gather_coalesced""".split()
)
_MODULES = ("torch.distributed.", "torch.distributed.nn.", "torch.distributed.nn.functional.",
            "torch.distributed._functional_collectives.")
# Horovod's torch API (a common alternative to torch.distributed in training scripts).
_HOROVOD = frozenset(
    """allreduce allreduce_ allreduce_async allreduce_async_ allgather allgather_async broadcast broadcast_
    broadcast_async alltoall alltoall_async reducescatter grouped_allreduce grouped_allreduce_async synchronize
    join barrier broadcast_object allgather_object""".split()
)
# Collectives that wait on the host whatever the backend: never capturable.
_HOST_WAITING = frozenset(
    """barrier monitored_barrier all_gather_object broadcast_object_list gather_object scatter_object_list
    send recv synchronize join broadcast_object allgather_object""".split()
)


def collective_name(resolved: str | None) -> str | None:
    """`torch.distributed.all_reduce` → "all_reduce" (None for anything else)."""
    if not resolved:
        return None
    for prefix in _MODULES:
        if resolved.startswith(prefix) and resolved[len(prefix):] in _DISTRIBUTED:
            return resolved[len(prefix):]
    if resolved.startswith("horovod.torch.") and resolved[len("horovod.torch."):] in _HOROVOD:
        return resolved[len("horovod.torch."):]
    return None


class _StreamRule(Rule):
    principle = Principle.CONFIG
    consequence = Consequence.CAPTURE_FAILS


class CollectiveInRegion(_StreamRule):
    """## What it does
    Flags a collective or point-to-point call (`dist.all_reduce`, `dist.broadcast`,
    `dist.send`, Horovod's `hvd.allreduce`, ...) inside a captured region.

    ## Why is this bad?
    A collective captures only with NCCL, a process group created and warmed up before capture
    (the first collective of a group sets up communicators and allocates, which capture
    forbids), the same ranks capturing the same graph in the same order, and every async
    handle waited inside the region. `barrier`, the object collectives, `send`/`recv` and
    Horovod's calls wait on the host: capture fails ("operation not permitted when stream is
    capturing"). On a gloo or CPU group nothing can be captured.

    ## Example
    ```python
    torch.distributed.all_reduce(grad)
    ```

    ## Use instead
    Keep the collective out of the graph (reduce after `graph.replay()`), or make it capturable:
    NCCL, warm the group up with a few eager steps on a side stream before capture, and
    capture every rank in the same order. DDP: build it on a side stream and run 11 warm-up
    iterations (GS704). Replace `barrier`/object collectives with tensor collectives or move
    them out of the step.

    ## Fix safety
    No fix: where a collective belongs (inside the graph, with the group prepared for it, or
    after the replay) is a decision about the whole training loop.

    ## Precise semantics
    Flagged: `torch.distributed`'s `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`,
    `all_to_all`, `barrier`, `send`/`recv`, `batch_isend_irecv`, the object collectives,
    `torch.distributed.nn`'s differentiable ones, and Horovod's
    `hvd.allreduce`/`allgather`/`broadcast`.
    """

    code = "GS901"
    name = "collective-in-region"
    summary = "a collective (`all_reduce`, `all_gather`, `barrier`, Horovod, ...) inside a captured region"
    message = "`{what}` is a collective inside a captured region: {detail}: {consequence}"
    valid = (
        "y = x * 2\nworld = torch.distributed.get_world_size()",
        "rank = torch.distributed.get_rank()\ny = x + rank",
    )
    invalid = (
        "torch.distributed.all_reduce(x)",
        "parts = [torch.empty_like(x) for _ in range(2)]\ntorch.distributed.all_gather(parts, x)",
        "torch.distributed.barrier()",
        "y = torch.distributed.nn.all_reduce(x)",
    )
    calls = Callees(_DISTRIBUTED | _HOROVOD)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = collective_name(ctx.resolve(node.func))
        if name is None:
            return
        if name in _HOST_WAITING:
            detail = "it waits on the host"
        else:
            detail = "it captures only on a warmed-up NCCL group, every rank capturing alike"
        ctx.report(self, node, what=_shown(ctx.resolve(node.func)), detail=detail)


class UnjoinedSideStream(_StreamRule):
    """## What it does
    Flags `with torch.cuda.stream(side):` inside a captured region when the function does not
    join `side` back into the stream it came from afterwards (`current.wait_stream(side)`, or
    waiting on an event recorded on it).

    ## Why is this bad?
    A capture may fork work onto another stream, but every forked stream must join the
    capturing stream again before the capture ends; otherwise `capture_end` fails with
    "capturing stream has unjoined work" (cudaErrorStreamCaptureUnjoined). The side stream
    must also wait on the capturing stream before its first kernel, or its work is not part of
    the graph.

    ## Example
    ```python
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = x * 2
    return y
    ```

    ## Use instead
    ```python
    current = torch.cuda.current_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        y = x * 2
    current.wait_stream(side)
    return y
    ```

    ## Fix safety
    No fix: where the join belongs depends on which later work reads the side stream's results.
    """

    code = "GS902"
    name = "unjoined-side-stream"
    summary = "a side stream used in a captured region without joining the capturing stream again"
    message = "work on `{stream}` is not joined back into the capturing stream (`wait_stream`): {consequence}"
    valid = (
        "side = torch.cuda.Stream()\ncurrent = torch.cuda.current_stream()\nside.wait_stream(current)\n"
        "with torch.cuda.stream(side):\n    y = x * 2\ncurrent.wait_stream(side)",
        "side = torch.cuda.Stream()\ndone = torch.cuda.Event()\nwith torch.cuda.stream(side):\n    y = x * 2\n"
        "    done.record()\ntorch.cuda.current_stream().wait_event(done)",
    )
    invalid = (
        "side = torch.cuda.Stream()\nwith torch.cuda.stream(side):\n    y = x * 2",
        "side = torch.cuda.Stream()\nwith torch.cuda.stream(side):\n    y = x * 2\nside.wait_stream(torch.cuda.current_stream())",
    )
    words = ("stream",)

    def visit_With(self, node: cst.With, ctx) -> None:
        for item in node.items:
            call = item.item
            if not (isinstance(call, cst.Call) and call.args and ctx.resolve(call.func) in ("torch.cuda.stream",)):
                continue
            stream = ctx.code_for(call.args[0].value)
            if not _joined_after(ctx.function_node, node, stream, ctx):
                ctx.report(self, call, stream=stream)


def _joined_after(function: cst.CSTNode | None, block: cst.With, stream: str, ctx) -> bool:
    """Does code after `block` wait on `stream` (`x.wait_stream(stream)`), or on an event
    recorded inside the block (`x.wait_event(e)`, `e.wait()` after `e.record()` in it)?"""
    if function is None:
        return True  # module-level code: not judged
    recorded = {ctx.code_for(c.func.value) for c in descendants(block.body)
                if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "record"}
    after = False
    for node in _in_order(function, skip=block):
        if node is block:
            after = True
            continue
        if not after or not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        method = node.func.attr.value
        arguments = [ctx.code_for(a.value) for a in node.args]
        if method == "wait_stream" and stream in arguments:
            return True
        if method == "wait_event" and set(arguments) & recorded:
            return True
        if method == "wait" and ctx.code_for(node.func.value) in recorded:
            return True
    return False


def _in_order(node: cst.CSTNode, skip: cst.CSTNode | None = None):
    """Nodes in source order; the inside of `skip` (the block being judged) is left out."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not skip:
            stack.extend(reversed(list(children(current))))


def _shown(resolved: str) -> str:
    for prefix, short in (("torch.distributed.nn.functional.", "torch.distributed.nn."),
                          ("torch.distributed.", "torch.distributed."), ("horovod.torch.", "hvd.")):
        if resolved.startswith(prefix):
            return short + resolved[len(prefix):]
    return resolved


RULES = (CollectiveInRegion, UnjoinedSideStream)
