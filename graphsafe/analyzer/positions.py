"""Line/column positions for just the nodes we report.

libcst's PositionProvider records a range for every node of the module, which costs about
twice the parse itself. We need positions for a handful of nodes per file (the hazards):

1. For each statement that holds targets, we run libcst's code generator on that statement
   alone, noting where the targets start and end, and stop as soon as they are all placed.
2. The generated text is looked up in the source: found exactly once, it is the statement.
   Otherwise Python's own `ast` (a few ms per file, only then, and shared with the caller)
   gives the first line of every statement, paired with libcst's by structure, and the text
   is matched at that line (leading comment lines and decorators move it up a few lines);
   without that line, a repeated text (`return x`) is generated again from the enclosing
   statement, a few levels up.
3. Anything that cannot be placed that way falls back to generating the whole module.

Only the node *types* of the targets are instrumented (their class-level `_codegen` is
wrapped for the duration), so every other node runs libcst's code unchanged.
"""

from __future__ import annotations

import ast
import re
import threading
from bisect import bisect_right
from typing import Callable, Iterable, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from graphsafe.analyzer.nodes import descendants
from graphsafe.lines import count_breaks, is_line_start, line_starts as _line_starts
from graphsafe.model import Position

# Wrapping is per class, so two threads must not generate positions at the same time.
_LOCK = threading.Lock()
_INDENT = re.compile(r"[ \t\f]*")

Range = tuple[Position, Position]


class _Done(Exception):
    """Raised once every target has its range: the rest need not be generated."""


class _Cursor:
    """Running line/column over the tokens generated so far (advanced lazily)."""

    __slots__ = ("tokens", "line", "column", "synced")

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.line, self.column, self.synced = 1, 0, 0

    def here(self) -> Position:
        tokens = self.tokens
        line, column = self.line, self.column
        for i in range(self.synced, len(tokens)):
            token = tokens[i]
            newlines = token.count("\n")
            if newlines:
                line += newlines
                column = len(token) - token.rfind("\n") - 1
            else:
                column += len(token)
        self.line, self.column, self.synced = line, column, len(tokens)
        return Position(line, column)


class _AnyBreakCursor(_Cursor):
    """For a source holding "\r": `\r\n`, `\r` and `\n` each end a line (graphsafe.lines). libcst
    keeps an "\r\n" in one token (a newline, a string, a continuation), never split over two."""

    __slots__ = ()

    def here(self) -> Position:
        tokens = self.tokens
        line, column = self.line, self.column
        for i in range(self.synced, len(tokens)):
            token = tokens[i]
            breaks = count_breaks(token)
            if breaks:
                line += breaks
                column = len(token) - max(token.rfind("\n"), token.rfind("\r")) - 1
            else:
                column += len(token)
        self.line, self.column, self.synced = line, column, len(tokens)
        return Position(line, column)


def _cursor_for(source: str) -> type[_Cursor]:
    return _AnyBreakCursor if "\r" in source else _Cursor


class _NoRecord:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc) -> bool:
        return False


_NO_RECORD = _NoRecord()


class _PlainState(CodegenState):
    """libcst's state, without the context manager it enters around every statement only to
    record nothing (a generator per statement: ~1/3 of generating a short statement)."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NO_RECORD


class _SyntacticState(_PlainState):
    """Records where target *statements* start syntactically (at their keyword, after comment
    lines, decorators and indentation): libcst marks that with record_syntactic_position."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.wanted: set[int] = set()
        self.starts: dict[int, Position] = {}
        self.cursor: _Cursor | None = None

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if id(node) in self.wanted and id(node) not in self.starts:
            self.starts[id(node)] = self.cursor.here()
        return _NO_RECORD


