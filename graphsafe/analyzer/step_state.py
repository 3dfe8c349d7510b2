"""State one step hands the next: a place the captured code reads, then rebinds to a new tensor.

A graph replays the addresses it read at capture. Binding a new tensor to an attribute or an
item that the region reads (`self.prev = h.detach()`, `self.mean = self.mean + d`,
`p.grad = torch.zeros_like(p.grad)`, `state[i] = cell(x, state[i])`) changes nothing on replay:
the next step reads the capture-time tensor again. Read from the syntax of one function or one
class, without kinds (GS401 adds those):

- `outliving_root`: the place outlives the call (rooted at `self`, a parameter or a loop
  variable: what a local object holds is rebuilt every step);
- `place_key`, `reads_place`, `read_above`, `guarded_by`: the old value is read (in the new
  value, or above in the same function, not only under a test of the place itself: a cache
  built on demand);
- `number_started`: an attribute a class starts as a Python number (`self.total = 0` in
  `reset()`): `self.total += t.sum()` rebinds it to a new tensor, it does not accumulate;
- `ClassSteps.handed_readers`: another method of the class reads `self.x` before this one
  rebinds it in the same step (the reader calls the rebinding method after its read, or a
  method calls the reader before the rebinding method), so the read sees the last step's
  tensor: on replay, the capture-time one. A reader called after the rebinding (`self.x = x`
  then `self.helper()`) reads this step's value and stays quiet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from graphsafe.analyzer.names import bound_names
from graphsafe.analyzer.nodes import children, is_number_literal
from graphsafe.analyzer.per_step import _small_statements

_EMPTY = cst.Module([])


class HandedPlaces(set):
    """ids of the item targets (`state[i]`) GS401 reports as state handed to the next step, per
    file: GS503 leaves them (one cause, one diagnostic: the slot keeps its key, its tensor is
    what the graph stops following)."""


def place_key(expr: cst.CSTNode) -> str | None:
    """`self.a.b`, `p.grad`, `state[i * 5 + 0]` → a text that two spellings of the same place
    share (whitespace dropped); None for anything that is not a name's attribute or item."""
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
        inner = place_key(expr.value)
        return None if inner is None else f"{inner}.{expr.attr.value}"
    if type(expr) is cst.Subscript:
        inner = place_key(expr.value)
        if inner is None:
            return None
        index = "".join("".join(_EMPTY.code_for_node(e).split()) for e in expr.slice)
        return f"{inner}[{index}]"
    return None


def root_name(expr: cst.BaseExpression) -> cst.Name | None:
    while type(expr) in (cst.Attribute, cst.Subscript):
        expr = expr.value
    return expr if type(expr) is cst.Name else None


def outliving_root(target: cst.BaseExpression, function: cst.FunctionDef | None) -> str | None:
    """The name `target` (an attribute or item) hangs from, when what it holds outlives the call:
    the function's `self`, one of its parameters, or a loop variable (`for p in params`)."""
    if type(target) not in (cst.Attribute, cst.Subscript) or function is None:
        return None
    root = root_name(target)
    if root is None:
        return None
    if root.value in _index(function).outliving:
        return root.value
    return None


def reads_place(expr: cst.CSTNode, key: str) -> bool:
    """Does `expr` read the place `key` (or a deeper part of it: `self.buf[0]`, `self.buf.T`)?"""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) in (cst.Attribute, cst.Subscript) and place_key(node) == key:
            return True
        stack.extend(children(node))
    return False


def read_above(function: cst.FunctionDef, statement: cst.CSTNode, key: str) -> bool:
    """Is `key` read in `function` before `statement` (in source order; not the targets of an
    assignment, not in nested defs)?"""
    index = _index(function)
    return index.first_read.get(key, _NEVER) < index.order.get(id(statement), -1)


_NEVER = float("inf")


@dataclass
class _FunctionIndex:
    """One walk of a function, asked about each of its assignments."""

    outliving: set[str]  # parameters and loop variables
    first_read: dict[str, int]  # place → order of its first read
    order: dict[int, int]  # id(assignment) → order where it starts (before its value)


_INDEX_MEMO: list = []  # [function, its index]: the function being walked asks many times


def _index(function: cst.FunctionDef) -> _FunctionIndex:
    if _INDEX_MEMO and _INDEX_MEMO[0] is function:
        return _INDEX_MEMO[1]
    params = function.params
    index = _FunctionIndex({p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}, {}, {})
    counter = 0
    stack: list[cst.CSTNode] = [function.body]
    while stack:  # preorder, children in source order (an assignment's value before its targets)
        node = stack.pop()
        counter += 1
        tp = type(node)
        if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if tp is cst.Assign:
            index.order[id(node)] = counter
            stack.append(node.value)
            continue
        if tp in (cst.For, cst.CompFor):
            index.outliving.update(n.value for n in bound_names(node.target))
        if tp in (cst.Attribute, cst.Subscript):
            key = place_key(node)
            if key is not None:
                index.first_read.setdefault(key, counter)
        stack.extend(reversed(list(children(node))))
    _INDEX_MEMO[:] = [function, index]
    return index


def guarded_by(function: cst.FunctionDef, statement: cst.CSTNode, key: str) -> bool:
    """`if self.cos is None: self.cos = make(n)`: `statement` runs under a test that reads the
    place itself (a cache built on demand, not state handed from one step to the next)."""
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]
    while stack:
        node, guarded = stack.pop()
        if node is statement:
            return guarded
        if type(node) in (cst.If, cst.While) and _reads_place_or_part(node.test, key):
            guarded = True
        stack.extend((child, guarded) for child in children(node))
    return False


