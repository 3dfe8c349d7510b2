"""Constant `torch.tensor(<literal>)` in a region method → an attribute created once in `__init__`.

    class M(nn.Module):                          class M(nn.Module):
        def __init__(self):                          def __init__(self):
            super().__init__()                           super().__init__()
                                           →             self._scale_const = torch.tensor([0.5, 2.0], device="cuda:0")
        def forward(self, x):  # region              def forward(self, x):  # region
            scale = torch.tensor([0.5, 2.0],             scale = self._scale_const
                                 device="cuda:0")
            return x * scale                             return x * scale

The pattern chosen: the region is a method of a class defined at module level whose
`__init__` calls `super().__init__()` on a line of its own; the tensor is created right after
that call, with the original call's text (same values, dtype and device arguments), as a plain
attribute (not a buffer: `module.half()` / `.to()` would change a buffer's dtype or device,
which the original never did).

Offered only when:
- the data are int/float/bool literals (nested lists/tuples allowed), the only keywords are
  `dtype=torch.X` and a literal `device=` ("cpu", "cuda:0", torch.device("cuda")...); a
  device taken from a tensor (`device=x.device`) is refused: the module's own device is not
  known to be that one;
- the one tensor object now shared by every call cannot be changed or escape: the call is an
  operand of arithmetic/comparison, an argument of a value-computing `torch.*` function, or a
  receiver of a value-computing method, either directly or through a local name assigned once
  whose every use is such an operand (no in-place method, `out=`, `+=`, return, storing,
  `.to()`/`.view()`-like aliasing results).

Safe when the dtype and device do not depend on global state read at creation time: an
explicit dtype or only int/bool data, and "cpu" or an indexed "cuda:N" device. A float literal
without a dtype reads `torch.get_default_dtype()`, no device reads the default device, and
"cuda" reads the current CUDA device: creating the tensor earlier, in `__init__`, may see other
settings, so those fixes are unsafe. Either way the constant now exists (and a missing device
fails) when the module is built rather than on the first call.
"""

from __future__ import annotations

import re

import libcst as cst

from graphsafe.analyzer.nodes import children
from graphsafe.model import Applicability
from graphsafe.rewriters.literals import flat_values, literal_device, literal_tensor
from graphsafe.rules.syntax import keyword

# Functions and methods whose result is a new tensor (never an alias of an argument) and which
# do not change their arguments.
_VALUE_FUNCTIONS = frozenset(
    """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod pow matmul mm bmm
    einsum outer dot exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sigmoid tanh sin cos abs neg
    reciprocal sign clamp clip minimum maximum fmax fmin where lerp addcmul addcdiv sum mean prod
    amax amin cumsum cumprod softmax log_softmax eq ne lt le gt ge isin bucketize searchsorted
    cat concat stack gather take index_select repeat_interleave cdist erf erfinv logsumexp norm
    clone floor ceil round trunc""".split()
)
_SUPER_INIT = re.compile(r"^(super\(\s*\w*\s*,?\s*\w*\s*\)\.__init__|nn\.Module\.__init__|torch\.nn\.Module\.__init__)\(")


def _function_unit(ctx) -> cst.FunctionDef | None:
    for unit in reversed(ctx.scope.units):
        if unit.is_function:
            return unit.node if isinstance(unit.node, cst.FunctionDef) else None
    return None


def _owning_class(module: cst.Module, function: cst.FunctionDef) -> cst.ClassDef | None:
    for statement in module.body:
        if (isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock)
                and any(s is function for s in statement.body.body)):
            return statement
    return None


def _init_anchor(cls: cst.ClassDef, module: cst.Module) -> tuple[cst.FunctionDef, cst.Expr, str] | None:
    """`__init__`, its `super().__init__()` statement and the indentation of its body."""
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            init = statement
            break
    else:
        return None
    if init.decorators or not isinstance(init.body, cst.IndentedBlock) or not init.params.params:
        return None
    for line in init.body.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            continue
        small = line.body[0]
        code = module.code_for_node(small)
        if isinstance(small, cst.Expr) and _SUPER_INIT.match(code) and "\n" not in code:
            if line.trailing_whitespace.comment is not None:
                return None  # the new line would go between the call and its comment
            default = module.default_indent
            indent = (cls.body.indent if cls.body.indent is not None else default) + (
                init.body.indent if init.body.indent is not None else default)
            return init, small, indent
    return None


