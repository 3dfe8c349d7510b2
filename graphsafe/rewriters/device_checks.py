"""Checks kept on the device with `torch._assert_async` (`graphsafe graph`, after the callee state):

    if flag and not torch.isfinite(x).all():        if flag:
        raise FloatingPointError(f"... {i}")   →        torch._assert_async(torch.isfinite(x).all(), "FloatingPointError: ... {i}")

    assert start + T <= n, f"too long: {start + T}" →  torch._assert_async(torch.as_tensor(start + T <= n), "AssertionError: too long: {start + T}")

The first is a GS201 (a branch on a tensor: a host read, capture fails); the second an `assert`
on a name that holds a device counter now (callee_state lists it as read on the host). The check
stays; what changes (why it is unsafe, as nonfinite.py's `assert` fix): a failure is a
device-side assert (a RuntimeError on CPU) instead of the exception the code raised, and the
message is the original's text with its `{...}` parts left unformatted (formatting them would
read tensors on the host on every call, where the original formatted them only on failure).
`torch.as_tensor` leaves a tensor condition as it is and makes a Python bool a tensor (when the
name is a number: the static path of the same code). `_assert_async` captures (nonfinite.py).

Only an `if` without `else` whose body is one `raise`, whose test is the tensor condition or an
`and` chain whose last operand alone holds it (earlier operands are host flags, still tested on
the host, in the same order); only an `assert` whose test is one comparison or expression (no
`and`/`or`/`not`, no chained comparison: each would read a tensor as a bool)."""

from __future__ import annotations

import ast

import libcst as cst

from graphsafe.rewriters.boundary import _names_in
from graphsafe.rewriters.parsed import parse_torch_module


def device_checks(source: str, branches: set[tuple[int, int]],
                  counter_names: set[tuple[str, str]]) -> tuple[str | None, list[int]]:
    """Rewrite the `if ...: raise` whose test holds one of `branches` ((line, column), columns
    from 0: the GS201s) and the `assert`s that read a name of `counter_names` ((name, attribute):
    `start`, bound to `caches[0].pos` in the same function). Returns (new source or None, the
    rewritten statements' lines in `source`)."""
    parsed = parse_torch_module(source)
    if parsed is None:
        return None, []
    module, torch, positions = parsed
    rewrite = _Rewrite(torch, positions, branches, counter_names)
    new = module.visit(rewrite)
    return (new.code, sorted(rewrite.lines)) if rewrite.lines else (None, [])


class _Rewrite(cst.CSTTransformer):
    def __init__(self, torch: str, positions, branches, counter_names) -> None:
        self.torch, self.positions, self.branches, self.counter_names = torch, positions, branches, counter_names
        self.lines: list[int] = []
        self.bound: list[set[str]] = []  # per enclosing function: the names bound to a counter there

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.append({name for name, attribute in self.counter_names if _binds_from(node, name, attribute)})

    def leave_FunctionDef(self, original, updated):
        self.bound.pop()
        return updated

    def _holds(self, node: cst.CSTNode) -> bool:
        where = self.positions[node]
        return any((where.start.line, where.start.column) <= at <= (where.end.line, where.end.column)
                   for at in self.branches)

    def leave_If(self, original: cst.If, updated: cst.If):
        if original.orelse is not None or not self._holds(original.test):
            return updated
        raised = _only_raise(original.body)
        if raised is None:
            return updated
        operands = _and_operands(original.test)
        held = [self._holds(o) for o in operands]
        if not held[-1] or any(held[:-1]):
            return updated
        condition = operands[-1]
        if isinstance(condition, cst.UnaryOperation) and isinstance(condition.operator, cst.Not):
            must_hold = _code(condition.expression)
        else:
            must_hold = f"{self.torch}.logical_not({_code(condition)})"
        check = f"{self.torch}._assert_async({must_hold}, {_message(raised)})"
        self.lines.append(self.positions[original].start.line)
        if len(operands) == 1:
            return cst.parse_statement(check + "\n").with_changes(leading_lines=original.leading_lines)
        flags = " and ".join(_code(o) for o in operands[:-1])
        body = updated.body.with_changes(body=[cst.parse_statement(check + "\n")])
        return updated.with_changes(test=cst.parse_expression(flags), body=body)

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        if len(original.body) != 1 or not isinstance(original.body[0], cst.Assert):
            return updated
        node = original.body[0]
        if not self.bound or not (_names_in(node.test) & self.bound[-1]) or not _one_test(node.test):
            return updated
        message = _text(node.msg) if node.msg is not None else "assertion failed"
        if message is None:
            return updated
        self.lines.append(self.positions[original].start.line)
        check = (f"{self.torch}._assert_async({self.torch}.as_tensor({_code(node.test)}), "
                 f"{_literal('AssertionError: ' + message)})")
        return updated.with_changes(body=[cst.parse_statement(check + "\n").body[0]])


def _binds_from(function: cst.FunctionDef, name: str, attribute: str) -> bool:
    """Whether the function assigns `name = <... .attribute ...>` (`start = caches[0].pos if ...`)."""
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            nonlocal found
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                found = found or _reads_attribute(node.value, attribute)

    function.body.visit(_Find())
    return found


def _reads_attribute(node: cst.CSTNode, attribute: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, found_node: cst.Attribute) -> None:
            nonlocal found
            found = found or found_node.attr.value == attribute

    node.visit(_Find())
    return found


def _only_raise(body: cst.BaseSuite) -> cst.Raise | None:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if len(statements) != 1 or not isinstance(statements[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return None
    smalls = statements[0].body
    return smalls[0] if len(smalls) == 1 and isinstance(smalls[0], cst.Raise) and smalls[0].exc is not None \
        and smalls[0].cause is None else None


def _and_operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        return _and_operands(test.left) + _and_operands(test.right)
    return [test]


def _one_test(test: cst.BaseExpression) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_BooleanOperation(self, node) -> None:
            found.append(node)

        def visit_UnaryOperation(self, node) -> None:
            if isinstance(node.operator, cst.Not):
                found.append(node)

        def visit_Comparison(self, node) -> None:
            if len(node.comparisons) > 1:
                found.append(node)

        def visit_Lambda(self, node) -> None:
            found.append(node)

    test.visit(_Find())
    return not found


def _message(raised: cst.Raise) -> str:
    """The raised exception's class and its one message argument, as plain text."""
    exc = raised.exc
    call = exc if isinstance(exc, cst.Call) else None
    kind = _code(call.func if call else exc)
    args = [a for a in call.args if a.keyword is None] if call else []
    text = _text(args[0].value) if len(args) == 1 and not args[0].star else None
    return _literal(f"{kind}: {text}" if text else kind)


def _text(expr: cst.BaseExpression) -> str | None:
    """A string literal's text; an f-string's with each `{...}` part as its source text."""
    if not isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return None
    try:
        tree = ast.parse(_code(expr), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Constant) and isinstance(tree.value, str):
        return tree.value
    if isinstance(tree, ast.JoinedStr):
        parts = []
        for value in tree.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + ast.unparse(value.value) + "}")
        return "".join(parts)
    return None


def _literal(text: str) -> str:
    return repr(text)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
