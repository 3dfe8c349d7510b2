"""A loop whose body is the captured step: `for _ in range(n):  # graphsafe: region`.

Decoders and samplers capture one pass of their loop (a token, a denoising step) and replay it
once per pass; the loop itself stays in Python (rewriters/loop_body.py moves such a body into a
function for `graph`). The body is then a region of its own (a block unit, like a
`torch.cuda.graph` block), and what changes from one pass to the next is what changes between
the region's steps:

- the loop's counters (`for i in range(n)`, `for t in times`, `t += 1`; loop_counters.py): a
  new Python number on every pass, frozen at its capture value where it enters device work;
- names the body rebinds that the next pass reads (*carried*: bound before the loop, or a
  parameter, read by a pass before it rebinds them): `out = torch.cat((out, tok), -1)` grows
  every pass (GS404); a carried tensor of one shape rebound in the body (`x = step(x)`) leaves a
  graph of one pass on the capture-time tensor unless each pass's result is copied back into
  it (GS401; `graph` moves the body into a function that takes and returns it,
  rewriters/loop_body.py, as decoders do).

Only the loop's own counters count: a loop inside the body is unrolled by the capture and runs
the same numbers on every replay. Reports that hold only for the loop's body carry the condition
(STEP_LOOP, unit key), true only when judged in that unit (callgraph.condition_holds), so the
function around the loop, reached as a region or from one, keeps its own reading of the code.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer.names import bound_names

# Hit and argument condition: (STEP_LOOP, key of the loop's unit)
STEP_LOOP = "step-loop"
REGION_COMMENT = "graphsafe: region"


@dataclass(frozen=True)
class StepLoop:
    """An open loop region while its body is walked."""

    key: str  # the block unit's key
    header: str  # `for _ in range(n)`, for messages
    counters: frozenset[str]  # names the loop counts with (a new number each pass)
    carried: frozenset[str]  # names the body rebinds that were bound before it
    shared: frozenset[str] = frozenset()  # names bound before it that the body uses and never rebinds

    @property
    def condition(self) -> tuple[str, str]:
        return (STEP_LOOP, self.key)


def header(loop: cst.For | cst.While, code_for) -> str:
    text = f"for {code_for(loop.target)} in {code_for(loop.iter)}" if type(loop) is cst.For else f"while {code_for(loop.test)}"
    return text if len(text) <= 48 else text[:45] + "..."


def is_region_loop(node: cst.For | cst.While) -> bool:
    """`for ...:  # graphsafe: region` (the comment on the loop's header line, or on the line
    just above it)."""
    body = node.body
    comment = body.header.comment if type(body) is cst.IndentedBlock else body.trailing_whitespace.comment
    if comment is not None and REGION_COMMENT in comment.value:
        return True
    return any(line.comment is not None and REGION_COMMENT in line.comment.value for line in node.leading_lines[-1:])


def carried_names(function: cst.FunctionDef | cst.Module | None, loop: cst.For | cst.While) -> frozenset[str]:
    """Names the loop's body rebinds (assignment, augmented assignment, `with ... as`) and reads
    that the function binds outside the body too, parameters included: the next pass reads the
    value this pass left. The loop's own targets are not carried (each pass binds them anew).
    A script's loop (module level) reads the module's names the same way."""
    inside = _bound_in(loop.body) & _read_in(loop) & _read_first(loop)
    if not inside or function is None:
        return frozenset()
    outside = {p.name.value for p in _params(function)} if type(function) is cst.FunctionDef else set()
    outside |= _bound_in(function.body if type(function) is cst.FunctionDef else function, skip=loop.body)
    if type(loop) is cst.For:
        inside -= {n.value for n in bound_names(loop.target)}
    return frozenset(inside & outside)


def _read_first(loop: cst.For | cst.While) -> set[str]:
    """Names a pass may read before it binds them (what the previous pass left): every name read
    before a plain assignment at the top of the body binds it. A binding inside an `if`, a nested
    loop, a `with` or a `try` may not run, so it does not count as a binding that comes first
    (`q = None` at the top, then `q = draw()` under an `if`: never carried)."""
    bound: set[str] = set()
    first: set[str] = set()
    if type(loop) is cst.While:
        first |= _names_read(loop.test)
    for statement in loop.body.body if type(loop.body) is cst.IndentedBlock else [loop.body]:
        smalls = statement.body if type(statement) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) else None
        if smalls is None:  # a compound statement: what it reads, read before anything it binds
            first |= _names_read(statement) - bound
            continue
        for small in smalls:
            first |= _names_read(small) - bound
            if type(small) is cst.Assign:
                for target in small.targets:
                    bound.update(n.value for n in bound_names(target.target))
            elif type(small) is cst.AnnAssign and small.value is not None and type(small.target) is cst.Name:
                bound.add(small.target.value)
    return first


def _names_read(root: cst.CSTNode) -> set[str]:
    """Names read under `root`: every name but plain binding targets (`x = ...`, `for x in`,
    `with ... as x`, comprehension targets); `x += 1` reads `x`."""
    skip: set[int] = set()
    found: set[str] = set()
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.Name:
            if id(node) not in skip:
                found.add(node.value)
            continue
        if tp is cst.Attribute:  # `self.q`: `q` names no variable
            stack.append(node.value)
            continue
        if tp is cst.Arg:  # `f(x=v)`: the keyword names no variable
            stack.append(node.value)
            continue
        if tp is cst.Assign:
            skip.update(id(n) for t in node.targets for n in bound_names(t.target))
        elif tp is cst.AnnAssign and type(node.target) is cst.Name:
            skip.add(id(node.target))
        elif tp in (cst.For, cst.CompFor):
            skip.update(id(n) for n in bound_names(node.target))
        elif tp is cst.AsName:
            skip.update(id(n) for n in bound_names(node.name))
        stack.extend(node.children)
    return found


def shared_names(function: cst.FunctionDef | cst.Module | None, loop: cst.For | cst.While) -> frozenset[str]:
    """Names bound before the loop (parameters included) that the body reads and never rebinds:
    one object every pass shares (`ds = []` then `ds.append(d)` in the body), so what a pass
    does to it in Python happens only while the graph is captured."""
    if function is None:
        return frozenset()
    outside = {p.name.value for p in _params(function)} if type(function) is cst.FunctionDef else set()
    outside |= _bound_in(function.body if type(function) is cst.FunctionDef else function, skip=loop.body)
    inside = _bound_in(loop.body)
    if type(loop) is cst.For:
        inside |= {n.value for n in bound_names(loop.target)}
    return frozenset((outside & _read_in(loop)) - inside)


def _read_in(loop: cst.For | cst.While) -> set[str]:
    """Names the loop reads on a pass (its body, a `while` test): those that occur more often
    than they are bound as plain targets."""
    seen: dict[str, int] = {}
    bound: dict[str, int] = {}
    stack: list[cst.CSTNode] = [loop.body] + ([loop.test] if type(loop) is cst.While else [])
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.Name:
            seen[node.value] = seen.get(node.value, 0) + 1
        elif tp is cst.Assign:
            for target in node.targets:
                for name in bound_names(target.target):
                    bound[name.value] = bound.get(name.value, 0) + 1
        elif tp is cst.For:
            for name in bound_names(node.target):
                bound[name.value] = bound.get(name.value, 0) + 1
        stack.extend(node.children)
    return {name for name, count in seen.items() if count > bound.get(name, 0)}


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _bound_in(root: cst.CSTNode, skip: cst.CSTNode | None = None) -> set[str]:
    """Plain names bound by statements under `root` (not inside nested functions or classes,
    not under `skip`)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if node is skip or type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        tp = type(node)
        if tp is cst.Assign:
            for target in node.targets:
                found.update(n.value for n in bound_names(target.target))
        elif tp in (cst.AugAssign, cst.AnnAssign) and type(node.target) is cst.Name:
            found.add(node.target.value)
        elif tp is cst.For:
            found.update(n.value for n in bound_names(node.target))
        elif tp is cst.WithItem and node.asname is not None:
            found.update(n.value for n in bound_names(node.asname.name))
        if isinstance(node, cst.BaseExpression):
            continue  # no statements below an expression (lambdas aside, skipped above)
        stack.extend(node.children)
    return found


def listed_numbers(loop: cst.For | cst.While) -> set[str]:
    """Targets of the loop bound to elements of a `.tolist()` (`for k, t in zip(ks.tolist(),
    ts)`): Python numbers read from a tensor once, a new one on every pass. (A loop that is not
    the step does not count them: loop_counters asks more of a list, since the numbers of an
    unrolled loop are the same on every replay.)"""
    if type(loop) is not cst.For:
        return set()
    target, iterable = loop.target, loop.iter
    if type(target) is cst.Name:
        return {target.value} if _tolist(iterable) else set()
    if type(target) in (cst.Tuple, cst.List) and type(iterable) is cst.Call and type(iterable.func) is cst.Name \
            and iterable.func.value == "zip" and not any(a.star or a.keyword for a in iterable.args):
        return {element.value.value for element, arg in zip(target.elements, iterable.args)
                if type(element.value) is cst.Name and _tolist(arg.value)}
    return set()


def _tolist(expr: cst.BaseExpression) -> bool:
    while type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in ("reversed", "list") and expr.args:
        expr = expr.args[0].value
    return (type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "tolist"
            and not expr.args)

