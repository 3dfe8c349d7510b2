"""Tensor-ness from use: a name the function treats as a tensor is one, with a printable reason.

A parameter or local whose kind nothing declares (no annotation, an unresolved call) is a tensor
where the function itself uses it as one: it calls a method only tensors have on it
(`delta.exp()`, `x.dim()`, `labels.bool()`), or, for a parameter, passes it first to a torch
function that takes only tensors there (`torch.isfinite(dt)`) or to a torch loss
(`F.mse_loss(values, zs)`: a local may be a number turned into a tensor by that very call). Methods
numpy arrays and other array types share (`.any()`, `.sum()`, `.max()`) do not count. A name
the function tests with `isinstance(name, ...)` takes other types too and is left unknown, unless
it asserts that it is a tensor (`assert isinstance(t, torch.Tensor)`: a use as one too).

The reason is kept with the kind (`Kind.why`), so a report can say why the value is a tensor:
"`delta` is a tensor: `(-delta).exp()` uses it as one".
"""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

from graphsafe.analyzer import tensorness as T
from graphsafe.analyzer.nodes import children

# Methods of tensors that numpy arrays, Python numbers and modules do not have (`model.half()`
# and numpy's `argmax` are left out, see tensorness.PARAM_TENSOR_METHODS).
USE_METHODS = T.PARAM_TENSOR_METHODS | frozenset(
    """abs abs_ exp exp_ sqrt rsqrt log1p expm1 log2 log10 clamp clamp_ dim numel ndimension nelement
    pow pow_ reciprocal sign neg sigmoid_ tanh_ isinf isnan isfinite""".split()
)
# Of those, the ones that give a tensor: `norm(d).abs()` is one, whatever `norm` returns.
RESULT_METHODS = frozenset(
    "abs abs_ exp exp_ sqrt rsqrt log1p expm1 log2 log10 clamp clamp_ pow pow_ reciprocal sign neg".split()
)

_USE_CALL = re.compile(r"\.(?:" + "|".join(sorted(USE_METHODS, key=len, reverse=True)) + r")\(|\.log\(\)")
# `.log()` without arguments: a tensor's (a logger's `log` always takes what it logs)
_BARE_METHODS = frozenset({"log"})


_ASSERTED = re.compile(r"assert\s+isinstance\(\s*(\w+)\s*,")


def receivers(source: str) -> frozenset[str]:
    """Names some call in `source` may treat as tensors: a cheap text pre-filter (a name before
    `.exp(`, one asserted to be an instance, or one `tensorness.tensor_method_receivers` finds)."""
    found = set(T.tensor_method_receivers(source))
    found.update(_ASSERTED.findall(source))
    for match in _USE_CALL.finditer(source):
        end = match.start()
        name = T.name_before(source, end)
        if name:
            found.add(name)
        elif end and source[end - 1] == "]":  # `sigmas[i].log()`: the name before the index
            name = T.name_before(source, source.rfind("[", 0, end))
            if name:
                found.add(name)
        elif end and source[end - 1] == ")":  # `(-delta).exp()`: the name inside the parentheses
            inner = source[source.rfind("(", 0, end) + 1:end - 1].strip(" -+~")
            if inner.isidentifier():
                found.add(inner)
    return frozenset(found)


def _receiver_name(expr: cst.BaseExpression) -> str | None:
    """`x` for `x`, `-x`, `(x)`: the name a method is called on."""
    while type(expr) is cst.UnaryOperation and not isinstance(expr.operator, cst.Not):
        expr = expr.expression
    return expr.value if type(expr) is cst.Name else None


def _indexed_name(expr: cst.BaseExpression) -> str | None:
    """`sigmas` for `sigmas[i]`, `-sigmas[i + 1]`: a parameter one element of which a tensor
    method is called on. It is a tensor or a sequence of them; either way its elements are
    tensors, which is what indexing it gives."""
    while type(expr) is cst.UnaryOperation and not isinstance(expr.operator, cst.Not):
        expr = expr.expression
    if (type(expr) is cst.Subscript and type(expr.value) is cst.Name and len(expr.slice) == 1
            and type(expr.slice[0].slice) is cst.Index):
        return expr.value.value
    return None


