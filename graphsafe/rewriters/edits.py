"""Edit targets a rule can name in a fix besides a single node."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.model import Applicability


@dataclass(frozen=True, eq=False)
class WholeLines:
    """The full lines of a statement, indentation and newline included (to delete it)."""

    statement: cst.BaseStatement


def enclosing_statement_line(ctx, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The statement line being walked, if `node` is its only small statement's value."""
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if isinstance(small, cst.Expr) and small.value is node:
        return line
    return None


def assignment_of(ctx, node: cst.CSTNode) -> cst.Assign | None:
    """The statement being walked if it is exactly `target = <node>` (one target, nothing else
    on the line)."""
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if isinstance(small, cst.Assign) and small.value is node and len(small.targets) == 1:
        return small
    return None


def removal_fix(ctx, line: cst.SimpleStatementLine, title: str):
    """Delete a statement line (unsafe: the program no longer does it). When it is the only
    statement of an `if` without `else` whose test has no side effects, the whole `if` goes
    (`if loss > limit: log.warning(...)` would otherwise leave a branch on a tensor doing
    nothing); any other block that would be left empty keeps a `pass` in its place."""
    if ctx.enclosing_block_size(line) == 1:
        owner = ctx.enclosing_statement(line)
        if (isinstance(owner, cst.If) and owner.orelse is None and ctx.enclosing_block_size(owner) > 1
                and is_side_effect_free(owner.test)):
            return (title, [(WholeLines(owner), "")], Applicability.UNSAFE, REMOVAL_REASON)
        return (title, [(line.body[0], "pass")], Applicability.UNSAFE, REMOVAL_REASON)
    return (title, [(WholeLines(line), "")], Applicability.UNSAFE, REMOVAL_REASON)


REMOVAL_REASON = "the statement no longer runs in eager steps either (its log, print or wait is gone)"


# Calls that only read values: tensor reductions and tests, Python conversions and builtins.
_READING_METHODS = frozenset({"item", "any", "all", "sum", "mean", "max", "min", "abs", "isnan", "isinf",
                              "isfinite", "norm", "numel", "dim", "size", "float", "int", "bool", "detach",
                              "get", "startswith", "endswith", "is_floating_point"})
_READING_FUNCTIONS = frozenset({"len", "isinstance", "float", "int", "bool", "abs", "min", "max", "any", "all",
                                "isnan", "isinf", "isfinite"})


def is_side_effect_free(expr: cst.BaseExpression) -> bool:
    """Whether evaluating `expr` only reads values (names, attributes, literals, arithmetic,
    comparisons, subscripts and the reading calls above): dropping it changes nothing else."""
    if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Attribute):
        return is_side_effect_free(expr.value)
    if isinstance(expr, cst.Comparison):
        return is_side_effect_free(expr.left) and all(is_side_effect_free(c.comparator) for c in expr.comparisons)
    if isinstance(expr, (cst.BooleanOperation, cst.BinaryOperation)):
        return is_side_effect_free(expr.left) and is_side_effect_free(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return is_side_effect_free(expr.expression)
    if isinstance(expr, cst.Subscript):
        return is_side_effect_free(expr.value) and all(
            isinstance(e.slice, cst.Index) and is_side_effect_free(e.slice.value) for e in expr.slice)
    if isinstance(expr, cst.Call):
        func = expr.func
        reads = (isinstance(func, cst.Attribute) and func.attr.value in _READING_METHODS
                 and is_side_effect_free(func.value)) or (isinstance(func, cst.Name) and func.value in _READING_FUNCTIONS)
        return reads and all(a.star == "" and is_side_effect_free(a.value) for a in expr.args)
    return False
