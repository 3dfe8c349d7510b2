"""Reparse only what an edit touched: the libcst module of a buffer, kept between edits.

An editor sends one small change at a time; parsing the whole buffer again costs most of
an analysis (libcst: ~60 ms for torch/_tensor.py). libcst nodes are immutable and carry no
positions, so the statements an edit did not touch can be reused as they are:

1. The changed span is the text between the common prefix and suffix of the old and new
   text. Statement offsets come from the lengths of each statement's generated code
   (libcst round-trips text exactly), computed once per node and kept while it lives.
2. The span is located in the module's top-level statements; if it lies inside the body of
   one `def`/`class`, the search descends into that body (a method of a 1.7k-line class).
3. The touched statements (with their leading comment lines) are parsed alone, wrapped so
   that the parser sees what it would see in the whole file: the file's indentation unit
   and newline (they decide how libcst stores indents and newlines), the enclosing blocks'
   indentation, a block-ending statement before and a statement after (they decide which
   statement owns comment lines in between). The wrapped parse must come out in exactly
   the expected shape; the new statements replace the old ones and the ancestors are
   rebuilt.
4. Anything unusual (comments that could change owner, a changed indentation unit or
   newline, a chunk that does not parse alone, no trailing newline) falls back one level
   up, and at the top to a full parse. A syntax error is always confirmed by a full parse.

The result equals `libcst.parse_module(text)` node for node; tests/test_incremental.py
checks that over random edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")
_FALLBACK_INDENT = "    "  # libcst's default indent for a file without indented blocks


class _Fallback(Exception):
    """This level cannot be reparsed in part: reparse the enclosing statement instead."""


@dataclass(frozen=True)
class _Layout:
    """Lengths, in the container's generated code, of what precedes its statements, of each
    statement, and of what follows them (the module's header and footer, or a def's
    header lines and its block's trailing comment lines)."""

    prefix: int
    children: tuple[int, ...]
    suffix: int

    @property
    def total(self) -> int:
        return self.prefix + sum(self.children) + self.suffix


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search: each comparison runs in C
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:] == b[len(b) - middle:]:
            low = middle
        else:
            high = middle - 1
    return low


def _descendable(node: cst.CSTNode) -> bool:
    """A statement whose block is the last thing in it, so its children end where it ends."""
    return isinstance(node, (cst.FunctionDef, cst.ClassDef)) and isinstance(node.body, cst.IndentedBlock)


def _suites(node: cst.CSTNode):
    """The suites of a compound statement in source order."""
    if isinstance(node, cst.If):
        yield node.body
        if node.orelse is not None:
            yield from _suites(node.orelse) if isinstance(node.orelse, cst.If) else (node.orelse.body,)
    elif isinstance(node, (cst.Try, cst.TryStar)):
        yield node.body
        for handler in node.handlers:
            yield handler.body
        if node.orelse is not None:
            yield node.orelse.body
        if node.finalbody is not None:
            yield node.finalbody.body
    elif isinstance(node, cst.Match):
        for case in node.cases:
            yield case.body
    elif isinstance(node, cst.BaseCompoundStatement):
        yield node.body
        orelse = getattr(node, "orelse", None)
        if orelse is not None:
            yield orelse.body


def _first_indent(statements, default: str) -> str | None:
    """The indentation of the first indented block among `statements` (the file's first
    INDENT token decides libcst's `default_indent`); None when there is none."""
    for statement in statements:
        for suite in _suites(statement):
            if isinstance(suite, cst.IndentedBlock):
                return default if suite.indent is None else suite.indent
    return None