def used_as_tensors(body: cst.CSTNode, names: set[str], resolve: Callable, methods_only: bool = False) -> dict[str, cst.CSTNode]:
    """Each of `names` the code in `body` uses as a tensor → such a use (a call), without
    looking into nested functions, classes and lambdas (they may bind the name to something else);
    names tested with `isinstance` are left out. `methods_only`: only tensor methods count (for
    locals: `n = sum(...)` then `n = torch.clamp(n, min=1)` rebinds a number to a tensor).
    (Which use is kept where there are several is not specified.)"""
    methods = USE_METHODS
    used: dict[str, cst.CSTNode] = {}
    tested: set[str] = set()
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.FunctionDef or tp is cst.ClassDef or tp is cst.Lambda:
            continue
        if tp is cst.Assert:
            asserted = _asserted_tensor(node.test, resolve)
            if asserted in names:
                used.setdefault(asserted, node)  # `assert isinstance(t, torch.Tensor)`: not a test of other types
                continue
        stack.extend(children(node))
        if tp is not cst.Call:
            continue
        func, args = node.func, node.args
        if type(func) is cst.Attribute:
            name = _receiver_name(func.value)
            if name is None and not methods_only:
                name = _indexed_name(func.value)  # `sigmas[i].log()`: its elements are tensors
            if name in names and (func.attr.value in methods or (func.attr.value in _BARE_METHODS and not args)):
                used.setdefault(name, node)
        if not args:
            continue
        first = args[0]
        if methods_only and not (type(func) is cst.Name and func.value == "isinstance"):
            continue
        first_name = first.value.value if type(first.value) is cst.Name else None
        if first_name in names:
            if type(func) is cst.Name and func.value == "isinstance":
                tested.add(first_name)
            elif first.keyword is None and not first.star and T.requires_tensor_input(resolve(func) or ""):
                used.setdefault(first_name, node)  # `torch.isfinite(dt)`, `F.softmax(logits, -1)`
        if len(args) >= 2 and T.is_torch_loss(resolve(func) or ""):  # `F.mse_loss(values, zs)`
            for arg in args[:2]:
                if arg.keyword is None and not arg.star and type(arg.value) is cst.Name and arg.value.value in names:
                    used.setdefault(arg.value.value, node)
    for name in tested:
        used.pop(name, None)
    return used


def tensor_from_use(name: str, code: str, bool_result: bool = False) -> T.Kind:
    """The kind of a name used as a tensor by the call `code`, with that reason."""
    code = " ".join(code.split())
    if len(code) > 60:
        code = code[:57] + "..."
    return T.Kind(T.BOOL_TENSOR.tag if bool_result else T.TENSOR.tag, why=f"`{name}` is a tensor: `{code}` uses it as one")


def reason_in(expr: cst.BaseExpression, kind_of: Callable[[cst.BaseExpression], T.Kind], depth: int = 0) -> str:
    """The first printable reason why a tensor in `expr` is one (a name whose kind came from
    its use or from a helper's return), or "" when the kind needs none (an annotation, a torch
    call)."""
    kind = kind_of(expr)
    if kind.why:
        return kind.why
    if depth > 8:
        return ""
    for child in _operands(expr):
        found = reason_in(child, kind_of, depth + 1)
        if found:
            return found
    return ""


def _operands(expr: cst.BaseExpression):
    tp = type(expr)
    if tp is cst.BinaryOperation:
        return (expr.left, expr.right)
    if tp is cst.UnaryOperation:
        return (expr.expression,)
    if tp is cst.Comparison:
        return (expr.left, *(c.comparator for c in expr.comparisons))
    if tp is cst.BooleanOperation:
        return (expr.left, expr.right)
    if tp is cst.Call and type(expr.func) is cst.Attribute:
        return (expr.func.value,)  # `delta.abs().sum()`: the receiver
    if tp is cst.Subscript:
        return (expr.value,)
    return ()


