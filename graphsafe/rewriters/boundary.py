"""The capture boundary: split a region into a graphable core and a host wrapper around it.

    def train_step(self, x, y, lr):               def train_step(self, x, y, lr):
        t0 = time.perf_counter()                       t0 = time.perf_counter()
        for g in self.opt.param_groups:                for g in self.opt.param_groups:
            g["lr"] = lr                                   g["lr"] = lr
        loss = self.loss(x, y)              →          _result, loss = self.train_step_core(x, y)
        loss.backward()                                self.step += 1
        self.opt.step()                                self.losses.append(loss.item())
        self.step += 1                                 self.times.append(time.perf_counter() - t0)
        self.losses.append(loss.item())                return _result
        self.times.append(time.perf_counter() - t0)
        return loss.detach()                       def train_step_core(self, x, y):
                                                       loss = self.loss(x, y)
                                                       loss.backward()
                                                       self.opt.step()
                                                       return loss.detach(), loss

The wrapper keeps the region's name and signature, so callers are unchanged; it runs the host
work (step counters, appends, logging, timing, `.item()` bookkeeping, param-group writes)
before and after the core, in Python, on every call. The core holds the tensor work and is
what gets graphed: `trainer.train_step_core = graphed(trainer.train_step_core, ...)`, after
which every `train_step` call replays the graph between its host parts. An lr written into
param groups by the wrapper reaches the graph through `graphed(train=True)`'s device lr.

Which statements move: top-level statements of the region whose every diagnostic is host work
(HOST_CODES; a GS301 only when it stores into a subscript, `group["lr"] = lr`, else the core
takes the number as a parameter; a GS402 tensor built from host data before any tensor work
becomes a core input that graphed copies into its static buffer). A return with host work
(`return action.cpu()`) is evaluated by the wrapper from the core's results. One moves to the prologue when it commutes with every core statement before it,
to the epilogue when it commutes with every core statement after it (and the return); else it
stays in the core, where `check` keeps reporting it; a producer of a core input (host data made for
the tensor work, rewriters/host_inputs.py) moves to the prologue past the core statements it commutes
with, and is never moved after the core. Two statements commute when neither
writes a name or attribute chain the other reads or writes (`self.opt.step()` writes
`self.opt`; in-place `x.add_()` and container methods write their receiver).

Shapes of regions: a return in the middle of the step stays in the core, which then returns
`(exited, result, *values)` on every path and the wrapper returns at once when it exited (host
work before such a return stays in the core); guard clauses (returns after nothing but host
work) stay in the wrapper; a body in one `with torch.no_grad():` is split inside it, both parts
keep the block. A factory's closure (`supervised_training_step.update`) gets its core next to
it, as an attribute of the closure (`update.update_core = update_core`), so whoever holds the
closure can graph the core; a module function always gets a core, even with nothing to move,
since callers that imported the function (`from pkg import f`) reach a graph only through it.
A last return through a hook the caller passed in (`output_transform(x, loss)`) or through a
call that reaches host work only (`torch_item(loss)`) is evaluated by the wrapper.

Not a safe fix, applied only by `graphsafe graph`: a call is assumed to change only the chains
it names (a call that changes `self.step` through another object is not seen), host work that
ran before a failing tensor statement now runs after it (an exception in the core skips the
epilogue), and the core's results are returned to the wrapper as they are at the end of the
step. `graphsafe capture` proves a split step: the replay is compared with eager, Python
attributes included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import libcst as cst

HOST_CODES = frozenset(
    "GS101 GS102 GS103 GS104 GS105 GS106 GS109 GS111 GS201 GS301 GS302 GS402 GS501 GS502 GS503 GS504 GS505".split())
# Methods that change their receiver besides torch's in-place `*_` methods.
_MUTATORS = frozenset(
    """append extend insert pop remove clear update setdefault add discard popitem sort reverse step
    zero_grad load_state_dict register_buffer register_parameter train eval""".split())
CORE_SUFFIX = "_core"


@dataclass
class SplitResult:
    """The rewritten source, or why the region was left as it is."""

    source: str | None
    refusal: str | None = None
    core_name: str = ""
    core_parameters: list[str] = field(default_factory=list)
    prologue_lines: list[int] = field(default_factory=list)
    epilogue_lines: list[int] = field(default_factory=list)
    kept_host_lines: list[int] = field(default_factory=list)  # host work that could not move
    numbers: list[int] = field(default_factory=list)  # core parameters that are per-step numbers (graphed numbers=)
    number_indexes: int = 0  # `x[:, n]` reads by such a number rewritten as `index_select`
    closure: str = ""  # a factory's nested function: the core is this closure's attribute (`update.update_core`)
    host_return: bool = False  # the return is evaluated by the wrapper, on the core's results
    converted: list[str] = field(default_factory=list)  # values converted back for the wrapper (graph's fixes)
    backward_in: str = ""  # "path:line" of a backward a callee of the core runs (graph: train=True)

    @property
    def moved(self) -> int:
        return len(self.prologue_lines) + len(self.epilogue_lines)


def split_region(source: str, qualname: str, host_lines: dict[int, set[str]],
                 per_step: dict[int, set[str]] | None = None,
                 reached: dict[int, set[str]] | None = None, producers: Iterable[int] = ()) -> SplitResult:
    """Split the function `qualname` ("f", "Class.method" or "factory.closure") of `source`.
    `host_lines` maps a line to the rule codes reported on it (the region's own diagnostics);
    `per_step` maps a line to the per-step Python numbers GS301 reports read there
    (`self.cur_len`, a parameter `t`); `reached` maps a line to the codes of hazards in the
    functions its calls reach (`return torch_item(loss)`: a GS101 in torch_item); `producers`: the
    first lines of statements that make a core input on the host (rewriters/host_inputs.py), moved
    before the core past the core statements they commute with."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return SplitResult(None, f"the file does not parse: {error.message}")
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    if found is None:
        return SplitResult(None, f"no function {qualname} at the top level of the file, of a class or of a function in it")
    owner, function = found
    refusal = _refuse(function, owner, positions)
    if refusal:
        return SplitResult(None, f"{qualname}: {refusal}")
    body, rewrap = _peel_grad_mode(function)
    returns = body[-1] if _is_final(body[-1]) else None
    statements = body[:-1] if returns is not None else body
    facts = [_Statement(s, positions[s].start.line, positions[s].end.line) for s in statements]
    for fact in facts:
        codes = set().union(*(host_lines.get(line, set()) for line in range(fact.first, fact.last + 1)))
        fact.host = bool(codes) and codes <= HOST_CODES
        if codes == {"GS301"} and not _stores_into_subscript(fact.node):
            fact.host = False  # tensor work reading a per-step number: the core carries the number
        if not codes and fact.first in set(producers):
            fact.host = True  # hazard-free work a host input reads, moved with it (rewriters/host_inputs.py)
    _mark_exits(facts)
    for fact in facts:
        fact.producer = fact.host and fact.first in set(producers)
    ret = None
    if returns is not None:
        ret = _Statement(returns, positions[returns].start.line, positions[returns].end.line)
        codes = set().union(*(host_lines.get(line, set()) for line in range(ret.first, ret.last + 1)))
        ret.host = bool(codes) and codes <= HOST_CODES  # `return action.cpu()`: evaluated by the wrapper
        ret.host = ret.host or _returns_through_hook(returns, function, owner)
        # a return whose calls reach host work only: the wrapper calls them on the core's results
        via = set().union(*((reached or {}).get(line, set()) for line in range(ret.first, ret.last + 1)))
        ret.host = ret.host or (bool(via) and via <= HOST_CODES and not codes - HOST_CODES)
    places = _place(facts, ret)
    exits = [f for f in facts if f.exit]
    prologue = [f for f, p in zip(facts, places) if p == "prologue"]
    epilogue = [f for f, p in zip(facts, places) if p == "epilogue"]
    core = [f for f, p in zip(facts, places) if p == "core"]
    kept = [f.first for f in core if f.host]
    moves = prologue or epilogue or (ret is not None and ret.host)
    if not core and (ret is None or ret.host):
        return SplitResult(None, f"{qualname}: every statement is host work: nothing is left to graph")
    if not moves and isinstance(owner, cst.ClassDef):
        return SplitResult(None, f"{qualname}: no host work can move out of it" +
                           (f" (host work at line {', '.join(map(str, kept))} feeds the tensor work)" if kept else ""))
    # a module function or a closure with nothing to move still gets a core: graphed() replaces
    # the core's name, which callers that imported the function itself (`from pkg import f`)
    # reach through the wrapper; replacing `f` would graph nothing they call
    core_name = _fresh(function.name.value + CORE_SUFFIX, owner or module)
    numbers = _per_step_in(core, ret, per_step or {})
    return _rewrite(module, owner, function, core_name, prologue, core, epilogue, ret, kept, numbers,
                    bool(exits), rewrap)


def _per_step_in(core: list[_Statement], ret: _Statement | None, per_step: dict[int, set[str]]) -> set[str]:
    """The per-step numbers GS301 reports on the core's own lines that the core reads and never writes."""
    names = set()
    for s in core:
        for line in range(s.first, s.last + 1):
            names |= per_step.get(line, set())
    writes = set().union(*(s.writes for s in core)) if core else set()
    reads = set().union(*(s.reads for s in core)) if core else set()
    return {n for n in names if n in reads and not _overlaps({n}, writes)}


# --- where each statement goes --------------------------------------------------------------------


@dataclass(eq=False)
class _Statement:
    node: cst.BaseStatement | None
    first: int
    last: int
    host: bool = False
    guard: bool = False
    exit: bool = False  # returns from the middle of the step: the core tells the wrapper it did
    producer: bool = False  # makes a core input on the host: hoisted before the core when it commutes

    def __post_init__(self) -> None:
        collector = _Effects()
        if self.node is not None:
            self.node.visit(collector)
        self.reads, self.writes, self.rebinds = collector.reads, collector.writes, collector.rebinds
        self.refs = _appended_reference(self.node)


def _place(facts: list[_Statement], ret: _Statement | None) -> list[str]:
    """prologue / core / epilogue per statement. The host statements before any core statement
    form the prologue (they cross nothing); a later host statement goes to the epilogue (after
    the core, in its original order among host work: logs and timings keep their order) when it
    commutes with every core statement after it, else it stays in the core (to a fixed point:
    a host statement kept in the core is crossed by the host statements before it)."""
    forced: set[int] = set()
    last_exit = max((i for i, f in enumerate(facts) if f.exit), default=-1)
    while True:
        places: list[str] = []
        for index, fact in enumerate(facts):
            if not fact.host or index in forced:
                places.append("core")
            elif all(p == "prologue" for p in places) or _hoisted(index, facts, places):
                places.append("prologue")
            elif fact.producer:
                places.append("core")  # its value feeds the core: never after it
            else:
                places.append("epilogue")
        changed = False
        for index, fact in enumerate(facts):
            if places[index] != "epilogue":
                continue
            after = [facts[i] for i in range(index + 1, len(facts)) if places[i] == "core"]
            if index < last_exit or not all(_commute(fact, other) for other in after):
                # before an early exit: the wrapper would run it only when the core did not return
                forced.add(index)
                changed = True
        if not changed:
            return places


def _hoisted(index: int, facts: list[_Statement], places: list[str]) -> bool:
    """A producer of a core input (host data made for the tensor work) runs before the core when
    it commutes with every statement before it that is not in the prologue, and no early exit
    comes before it (else the wrapper would make data the step did not)."""
    fact = facts[index]
    return fact.producer and not any(f.exit for f in facts[:index]) and all(
        _commute(fact, facts[i]) for i, p in enumerate(places) if p != "prologue")


def _returns_through_hook(statement: cst.BaseStatement, function: cst.FunctionDef, owner) -> bool:
    """`return output_transform(x, y, y_pred, loss)`: a last return through a callable the caller
    passed in (a parameter of the region, or of the factory that defines it). What it does is the
    caller's choice, not the step's (ignite's default is `loss.item()`): the wrapper calls it on
    the core's results, which computes the same value and keeps unknown host work out of the graph."""
    if not _is_return(statement):
        return False
    value = statement.body[0].value
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return False
    scopes = [function] + ([owner] if isinstance(owner, cst.FunctionDef) else [])
    names = {p.name.value for scope in scopes for p in (*scope.params.params, *scope.params.kwonly_params)}
    if isinstance(owner, cst.ClassDef) and function.params.params:
        names.discard(function.params.params[0].name.value)  # `return self(x)` is the object's own work
    return value.func.value in names


def _stores_into_subscript(node: cst.CSTNode) -> bool:
    """`group["lr"] = lr`, `self.tokens[:, i] = tok` (anywhere in the statement): a write the
    wrapper can do on the host around the graph."""
    found = []

    class _Stores(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            if isinstance(target.target, cst.Subscript):
                found.append(target)

    node.visit(_Stores())
    return bool(found)


def _commute(a: _Statement, b: _Statement) -> bool:
    # `lst.append(x)` stores a reference: an in-place write of x before or after it shows through
    # the list the same way; only rebinding x changes which object is appended
    a_reads = a.reads - {r for r in a.refs if not _overlaps(b.rebinds, {r})}
    b_reads = b.reads - {r for r in b.refs if not _overlaps(a.rebinds, {r})}
    return not (_overlaps(a.writes, b_reads | b.writes) or _overlaps(b.writes, a_reads))


def _appended_reference(node) -> set[str]:
    """{"x"} for a statement `chain.append(x)`: the name whose object a list keeps."""
    if not (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr)):
        return set()
    call = node.body[0].value
    if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"
            and _chain(call.func.value) and len(call.args) == 1 and not call.args[0].keyword
            and not call.args[0].star and isinstance(call.args[0].value, cst.Name)):
        return {call.args[0].value.value}
    return set()


