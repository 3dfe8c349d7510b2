"""Line/column positions for just the nodes we report.

libcst's PositionProvider records a range for every node of the module, which costs about
twice the parse itself. We only need positions for a handful of nodes per file (the hazards),
so we run libcst's plain code generator once and note the running line/column when a target
node starts and ends: the cost of `module.code` plus a few dictionary probes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from graphsafe.model import Position


class _SparsePositionState(CodegenState):
    # CodegenState uses __slots__, so our extra state lives in one dict-free tuple of fields
    # set on a subclass without slots.
    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.starts: dict[int, Position] = {}
        self.ranges: dict[int, tuple[Position, Position]] = {}
        self._line = 1
        self._column = 0
        self._synced = 0

    def _here(self) -> Position:
        tokens = self.tokens
        line, column = self._line, self._column
        for i in range(self._synced, len(tokens)):
            token = tokens[i]
            newlines = token.count("\n")
            if newlines:
                line += newlines
                column = len(token) - token.rfind("\n") - 1
            else:
                column += len(token)
        self._line, self._column, self._synced = line, column, len(tokens)
        return Position(line, column)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self.starts[id(node)] = self._here()

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets and key not in self.ranges:
            self.ranges[key] = (self.starts[key], self._here())

    @contextmanager
    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> Iterator[None]:
        # Syntactic range: without surrounding parentheses and leading whitespace/comments.
        key = id(node)
        if key not in self.targets:
            yield
            return
        start = self._here()
        try:
            yield
        finally:
            end = self._here()
            if end_node is not None and id(end_node) in self.ranges:
                end = self.ranges[id(end_node)][1]
            self.ranges[key] = (start, end)


def node_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[Position, Position]]:
    """Map id(node) → (start, end) for each of `nodes` (1-based lines, 0-based columns)."""
    targets = {id(n) for n in nodes}
    if not targets:
        return {}
    state = _SparsePositionState(module, targets)
    module._codegen(state)
    return state.ranges
