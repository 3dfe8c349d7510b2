"""A per-step Python number parameter of a region → a device buffer filled before each call.

    class Denoiser(nn.Module):                       class Denoiser(nn.Module):
        def __init__(self):                              def __init__(self):
            super().__init__()                               super().__init__()
                                              →              self.register_buffer("_step_scale", torch.zeros(()), persistent=False)
        @graphsafe.region                                @graphsafe.region
        def step(self, x, scale: float):                 def step(self, x, scale: torch.Tensor):
            return self.net(x) * scale                       return self.net(x) * scale
        def sample(self, x, scales):                     def sample(self, x, scales):
            for s in scales:                                 for s in scales:
                x = self.step(x, s)                              x = self.step(x, self._step_scale.fill_(s))

The buffer is created once (a non-persistent buffer follows `.to(device)`), filled outside the
region by each caller (`fill_` returns the buffer), and the region reads it: a graph of `step`
sees one address whose value changes per call.

Offered only when every place is visible and rewritten, in one file:
- the method is a region root marked on itself (`@graphsafe.region`, `# graphsafe: region`) of
  an `nn.Module` subclass whose `__init__` is in the class and ends with a simple statement;
- the parameter is annotated `float` or `int`, never rebound, and every read of it in the
  method is the right operand of `+ - *` on a tensor (the kernels then compute the same
  values from a number or a 0-dim tensor: see keep_tensor.py) or, for an `int`, the only
  index of a tensor (`self.alphas[t]`: the same elements, as a copy instead of a view);
- every reference to the method in the file is a call `self.method(...)` inside the class,
  outside capture blocks (a fill inside a capture block would be replayed with the capture-time
  value), passing the parameter positionally or by keyword.

Always unsafe: callers in other files keep passing a Python number (still correct eagerly,
but not graph-safe), and the buffer's dtype (the default dtype for a float, int64 for an int)
decides promotion: a float64 operand reads the value rounded to float32, a bfloat16/float16
operand on CUDA reads it rounded to its own dtype (CUDA casts a 0-dim device tensor to the
operand's dtype; a Python number stays float32), and a 0-dim operand
of another dtype is promoted to the buffer's; `model.half()` casts the buffer as well. Under
autograd, `x * buffer` saves the buffer, so a backward through two calls fails (the second
`fill_` modified it in place). An index reads a copy: a later in-place change of the table
is not seen through it, and a table that is a plain attribute (not a buffer) stays on its
device while the index buffer follows `.to(device)`. tests/test_rewriter_scalar_buffer.py pins
the value and dtype cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from graphsafe.analyzer.nodes import children
from graphsafe.model import Applicability

FixSpec = tuple[str, list[tuple[object, str]], Applicability]

_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply)  # not `/`: see keep_tensor.py
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


@dataclass
class _Method:
    node: cst.FunctionDef
    class_key: str
    is_root: bool


@dataclass
class ScalarParameterUses:
    """What one file shows about methods and their number parameters (filled during the walk)."""

    methods: dict[tuple[str, str], _Method] = field(default_factory=dict)  # (class, name) → def
    safe_reads: set[int] = field(default_factory=set)  # ids of Name reads in a safe position
    index_reads: set[int] = field(default_factory=set)  # ids of Names used as a tensor's only index
    # (class, name) → (call, its statement, inside a capture block)
    calls: dict[tuple[str, str], list[tuple[cst.Call, cst.CSTNode, bool]]] = field(default_factory=dict)
    call_funcs: set[int] = field(default_factory=set)
    # attribute name → receivers it is read on other than as a `self.name(...)` call: "self:<class>"
    # for self, the classes of a known object, or "?" for a receiver of unknown kind
    other_refs: dict[str, set[str]] = field(default_factory=dict)


def note_function(node: cst.FunctionDef, ctx, uses: ScalarParameterUses) -> None:
    """Called for every def, from its enclosing scope (a method: the class scope)."""
    if ctx.class_key is None or ctx.function_key is not None:
        return
    is_root = bool(_has_mark(node, ctx))
    uses.methods[(ctx.class_key, node.name.value)] = _Method(node, ctx.class_key, is_root)


def _has_mark(node: cst.FunctionDef, ctx) -> bool:
    from graphsafe.analyzer.walker import REGION_DECORATORS, _has_region_comment

    if _has_region_comment(node):
        return True
    for decorator in node.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        if ctx.resolve(target) in REGION_DECORATORS:
            return True
    return False


def note_binary(node: cst.BinaryOperation, ctx, uses: ScalarParameterUses) -> None:
    if isinstance(node.right, cst.Name) and isinstance(node.operator, _OPERATORS) and ctx.kind(node.left).is_tensor:
        uses.safe_reads.add(id(node.right))


def note_subscript(node: cst.Subscript, ctx, uses: ScalarParameterUses) -> None:
    """`table[t]`: one integer index into a tensor reads the same element(s) from a 0-dim
    int64 tensor (as a copy instead of a view)."""
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        index = node.slice[0].slice.value
        if isinstance(index, cst.Name) and not ctx.is_store(node) and ctx.kind(node.value).is_tensor:
            uses.index_reads.add(id(index))


def note_call(node: cst.Call, ctx, uses: ScalarParameterUses) -> None:
    func = node.func
    if isinstance(func, cst.Attribute) and ctx.is_self(func.value) and ctx.class_key is not None:
        uses.calls.setdefault((ctx.class_key, func.attr.value), []).append((node, ctx.statement, ctx.in_capture_block()))
        uses.call_funcs.add(id(func))


def note_attribute(node: cst.Attribute, ctx, uses: ScalarParameterUses) -> None:
    """Any `x.name` that is not the callee of a `self.name(...)` call seen just before."""
    if id(node) in uses.call_funcs:
        return
    receivers = uses.other_refs.setdefault(node.attr.value, set())
    if ctx.is_self(node.value):
        receivers.add(f"self:{ctx.class_key}")
        return
    kind = ctx.kind(node.value, note=False)  # bookkeeping for the fix: never decides a report
    if kind.tag == "object" and kind.refs:
        receivers.update(kind.refs)
    elif not kind.not_tensor and not kind.is_tensor:
        receivers.add("?")


def reads_of(body: cst.BaseSuite, name: str, allowed: cst.CSTNode | None = None) -> list[cst.Name] | None:
    """Every read of `name` in `body`; None if it is bound anywhere but in `allowed` (an
    assignment statement), or captured by a nested function."""
    found: list[cst.Name] = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if node is allowed:
            stack.append(allowed.value)
            continue
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Global, cst.Nonlocal)):
            if name in _mentioned(node):
                return None
            continue
        if isinstance(node, cst.Attribute):
            stack.append(node.value)
            continue
        if isinstance(node, cst.Arg):
            stack.append(node.value)
            continue
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.For, cst.WithItem, cst.CompFor, cst.NamedExpr,
                             cst.AnnAssign, cst.ExceptHandler, cst.Del)) and _binds(node, name):
            return None
        if isinstance(node, cst.Name) and node.value == name:
            found.append(node)
        stack.extend(children(node))
    return found


def _mentioned(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            names.add(n.value)
        stack.extend(children(n))
    return names


def _binds(node: cst.CSTNode, name: str) -> bool:
    target = getattr(node, "target", None) or getattr(node, "asname", None) or getattr(node, "name", None)
    return target is not None and name in _mentioned(target)


def _param(node: cst.FunctionDef, name: str) -> tuple[cst.Param, int | None] | None:
    """The parameter and its positional index after `self` (None: keyword-only)."""
    positional = list(node.params.posonly_params) + list(node.params.params)
    for i, param in enumerate(positional):
        if param.name.value == name:
            return param, (i - 1 if i > 0 else None)
    for param in node.params.kwonly_params:
        if param.name.value == name:
            return param, None
    return None


def _init_tail(init: cst.FunctionDef) -> cst.BaseSmallStatement | None:
    body = init.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    last = body.body[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return None
    return last


def _passed(call: cst.Call, index: int | None, name: str) -> cst.BaseExpression | None:
    """The expression `call` passes for the parameter; None if it cannot be told."""
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if index is not None and index < len(positional):
        return positional[index].value
    return None


def buffer_fix(class_key: str, method: str, name: str, ctx, uses: ScalarParameterUses) -> FixSpec | None:
    """The fix for the number parameter `name` of `class_key.method`, or None where not every
    place can be rewritten."""
    found = uses.methods.get((class_key, method))
    init = uses.methods.get((class_key, "__init__"))
    info = ctx.classes.get(class_key)
    if found is None or init is None or info is None or not found.is_root:
        return None
    if not (_MODULE_BASES & set(info.bases)) or ctx.resolve(cst.Name("torch")) != "torch":
        return None
    located = _param(found.node, name)
    if located is None:
        return None
    param, index = located
    annotation = param.annotation.annotation if param.annotation is not None else None
    if not (isinstance(annotation, cst.Name) and annotation.value in ("float", "int")):
        return None
    reads = reads_of(found.node.body, name)
    allowed = uses.safe_reads | (uses.index_reads if annotation.value == "int" else set())
    if not reads or any(id(read) not in allowed for read in reads):
        return None
    receivers = uses.other_refs.get(method, set())
    if receivers & {f"self:{class_key}", "?"} or any(r.endswith(class_key.rpartition(".")[2]) for r in receivers):
        return None  # `torch.compile(self.step)`, `sampler.step(...)`: a caller we cannot rewrite
    calls = uses.calls.get((class_key, method), [])
    if not calls or any(in_capture for _, _, in_capture in calls):
        return None
    buffer = f"_{method}_{name}".replace("__", "_")
    if buffer in ctx.source:
        return None
    tail = _init_tail(init.node)
    if tail is None or tail.trailing_whitespace.comment is not None:
        return None
    ctx.anchors[id(annotation)] = found.node
    replacements: list[tuple[object, str]] = [(annotation, "torch.Tensor")]
    for call, statement, _ in calls:
        value = _passed(call, index, name)
        if value is None or ctx.kind(value).is_tensor:
            return None
        ctx.anchors[id(value)] = ctx.anchors[id(call)] = statement
        replacements.append((value, f"self.{buffer}.fill_({ctx.code_for(value, at=call)})"))
    factory = "torch.zeros(())" if annotation.value == "float" else "torch.zeros((), dtype=torch.long)"
    indent = "".join(ctx.statement_indents.get(id(tail), ()))
    last_small = tail.body[-1]
    self_name = init.node.params.params[0].name.value if init.node.params.params else "self"
    if self_name != "self":
        return None
    line = f'self.register_buffer("{buffer}", {factory}, persistent=False)'
    ctx.anchors[id(last_small)] = tail
    replacements.append((last_small, f"{ctx.code_for(last_small, at=tail)}\n{indent}{line}"))
    title = f"Read `{name}` from a buffer `self.{buffer}` filled with `.fill_()` by each caller"
    return (title, replacements, Applicability.UNSAFE,
            "until each caller fills the buffer before the call, the step reads the value it was created with")
