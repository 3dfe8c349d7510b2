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
from graphsafe.rules.syntax import keyword, literal

# torch.distributed's collectives and point-to-point calls, by the names its modules export.
_DISTRIBUTED = frozenset(
    """all_reduce all_gather all_gather_into_tensor _all_gather_base reduce_scatter reduce_scatter_tensor
    _reduce_scatter_base broadcast reduce all_to_all all_to_all_single gather scatter barrier monitored_barrier
    send recv isend irecv batch_isend_irecv all_gather_object broadcast_object_list gather_object
    scatter_object_list all_reduce_coalesced all_gather_coalesced all_gather_single reduce_scatter_single""".split()
)  # the last two: torch 2.13
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


DISTRIBUTED_CALLS = _DISTRIBUTED  # the tracer wraps the same names (runtime/trace_streams.py)


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
    `hvd.allreduce`/`allgather`/`broadcast`; also called through an attribute that holds one
    (`self.all_reduce_fn = distributed.all_reduce if use_ddp else noop`, then
    `self.all_reduce_fn(x)`).
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

    ## Precise semantics
    A join is, after the block in the same function: `x.wait_stream(side)`; or an event
    recorded inside the block (`e.record()`) or on the side stream after it (`e.record(side)`,
    `e = side.record_event()`) and then waited (`x.wait_event(e)`, `e.wait()`). An event
    recorded on another stream does not join `side`. Module-level code is not judged.
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