def _generate(root: cst.CSTNode, targets: Sequence[cst.CSTNode], state: CodegenState, cursor_type: type[_Cursor],
              **codegen) -> dict[int, Range]:
    """Run root's code generation into `state`, recording targets' ranges (relative to line 1).

    A statement target's range starts at its keyword (`if`, `for`, `x = ...`), not at the
    comment lines above it."""
    wanted = {id(n) for n in targets}
    cursor = cursor_type(state.tokens)
    ranges: dict[int, Range] = {}
    if isinstance(state, _SyntacticState):
        state.cursor = cursor
        state.wanted = {id(n) for n in targets if isinstance(n, (cst.BaseCompoundStatement, cst.SimpleStatementLine))}

    def wrap(original):
        def codegen(self, state: CodegenState, **kwargs) -> None:
            key = id(self)
            if key not in wanted:
                return original(self, state, **kwargs)
            start = cursor.here()
            original(self, state, **kwargs)
            if key not in ranges:
                if isinstance(state, _SyntacticState) and key in state.starts:
                    start = state.starts[key]
                ranges[key] = (start, cursor.here())
                if len(ranges) == len(wanted):
                    raise _Done()

        return codegen

    types = {type(n) for n in targets}
    originals = {tp: tp.__dict__.get("_codegen") for tp in types}
    try:
        for tp in types:
            tp._codegen = wrap(tp._codegen)
        root._codegen(state, **codegen)
    except _Done:
        pass
    finally:
        for tp, original in originals.items():
            if original is None:
                del tp._codegen
            else:
                tp._codegen = original
    return ranges


# ------------------------------------------------------------------ statement pairing
def _suite_statements(suite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def _pair(body: Sequence[cst.CSTNode], nodes: list[ast.stmt], out: dict[int, int]) -> None:
    i = 0
    for stmt in body:
        if i >= len(nodes):
            return
        node = nodes[i]
        out[id(stmt)] = node.lineno
        if isinstance(stmt, cst.SimpleStatementLine):
            i += len(stmt.body)
            continue
        i += 1
        _pair_compound(stmt, node, out)


def _pair_compound(stmt: cst.CSTNode, node: ast.stmt, out: dict[int, int]) -> None:
    if isinstance(stmt, cst.If):
        _pair(_suite_statements(stmt.body), node.body, out)
        orelse = stmt.orelse
        if isinstance(orelse, cst.If) and node.orelse:
            out[id(orelse)] = node.orelse[0].lineno
            _pair_compound(orelse, node.orelse[0], out)
        elif isinstance(orelse, cst.Else):
            _pair(_suite_statements(orelse.body), node.orelse, out)
        return
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        _pair(_suite_statements(stmt.body), node.body, out)
        for handler, ast_handler in zip(stmt.handlers, node.handlers):
            _pair(_suite_statements(handler.body), ast_handler.body, out)
        if stmt.orelse is not None:
            _pair(_suite_statements(stmt.orelse.body), node.orelse, out)
        if stmt.finalbody is not None:
            _pair(_suite_statements(stmt.finalbody.body), node.finalbody, out)
        return
    if isinstance(stmt, cst.Match):
        for case, ast_case in zip(stmt.cases, node.cases):
            _pair(_suite_statements(case.body), ast_case.body, out)
        return
    body = getattr(stmt, "body", None)
    if body is not None and hasattr(node, "body"):
        _pair(_suite_statements(body), node.body, out)
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.Else) and getattr(node, "orelse", None):
        _pair(_suite_statements(orelse.body), node.orelse, out)


