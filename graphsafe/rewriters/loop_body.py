"""A loop whose exit reads the device: its body becomes the region, the loop stays in Python.

    def forward(self, enc, lens):                      def forward(self, enc, lens):
        tokens, done = start(enc), zeros(...)              tokens, done = start(enc), zeros(...)
        for step in range(max_steps):                      for step in range(max_steps):
            logits = self.step(tokens, enc)       →            logits, tokens, done = self.forward_body(tokens, enc, done, lst)
            tokens = logits.argmax(-1)                         if done.all():
            done = done | (tokens == eos)                          break
            lst.append(logits)                             return finish(lst)
            if done.all():
                break                                  def forward_body(self, tokens, enc, done, lst):
        return finish(lst)                                 logits = self.step(tokens, enc)
                                                           tokens = logits.argmax(-1)
                                                           done = done | (tokens == eos)
                                                           lst.append(logits)
                                                           return logits, tokens, done

A decode loop that stops when every sequence has ended (`if done.all(): break`) runs a number
of steps only the data decides: no one graph replays it. Its body is the same tensor work at
every step, so `graph` captures that instead (as decoders do: one graph per token) and keeps the
loop, its exit test and whatever the region does before and after it eager. The body's leading
statements (everything before the trailing statements that `break` or `continue`) move into a
method next to the region (a module function for a module-level region); it takes the names they
read that the function binds elsewhere, and returns the names they bind that are read anywhere
outside them (later iterations included). Objects are passed, not copied: an append inside the
body appends to the caller's list.

Same computation: the statements run in the same order on the same objects; only the frame
differs. Refused (None, why) where that is not so: `return`, `yield`, `await`, `global`,
`nonlocal`, a nested `def`/`class`, or a `break`/`continue` among the moved statements; a name
they bind on some paths only that is read after them; a name they read that is not bound yet
when the loop starts (bound by them before it is read). Reads only text: no torch."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


@dataclass
class LoopBody:
    source: str
    body_name: str  # `Class.forward_body` or `forward_body`
    loop_line: int  # the `for` in the original source
    parameters: list[str]
    results: list[str]


def exit_loops(source: str, defined: str) -> list[tuple[int, list[int]]]:
    """(line of the loop, lines of its exit) for each top-level loop of the function `defined`
    that exits by its own test: a `for` whose body ends in statements that `break` or `continue`
    (those statements), or a `while` (its condition, and such trailing statements)."""
    function = _function(source, defined)
    if function is None:
        return []
    found = []
    for statement in function.body:
        if not isinstance(statement, (ast.For, ast.While)) or statement.orelse:
            continue
        split = _tail_start(statement.body)
        lines = [line for s in statement.body[split:] for line in range(s.lineno, s.end_lineno + 1)]
        if isinstance(statement, ast.While):
            lines += list(range(statement.test.lineno, statement.test.end_lineno + 1))
        if 0 < split and lines:
            found.append((statement.lineno, sorted(lines)))
    return found


_REGION_COMMENT = re.compile(r"#.*\bgraphsafe:\s*region\b")


def marked_loops(source: str, defined: str) -> list[int]:
    """Lines of the top-level loops of the function `defined` marked as the region
    (`for ...:  # graphsafe: region` on the header, or on the line above it)."""
    function = _function(source, defined)
    if function is None:
        return []
    lines = source.splitlines()
    found = []
    for statement in function.body:
        if not isinstance(statement, (ast.For, ast.While)) or statement.orelse:
            continue
        header = lines[statement.lineno - 1:max(statement.body[0].lineno - 1, statement.lineno)]
        above = lines[statement.lineno - 2] if statement.lineno > 1 else ""
        if any(_REGION_COMMENT.search(text) for text in header) or (
                above.strip().startswith("#") and _REGION_COMMENT.search(above)):
            found.append(statement.lineno)
    return found


def loop_body_lines(source: str, defined: str, loop_line: int) -> list[int]:
    """Lines of the statements `extract_loop_body` would move (the loop body before its exit), or []."""
    function = _function(source, defined)
    loop = next((s for s in function.body if isinstance(s, (ast.For, ast.While)) and s.lineno == loop_line),
                None) if function is not None else None
    if loop is None:
        return []
    return [line for s in loop.body[:_tail_start(loop.body)] for line in range(s.lineno, s.end_lineno + 1)]


def extract_loop_body(source: str, defined: str, loop_line: int) -> tuple[LoopBody | None, str]:
    """(the source with the loop's leading body statements moved into a function, "") or (None, why)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return None, f"cannot parse: {error.msg}"
    function = _function_in(tree, defined)
    if function is None:
        return None, f"no function {defined}"
    loop = next((s for s in function.body if isinstance(s, (ast.For, ast.While)) and s.lineno == loop_line), None)
    if loop is None:
        return None, f"no top-level loop at line {loop_line} in {defined}"
    split = _tail_start(loop.body)
    moved = loop.body[:split]
    if not moved:
        return None, "the loop body is only its exit"
    why = _unmovable(moved)
    if why:
        return None, why
    params, results, why = _interface(function, loop, moved)
    if why:
        return None, why
    owner, _, name = defined.rpartition(".")
    body_name = _free_name(tree, f"{name}_body")
    as_method = bool(owner) and bool(function.args.args) and function.args.args[0].arg in params \
        and not _decorated_static(function)
    receiver = function.args.args[0].arg if as_method else None
    if receiver:
        params = [receiver] + [p for p in params if p != receiver]
    new = MetadataWrapper(cst.parse_module(source)).visit(_Extract(owner, name, loop_line, split, body_name, params, results,
                                                  receiver))
    return LoopBody(new.code, f"{owner}.{body_name}" if owner else body_name, loop_line, params, results), ""


def _tail_start(body: list[ast.stmt]) -> int:
    """Index of the first of the trailing statements that contain a `break`/`continue` of this loop."""
    index = len(body)
    while index > 0 and _exits_loop(body[index - 1]):
        index -= 1
    return index


def _exits_loop(statement: ast.stmt) -> bool:
    for node in _same_loop(statement):
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
    return False


def _same_loop(node: ast.AST):
    """Nodes of `node` outside nested loops, functions and classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _unmovable(moved: list[ast.stmt]) -> str:
    for statement in moved:
        for node in ast.walk(statement):
            kind = {ast.Return: "`return`", ast.Yield: "`yield`", ast.YieldFrom: "`yield from`",
                    ast.Await: "`await`", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
                    ast.FunctionDef: "a nested `def`", ast.AsyncFunctionDef: "a nested `def`",
                    ast.ClassDef: "a nested `class`"}.get(type(node))
            if kind:
                return f"line {node.lineno}: {kind} in the loop body cannot move into a function"
        for node in _same_loop(statement):
            if isinstance(node, (ast.Break, ast.Continue)):
                return f"line {node.lineno}: the loop exits in the middle of its body, not at its end"
    return ""


def _interface(function, loop: ast.For | ast.While, moved: list[ast.stmt]) -> tuple[list[str], list[str], str]:
    """(parameters, results, why not): what the moved statements read and bind, against the function."""
    bound = _bound_names(function)
    reads: list[str] = []  # in order, for stable signatures
    written_first: set[str] = set()  # bound at the top level before any read: not an input
    for statement in moved:
        loads, stores = _loads(statement), _stores(statement)
        for name in loads:
            if name in bound and name not in written_first and name not in reads:
                reads.append(name)
        top = _top_level_stores(statement)
        written_first |= {n for n in top if n not in reads}
        if stores - top - set(reads) - written_first:
            pass  # bound on some paths only: judged below by whether anything outside reads it
    binds = set().union(*(_stores(s) for s in moved))
    sure = set().union(*(_top_level_stores(s) for s in moved)) | set(reads)
    outside = _loads_outside(function, moved)
    results = sorted(n for n in binds if n in outside or n in reads)
    maybe = [n for n in results if n not in sure]
    if maybe:
        return [], [], (f"`{maybe[0]}` is bound on some paths of the loop body only and read after it: "
                        "the body cannot return it on every path")
    return reads, results, ""


def _bound_names(function) -> set[str]:
    names = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    for extra in (function.args.vararg, function.args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    for statement in function.body:
        names |= _stores(statement)
    return names


def _stores(node: ast.AST) -> set[str]:
    """Names a statement binds in the function's own scope (comprehension targets are their own)."""
    names = set()
    for child in _own_scope(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in child.names}
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
    return names


def _top_level_stores(statement: ast.stmt) -> set[str]:
    """Names bound on every path of a statement: the targets of a plain, top-level assignment."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if isinstance(statement, ast.AnnAssign) and statement.value is None:
            return set()
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(statement, ast.With):
        found = set()
        for s in statement.body:
            found |= _top_level_stores(s)
        return found
    return set()


def _loads(node: ast.AST) -> list[str]:
    names = []
    for child in _own_scope(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Load, ast.Del)) and child.id not in names:
            names.append(child.id)
        elif isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name) \
                and child.target.id not in names:
            names.append(child.target.id)  # `x += 1` reads x
    return names


def _own_scope(node: ast.AST):
    """Nodes in the function's scope, in source order: comprehensions' own targets are left out
    (what they iterate over is read in this scope; their elements read the targets, so a target
    read inside is not an input)."""
    out = []

    def visit(current, hidden: frozenset):
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            targets = {n.id for g in current.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            visit(current.generators[0].iter, hidden)
            inner = hidden | targets
            for g in current.generators[1:]:
                visit(g.iter, inner)
            for g in current.generators:
                for condition in g.ifs:
                    visit(condition, inner)
            for part in ([current.key, current.value] if isinstance(current, ast.DictComp) else [current.elt]):
                visit(part, inner)
            return
        if isinstance(current, ast.Lambda):
            params = {a.arg for a in (*current.args.posonlyargs, *current.args.args, *current.args.kwonlyargs)}
            visit(current.body, hidden | params)
            return
        if isinstance(current, ast.Name) and current.id in hidden:
            return
        out.append(current)
        for child in ast.iter_child_nodes(current):
            visit(child, hidden)

    visit(node, frozenset())
    return out


def _loads_outside(function, moved: list[ast.stmt]) -> set[str]:
    inside = {id(n) for s in moved for n in ast.walk(s)}
    names = set()
    for statement in function.body:
        for node in _own_scope(statement):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def _decorated_static(function) -> bool:
    return any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in function.decorator_list)


def _function(source: str, defined: str):
    try:
        return _function_in(ast.parse(source), defined)
    except SyntaxError:
        return None


def _function_in(tree: ast.Module, defined: str):
    *owners, name = defined.split(".")
    body = tree.body
    for owner in owners:
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return None
        body = cls.body
    return next((n for n in body if isinstance(n, (ast.FunctionDef,)) and n.name == name), None)


def _free_name(tree: ast.Module, wanted: str) -> str:
    taken = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    name, i = wanted, 2
    while name in taken:
        name, i = f"{wanted}{i}", i + 1
    return name


class _Extract(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, owner: str, name: str, loop_line: int, split: int, body_name: str, params: list[str],
                 results: list[str], receiver: str | None) -> None:
        self.owners = owner.split(".") if owner else []
        self.name, self.loop_line, self.split = name, loop_line, split
        self.body_name, self.params, self.results, self.receiver = body_name, params, results, receiver
        self.classes: list[str] = []
        self.depth = 0
        self.new_function: cst.FunctionDef | None = None

    def visit_ClassDef(self, node):
        self.classes.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.classes.pop()
        return self._with_new_function(updated, in_class=True)

    def leave_Module(self, original, updated):
        return self._with_new_function(updated, in_class=False)

    def _with_new_function(self, updated, in_class: bool):
        if self.new_function is None or bool(self.owners) != in_class or \
                (in_class and self.classes + [updated.name.value] != self.owners):
            return updated
        body = list(updated.body.body) if in_class else list(updated.body)
        index = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == self.name)
        function = self.new_function.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * (1 if in_class else 2))
        body.insert(index + 1, function)
        self.new_function = None
        return updated.with_changes(body=updated.body.with_changes(body=body)) if in_class \
            else updated.with_changes(body=body)

    def visit_FunctionDef(self, node):
        self.depth += 1

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        if self.depth or original.name.value != self.name or self.classes != self.owners:
            return updated
        statements = list(updated.body.body)
        for i, statement in enumerate(original.body.body):
            if isinstance(statement, (cst.For, cst.While)) and \
                    self.get_metadata(PositionProvider, statement).start.line == self.loop_line:
                statements[i] = self._loop_calling_body(statements[i])
                break
        return updated.with_changes(body=updated.body.with_changes(body=statements))

    def _loop_calling_body(self, loop: cst.For | cst.While) -> cst.For | cst.While:
        moved = list(loop.body.body[:self.split])
        tail = list(loop.body.body[self.split:])
        args = [p for p in self.params if p != self.receiver]
        callee = f"{self.receiver}.{self.body_name}" if self.receiver else self.body_name
        call = f"{callee}({', '.join(args)})"
        if not self.results:
            line = call
        else:
            targets = ", ".join(self.results)
            line = f"{targets} = {call}"
        call_statement = cst.parse_statement(line + "\n")
        result_line = ("return " + ", ".join(self.results)) if self.results else None
        body = moved + ([cst.parse_statement(result_line + "\n")] if result_line else [])
        signature = ", ".join(self.params)
        header = cst.parse_statement(f"def {self.body_name}({signature}):\n    pass\n")
        self.new_function = header.with_changes(body=header.body.with_changes(body=body))
        return loop.with_changes(body=loop.body.with_changes(body=[call_statement, *tail]))
