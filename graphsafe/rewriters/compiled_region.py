"""A region decorated with `@torch.compile(...)`: the decorator leaves the step when `graph` graphs it.

    @torch.compile(mode="reduce-overhead")        # graphsafe: @torch.compile(mode="reduce-overhead") ...
    @torch.no_grad()                        →     @torch.no_grad()
    def eval_step(model, x):                      def eval_step(model, x):

After the split, the region is the host wrapper around a core that graphed() graphs. A compiled
wrapper would have dynamo trace the wrapper's host work and graphed()'s own capture and replay
(and with mode="reduce-overhead" capture CUDA graphs of its own around them). The decorator line
becomes a comment that says so, which keeps the file's line count (the diagnostics' lines). Only
a decorator on one line is turned into a comment; one over several lines is left, with a note.

Static path: libcst only, no torch."""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import _decorator_name, _find

COMPILE = "torch.compile"


def uncompiled_region(source: str, qualname: str) -> tuple[str, str | None]:
    """(source with the region's `@torch.compile` decorators turned into comments, a note or None)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source, None
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    if found is None:
        return source, None
    lines = source.splitlines(keepends=True)
    removed, kept = [], []
    for decorator in found[1].decorators:
        if _decorator_name(decorator) != COMPILE:
            continue
        where = positions[decorator]
        text = module.code_for_node(decorator.decorator)
        if where.start.line != where.end.line:
            kept.append(where.start.line)
            continue
        line = lines[where.start.line - 1]
        indent = line[:len(line) - len(line.lstrip())]
        ending = line[len(line.rstrip("\r\n")):]
        lines[where.start.line - 1] = f"{indent}# graphsafe: @{text} removed: graphed() graphs the core{ending}"
        removed.append((where.start.line, text))
    if not removed and not kept:
        return source, None
    if kept:
        return source, (f"line {', '.join(map(str, kept))}: `@torch.compile(...)` on {qualname} is left (it spans "
                        f"several lines): remove it by hand, a compiled wrapper would trace graphed()'s capture")
    what = ", ".join(f"line {line} `@{text}`" for line, text in removed)
    return "".join(lines), (f"{what} removed from {qualname}: graphed() graphs its core now; a compiled wrapper "
                            f"would trace graphed()'s capture and replay (and reduce-overhead capture graphs of its own)")
