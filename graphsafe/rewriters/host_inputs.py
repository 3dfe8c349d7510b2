"""Host-produced core inputs: the host work that makes a core input moves to the wrapper.

    def train(self, n, b):                     def train(self, n, b):
        self.policy.train()                        batch_list = [self.buffer.sample(b) for _ in range(n)]
        for _ in range(n):                         self.train_core(n, batch_list)
            batch = self.buffer.sample(b)   →
            loss = self.loss(batch)            def train_core(self, n, batch_list):
            ...                                    self.policy.train()
                                                   for _, batch in zip(range(n), batch_list):
                                                       loss = self.loss(batch)

A statement that assigns names from host work which copies host data to the device (GS402 on
its line, or in a function it calls: `sample()` turning numpy arrays into tensors, reported by
static analysis or observed at run time) is a *producer*: its value is an input of the tensor
work, made on the host. Only host work: nothing else in its reach but randomness, logging, file
I/O and host containers (PRODUCER_CODES), and no tensor parameter of the region read. The
wrapper runs it before the core and hands the value to the core as an argument; graphed() copies
each argument tensor into its static device buffer with `.copy_()` before every replay, and the
core reads that buffer, so the copy never happens during capture.

A call with no host copy in its reach whose reach keeps host state that no rewrite carries to the
device (HOST_STATE: a container it changes, a generator seeded on the host) and does host work only
(HOST_WORK: also per-step host numbers and counters, syncs, warnings) is a producer too: a noise
object called in a solver step, `dw = self.bm(t0, t1)` (host floats of the times, an interval tree,
a generator per interval). Top level only, and only when no core statement before it calls anything
(a random draw there and one in the producer could share a stream: moved first, they would swap)
and the region runs no backward (the value would reach the core as a copy, outside autograd).
Its draws and side effects keep their order: the host work before it stays before it, the core
statements it crosses call nothing, and the core's own draws come after it as before.

Where it may move:
- a producer at the top level of the region moves to the wrapper when it commutes with every
  core statement before it (rewriters/boundary.py: neither writes what the other reads or
  writes), so it runs before them with the same inputs;
- a producer inside `for V in range(...)` at the top level of the region is hoisted: the
  wrapper draws the values of every iteration first, `NAME_list = [VALUE for V in range(...)]`,
  and the loop reads them in order, `for V, NAME in zip(range(...), NAME_list)`. Only when the
  loop always runs to its end (no `break`, `return` or `else`), the loop body writes nothing the
  producer or the range reads, and the producer writes nothing but its own name that the body
  reads: then every value is what it was, drawn from the same state.

Refused, with the line and the reason (graph lists them): a producer whose inputs the loop body
writes, a loop that may stop early, a producer inside another kind of block, and a host copy on
a line of the region that is not where its data is made (`x = x.to(device=dev)` of a value made
earlier: the wrapper would have to know the device).

Not a safe fix (graph applies it): calls are assumed to change only the chains they name, and
two host samplers that draw from one random stream (the CPU generator the loop body also draws
from) would draw in another order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import libcst as cst

from graphsafe.rewriters.boundary import (HOST_CODES, _chain, _effects, _find, _fresh_among, _names_in, _overlaps,
                                         _peel_grad_mode)

HOST_COPY = "GS402"  # host-data-tensor: a copy of host memory to the device
# what a producer may do besides the copy: host randomness, logging, file I/O, progress bars and
# host containers — host work only. A per-step number or counter (GS301/GS302), a sync on a tensor
# (GS1xx) or a branch on one (GS201) in its reach says it is tensor work (a model's forward whose
# callee builds a tensor from a number): that stays in the core, where the other rewrites reach it.
PRODUCER_CODES = frozenset({HOST_COPY, "GS501", "GS502", "GS503", "GS504", "GS505"})
# A call with no host copy in its reach is a producer too when what it reaches keeps host state that
# no rewrite carries to the device (HOST_STATE: containers it changes, generators seeded on the host:
# a Brownian-motion object's interval tree) and does nothing but host work (HOST_WORK: also per-step
# host numbers and counters, syncs on what the caller passed in, warnings). A counter alone (GS302)
# is left to the callee-state rewrite, and a host copy beside a counter is tensor work (above).
HOST_STATE = frozenset({"GS503", "GS601"})
HOST_WORK = PRODUCER_CODES - {HOST_COPY} | {"GS101", "GS102", "GS103", "GS104", "GS105", "GS106", "GS301", "GS302",
                                           "GS601"}


@dataclass
class HostInputs:
    """The region's file with producers in loops hoisted, and where the producers are."""

    source: str
    line_map: Callable[[int], int] = lambda line: line  # a line of the original → its line in `source`
    producers: dict[int, set[str]] = field(default_factory=dict)  # first line (in `source`) → the codes it moves
    moved: list[tuple[int, str]] = field(default_factory=list)  # (line, what was hoisted)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line, why a host copy stays in the core)

    line_back: Callable[[int], int] = lambda line: line  # a line of `source` → its line in the original

    def in_original_lines(self, split):
        """A SplitResult of `source` with the lines it reports as the user's file numbers them."""
        return replace(split, prologue_lines=[self.line_back(n) for n in split.prologue_lines],
                       epilogue_lines=[self.line_back(n) for n in split.epilogue_lines],
                       kept_host_lines=[self.line_back(n) for n in split.kept_host_lines])

    def remap(self, by_line: dict[int, set[str]]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = {}
        for line, codes in by_line.items():
            out.setdefault(self.line_map(line), set()).update(codes)
        return out


def host_inputs(source: str, qualname: str, own: dict[int, set[str]], reached: dict[int, set[str]]) -> HostInputs:
    """Producers of core inputs in the function `qualname` of `source`. `own`: the region's own
    diagnostics (line → codes); `reached`: the codes of hazards in what each line's calls reach."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return HostInputs(source)
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    if found is None:
        return HostInputs(source)
    _, function = found
    body, _ = _peel_grad_mode(function)

    def codes_of(node: cst.CSTNode) -> tuple[set[str], set[str]]:
        lines = range(positions[node].start.line, positions[node].end.line + 1)
        return (set().union(*(own.get(n, set()) for n in lines)), set().union(*(reached.get(n, set()) for n in lines)))

    tensors = _tensor_parameters(function)

    def is_producer(node: cst.CSTNode) -> bool:
        here, via = codes_of(node)
        codes = here | via
        return (HOST_COPY in codes and codes <= PRODUCER_CODES and _assigned_names(node) is not None
                and not _overlaps(tensors, _effects(node)[0]))

    def keeps_host_state(node: cst.CSTNode) -> bool:
        """A call whose reach keeps host state and does host work only (HOST_STATE, HOST_WORK)."""
        here, via = codes_of(node)
        codes = here | via
        return (HOST_COPY not in codes and bool(codes & HOST_STATE) and codes <= HOST_WORK
                and _assigned_names(node) is not None and not _overlaps(tensors, _effects(node)[0]))

    first = function.params.params[0].name.value if function.params.params else None
    result = HostInputs(source)
    hoists = []
    backward = ".backward(" in cst.Module([]).code_for_node(function)
    for index, statement in enumerate(body):
        line = positions[statement].start.line
        stateful = not is_producer(statement) and keeps_host_state(statement)
        if stateful and (backward or _calls_before(body[:index], codes_of)):
            result.refused.append((line, _host_state_stays(body[:index], codes_of, positions, backward)))
        elif is_producer(statement) or stateful:
            clash = _called_on_read(statement, body[:index], first)
            made = _made_by_tensor_work(statement, body[:index], codes_of, positions)
            if clash:
                result.refused.append((line, f"a host input stays in the core: `{clash}` is called before it and may "
                                             "change what it reads"))
            elif made:
                prefix, why = _leading_inputs(statement, body[:index], codes_of, positions)
                if prefix:
                    for other in prefix:
                        result.producers[positions[other].start.line] = set().union(*codes_of(other))
                    result.producers[line] = _as_host(set().union(*codes_of(statement)))
                    lines = ", ".join(str(positions[other].start.line) for other in prefix)
                    result.moved.append((line, f"the host input made here moves to the wrapper with line {lines}, "
                                               "which it reads (no hazard on them): their values become core "
                                               "inputs"))
                else:
                    where = "on this line" if HOST_COPY in codes_of(statement)[0] else "in what it calls"
                    result.refused.append((line, f"a host-to-device copy {where} stays in the core: it reads {made}"
                                                 + (f"; {why}" if why else "")))
            else:
                result.producers[line] = _as_host(set().union(*codes_of(statement)))
                if stateful:
                    result.moved.append((line, "the value made here by host work that keeps host state (what it "
                                               "reaches: " + ", ".join(sorted(set().union(*codes_of(statement))))
                                         + ") moves to the wrapper, which runs it before the core every call; the "
                                           "core takes it as an input"))
        elif isinstance(statement, cst.For):
            inner = [s for s in _loop_body(statement) if is_producer(s)]
            for other in _loop_body(statement):
                if other not in inner:
                    _refuse_copies(other, codes_of, positions, result, tensors)
            if inner:
                why = _cannot_hoist(statement, inner[0], first)
                clash = _called_on_read(inner[0], body[:index], first)
                made = _made_by_tensor_work(inner[0], body[:index], codes_of, positions)
                why = why or (f"`{clash}` is called before the loop and may change what it reads" if clash else
                              f"it reads {made}" if made else None)
                if why:
                    result.refused.append((positions[inner[0]].start.line,
                                           f"a host input made in the loop at line {line} stays in the core: {why}"))
                else:
                    hoists.append((statement, inner[0]))
            for other in inner[1:]:
                result.refused.append((positions[other].start.line, f"a second host input in the loop at line {line} "
                                                                    "stays in the core (one is hoisted per loop)"))
        else:
            _refuse_copies(statement, codes_of, positions, result, tensors)
            _refuse_host_state(statement, codes_of, positions, result, tensors)
    if len(hoists) > 1:
        for loop, producer in hoists[1:]:
            result.refused.append((positions[producer].start.line,
                                   "a host input stays in the core: one loop is hoisted per region"))
        hoists = hoists[:1]
    if hoists:
        _hoist(module, function, positions, *hoists[0], result, codes_of)
    return result


def _refuse_copies(statement: cst.CSTNode, codes_of, positions, result: HostInputs, tensors: set[str]) -> None:
    """A host copy on a line of the region, or in what it calls, that is not a producer's: why it stays."""
    here, via = codes_of(statement)
    if HOST_COPY not in here | via:
        return
    line = positions[statement].start.line
    other = sorted((here | via) - PRODUCER_CODES)
    if other:
        why = f"what it reaches also has {', '.join(other)}: tensor work, which the core keeps"
    elif _assigned_names(statement) is None:
        kind = type(statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else statement).__name__
        kind = kind.lower()
        why = (f"it is not an assignment of names ({'an' if kind[0] in 'aeiou' else 'a'} {kind} statement): the core "
               "can take only names")
    elif _first_overlap(tensors, _effects(statement)[0]):
        why = f"it reads `{_first_overlap(tensors, _effects(statement)[0])}`, a tensor input: tensor work, which the " \
              "core keeps"
    else:
        return  # an assignment of host work: a producer, placed by the split
    where = "on this line" if HOST_COPY in here else "in what it calls"
    result.refused.append((line, f"a host-to-device copy {where} stays in the core: {why}"))


def _as_host(codes: set[str]) -> set[str]:
    """A producer's codes as the split reads them: those outside HOST_CODES dropped (a producer with
    none left is host work to the split), and a lone per-step number (which the split would keep in
    the core as tensor work reading it) too."""
    kept = codes & HOST_CODES
    return set() if kept == {"GS301"} else kept


def _calls_before(before: list[cst.CSTNode], codes_of) -> cst.CSTNode | None:
    """The first statement before it that is not host work and calls something: the wrapper would
    run the producer first, and a random draw in each (one stream) would come in the other order."""
    for other in before:
        here, via = codes_of(other)
        if here | via and (here | via) <= HOST_CODES:
            continue  # host work: stays before it, in the wrapper
        if _calls(other):
            return other
    return None


def _calls(node: cst.CSTNode) -> list[str]:
    found: list[str] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(cst.Module([]).code_for_node(call.func))

    node.visit(_Calls())
    return found


def _host_state_stays(before: list[cst.CSTNode], codes_of, positions, backward: bool) -> str:
    if backward:
        return ("host work that keeps host state stays in the core: the region runs a backward, and the value the "
                "wrapper made would reach the core as a copy, outside autograd")
    other = _calls_before(before, codes_of)
    return (f"host work that keeps host state stays in the core: line {positions[other].start.line} calls "
            f"`{_calls(other)[0]}` before it in the core; the wrapper would run this first, and random draws of "
            "the two from one stream would come in the other order")


def _refuse_host_state(statement: cst.CSTNode, codes_of, positions, result: HostInputs, tensors: set[str]) -> None:
    """Host state in what a statement reaches (HOST_STATE) that is not a producer's: why it stays."""
    here, via = codes_of(statement)
    codes = here | via
    if HOST_COPY in codes or not codes & HOST_STATE:
        return
    other = sorted(codes - HOST_WORK)
    if not other:  # host work alone: the split keeps it with the wrapper's host work, nothing to say
        return
    why = f"what it reaches also has {', '.join(other)}: tensor work, which the core keeps"
    line = positions[statement].start.line
    result.refused.append((line, f"host work that keeps host state stays in the core: {why}"))


def _tensor_parameters(function: cst.FunctionDef) -> set[str]:
    """Parameters annotated as tensors (`x: torch.Tensor`): work that reads one is tensor work."""
    params = function.params
    found = set()
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        text = cst.Module([]).code_for_node(annotation) if annotation is not None else ""
        if text.replace(" ", "").split("[")[0].endswith("Tensor"):
            found.add(param.name.value)
    return found


def _assigned_names(node: cst.CSTNode) -> list[str] | None:
    """`a = ...` / `a, b = ...` (one statement on its line), or such assignments under an `if`
    without else (`if params is None: params = self.sample()`): the names; None for anything else."""
    if isinstance(node, cst.If) and node.orelse is None and isinstance(node.body, cst.IndentedBlock):
        inner = [_assigned_names(s) for s in node.body.body]
        return None if not inner or None in inner else [n for names in inner for n in names]
    if not (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Assign)):
        return None
    names = []
    for target in node.body[0].targets:
        value = target.target
        elements = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
        if not all(isinstance(e, cst.Name) for e in elements):
            return None
        names += [e.value for e in elements]
    return names


