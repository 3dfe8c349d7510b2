"""Timing events around a step are host work: made and recorded by the wrapper, not the core.

    if x.is_cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()

`check` reports only the waits on such events (`end.synchronize()`, `elapsed_time`: GS106), so the
split would keep their making in the core: a timing event cannot be recorded while a stream is
captured, and on a CPU run the core would return `start` and `end` unbound. A top-level statement
of the region (or an `if` whose body is only such statements) that makes CUDA events
(`*.Event(...)`) or records one it made (`start.record()`) is marked as host work, so the wrapper
makes and records it before the core and the timing spans the graph's replay.

Static path: libcst only, no torch."""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import region_statements

TIMING = "GS106"  # what the waits on the same events are reported as


def timing_event_lines(source: str, qualname: str) -> dict[int, set[str]]:
    """Line → {TIMING} for every line of the region's statements that only make or record events."""
    region = region_statements(source, qualname)
    if region is None:
        return {}
    body, positions = region
    events: set[str] = set()
    marked: dict[int, set[str]] = {}
    for statement in body:
        if _only_events(statement, events):
            where = positions[statement]
            marked.update({line: {TIMING} for line in range(where.start.line, where.end.line + 1)})
    return marked


def _only_events(statement: cst.BaseStatement, events: set[str]) -> bool:
    """Whether the statement only makes events (their names join `events`) or records them."""
    if isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock):
        scope = set(events)
        if statement.body.body and all(_only_events(s, scope) for s in statement.body.body):
            events |= scope  # the names stay events after the block (a later `end.record()`)
            return True
        return False
    return _adds(statement, events)


def _adds(statement: cst.BaseStatement, events: set[str]) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
        names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
        values = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        if len(names) == len(values) and all(isinstance(n, cst.Name) for n in names) and all(map(_makes_event, values)):
            events.update(n.value for n in names)
            return True
        return False
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and not small.value.args:
        func = small.value.func
        return isinstance(func, cst.Attribute) and func.attr.value == "record" \
            and isinstance(func.value, cst.Name) and func.value.value in events
    return False


def _makes_event(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "Event" \
        and isinstance(node.func.value, cst.Attribute) and node.func.value.attr.value in ("cuda", "xpu", "mps")