def _overlaps(left: set[str], right: set[str]) -> bool:
    return any(x == y or x.startswith(y + ".") or y.startswith(x + ".") for x in left for y in right)


def _effects(node: cst.CSTNode) -> tuple[set[str], set[str]]:
    collector = _Effects()
    node.visit(collector)
    return collector.reads, collector.writes


class _Effects(cst.CSTVisitor):
    """Names and attribute chains a statement reads and writes (as dotted text)."""

    def __init__(self) -> None:
        self.reads: set[str] = set()
        self.writes: set[str] = set()
        self.rebinds: set[str] = set()  # written by binding, not in place (`x = ...`, `self.a = ...`)

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._target(element.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)
        elif isinstance(node, cst.Subscript):
            chain = _chain(node.value)
            if chain:
                self.writes.add(chain)
            node.visit(self)
        elif (chain := _chain(node)) is not None:
            self.writes.add(chain)
            self.rebinds.add(chain)
        else:
            node.visit(self)

    def visit_Assign(self, node: cst.Assign) -> bool:
        for target in node.targets:
            self._target(target.target)
        node.value.visit(self)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self._target(node.target)
        node.target.visit(self)
        node.value.visit(self)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._target(node.target)
        if node.value is not None:
            node.value.visit(self)
        return False

    def visit_For(self, node: cst.For) -> bool:
        self._target(node.target)
        return True

    def visit_AsName(self, node: cst.AsName) -> bool:
        self._target(node.name)
        return False

    def visit_Del(self, node: cst.Del) -> bool:
        self._target(node.target)
        node.target.visit(self)  # `del x` needs `x` bound: a core that deletes it takes it as a parameter
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        self._target(node.target)
        node.value.visit(self)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            receiver = _chain(node.func.value)
            if receiver and (method in _MUTATORS or (method.endswith("_") and not method.endswith("__"))):
                self.writes.add(receiver)
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        chain = _chain(node)
        if chain is not None:
            self.reads.add(chain)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> bool:
        self.reads.add(node.value)
        return False


