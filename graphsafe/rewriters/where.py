"""Data-dependent branches → `torch.where`.

    if cond: y = a            y = torch.where(cond, a, b)
    else:    y = b       →
    y = a if cond else b      y = torch.where(cond, a, b)
    if cond: y = f(y)         y = torch.where(cond, f(y), y)
    if cond: return a         return torch.where(cond, a, b)
    else:    return b

Always unsafe: `torch.where` evaluates both arms and broadcasts the condition and both arms
together, so where the arms (or the condition) differ in shape or dtype the result differs
from the arm the branch would have taken (`y / 2` on an integer `y`, a `(1,)` condition over
0-dim arms), and gradients see NaN/inf from the unused arm. Without shapes and dtypes, which a
static reading of untyped code does not have, none of that can be ruled out.

Not offered at all when the rewrite would evaluate something the branch guarded: an arm that
indexes (`table[i + 1]` past the end), divides Python numbers (`1 / n` with `n == 0`), or
reads an attribute of an object not known to hold a tensor (`cache.z_loss` that exists only when the flag is set); nor
when the condition is not a proven tensor: a name that came out of tuple unpacking may be a
Python bool beside a tensor (`y, flag = out`), and `flag.bool()` would raise on every call.
Also required: both arms side-effect-free expressions (no in-place ops, no calls we cannot see
into), at least one arm of each pair a tensor, no arm reading a name it assigned itself, and no
comments inside that the rewrite would drop.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children, descendants

from graphsafe.model import Applicability

FixSpec = tuple  # (title, [(node, code)], Applicability, reason)

# Why the fix is unsafe, and why it is sometimes not offered (shown with the diagnostic).
UNSAFE_REASON = "torch.where evaluates both arms and broadcasts their shapes and dtypes, which are not proven equal"
GUARDED_REASON = ("an arm indexes, divides Python numbers or reads an attribute that the condition may guard, "
                  "and torch.where evaluates both arms")
UNPACKED_REASON = "the condition uses a name bound by unpacking, which may be a Python bool (`.bool()` would raise)"


def _withheld(reason: str) -> FixSpec:
    return ("No fix", [], Applicability.UNSAFE, reason)


def _uses_unpacked(test: cst.BaseExpression, ctx) -> bool:
    return bool({n.value for n in _names(test)} & _unpacked_names(ctx.function_node))

_IMPURE_CALLS = frozenset({"print", "input", "open", "next", "setattr", "delattr", "exec", "eval"})


def _pure(expr: cst.BaseExpression, ctx) -> bool:
    """No in-place ops, no calls that may do something besides computing a value."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda)):
            return False
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if not name or name.endswith("_") or name in _IMPURE_CALLS:
                return False
            resolved = ctx.resolve(func) or ""
            if not (resolved.startswith("torch.") or ctx.kind(node).is_tensor):
                return False
        stack.extend(children(node))
    return True


def _unguarded(expr: cst.BaseExpression, test: cst.BaseExpression, ctx) -> bool:
    """Nothing a branch condition could be guarding: no indexing, no division of Python
    numbers, no attribute read off an object not known to hold a tensor. `torch.where` runs
    both arms, so the arm the branch skipped must not raise. A read the condition itself makes
    (`norm[k]` in `a / norm[k] if norm[k] > 0 else b`) runs either way, so it may stay."""
    read_anyway = {ctx.code_for(n) for n in _reads(test)}
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Subscript, cst.Attribute)) and ctx.code_for(node) in read_anyway:
            continue
        if isinstance(node, cst.Subscript):
            return False
        if (isinstance(node, cst.BinaryOperation)
                and isinstance(node.operator, (cst.Divide, cst.FloorDivide, cst.Modulo))
                and not (ctx.kind(node.left).is_tensor or ctx.kind(node.right).is_tensor)):
            return False  # Python numbers divided: ZeroDivisionError (a tensor gives inf)
        if isinstance(node, cst.Call):
            # a method's receiver and the arguments; the method name itself is no read (`_pure`
            # has already limited calls to torch functions and tensor methods)
            if isinstance(node.func, cst.Attribute) and ctx.resolve(node.func) is None:
                stack.append(node.func.value)
            stack.extend(a.value for a in node.args)
            continue
        if isinstance(node, cst.Attribute) and not (ctx.kind(node).is_tensor or ctx.kind(node.value).is_tensor):
            return False
        stack.extend(children(node))
    return True


def _reads(test: cst.BaseExpression):
    return (n for n in descendants(test) if isinstance(n, (cst.Subscript, cst.Attribute)))


def _unpacked_names(function: cst.FunctionDef | None) -> set[str]:
    """Names the function binds by unpacking (`y, flag = out`, `for i, x in ...`): an element of
    an unpacked value may be anything, whatever the analyzer guessed for the whole."""
    found: set[str] = set()
    if function is None:
        return found
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets = [node.target]
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            targets = [node.asname.name]
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List)):
                found.update(n.value for n in _names(target))
        stack.extend(children(node))
    return found


def _value(expr: cst.BaseExpression, ctx) -> bool:
    """A tensor or a Python number: something torch.where takes as an arm."""
    kind = ctx.kind(expr)
    if kind.is_tensor:
        return True
    return isinstance(expr, (cst.Integer, cst.Float)) or (
        isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float))
    )


def condition_code(test: cst.BaseExpression, ctx) -> str | None:
    """`cond` as a boolean tensor expression, or None when it is not a plain tensor test."""
    negate = False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negate = test.expression, True
    if isinstance(test, cst.BooleanOperation) or not ctx.kind(test).is_tensor or not _pure(test, ctx):
        return None
    if _uses_unpacked(test, ctx):
        return None  # `y, flag = out; if flag:` — `flag` may be a Python bool
    code = _bare(ctx.code_for(test))
    if not ctx.kind(test).is_bool_tensor:
        code = f"({code}).bool()" if not _atomic(test) else f"{code}.bool()"
    if negate:
        code = f"~({code})" if not _atomic(test) or code.endswith(")") else f"~{code}"
    return code