def _loop_body(loop: cst.For) -> list[cst.BaseStatement]:
    return list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []


class _Stops(cst.CSTVisitor):
    """The first `break` (of this loop, not of a loop inside it), `return` or `yield` in a loop body."""

    def __init__(self) -> None:
        self.found: str | None = None
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> None:
        self.depth += 1

    def leave_For(self, node: cst.For) -> None:
        self.depth -= 1

    def visit_While(self, node: cst.While) -> None:
        self.depth += 1

    def leave_While(self, node: cst.While) -> None:
        self.depth -= 1

    def visit_Break(self, node: cst.Break) -> None:
        if not self.depth:
            self.found = self.found or "the loop may stop early (a break): fewer values would be used than drawn"

    def visit_Return(self, node: cst.Return) -> None:
        self.found = self.found or "the loop may stop early (a return): fewer values would be used than drawn"

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = self.found or "the loop yields"


def _made_by_tensor_work(producer: cst.CSTNode, before: list[cst.CSTNode], codes_of, positions) -> str | None:
    """"`batch_shape`, which line 337 computes before it": a name the producer reads that an
    earlier statement with no host work writes (the core's work: the wrapper cannot run the
    producer before it), or None."""
    reads, _ = _effects(producer)
    for other in reversed(before):
        here, via = codes_of(other)
        if here | via and (here | via) <= HOST_CODES:
            continue
        clash = _first_overlap(_effects(other)[1], reads)
        if clash:
            return (f"`{clash}`, which line {positions[other].start.line} computes before it in the core (the "
                    "wrapper cannot make it before the core's work)")
    return None