def statement_lines(module: cst.Module, source: str) -> dict[int, int] | None:
    """id(libcst statement) → its first line per Python's parser; None if ast cannot parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out: dict[int, int] = {}
    _pair(module.body, tree.body, out)
    return out


# ------------------------------------------------------------------ public entry point
def node_ranges(
    module: cst.Module,
    source: str,
    targets: Iterable[tuple[cst.CSTNode, cst.CSTNode | None]],
    indent_of: Callable[[cst.CSTNode], str | None] | None = None,
    owner_of: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None,
    lines_of: Callable[[], dict[int, int] | None] | None = None,
) -> dict[int, Range]:
    """Map id(node) → (start, end) for `(node, enclosing statement)` pairs.

    `indent_of(statement)` is the indentation the statement is written at and `owner_of` the
    compound statement whose block holds it, when the caller knows them (the walker does; only
    for members of a statement list, which libcst generates exactly as written: an `elif`
    generated on its own would read `if`, so it must get None): the
    statement's generated text is then looked up in the source, and a text found exactly once
    needs no line from `ast` (whose parse of the whole file costs ~10 % of libcst's). A text
    found several times (`return x`) is matched at the line `ast` gives its statement, else
    tried again from its enclosing statements, a few levels up. `lines_of()` gives
    statement_lines of this module when the caller keeps them (memoised: it needs them too).
    Lines are 1-based, columns 0-based characters.
    """
    by_anchor: dict[int, tuple[cst.CSTNode | None, list[cst.CSTNode]]] = {}
    for node, anchor in targets:
        by_anchor.setdefault(id(anchor), (anchor, []))[1].append(node)
    if not by_anchor:
        return {}
    ranges: dict[int, Range] = {}
    known: list[dict[int, int]] = []

    def lines() -> dict[int, int]:
        if not known:
            known.append((lines_of() if lines_of is not None else statement_lines(module, source)) or {})
        return known[0]

    with _LOCK:
        line_starts = _line_starts(source)
        cursor = _cursor_for(source)
        # Each search scans the source (~13 GB/s): past ~1,000 statements one ast parse is cheaper.
        search = indent_of is not None and len(by_anchor) <= _MAX_SEARCHED
        for anchor, nodes in by_anchor.values():
            if anchor is None:
                continue
            if search:
                found = _placed_by_search(module, anchor, nodes, source, line_starts, cursor, indent_of, owner_of,
                                          lines)
                if found is not None:
                    ranges.update(found)
                    continue
            line = lines().get(id(anchor))
            if line is not None:
                ranges.update(_in_statement(module, anchor, nodes, line, source, line_starts, cursor))
        missing = [n for _, nodes in by_anchor.values() for n in nodes if id(n) not in ranges]
        if missing:
            ranges.update(_generate(module, missing, _new_state(module, missing), cursor))
    return ranges


def _new_state(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> CodegenState:
    statements = any(isinstance(n, (cst.BaseCompoundStatement, cst.SimpleStatementLine)) for n in nodes)
    kind = _SyntacticState if statements else _PlainState
    return kind(default_indent=module.default_indent, default_newline=module.default_newline)


def _shifted(relative: dict[int, Range], shift: int) -> dict[int, Range]:
    return {key: (Position(s.line + shift, s.column), Position(e.line + shift, e.column)) for key, (s, e) in relative.items()}


_MAX_SEARCHED = 1000
_OWNER_LEVELS = 3  # enclosing statements tried; higher up, the generated prefix gets long


def _placed_by_search(module, anchor, nodes, source, line_starts, cursor, indent_of, owner_of, lines
                      ) -> dict[int, Range] | None:
    placed: dict[int, Range] = {}
    for branch, held in _elif_conditions(anchor, nodes):
        # generated alone, as the `elif` it is, at the `if`'s indentation
        indent = indent_of(anchor)
        found = None if indent is None else _unique_in_source(
            module, branch, held, indent, source, line_starts, cursor, is_elif=True)
        if found is not None:
            placed.update(found)
    if placed:
        nodes = [n for n in nodes if id(n) not in placed]
        if not nodes:
            return placed
    indent = indent_of(anchor)
    if indent is None or isinstance(anchor, cst.ClassDef):
        return None
    relative, text = _generated(module, anchor, nodes, indent, cursor)
    found = _unique(relative, text, nodes, source, line_starts)
    if found is None and text and len(relative) == len({id(n) for n in nodes}) and source.find(text) != -1:
        # a repeated text (`return x`): at the line ast gives the statement, when it is written
        # at this indentation (else the text generated there would differ: _in_statement)
        line = lines().get(id(anchor))
        if (line is not None and line - 1 < len(line_starts)
                and _INDENT.match(source, line_starts[line - 1]).group() == indent):
            found = _at_line(relative, text, line, source, line_starts) or None
    if found is not None or owner_of is None:
        return None if found is None else {**placed, **found}
    root = owner_of(anchor)
    for _ in range(_OWNER_LEVELS):
        if root is None:
            return None
        indent = indent_of(root)
        if indent is None or isinstance(root, cst.ClassDef):
            return None
        found = _unique_in_source(module, root, nodes, indent, source, line_starts, cursor)
        if found is not None:
            return {**placed, **found}
        root = owner_of(root)
    return None


def _elif_conditions(anchor: cst.CSTNode, nodes: list[cst.CSTNode]):
    """(elif, the nodes its condition holds) along `anchor`'s if/elif chain. What an `elif`
    condition holds is anchored to the `if` that starts the chain (an `elif` is no member of a
    statement list); generating from there would generate every branch above it."""
    if type(anchor) is not cst.If or type(anchor.orelse) is not cst.If:
        return
    branch = anchor.orelse
    while type(branch) is cst.If:
        inside = {id(n) for n in descendants(branch.test)}
        held = [n for n in nodes if id(n) in inside]
        if held:
            yield branch, held
        branch = branch.orelse


def _generated(module: cst.Module, anchor: cst.CSTNode, nodes: list[cst.CSTNode], indent: str, cursor: type[_Cursor],
               **codegen) -> tuple[dict[int, Range], str]:
    """The targets' ranges relative to line 1 and the text generated up to the last of them,
    with `anchor` written at `indent`."""
    state = _new_state(module, nodes)
    if indent:
        state.indent_tokens.append(indent)
    relative = _generate(anchor, nodes, state, cursor, **codegen)
    return relative, "".join(state.tokens)


def _unique(relative: dict[int, Range], text: str, nodes: list[cst.CSTNode], source: str, line_starts: list[int]
            ) -> dict[int, Range] | None:
    """Ranges from the statement's generated text when that text occurs exactly once in the
    source, at the start of a line (libcst regenerates a statement's source exactly, so the one
    occurrence is the statement itself); None when it is absent or repeated (`return x`)."""
    if not text or len(relative) != len({id(n) for n in nodes}):
        return None
    first = source.find(text)
    if first == -1 or not is_line_start(source, first) or source.find(text, first + 1) != -1:
        return None
    return _shifted(relative, bisect_right(line_starts, first) - 1)


def _unique_in_source(
    module: cst.Module, anchor: cst.CSTNode, nodes: list[cst.CSTNode], indent: str, source: str, line_starts: list[int],
    cursor: type[_Cursor], **codegen,
) -> dict[int, Range] | None:
    relative, text = _generated(module, anchor, nodes, indent, cursor, **codegen)
    return _unique(relative, text, nodes, source, line_starts)


def _in_statement(
    module: cst.Module, anchor: cst.CSTNode, nodes: list[cst.CSTNode], line: int, source: str, line_starts: list[int],
    cursor: type[_Cursor],
) -> dict[int, Range]:
    if line - 1 >= len(line_starts):
        return {}
    indent = _INDENT.match(source, line_starts[line - 1]).group()
    relative, text = _generated(module, anchor, nodes, indent, cursor)
    return _at_line(relative, text, line, source, line_starts)


def _at_line(relative: dict[int, Range], text: str, line: int, source: str, line_starts: list[int]) -> dict[int, Range]:
    """The ranges when `text` is the source of the statement whose keyword is on `line`."""
    # The statement's text begins at column 0 of `line`, or a few lines above it when it
    # carries comment lines or decorators: find the line where the source matches.
    for back in range(count_breaks(text) + 1):
        first = line - back
        if first < 1:
            break
        if source.startswith(text, line_starts[first - 1]):
            return _shifted(relative, first - 1)
    return {}