def _bare(code: str) -> str:
    code = code.strip()
    while code.startswith("(") and code.endswith(")") and _balanced(code[1:-1]):
        code = code[1:-1].strip()
    return code


def _balanced(code: str) -> bool:
    depth = 0
    for ch in code:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _atomic(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))


def _arm(block: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The small statements of an arm, if it is a plain sequence of simple statements."""
    statements: list[cst.BaseSmallStatement] = []
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in lines:
        if isinstance(line, cst.SimpleStatementLine):
            statements.extend(line.body)
        elif isinstance(line, cst.SimpleStatementSuite):
            statements.extend(line.body)
        else:
            return None
    return statements


def _assignments(statements: list[cst.BaseSmallStatement], ctx) -> dict[str, cst.BaseExpression] | None:
    """name → value for an arm made only of `name = value` whose values do not read earlier ones."""
    values: dict[str, cst.BaseExpression] = {}
    for small in statements:
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        target = small.targets[0].target
        if not isinstance(target, cst.Name) or target.value in values:
            return None
        if any(isinstance(n, cst.Name) and n.value in values for n in _names(small.value)):
            return None  # `y = a; z = y + 1`: the second reads the arm's own `y`
        if not _pure(small.value, ctx):
            return None
        values[target.value] = small.value
    return values


def _names(expr: cst.CSTNode):
    return (n for n in descendants(expr) if isinstance(n, cst.Name))


def _has_comments(node: cst.CSTNode) -> bool:
    stack = list(node.children)
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Comment):
            return True
        stack.extend(n.children)
    return False


def _where(cond: str, a: cst.BaseExpression, b: cst.BaseExpression, ctx) -> str:
    return f"torch.where({cond}, {_bare(ctx.code_for(a))}, {_bare(ctx.code_for(b))})"


def _last_small(block: cst.BaseSuite) -> cst.CSTNode:
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = lines[-1]
    return last.body[-1]


def _torch_available(ctx) -> bool:
    return ctx.resolve(cst.Name("torch")) == "torch"


def if_statement_fix(node: cst.If, ctx) -> FixSpec | None:
    if not _torch_available(ctx) or _has_comments(node.body) or (node.orelse and _has_comments(node.orelse)):
        return None
    if ctx.kind(node.test).is_tensor and _uses_unpacked(node.test, ctx):
        return _withheld(UNPACKED_REASON)
    cond = condition_code(node.test, ctx)
    if cond is None or isinstance(node.orelse, cst.If):
        return None
    body = _arm(node.body)
    other = _arm(node.orelse.body) if isinstance(node.orelse, cst.Else) else []
    if body is None or other is None:
        return None
    end = _last_small(node.orelse.body if node.orelse is not None else node.body)
    # return a / return b
    if len(body) == 1 and len(other) == 1 and all(isinstance(s, cst.Return) and s.value for s in (body[0], other[0])):
        a, b = body[0].value, other[0].value
        if not (_pure(a, ctx) and _pure(b, ctx)) or not (ctx.kind(a).is_tensor or ctx.kind(b).is_tensor):
            return None
        if not (_value(a, ctx) and _value(b, ctx)):
            return None
        if not (_unguarded(a, node.test, ctx) and _unguarded(b, node.test, ctx)):
            return _withheld(GUARDED_REASON)
        return ("Return `torch.where(...)` instead of branching", [((node, end), f"return {_where(cond, a, b, ctx)}")],
                Applicability.UNSAFE, UNSAFE_REASON)
    then = _assignments(body, ctx)
    orelse = _assignments(other, ctx) if other else {}
    if not then or orelse is None:
        return None
    if other and set(then) != set(orelse):
        return None
    parts = []
    for name, a in then.items():
        b = orelse.get(name) if other else cst.Name(name)
        if not other and ctx.local_kind(name) is None:
            return None  # one-armed `if`: the name must already hold the value kept otherwise
        if not (_value(a, ctx) and _value(b, ctx)) or not (ctx.kind(a).is_tensor or ctx.kind(b).is_tensor):
            return None
        if not (_unguarded(a, node.test, ctx) and _unguarded(b, node.test, ctx)):
            return _withheld(GUARDED_REASON)
        parts.append((name, _where(cond, a, b, ctx)))
    targets = ", ".join(name for name, _ in parts)
    values = ", ".join(code for _, code in parts)
    title = f"Select `{targets}` with `torch.where` instead of branching"
    return (title, [((node, end), f"{targets} = {values}")], Applicability.UNSAFE, UNSAFE_REASON)


def if_expression_fix(node: cst.IfExp, ctx) -> FixSpec | None:
    if not _torch_available(ctx):
        return None
    if ctx.kind(node.test).is_tensor and _uses_unpacked(node.test, ctx):
        return _withheld(UNPACKED_REASON)
    cond = condition_code(node.test, ctx)
    a, b = node.body, node.orelse
    if cond is None or not (_pure(a, ctx) and _pure(b, ctx)) or not (_value(a, ctx) and _value(b, ctx)):
        return None
    if not (ctx.kind(a).is_tensor or ctx.kind(b).is_tensor):
        return None
    if not (_unguarded(a, node.test, ctx) and _unguarded(b, node.test, ctx)):
        return _withheld(GUARDED_REASON)
    return ("Use `torch.where` instead of a conditional expression", [(node, _where(cond, a, b, ctx))],
            Applicability.UNSAFE, UNSAFE_REASON)