def _leading_inputs(producer: cst.CSTNode, before: list[cst.CSTNode], codes_of, positions
                    ) -> tuple[list[cst.CSTNode], str | None]:
    """The statements before the producer that it reads, directly or through each other
    (`in_tensor = self.transform(input); batch_shape = in_tensor.shape; params =
    self.sample(batch_shape)`), and those that do not commute with one of them (`input_shape =
    in_tensor.shape` between two bindings of `in_tensor`): they move to the wrapper with the
    producer, in their order, so each still runs after every statement it does not commute with
    (the split checks the rest). Their values become core inputs (graphed() copies the tensors
    into its static buffers; shapes are fixed per graph). Only assignments of names with no hazard
    beyond host work, of their own or in what they call: the wrapper runs them eagerly, and capture
    needs nothing rewritten there; a block (`if state is None: for i ...:`) may bind names on some
    paths only. ([], why not) otherwise."""
    taken: list[int] = []
    needed, _ = _effects(producer)
    for index in range(len(before) - 1, -1, -1):
        reads, writes = _effects(before[index])
        clash = any(_overlaps(writes, r | w) or _overlaps(w, reads)
                    for r, w in (_effects(before[k]) for k in taken))
        if _overlaps(writes, needed) or clash:
            needed |= reads
            taken.append(index)
    if not taken:
        return [], None
    prefix = [before[k] for k in sorted(taken)]
    for other in prefix:
        here, via = codes_of(other)
        bad = sorted((here | via) - HOST_CODES)
        if bad or _assigned_names(other) is None:
            what = f"has {', '.join(bad)}" if bad else "is not an assignment of names (it may bind them on some paths only)"
            return [], f"line {positions[other].start.line}, which it depends on, {what}: the core keeps it"
    return prefix, None


