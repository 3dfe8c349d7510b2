"""Data-dependent branches → `torch.where`.

    if cond: y = a            y = torch.where(cond, a, b)
    else:    y = b       →
    y = a if cond else b      y = torch.where(cond, a, b)
    if cond: y = f(y)         y = torch.where(cond, f(y), y)
    if cond: return a         return torch.where(cond, a, b)
    else:    return b

Offered only when it keeps eager values: both arms are side-effect-free expressions (no
in-place ops, no calls we cannot see into), at least one arm of each pair is a tensor (it
fixes the result's dtype and device), an arm does not read a name it assigned itself, and the
construct holds no comments that the rewrite would drop. `torch.where` evaluates both arms;
forward values are the same, but a NaN/inf in the unused arm can still reach gradients.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children

from graphsafe.model import Applicability

FixSpec = tuple[str, list[tuple[object, str]], Applicability]

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
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node
        stack.extend(children(node))


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
        return ("Return `torch.where(...)` instead of branching", [((node, end), f"return {_where(cond, a, b, ctx)}")],
                Applicability.SAFE)
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
        parts.append((name, _where(cond, a, b, ctx)))
    targets = ", ".join(name for name, _ in parts)
    values = ", ".join(code for _, code in parts)
    title = f"Select `{targets}` with `torch.where` instead of branching"
    return (title, [((node, end), f"{targets} = {values}")], Applicability.SAFE)


def if_expression_fix(node: cst.IfExp, ctx) -> FixSpec | None:
    if not _torch_available(ctx):
        return None
    cond = condition_code(node.test, ctx)
    a, b = node.body, node.orelse
    if cond is None or not (_pure(a, ctx) and _pure(b, ctx)) or not (_value(a, ctx) and _value(b, ctx)):
        return None
    if not (ctx.kind(a).is_tensor or ctx.kind(b).is_tensor):
        return None
    return ("Use `torch.where` instead of a conditional expression", [(node, _where(cond, a, b, ctx))], Applicability.SAFE)