class IncrementalParser:
    """The libcst module of one buffer, updated edit by edit. Not thread-safe (one per buffer)."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.module: cst.Module | None = None
        self._layouts: dict[int, tuple[cst.CSTNode, _Layout]] = {}  # id(node) → (node, layout)
        self.reparsed = False  # the last parse() reused the previous module (for tests and stats)

    def parse(self, text: str) -> cst.Module:
        """`libcst.parse_module(text)`, reusing the previous module's untouched statements.

        Raises libcst.ParserSyntaxError exactly when parse_module would; the last module
        that parsed is kept, so the next edit is again compared with good text."""
        module = None
        self.reparsed = False
        if self.module is not None and self.text is not None:
            if text == self.text:
                self.reparsed = True
                return self.module
            try:
                module = self._update(text)
                self.reparsed = True
            except Exception:  # cannot reuse (or a syntax error to confirm): the full parse decides
                module = None
        if module is None:
            module = cst.parse_module(text)
            self._layouts = {}
        self.text, self.module = text, module
        return module

    def prepare(self) -> None:
        """Compute now what the next edit would otherwise compute first: the statements'
        lengths in the module and in its top-level defs and classes (an editor calls this
        when idle; about one code generation of the file, once per full parse)."""
        module = self.module
        if module is None or not module.has_trailing_newline:
            return
        layout = self._layout(module, [])
        for statement, length in zip(module.body, layout.children):
            if _descendable(statement):
                self._layout(statement, [], length)

    # ------------------------------------------------------------------ layouts
    def _state(self, indents: list[str]) -> CodegenState:
        state = CodegenState(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.indent_tokens.extend(indents)
        return state

    def _length(self, node: cst.CSTNode, indents: list[str]) -> int:
        state = self._state(indents)
        node._codegen(state)
        return sum(map(len, state.tokens))

    def _lines_length(self, lines, indents: list[str]) -> int:
        state = self._state(indents)
        for line in lines:
            line._codegen(state)
        return sum(map(len, state.tokens))

    def _layout(self, node: cst.CSTNode, indents: list[str], total: int | None = None) -> _Layout:
        cached = self._layouts.get(id(node))
        if cached is not None and cached[0] is node:
            return cached[1]
        if isinstance(node, cst.Module):
            children = tuple(self._length(s, []) for s in node.body)
            layout = _Layout(self._lines_length(node.header, []), children, self._lines_length(node.footer, []))
        else:
            block = node.body
            inner = [*indents, self._block_indent(block)]
            children = tuple(self._length(s, inner) for s in block.body)
            suffix = self._lines_length(block.footer, inner)
            layout = _Layout(total - sum(children) - suffix, children, suffix)
        self._layouts[id(node)] = (node, layout)
        return layout

    def _block_indent(self, block: cst.IndentedBlock) -> str:
        return self.module.default_indent if block.indent is None else block.indent

    def _prune(self, module: cst.Module) -> None:
        """Keep the layouts of nodes still in the tree (others would pin old trees in memory)."""
        kept: dict[int, tuple[cst.CSTNode, _Layout]] = {}
        pending = [module]
        while pending:
            node = pending.pop()
            entry = self._layouts.get(id(node))
            if entry is None or entry[0] is not node:
                continue
            kept[id(node)] = entry
            pending.extend(node.body if isinstance(node, cst.Module) else node.body.body)
        self._layouts = kept

    # ------------------------------------------------------------------ update
    def _update(self, text: str) -> cst.Module:
        old_text, module = self.text, self.module
        if not module.body or not module.has_trailing_newline:
            raise _Fallback()
        match = _NEWLINE.search(text)
        if (match.group(0) if match else "\n") != module.default_newline:
            raise _Fallback()  # the file's newline convention changed
        prefix = _common_prefix(old_text, text)
        suffix = _common_suffix(old_text, text, min(len(old_text), len(text)) - prefix)
        change = (prefix, len(old_text) - suffix)  # the replaced span of the old text
        delta = len(text) - len(old_text)
        layout = self._layout(module, [])
        if layout.total != len(old_text):
            raise _Fallback()  # lengths disagree with the text: never guess
        new_module, new_layout = self._replace(module, layout, 0, [], change, delta, text)
        self._layouts[id(new_module)] = (new_module, new_layout)
        self._prune(new_module)
        return new_module

    def _replace(self, node, layout: _Layout, base: int, indents: list[str], change: tuple[int, int], delta: int,
                 text: str):
        """`node` (module, def or class) with the statements that `change` touches reparsed;
        returns (new node, its layout). `base` is the node's offset in the old text."""
        start, end = change
        is_module = isinstance(node, cst.Module)
        statements = node.body if is_module else node.body.body
        offsets = []
        position = base + layout.prefix
        for length in layout.children:
            offsets.append((position, position + length))
            position += length
        touched = [k for k, (s, e) in enumerate(offsets) if s <= end and e >= start]
        if is_module:
            if start <= base + layout.prefix:
                touched.append(0)  # the header belongs with the first statement
            if end >= offsets[-1][1]:
                touched.append(len(statements) - 1)  # so does the footer with the last
        elif not touched or start < offsets[0][0] or end > offsets[-1][1]:
            raise _Fallback()  # the def's own lines changed
        first, last = min(touched), max(touched)
        inner = indents if is_module else [*indents, self._block_indent(node.body)]

        child_start, child_end = offsets[first]
        if first == last and _descendable(statements[first]) and child_start < start and end < child_end:
            # Strictly inside one def or class: text at its edges may belong to its neighbours.
            child = statements[first]
            try:
                child_layout = self._layout(child, inner, child_end - child_start)
                replaced, replaced_layout = self._replace(child, child_layout, child_start, inner, change, delta, text)
            except _Fallback:
                pass
            else:
                self._layouts[id(replaced)] = (replaced, replaced_layout)
                children = list(layout.children)
                children[first] = replaced_layout.total
                body = (*statements[:first], replaced, *statements[first + 1:])
                return self._rebuild(node, body), _Layout(layout.prefix, tuple(children), layout.suffix)

        at_top = is_module and first == 0
        at_end = is_module and last == len(statements) - 1
        chunk_start = base if at_top else offsets[first][0]
        chunk_end = len(text) if at_end else offsets[last][1] + delta
        chunk = text[chunk_start:chunk_end]
        if len(chunk) > len(text) // 2:
            raise _Fallback()  # most of the file: a plain parse is cheaper (no lengths to generate)
        new, header, footer, has_trailing_newline = self._parse_chunk(chunk, inner, at_top, at_end)
        following = statements[last + 1:]
        if following and any(line.whitespace.value for line in following[0].leading_lines):
            raise _Fallback()  # indented comments after the chunk could change owner
        body = (*statements[:first], *new, *following)
        if is_module and _first_indent(statements[:first], "") is None:
            found = _first_indent(body, self.module.default_indent)
            if (found or _FALLBACK_INDENT) != self.module.default_indent:
                raise _Fallback()  # the file's indentation unit changed
        lengths = tuple(self._length(s, inner) for s in new)
        children = (*layout.children[:first], *lengths, *layout.children[last + 1:])
        new_prefix, new_suffix = layout.prefix, layout.suffix
        if at_top:
            new_prefix = self._lines_length(header, [])
        if at_end:
            new_suffix = self._lines_length(footer, [])
        rebuilt = self._rebuild(node, body, header if at_top else None, footer if at_end else None,
                                has_trailing_newline if at_end else None)
        if is_module and not rebuilt.has_trailing_newline:
            raise _Fallback()  # lengths would be off by the missing newline
        return rebuilt, _Layout(new_prefix, children, new_suffix)

    @staticmethod
    def _rebuild(node, body, header=None, footer=None, has_trailing_newline=None):
        """`node` with new statements (libcst's parser gives tuples; so do we)."""
        if not isinstance(node, cst.Module):
            return node.with_changes(body=node.body.with_changes(body=tuple(body)))
        changes = {"body": tuple(body)}
        if header is not None:
            changes["header"] = header
        if footer is not None:
            changes["footer"] = footer
        if has_trailing_newline is not None:
            changes["has_trailing_newline"] = has_trailing_newline
        return node.with_changes(**changes)

    def _parse_chunk(self, chunk: str, indents: list[str], at_top: bool, at_end: bool):
        """Parse `chunk` (whole statements at indentation `indents`) as the file would.

        Returns (statements, header, footer, has_trailing_newline); header/footer only where
        the chunk starts/ends the module."""
        newline, unit = self.module.default_newline, self.module.default_indent
        # The first INDENT sets the indentation unit; a block-ending statement before the
        # chunk claims deeper-indented comments as the real previous statement would.
        parts = ["if 1:", newline, unit, "pass", newline]
        for depth in range(len(indents)):
            parts += ["".join(indents[:depth]), "if 1:", newline]
        level = "".join(indents)
        if indents:
            parts += [level, "if 1:", newline, level, unit, "pass", newline]
        parts.append(chunk)
        if not at_end:
            parts += [level, "pass", newline]  # a statement after, as in the file
        parsed = cst.parse_module("".join(parts))
        top = parsed.body
        dummy = top[0]
        if not _closed(dummy):
            raise _Fallback()
        if indents:
            if len(top) != 2 or (parsed.footer and not at_end):
                raise _Fallback()
            holder = top[1]
            for depth in range(len(indents)):
                if not isinstance(holder, cst.If) or holder.orelse is not None or not isinstance(holder.body, cst.IndentedBlock):
                    raise _Fallback()
                block = holder.body
                if block.footer or self._block_indent(block) != indents[depth]:
                    raise _Fallback()
                if depth < len(indents) - 1:
                    if len(block.body) != 1:
                        raise _Fallback()
                    holder = block.body[0]
            statements = list(block.body)
            if len(statements) < 3 or not _closed(statements[0]):
                raise _Fallback()
            statements = statements[1:]
        else:
            statements = list(top[1:])
        if not at_end:
            sentinel = statements.pop() if statements else None
            if sentinel is None or not _is_pass(sentinel):
                raise _Fallback()
            if parsed.footer:
                raise _Fallback()
        if not statements:
            raise _Fallback()
        header = None
        if at_top:
            header = statements[0].leading_lines
            statements[0] = statements[0].with_changes(leading_lines=())
        elif any(line.whitespace.value for line in statements[0].leading_lines):
            raise _Fallback()  # indented comments before the chunk could belong to the statement before
        return statements, header, parsed.footer if at_end else None, parsed.has_trailing_newline


def _closed(dummy: cst.CSTNode) -> bool:
    """The wrapper's block-ending statement kept no trailing lines (they belong to the chunk)."""
    return (isinstance(dummy, cst.If) and isinstance(dummy.body, cst.IndentedBlock) and not dummy.body.footer
            and dummy.orelse is None and len(dummy.body.body) == 1 and _is_pass(dummy.body.body[0]))


def _is_pass(statement: cst.CSTNode) -> bool:
    """A bare `pass` line: no comment lines before it, nothing after it on its line."""
    return (isinstance(statement, cst.SimpleStatementLine) and not statement.leading_lines
            and len(statement.body) == 1 and isinstance(statement.body[0], cst.Pass)
            and statement.trailing_whitespace.comment is None)