def _called_on_read(producer: cst.CSTNode, others: list[cst.CSTNode], first: str | None) -> str | None:
    """`self.buffer.reset()` in `others` when the producer reads `self.buffer`: a method called on
    an object of self the producer reads may change it (not a method of self itself, which every
    attribute read names, nor a module's function: those are taken to change what they name)."""
    reads, _ = _effects(producer)
    for other in others:
        for receiver, method in sorted(_receivers(other)):
            if first and receiver.startswith(first + ".") and _overlaps({receiver}, reads):
                return f"{receiver}.{method}()"
    return None


def _receivers(node: cst.CSTNode) -> set[tuple[str, str]]:
    """(receiver chain, method) of the method calls in `node`: `self.buffer.reset()` → ("self.buffer", "reset")."""
    found: set[tuple[str, str]] = set()

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if isinstance(call.func, cst.Attribute):
                chain = _chain(call.func.value)
                if chain:
                    found.add((chain, call.func.attr.value))

    node.visit(_Calls())
    return found


def _cannot_hoist(loop: cst.For, producer: cst.SimpleStatementLine, first: str | None) -> str | None:
    """Why the values of every iteration cannot be made before the loop, or None."""
    if not isinstance(producer, cst.SimpleStatementLine):
        return "it is made under an if: the wrapper would make values the loop does not use"
    if loop.asynchronous:
        return "an async loop"
    if loop.orelse is not None:
        return "the loop has an else"
    if not isinstance(loop.target, cst.Name):
        return "the loop variable is not one name"
    iterator = loop.iter
    if not (isinstance(iterator, cst.Call) and isinstance(iterator.func, cst.Name) and iterator.func.value == "range"):
        return "the loop is not over range(...)"
    names = _assigned_names(producer)
    if names is None or len(names) != 1:
        return "the producer assigns more than one name"
    stops = _Stops()
    for statement in _loop_body(loop):
        statement.visit(stops)
    if stops.found:
        return stops.found
    reads, writes = _effects(producer.body[0].value)
    if _overlaps(set(names), reads):
        return (f"it copies `{names[0]}`, a value the loop carries from one iteration to the next, made before it: "
                "the wrapper would have to copy it to a device the core names (make it on the device, or pass it in "
                "on the device)")
    range_reads, _ = _effects(iterator)
    clash = _called_on_read(producer, [s for s in _loop_body(loop) if s is not producer], first)
    if clash:
        return f"the loop body calls `{clash}`, which may change what the producer reads"
    for statement in _loop_body(loop):
        if statement is producer:
            continue
        s_reads, s_writes = _effects(statement)
        clash = _first_overlap(s_writes, reads | range_reads)
        if clash:
            return f"the loop body writes `{clash}`, which the producer or the range reads"
        clash = _first_overlap(writes - set(names), s_reads | s_writes)
        if clash:
            return f"the producer changes `{clash}`, which the loop body reads"
    return None