def number_started(class_node: cst.ClassDef) -> frozenset[str]:
    """Attributes the class's methods set to a number literal (`self.total = 0` in `reset()`,
    `self.n: int | Tensor = 0`)."""
    found: set[str] = set()
    for method in _methods(class_node):
        self_name = method.params.params[0].name.value
        for small in _small_statements(method.body):
            tp = type(small)
            if tp is cst.Assign and is_number_literal(small.value):
                for target in small.targets:
                    if _self_attr(target.target, self_name):
                        found.add(target.target.attr.value)
            elif tp is cst.AnnAssign and small.value is not None and is_number_literal(small.value) \
                    and _self_attr(small.target, self_name):
                found.add(small.target.attr.value)
    return frozenset(found)


@dataclass
class _Method:
    reads: dict[str, int] = field(default_factory=dict)  # attribute → order of its first read before any bind
    binds: dict[str, int] = field(default_factory=dict)  # attribute → order of its first bind
    calls: list[tuple[str, int]] = field(default_factory=list)  # (method of the class, order)
    assigns: dict[int, int] = field(default_factory=dict)  # id(assignment) → order of its targets


class ClassSteps:
    """What each method of a class reads, rebinds and calls on `self`, in source order."""

    def __init__(self, class_node: cst.ClassDef) -> None:
        self.methods: dict[str, _Method] = {}
        for method in _methods(class_node):
            self.methods[method.name.value] = _events(method, method.params.params[0].name.value)
        self._reach: dict[str, frozenset[str]] = {}

    def reaches(self, method: str) -> frozenset[str]:
        """`method` and the methods it calls on `self`, transitively."""
        found = self._reach.get(method)
        if found is None:
            seen, frontier = {method}, [method]
            while frontier:
                current = self.methods.get(frontier.pop())
                for callee, _ in current.calls if current else ():
                    if callee in self.methods and callee not in seen:
                        seen.add(callee)
                        frontier.append(callee)
            found = self._reach[method] = frozenset(seen)
        return found

    def handed_readers(self, writer: str, attr: str, bind_order: int) -> list[str]:
        """Methods other than `writer` that read `self.<attr>` before `writer` rebinds it (at
        `bind_order`, see `order_of`) in one step: the reader calls the writer after
        its read, the writer calls the reader before rebinding, or a method calls the reader
        before the writer."""
        readers = [m for m, ev in self.methods.items() if m != writer and attr in ev.reads]
        found: list[str] = []
        for reader in readers:
            read_at = self.methods[reader].reads[attr]
            if self._calls_after(reader, read_at, writer) or self._calls_before(writer, bind_order, reader) \
                    or any(self._calls_in_order(c, reader, writer) for c in self.methods):
                found.append(reader)
        return found

    def order_of(self, method: str, assign: cst.CSTNode) -> int | None:
        """The order of `assign` (an assignment in `method`) among `method`'s events."""
        events = self.methods.get(method)
        return events.assigns.get(id(assign)) if events else None

    def _calls_after(self, caller: str, order: int, target: str) -> bool:
        return any(at > order and target in self.reaches(callee) for callee, at in self.methods[caller].calls)

    def _calls_before(self, caller: str, order: int, target: str) -> bool:
        return any(at < order and target in self.reaches(callee) for callee, at in self.methods[caller].calls)

    def _calls_in_order(self, caller: str, first: str, then: str) -> bool:
        """`caller` calls something reaching `first`, and later something reaching `then`
        (never `then` before `first`)."""
        first_at = then_at = None
        for callee, at in self.methods[caller].calls:
            reach = self.reaches(callee)
            if then in reach and then_at is None:
                then_at = at
            if first in reach and first_at is None:
                first_at = at
        return first_at is not None and then_at is not None and first_at < then_at


def _events(method: cst.FunctionDef, self_name: str) -> _Method:
    """A method's reads (before any bind of the same attribute), binds and calls on `self`, in
    source order (an assignment's value before its targets)."""
    events = _Method()
    counter = [0]

    def walk(node: cst.CSTNode) -> None:
        counter[0] += 1
        tp = type(node)
        if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and node is not method:
            return
        if tp is cst.Assign:
            walk(node.value)
            counter[0] += 1
            events.assigns[id(node)] = counter[0]
            for target in node.targets:
                for tgt in _unpacked(target.target):
                    if _self_attr(tgt, self_name):
                        events.binds.setdefault(tgt.attr.value, counter[0])
                    else:
                        walk(tgt)
            return
        if tp is cst.Call and _self_attr(node.func, self_name):
            events.calls.append((node.func.attr.value, counter[0]))
            for arg in node.args:
                walk(arg)
            return
        if tp is cst.Attribute and _self_attr(node, self_name):
            if node.attr.value not in events.binds:
                events.reads.setdefault(node.attr.value, counter[0])
            return
        for child in children(node):
            walk(child)

    walk(method.body)
    return events


def _unpacked(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from _unpacked(element.value)
    elif type(target) is cst.StarredElement:
        yield from _unpacked(target.value)
    else:
        yield target


def _methods(class_node: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    for stmt in class_node.body.body:
        if type(stmt) is cst.FunctionDef and stmt.params.params:
            yield stmt


def _reads_place_or_part(expr: cst.CSTNode, key: str) -> bool:
    """`self.cache` in a test guards `self.cache[k]`; `self.cos` guards `self.cos`."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) in (cst.Attribute, cst.Subscript):
            found = place_key(node)
            if found is not None and (key == found or key.startswith(found + ".") or key.startswith(found + "[")):
                return True
        stack.extend(children(node))
    return False


def _self_attr(target: cst.BaseExpression, self_name: str) -> bool:
    return type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == self_name