def _chain(node: cst.BaseExpression) -> str | None:
    """`self.opt.state` → "self.opt.state"; None for anything but names and attributes of them."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _chain(node.value)
        return f"{inner}.{node.attr.value}" if inner else None
    return None


# --- what cannot be split --------------------------------------------------------------------------


def _find(module: cst.Module, qualname: str) -> tuple[cst.ClassDef | None, cst.FunctionDef] | None:
    parts = qualname.split(".")
    if len(parts) == 1:
        return next(((None, s) for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == parts[0]),
                    None)
    if len(parts) == 2:  # a method, or a function a factory defines and returns (a closure)
        for outer in module.body:
            if isinstance(outer, (cst.ClassDef, cst.FunctionDef)) and outer.name.value == parts[0] \
                    and isinstance(outer.body, cst.IndentedBlock):
                for s in outer.body.body:
                    if isinstance(s, cst.FunctionDef) and s.name.value == parts[1]:
                        return outer, s
    return None


class _Blockers(cst.CSTVisitor):
    """The first construct that keeps a function whole, with its line: `yield`, `await`,
    `global`, `nonlocal` (returns are counted: the split routes them, see _mark_exits)."""

    def __init__(self, positions=None) -> None:
        self.found: str | None = None
        self.returns = 0
        self.positions = positions

    def _block(self, node: cst.CSTNode, what: str) -> None:
        if self.found is None:
            line = self.positions[node].start.line if self.positions is not None and node in self.positions else None
            self.found = what + (f" at line {line}" if line else "")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # nested functions are values: their returns and yields are their own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.returns += 1

    def visit_Yield(self, node: cst.Yield) -> None:
        self._block(node, "it is a generator: a yield")

    def visit_Await(self, node: cst.Await) -> None:
        self._block(node, "it awaits")

    def visit_Global(self, node: cst.Global) -> None:
        self._block(node, "it declares a global")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._block(node, "it declares a nonlocal")


def _refuse(function: cst.FunctionDef, owner: cst.CSTNode | None, positions) -> str | None:
    line = positions[function].start.line if function in positions else "?"
    if function.asynchronous:
        return f"an async function (line {line}): its awaits cannot be graphed"
    if not isinstance(function.body, cst.IndentedBlock):
        return f"its body is on the def line (line {line})"
    blockers = _Blockers(positions)
    for statement in function.body.body:
        statement.visit(blockers)
    if blockers.found:
        return blockers.found + ": a graph replays straight-line device work, the wrapper cannot resume it"
    for decorator in function.decorators:
        if _decorator_name(decorator) in ("staticmethod", "classmethod", "property"):
            return f"a @{_decorator_name(decorator)} (line {line}; split a plain method or function)"
    if isinstance(owner, cst.ClassDef) and not function.params.params:
        return f"a method without self (line {line})"
    return None


def _mark_exits(facts: list[_Statement]) -> None:
    """Statements that may return before the end. Leading ones, after nothing but host work,
    are guard clauses (`if x is None: return x`): the wrapper's, before the core. Later ones are
    early exits: they stay in the core, which then returns `(exited, result, ...)` and the
    wrapper returns at once when it exited (the host work after them runs only when it did not)."""
    leading = True
    for fact in facts:
        returns = _returns_in(fact.node)
        if leading and returns:
            fact.host = fact.guard = True  # a guard clause runs before any tensor work
            continue
        if returns:
            fact.host, fact.exit = False, True
        leading = leading and fact.host


_GRAD_MODE_CALLS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "no_grad",
                              "inference_mode", "enable_grad", "torch.autograd.no_grad"})


def parsed_function(source: str, qualname: str):
    """(module, positions, owning class or None, function) of `qualname` in `source`, or None when
    it does not parse or has no such function."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    return None if found is None else (module, positions, found[0], found[1])