def _first_overlap(left: set[str], right: set[str]) -> str | None:
    for name in sorted(left):
        if _overlaps({name}, right):
            return name
    return None


def _hoist(module: cst.Module, function: cst.FunctionDef, positions, loop: cst.For, producer: cst.SimpleStatementLine,
           result: HostInputs, codes_of) -> None:
    """`NAME_list = [VALUE for V in range(...)]` before the loop, the loop over `zip(range(...), NAME_list)`
    without the producer; the line map from the old text to the new."""
    name = _assigned_names(producer)[0]
    listed = _fresh_among(f"{name}_list", _names_in(function))
    comprehension = cst.ListComp(producer.body[0].value.with_changes(lpar=[], rpar=[]),
                                 cst.CompFor(target=loop.target, iter=loop.iter))
    statement = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(listed))], comprehension)],
                                        leading_lines=list(loop.leading_lines) + list(producer.leading_lines),
                                        trailing_whitespace=producer.trailing_whitespace)  # `# type: ignore` kept
    pairs = cst.Tuple([cst.Element(loop.target), cst.Element(cst.Name(name))], lpar=[], rpar=[])
    zipped = cst.Call(cst.Name("zip"), [cst.Arg(loop.iter), cst.Arg(cst.Name(listed))])
    body = [s for s in _loop_body(loop) if s is not producer] or [cst.SimpleStatementLine([cst.Pass()])]
    new_loop = loop.with_changes(target=pairs, iter=zipped, body=loop.body.with_changes(body=body), leading_lines=[])
    new_function = function.deep_replace(loop, cst.FlattenSentinel([statement, new_loop]))
    result.source = module.deep_replace(function, new_function).code

    for_line = positions[loop].start.line
    first, last = positions[producer].start.line, positions[producer].end.line
    led = len(producer.leading_lines)
    added = cst.Module([]).code_for_node(statement.with_changes(leading_lines=[])).count("\n")
    removed = last - first + 1

    def line_map(line: int) -> int:
        if line < for_line:
            return line
        if line < first - led:
            return line + led + added
        if line <= last:
            return for_line + led  # the producer's lines: the hoisted statement
        return line + added - removed

    def line_back(line: int) -> int:
        if line == for_line + led:
            return first  # the hoisted statement: the producer's line
        return next((old for old in range(max(1, line - added - led), line + removed + 1) if line_map(old) == line),
                    line)

    result.line_map, result.line_back = line_map, line_back
    result.producers = {line_map(line): codes for line, codes in result.producers.items()}
    result.producers[for_line + led] = set().union(*codes_of(producer))
    result.moved.append((first, f"`{name}` of every iteration of the loop at line {for_line} is made before it "
                                f"(`{listed}`), in the wrapper"))