class AsyncCollectiveNotWaited(_StreamRule):
    """## What it does
    Flags a collective called with `async_op=True` inside a captured region whose handle is not
    waited inside the region: dropped, never waited, waited only after the `torch.cuda.graph`
    block, or returned from the region's root to be waited by its caller.

    ## Why is this bad?
    An async collective runs on NCCL's own stream; `work.wait()` is what joins that stream back
    into the stream that issued it. Inside a capture the wait must happen before the capture
    ends: NCCL's stream is then a fork of the capture that was never joined, and `capture_end`
    fails ("capturing stream has unjoined work", cudaErrorStreamCaptureUnjoined). A wait after
    the capture ends waits on work that will not run again: replays never wait for the
    collective.

    ## Example
    ```python
    with torch.cuda.graph(g):
        work = dist.all_reduce(grad, async_op=True)
        out = model(x)
    work.wait()
    ```

    ## Use instead
    ```python
    with torch.cuda.graph(g):
        work = dist.all_reduce(grad, async_op=True)
        out = model(x)
        work.wait()
    ```

    ## Fix safety
    No fix: where the wait belongs depends on what later reads the collective's output.

    ## Precise semantics
    The collective is one GS901 knows, with `async_op=True` written literally. Its handle is
    judged in the function (or the `torch.cuda.graph` block) that issues it: a `handle.wait()`
    later in that block or function keeps it silent. A handle stored in an attribute, a
    container or passed to a call is not judged (its wait may be anywhere); a returned handle is
    flagged only where the function is itself the region's root.
    """

    code = "GS903"
    name = "async-collective-not-waited"
    summary = "an `async_op=True` collective whose handle is not waited inside the captured region"
    message = "`{what}(..., async_op=True)` {how}: NCCL's stream is not joined back before the capture ends: {consequence}"
    valid = (
        "work = torch.distributed.all_reduce(x, async_op=True)\ny = x * 2\nwork.wait()",
        "torch.distributed.all_reduce(x)",
        "work = torch.distributed.all_reduce(x, async_op=True)\nself.pending.append(work)",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    work = torch.distributed.all_reduce(x, async_op=True)\n"
        "    work.wait()",
    )
    invalid = (
        "torch.distributed.all_reduce(x, async_op=True)",
        "work = torch.distributed.all_gather_into_tensor(y, x, async_op=True)\nz = y * 2",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    work = torch.distributed.all_reduce(x, async_op=True)\n"
        "work.wait()",
        "work = torch.distributed.reduce_scatter_tensor(y, x, async_op=True)\nreturn y, work",
    )
    calls = Callees(_DISTRIBUTED, keywords=("async_op",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = collective_name(ctx.resolve(node.func))
        arg = keyword(node, "async_op")
        if name is None or arg is None or literal(arg.value) is not True:
            return
        what = _shown(ctx.resolve(node.func))
        statement = ctx.statement
        body = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        small = body[0] if len(body) == 1 else None
        if isinstance(small, cst.Expr) and small.value is node:
            ctx.report(self, node, what=what, how="drops its handle, so it is never waited")
            return
        if not (isinstance(small, cst.Assign) and small.value is node and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)):
            return  # a handle kept in a structure: its wait is not visible here
        handle = small.targets[0].target.value
        scope = ctx.function_node or ctx.scope.units[0].node
        block = _capture_block(ctx, scope)
        verdict = _handle_fate(scope, statement, handle, block)
        if verdict == "waited":
            return
        if verdict == "waited-after":
            ctx.report(self, node, what=what, how=f"is waited (`{handle}.wait()`) only after the capture block ends")
        elif verdict == "returned":
            ctx.report(self, node, root_only=True, what=what,
                       how=f"returns its handle `{handle}` to the caller, which waits outside the region")
        elif verdict == "never":
            ctx.report(self, node, what=what, how=f"keeps its handle `{handle}` but never waits on it")


def _capture_block(ctx, scope: cst.CSTNode) -> cst.With | None:
    """The innermost `torch.cuda.graph` block being walked, if any (its unit holds the
    block's `with` item)."""
    for unit in reversed(ctx.scope.units):
        if not unit.is_function and unit.marks:
            for node in descendants(scope):
                if isinstance(node, cst.With) and any(unit.node in (item, item.item) for item in node.items):
                    return node
            return None
    return None


def _handle_fate(scope: cst.CSTNode, statement: cst.CSTNode, handle: str, block: cst.With | None) -> str:
    """What happens to `handle` after `statement`: "waited" (inside `block`, or anywhere after
    when there is no block), "waited-after" (only after `block`), "returned", "escapes" (stored
    or passed on: not judged) or "never"."""
    inside = {id(n) for n in descendants(block)} if block is not None else None
    returned = set()
    waits = set()
    after = False
    fate = "never"
    waited_after = False
    for node in _in_order(scope, skip=statement):
        if node is statement:
            after = True
            continue
        if not after:
            continue
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None:
            returned.update(id(n) for n in descendants(node.value))
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and isinstance(node.func.value, cst.Name) and node.func.value.value == handle):
            waits.add(id(node.func.value))
            if node.func.attr.value == "wait":
                if inside is None or id(node) in inside:
                    return "waited"
                waited_after = True
        elif isinstance(node, cst.Name) and node.value == handle and id(node) not in waits:
            if id(node) in returned:
                fate = "returned"
            elif fate == "never":
                fate = "escapes"
    if waited_after:
        return "waited-after"
    return fate


def _joined_after(function: cst.CSTNode | None, block: cst.With, stream: str, ctx) -> bool:
    """Does code after `block` wait on `stream` (`x.wait_stream(stream)`), or on an event
    recorded on it: inside the block (`e.record()`), or after it on that stream (`e.record(stream)`,
    `e = stream.record_event()`), then waited (`x.wait_event(e)`, `e.wait()`)?"""
    if function is None:
        return True  # module-level code: not judged
    recorded = {ctx.code_for(c.func.value) for c in descendants(block.body)
                if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "record"}
    after = False
    for node in _in_order(function, skip=block):
        if node is block:
            after = True
            continue
        if after:
            recorded |= _events_recorded_on(node, stream, ctx)
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


def _events_recorded_on(node: cst.CSTNode, stream: str, ctx) -> set[str]:
    """`e.record(stream)` → {"e"}; `e = stream.record_event()` → {"e"}; else nothing."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "record":
        if node.args and ctx.code_for(node.args[0].value) == stream:
            return {ctx.code_for(node.func.value)}
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call):
        func = node.value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "record_event" and ctx.code_for(func.value) == stream:
            return {ctx.code_for(node.targets[0].target)}
    return set()


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


RULES = (CollectiveInRegion, UnjoinedSideStream, AsyncCollectiveNotWaited)