def region_statements(source: str, qualname: str):
    """(the region's statements as the split sees them, their positions) in `source`, or None."""
    parsed = parsed_function(source, qualname)
    return None if parsed is None else (_peel_grad_mode(parsed[3])[0], parsed[1])


def _peel_grad_mode(function: cst.FunctionDef):
    """(the statements to split, how to put a body back): the docstring goes back into the
    wrapper only; a body that is one `with torch.no_grad():` block (after a docstring) is split
    inside it, and the wrapper and the core each keep the block around their part, so both run
    in the grad mode the step ran in."""
    body = list(function.body.body)
    docstring = body[:1] if body and _is_docstring(body[0]) else []
    rest = body[len(docstring):]
    if (len(rest) == 1 and isinstance(rest[0], cst.With) and isinstance(rest[0].body, cst.IndentedBlock)
            and rest[0].body.body and not rest[0].asynchronous
            and all(item.asname is None and isinstance(item.item, cst.Call)
                    and _chain(item.item.func) in _GRAD_MODE_CALLS for item in rest[0].items)):
        block = rest[0]

        def rewrap(statements: list[cst.BaseStatement], keep_docstring: bool = True) -> list[cst.BaseStatement]:
            wrapped = block.with_changes(body=block.body.with_changes(body=statements), leading_lines=())
            return (docstring if keep_docstring else []) + [wrapped]

        return list(block.body.body), rewrap
    # the docstring stays with the wrapper, the function callers call (help(), documentation)
    return rest, lambda statements, keep_docstring=True: (docstring if keep_docstring else []) + statements


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _decorator_name(decorator: cst.Decorator) -> str:
    node = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
    return _chain(node) or ""