def _parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    parents: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in children(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


def _consumed_by_value(node: cst.CSTNode, parents: dict[int, cst.CSTNode], ctx) -> bool:
    """`node`'s value only feeds an op that builds a new tensor from it."""
    parent = parents.get(id(node))
    if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget, cst.UnaryOperation)):
        return True
    if isinstance(parent, cst.Arg) and parent.value is node and not parent.star and parent.keyword is None:
        call = parents.get(id(parent))
        if isinstance(call, cst.Call) and keyword(call, "out") is None:
            name = ctx.resolve(call.func) or ""
            namespace, _, func = name.rpartition(".")
            if namespace in ("torch", "torch.nn.functional") and func in _VALUE_FUNCTIONS:
                return True
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _VALUE_FUNCTIONS:
                return ctx.kind(call.func.value).is_tensor  # `x.add(c)`: c is read only
        return False
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = parents.get(id(parent))
        return (isinstance(call, cst.Call) and call.func is parent and parent.attr.value in _VALUE_FUNCTIONS
                and keyword(call, "out") is None)
    return False


def _local_name_only_read(name: str, assign: cst.Assign, function: cst.FunctionDef, parents, ctx) -> bool:
    """Every other occurrence of `name` in the function is a read consumed by a value op."""
    target = assign.targets[0].target
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            return False
        if isinstance(node, cst.Name) and node.value == name and node is not target \
                and not _consumed_by_value(node, parents, ctx):
            return False
        stack.extend(children(node))
    return True


def _free_attribute(cls: cst.ClassDef, module: cst.Module, base: str) -> str:
    text = module.code_for_node(cls)
    candidate = f"_{base}_const"
    number = 2
    while re.search(rf"\b{re.escape(candidate)}\b", text):
        candidate = f"_{base}_const{number}"
        number += 1
    return candidate


def hoist_fix(call: cst.Call, ctx):
    literal = literal_tensor(call, ctx)
    if literal is None or ctx.self_name is None or ctx.cst_module is None:
        return None
    device = literal_device(literal.device, ctx)
    if device is None:
        return None
    function = _function_unit(ctx)
    if function is None or function.name.value == "__init__" or any(
            isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
            for d in function.decorators):
        return None
    module = ctx.cst_module
    cls = _owning_class(module, function)
    if cls is None:
        return None
    anchor = _init_anchor(cls, module)
    if anchor is None:
        return None
    init, super_call, indent = anchor
    init_self = init.params.params[0].name.value
    parents = _parents(function)
    parent = parents.get(id(call))
    base = "tensor"
    if isinstance(parent, cst.Assign) and parent.value is call:
        if len(parent.targets) != 1 or not isinstance(parent.targets[0].target, cst.Name):
            return None
        base = parent.targets[0].target.value.lstrip("_") or "tensor"
        if not _local_name_only_read(parent.targets[0].target.value, parent, function, parents, ctx):
            return None
    elif not _consumed_by_value(call, parents, ctx):
        return None
    attribute = _free_attribute(cls, module, base)
    creation = module.code_for_node(call)
    dtype_known = literal.dtype is not None or not any(isinstance(v, float) for v in flat_values(literal))
    device_known = device == "cpu" or re.fullmatch(r"cuda:\d+", device) is not None
    applicability = Applicability.SAFE if dtype_known and device_known else Applicability.UNSAFE
    inserted = f"{module.code_for_node(super_call)}\n{indent}{init_self}.{attribute} = {creation}"
    return (
        f"Create the constant once in `__init__` as `{init_self}.{attribute}`",
        [(call, f"{ctx.self_name}.{attribute}"), (super_call, inserted)],
        applicability,
        "" if applicability is Applicability.SAFE else
        "created in `__init__`, the constant reads the default dtype or device then, not at the call",
    )