def returned_by(kind: T.Kind, callee: str | None) -> T.Kind:
    """`kind` (a tensor a project function returns) with that reason, for the report."""
    if callee is None or kind.why:
        return kind
    return T.Kind(kind.tag, kind.refs, why=f"`{callee}(...)` returns a tensor")


_NUMBER_TYPES = frozenset("int float bool complex numbers.Number numbers.Real numbers.Integral numbers.Complex".split())


def returns_for_numbers(ret: cst.Return, function: cst.CSTNode, resolve: Callable) -> bool:
    """Is `ret` the number path of a helper that takes a number or a tensor: in the body of a
    top-level `if isinstance(<parameter>, <number types>):` of `function` (pyro's
    `torch_isnan(x)`: `x != x` for numbers, `torch.isnan(x).any()` for tensors)? Such a return
    says nothing of what the function gives a caller passing a tensor."""
    if type(function) is not cst.FunctionDef:
        return False
    params = {p.name.value for p in function.params.params}
    for stmt in function.body.body if isinstance(function.body, cst.IndentedBlock) else ():
        if type(stmt) is not cst.If or not _number_test(stmt.test, params, resolve):
            continue
        for inner in stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else (stmt.body,):
            if inner is ret or (type(inner) in (cst.SimpleStatementLine, cst.SimpleStatementSuite)
                                and any(small is ret for small in inner.body)):
                return True
    return False


def _number_test(test: cst.BaseExpression, params: set[str], resolve: Callable) -> bool:
    """`isinstance(x, numbers.Number)`, `isinstance(x, (int, float))` on a parameter `x`."""
    if type(test) is not cst.Call or type(test.func) is not cst.Name or test.func.value != "isinstance":
        return False
    if len(test.args) != 2 or type(test.args[0].value) is not cst.Name or test.args[0].value.value not in params:
        return False
    types = test.args[1].value
    names = [e.value for e in types.elements] if type(types) is cst.Tuple else [types]
    return bool(names) and all((resolve(n) or "") in _NUMBER_TYPES for n in names)


def given_only_numbers(call: cst.Call, kind_of: Callable) -> bool:
    """`any_nan(1.0)`, `is_bad(loss.item())`: a call whose positional arguments are all Python
    values. A helper that checks a number or a tensor (see returns_for_numbers) summarises its
    tensor path; given numbers, it takes the other one."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return bool(positional) and len(positional) == len(call.args) and all(kind_of(v).not_tensor for v in positional)


def is_overload_stub(node: cst.FunctionDef, resolve: Callable) -> bool:
    """`@typing.overload def f(x: Tensor) -> Tensor: ...`: a signature for type checkers, not code;
    the project's summary of `f` (what it returns to callers) is the implementation's."""
    return any(resolve(d.decorator) in ("typing.overload", "typing_extensions.overload") for d in node.decorators)


def _asserted_tensor(test: cst.BaseExpression, resolve: Callable) -> str | None:
    """`x` for `assert isinstance(x, torch.Tensor)`."""
    if (type(test) is not cst.Call or type(test.func) is not cst.Name or test.func.value != "isinstance"
            or len(test.args) != 2 or type(test.args[0].value) is not cst.Name):
        return None
    return test.args[0].value.value if resolve(test.args[1].value) in T.TENSOR_CLASSES else None


def with_reason(kind: T.Kind, value: cst.BaseExpression, kind_of: Callable) -> T.Kind:
    """`kind` (a tensor a name is bound to) carrying the reason a tensor in `value` has, if any,
    so a report on the name can still print it."""
    reason = reason_in(value, kind_of)
    return T.Kind(kind.tag, kind.refs, why=reason) if reason else kind


def method_result(call: cst.Call, code: str) -> T.Kind:
    """The kind of `<unknown>.abs()` (a method in RESULT_METHODS), with that reason."""
    code = " ".join(code.split())
    if len(code) > 60:
        code = code[:57] + "..."
    return T.Kind(T.TENSOR.tag, why=f"`{code}` is a tensor: `.{call.func.attr.value}()` is a tensor method")