def _returns_in(node: cst.CSTNode) -> int:
    blockers = _Blockers()
    node.visit(blockers)
    return blockers.returns


def _is_final(statement: cst.BaseStatement) -> bool:
    """A last statement that ends the function on every path: `return x`, or an `if` whose every
    branch (an `else` included) ends in such a statement."""
    if _is_return(statement):
        return True
    if isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        if not statement.body.body or not _is_final(statement.body.body[-1]):
            return False
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            return _is_final(orelse)
        return (isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock)
                and bool(orelse.body.body) and _is_final(orelse.body.body[-1]))
    return False


def _is_return(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Return))


def _local_names(node: cst.CSTNode) -> set[str]:
    """Every name but attribute names (`self.cur_len` does not take `cur_len`)."""
    found: set[str] = set()

    class _Locals(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

    node.visit(_Locals())
    return found


def _fresh(name: str, scope: cst.CSTNode) -> str:
    taken = _names_in(scope)
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}{number}", number + 1
    return candidate


def _names_in(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _All(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    node.visit(_All())
    return found


# --- writing the wrapper and the core ----------------------------------------------------------------

_GRAD_MODES = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "no_grad", "inference_mode"})


def _rewrite(module, owner, function, core_name, prologue, core, epilogue, ret, kept, numbers, exits=False,
             rewrap=lambda statements, keep_docstring=True: statements) -> SplitResult:
    params = function.params
    method = isinstance(owner, cst.ClassDef)
    first = params.params[0].name.value if method else None
    taken_names = _local_names(function)
    attributes = {}  # "self.cur_len" -> the core parameter that carries it
    for chain in sorted(n for n in numbers if "." in n):
        root, _, attr = chain.partition(".")
        if root == first and "." not in attr:
            attributes[chain] = _fresh_among(attr, taken_names | set(attributes.values()))
    number_names = {n for n in numbers if "." not in n} | set(attributes.values())
    indexes = 0
    if attributes or number_names:
        rewriter = _NumbersRead(attributes, number_names, _torch_name(module))
        core = [_Statement(s.node.visit(rewriter), s.first, s.last, exit=s.exit) for s in core]
        if ret is not None:
            ret = _Statement(ret.node.visit(rewriter), ret.first, ret.last)
        indexes = rewriter.indexes
    available_after_prologue = _defined(prologue)
    core_reads = set().union(*(s.reads for s in core)) if core else set()
    epilogue_reads = set().union(*(s.reads for s in epilogue)) if epilogue else set()
    epilogue_writes = set().union(*(s.writes for s in epilogue)) if epilogue else set()
    return_in_core = ret is not None and not ret.host and not _overlaps(epilogue_writes, ret.reads)
    if return_in_core:
        core_reads |= ret.reads
    core_defined = _defined(core)
    # core parameters: the region's own parameters it reads, then names the prologue defined
    keep = []
    for param in params.params:
        name = param.name.value
        if name == first or _reads_root(core_reads, name):
            keep.append(param)
    passed_in = sorted(n for n in available_after_prologue if _reads_root(core_reads, n)
                       and n not in {p.name.value for p in params.params})
    star = params.star_arg if isinstance(params.star_arg, cst.Param) and _reads_root(core_reads, params.star_arg.name.value) else None
    kwonly = [p for p in params.kwonly_params if _reads_root(core_reads, p.name.value)]
    star_kwarg = params.star_kwarg if params.star_kwarg and _reads_root(core_reads, params.star_kwarg.name.value) else None
    # values the wrapper needs back: names the core defines that the epilogue (or the return) reads
    needed = epilogue_reads | (set() if return_in_core or ret is None else ret.reads)
    extras = sorted(n for n in core_defined if _reads_root(needed, n))
    taken = _names_in(function)
    result_name = _fresh_among("_result", taken)

    exited_name = _fresh_among("_exited", taken | {result_name})
    # with early exits the core returns (exited, result, *extras) on every path: the wrapper
    # returns the result at once when the core exited early, else runs the host work after it
    head = [cst.Name("False")] if exits else []
    core_returns: list[cst.BaseExpression] = list(head)
    final_if = ret is not None and not _is_return(ret.node)
    if return_in_core and not final_if:
        value = ret.node.body[0].value or cst.Name("None")
        if (extras or exits) and isinstance(value, cst.Tuple) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])  # one element: the result
        core_returns.append(value)
    elif exits:
        core_returns.append(cst.Name("None"))  # the core did not exit: the wrapper computes the result
    core_returns += [cst.Name(n) for n in extras]
    core_body = [s.node.visit(_WithExtras([cst.Name("True")], [cst.Name("None")] * len(extras))) if s.exit
                 else s.node for s in core]
    if return_in_core and final_if:  # each branch returns its result and the values the wrapper needs
        core_body.append(ret.node.visit(_WithExtras(head, [cst.Name(n) for n in extras])))
    elif core_returns:
        value = core_returns[0] if len(core_returns) == 1 else cst.Tuple([cst.Element(v) for v in core_returns],
                                                                        lpar=[], rpar=[])
        core_body.append(cst.SimpleStatementLine([cst.Return(value)]))
    if not core_body:
        core_body = [cst.SimpleStatementLine([cst.Pass()])]

    new_params = [p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in keep]
    if passed_in or attributes:  # the wrapper passes every one: a default before them would not parse
        new_params = [p.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT) for p in new_params]
    new_params += [cst.Param(cst.Name(n)) for n in passed_in]
    new_params += [cst.Param(cst.Name(n)) for n in attributes.values()]
    core_params = params.with_changes(params=new_params, star_arg=star or cst.MaybeSentinel.DEFAULT,
                                      kwonly_params=kwonly if star or not kwonly else kwonly,
                                      star_kwarg=star_kwarg, posonly_params=(), posonly_ind=cst.MaybeSentinel.DEFAULT)
    if kwonly and not star:
        core_params = core_params.with_changes(star_arg=cst.ParamStar())
    decorators = [d for d in function.decorators if _decorator_name(d) in _GRAD_MODES]
    core_function = function.with_changes(name=cst.Name(core_name), params=core_params, decorators=decorators,
                                          body=function.body.with_changes(body=rewrap(core_body, False)),
                                          leading_lines=[cst.EmptyLine(indent=False)] if owner is not None else
                                          [cst.EmptyLine(indent=False)] * 2, returns=None)

    # a closure's core is an attribute of the closure (`update.update_core`), set where the factory
    # builds both: whoever holds the closure the factory returned can graph its core
    holder = first if method else function.name.value if owner is not None else None
    callee = cst.Attribute(cst.Name(holder), cst.Name(core_name)) if holder else cst.Name(core_name)
    args = [cst.Arg(cst.Name(p.name.value)) for p in keep if p.name.value != first]
    args += [cst.Arg(cst.Name(n)) for n in passed_in]
    args += [cst.Arg(cst.parse_expression(chain)) for chain in attributes]
    if star:
        args.append(cst.Arg(cst.Name(star.name.value), star="*"))
    tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    args += [cst.Arg(cst.Name(p.name.value), keyword=cst.Name(p.name.value), equal=tight) for p in kwonly]
    if star_kwarg:
        args.append(cst.Arg(cst.Name(star_kwarg.name.value), star="**"))
    call = cst.Call(callee, args)
    targets = ([cst.Name(exited_name), cst.Name(result_name)] if exits else
               [cst.Name(result_name)] if return_in_core else []) + [cst.Name(n) for n in extras]
    if not targets:
        call_line = cst.SimpleStatementLine([cst.Expr(call)])
    else:
        target = targets[0] if len(targets) == 1 else cst.Tuple([cst.Element(t) for t in targets], lpar=[], rpar=[])
        call_line = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], call)])
    wrapper_body = [s.node for s in prologue] + [call_line]
    if exits:
        wrapper_body.append(cst.parse_statement(f"if {exited_name}:\n    return {result_name}\n"))
    wrapper_body += [s.node for s in epilogue]
    if ret is not None:
        wrapper_body.append(cst.SimpleStatementLine([cst.Return(cst.Name(result_name))]) if return_in_core
                            else ret.node)
    new_wrapper = function.with_changes(body=function.body.with_changes(body=rewrap(wrapper_body)))

    if owner is not None:
        members = []
        for member in owner.body.body:
            members += [new_wrapper, core_function] if member is function else [member]
            if member is function and not method:
                members.append(cst.parse_statement(f"{holder}.{core_name} = {core_name}\n"))
        new_module = module.deep_replace(owner, owner.with_changes(body=owner.body.with_changes(body=members)))
    else:
        members = []
        for member in module.body:
            members += [new_wrapper, core_function] if member is function else [member]
        new_module = module.with_changes(body=members)
    parameters = [p.name.value for p in keep if p.name.value != first] + passed_in + list(attributes.values())
    positional = not star and not kwonly  # graphed names numbers by position among the call's arguments
    number_positions = [i for i, p in enumerate(parameters) if p in number_names] if positional else []
    return SplitResult(new_module.code, None, core_name, parameters,
                       [s.first for s in prologue], [s.first for s in epilogue], kept, number_positions, indexes,
                       holder if owner is not None and not method else "", ret is not None and ret.host)


class _WithExtras(cst.CSTTransformer):
    """`return x` → `return head..., (x), extras...` in the statement (not in nested functions)."""

    def __init__(self, head: list[cst.BaseExpression], extras: list[cst.BaseExpression]) -> None:
        self.head, self.extras = head, extras

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if not self.extras and not self.head:
            return updated
        value = updated.value or cst.Name("None")
        if isinstance(value, cst.Tuple) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        elements = [*self.head, value, *self.extras]
        return updated.with_changes(value=cst.Tuple([cst.Element(e) for e in elements], lpar=[], rpar=[]),
                                    whitespace_after_return=cst.SimpleWhitespace(" "))


class _NumbersRead(cst.CSTTransformer):
    """In the core: `self.cur_len` → the parameter carrying it, and a read `x[:, n]` indexed by a
    per-step number → `x[:, torch.as_tensor(n).reshape(1)].squeeze(1)`: an integer index reads a
    0-dim device tensor on the host (capture fails), a one-element index tensor is read on the
    device, and `as_tensor` leaves a device tensor where it is (a Python int, when the core runs
    eagerly, becomes a CPU index as before). Same elements, negative indices included; a copy
    where the integer index gave a view (unsafe: an in-place change of the result no longer
    reaches `x`). Only reads whose other indices are slices: assignment targets and slices
    bounded by the number (a shape that changes per step) stay, and capture reports them."""

    def __init__(self, attributes: dict[str, str], numbers: set[str], torch_name: str | None) -> None:
        self.attributes, self.numbers, self.torch = attributes, numbers, torch_name
        self.targets = 0
        self.indexes = 0

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.targets += 1

    def leave_AssignTarget(self, original: cst.AssignTarget, updated: cst.AssignTarget) -> cst.AssignTarget:
        self.targets -= 1
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        name = self.attributes.get(_chain(original) or "")
        return cst.Name(name) if name else updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if self.targets or self.torch is None:
            return updated
        elements = list(updated.slice)
        indexed = [i for i, e in enumerate(elements) if not isinstance(e.slice, cst.Slice)]
        if len(indexed) != 1:
            return updated
        position = indexed[0]
        value = elements[position].slice.value
        if isinstance(value, cst.Ellipsis) or not any(_reads_root(_effects(value)[0], n) for n in self.numbers):
            return updated
        as_index = cst.Call(cst.Attribute(cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("as_tensor")),
                                                   [cst.Arg(value.with_changes(lpar=[], rpar=[]))]),
                                          cst.Name("reshape")), [cst.Arg(cst.Integer("1"))])
        elements[position] = elements[position].with_changes(slice=cst.Index(as_index))
        self.indexes += 1
        return cst.Call(cst.Attribute(updated.with_changes(slice=elements), cst.Name("squeeze")),
                        [cst.Arg(cst.Integer(str(position)))])


def _torch_name(module: cst.Module) -> str | None:
    """The name `import torch` binds at the top level (None: no such import)."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if _chain(alias.name) == "torch":
                            return alias.asname.name.value if alias.asname else "torch"
    return None


def _defined(statements: Iterable[_Statement]) -> set[str]:
    return {w for s in statements for w in s.writes if "." not in w}


def _reads_root(reads: set[str], name: str) -> bool:
    return any(r == name or r.startswith(name + ".") for r in reads)


def _fresh_among(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}{number}", number + 1
    return candidate


# --- values a fix in the core made tensors, read by the wrapper's host work ---------------------------


def convert_fixed_values(source: str, qualname: str, core_name: str, fixed_lines: set[int]) -> tuple[str, list[str]]:
    """After a fix in the core turned a Python number into a tensor (GS101: `losses.append(
    loss.item())` → `losses.append(loss.detach())`), a value the core hands back to the wrapper
    may now hold tensors where the wrapper's host work expects numbers (`np.mean(losses)` fails
    on CUDA tensors). The wrapper converts it back right after the core call — `losses =
    [v.item() for v in losses]`, `total = total.item()` — so the host work reads what it read
    before and the graph keeps the step free of syncs. (source, the names converted)."""
    module = cst.parse_module(source)
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    outer = found[0] if found else None
    core = _find(module, f"{outer.name.value}.{core_name}" if outer is not None else core_name)
    if found is None or core is None:
        return source, []
    wrapper = found[1]
    made: dict[str, str] = {}  # name → "list" (its appended elements became tensors) or "value"

    class _Fixed(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is core[1]

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            if positions[node].start.line not in fixed_lines:
                return False
            for small in node.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                        and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "append" \
                        and isinstance(small.value.func.value, cst.Name):
                    made.setdefault(small.value.func.value.value, "list")
                elif isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    for target in targets:
                        if isinstance(target, cst.Name):
                            made.setdefault(target.value, "value")
            return False

    core[1].visit(_Fixed())
    call_index, returned = _core_call(wrapper, core_name)
    names = [n for n in returned if n in made]
    if call_index is None or not names:
        return source, []
    body, rewrap = _peel_grad_mode(wrapper)
    conversions = [cst.parse_statement(f"{n} = [v.item() for v in {n}]\n" if made[n] == "list" else
                                       f"{n} = {n}.item()\n") for n in names]
    new_body = rewrap(body[:call_index + 1] + conversions + body[call_index + 1:])
    new_wrapper = wrapper.with_changes(body=wrapper.body.with_changes(body=new_body))
    return module.deep_replace(wrapper, new_wrapper).code, names


def _core_call(wrapper: cst.FunctionDef, core_name: str) -> tuple[int | None, list[str]]:
    """The index of the wrapper's statement that calls the core, and the names it binds."""
    body, _ = _peel_grad_mode(wrapper)
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
                and isinstance(statement.body[0], cst.Assign):
            assign = statement.body[0]
            call = assign.value
            if isinstance(call, cst.Call) and isinstance(call.func, (cst.Attribute, cst.Name)) \
                    and (call.func.attr.value if isinstance(call.func, cst.Attribute) else call.func.value) == core_name:
                target = assign.targets[0].target
                elements = target.elements if isinstance(target, cst.Tuple) else [cst.Element(target)]
                return index, [e.value.value for e in elements if isinstance(e.value, cst.Name)]
    return None, []
