"""Branches on device data → selections of both outcomes (`graphsafe graph`, after the fixes):

    if cond:                      _select_7 = cond
        a = X                     a = torch.where(_select_7, X, X2)
        b = Y            →        b = torch.where(_select_7, Y, b)
    else:
        a = X2

    if cond:                      _early_3 = cond
        return A                  _early_value_3 = A
    rest (assignments)    →       rest (assignments)
    return B                      return torch.where(_early_3, _early_value_3, B)

Only `if` statements whose test the analyzer reported as a branch on a tensor (GS201), without
`elif`; each arm only `name = value` statements (a name an arm leaves alone keeps its value:
it must be bound before the `if`), values side-effect-free (names, attributes, literals,
arithmetic, `torch.*` calls and tensor methods not ending in `_`), no subscripts (an index the
branch may guard could be out of range on the arm not taken), no division but by a non-zero
literal or (true division only: an integer tensor's `//` and `%` by zero raise on the CPU) by
something the condition reads (a tensor, per the GS201: inf, never ZeroDivisionError), no `and`/`or`
and no chained comparison in the test (both read a tensor as a Python bool). Where the region runs
a backward pass, an arm not taken still gets a zero gradient times its own: `inf * 0` is NaN, so
there division by anything but a literal and functions singular somewhere (sqrt, log, pow, ...)
are refused. An early return
needs the rest of the function to be such assignments (or selects) and one final `return`.

Not a safe fix (applied only by `graph`, the capture path): torch.where evaluates both arms,
promotes their dtypes and broadcasts their shapes (an arm of another dtype or shape than the
other gives the promoted one on both paths), returns a new tensor where the branch bound an
existing one (an alias written in place later would differ), and an arm not taken that raises
(a shape mismatch) now raises. `graph`'s notes name each line rewritten. The condition is
evaluated once, where the `if` was. Static path: no torch import.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from graphsafe.analyzer.nodes import descendants
from graphsafe.rewriters.parsed import parse_torch_module

# tensor methods that compute a new value (none writes in place: those end in `_`)
_TENSOR_METHODS = frozenset({
    "abs", "all", "any", "bool", "clamp", "clamp_max", "clamp_min", "clone", "detach", "double", "exp", "expand",
    "expand_as", "float", "half", "isfinite", "isinf", "isnan", "log", "logical_and", "logical_not", "logical_or",
    "max", "maximum", "mean", "min", "minimum", "neg", "pow", "reciprocal", "reshape", "rsqrt", "sign", "sqrt",
    "squeeze", "sum", "to", "type_as", "unsqueeze", "view", "view_as", "where",
})
# functions whose gradient is infinite somewhere (selected away, inf * 0 is still NaN)
_SINGULAR = frozenset({"sqrt", "rsqrt", "log", "log2", "log10", "log1p", "reciprocal", "pow", "acos", "asin", "atanh",
                       "div", "true_divide", "divide", "float_power"})
_BOOL_TESTS = frozenset({"isfinite", "isinf", "isnan", "all", "any", "logical_and", "logical_or", "logical_not",
                         "eq", "ne", "lt", "le", "gt", "ge", "isclose"})


@dataclasses.dataclass
class Selected:
    source: str | None  # None: nothing rewritten
    lines: list[int]  # the `if` statements rewritten (lines of the input)
    refused: list[tuple[int, str]]  # (line, why) of the GS201 `if` statements left as they were


def select_branches(source: str, branches: set[tuple[int, int]], *, differentiable: bool = False) -> Selected:
    """Rewrite the `if` statements whose test holds one of `branches` ((line, column from 0): the
    GS201 spans) as selections, where the pattern above holds."""
    parsed = parse_torch_module(source)
    if parsed is None:
        return Selected(None, [], [])
    module, torch, positions = parsed
    rewrite = _Rewrite(torch, positions, branches, differentiable)
    new = module.visit(rewrite)
    return Selected(new.code if rewrite.lines else None, sorted(rewrite.lines), sorted(rewrite.refused))


class _Rewrite(cst.CSTTransformer):
    def __init__(self, torch: str, positions, branches, differentiable: bool) -> None:
        self.torch, self.positions, self.branches = torch, positions, branches
        self.differentiable = differentiable
        self.lines: list[int] = []
        self.refused: list[tuple[int, str]] = []
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.functions.pop()
        return self._early_return(original, updated)

    def _targeted(self, node: cst.If) -> bool:
        where = self.positions[node.test]
        return any((where.start.line, where.start.column) <= at <= (where.end.line, where.end.column)
                   for at in self.branches)

    def _refuse(self, node: cst.CSTNode, why: str) -> None:
        self.refused.append((self.positions[node].start.line, why))

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        if not self.functions:
            return updated
        body: list[cst.BaseStatement] = []
        for old, new in zip(original.body, updated.body):
            replaced = self._select(old, new) if isinstance(old, cst.If) and self._targeted(old) else None
            body.extend(replaced if replaced is not None else [new])
        return updated.with_changes(body=body)

    def _select(self, original: cst.If, updated: cst.If) -> list[cst.BaseStatement] | None:
        if _only_return(original.body) is not None and original.orelse is None:
            return None  # an early return: the function's pass (_early_return) decides
        why = _test_refusal(original.test, self.torch)
        if why is None and isinstance(original.orelse, cst.If):
            why = "an `elif` chain"
        arms = [_assignments(original.body)]
        if why is None and isinstance(original.orelse, cst.Else):
            arms.append(_assignments(original.orelse.body))
        if why is None:
            why = next((arm for arm in arms if isinstance(arm, str)), None)
        if why is None:
            test_names = _names(original.test)
            why = next((w for arm in arms for value in arm.values()
                        if (w := _value_refusal(value, test_names, self.torch, self.differentiable))), None)
        if why is None:
            bound = _bound_before(self.functions[-1], self.positions, self.positions[original].start.line)
            one_armed = set(arms[0]) ^ set(arms[1] if len(arms) > 1 else {})
            missing = sorted(name for name in one_armed if name not in bound)
            if missing:
                why = f"`{missing[0]}` is bound on one arm only and not before the `if`"
        if why is not None:
            self._refuse(original, f"not a select: {why}")
            return None
        then, other = arms[0], arms[1] if len(arms) > 1 else {}
        names = list(then) + [n for n in other if n not in then]
        line = self.positions[original].start.line
        cond = self._condition(original.test)
        statements = []
        if len(names) > 1:
            statements.append(f"_select_{line} = {cond}")
            cond = f"_select_{line}"
        for name in names:
            a, b = then.get(name), other.get(name)
            statements.append(f"{name} = {self.torch}.where({cond}, {_code(a) if a else name}, "
                              f"{_code(b) if b else name})")
        self.lines.append(line)
        parsed = [cst.parse_statement(s + "\n") for s in statements]
        parsed[0] = parsed[0].with_changes(leading_lines=original.leading_lines)
        return parsed

    def _condition(self, test: cst.BaseExpression) -> str:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return f"{self.torch}.logical_not({self._condition(test.expression)})"
        code = _code(test.with_changes(lpar=[], rpar=[]) if hasattr(test, "lpar") else test)
        if isinstance(test, cst.Comparison) or (isinstance(test, cst.Call) and _callee_name(test) in _BOOL_TESTS):
            return code
        return f"{self.torch}.as_tensor({code}).bool()"

    def _early_return(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        """`if cond: return A` at the top of a function's body followed by assignments and one
        final `return B` → `return torch.where(cond, A, B)` with cond and A evaluated in place."""
        if not isinstance(original.body, cst.IndentedBlock):
            return updated
        new_body = list(updated.body.body)
        # positions are the original's: the early `if` is matched there, then found again in the new body
        for index, statement in enumerate(original.body.body):
            if not (isinstance(statement, cst.If) and self._targeted(statement) and statement.orelse is None):
                continue
            early = _only_return(statement.body)
            if early is None:
                continue
            why = _test_refusal(statement.test, self.torch) or \
                _value_refusal(early, _names(statement.test), self.torch, self.differentiable)
            at = next((i for i, s in enumerate(new_body) if s.deep_equals(statement)), None)
            rest = new_body[at + 1:] if at is not None else []
            if why is None and at is None:
                why = "the `if` was changed by another rewrite"
            if why is None:
                why = _rest_refusal(rest, _names(statement.test), self.torch, self.differentiable)
            if why is not None:
                self._refuse(statement, f"not a select of an early return: {why}")
                continue
            line = self.positions[statement].start.line
            final = rest[-1].body[0]
            head = [f"_early_{line} = {self._condition(statement.test)}", f"_early_value_{line} = {_code(early)}"]
            tail = f"return {self.torch}.where(_early_{line}, _early_value_{line}, {_code(final.value)})"
            parsed = [cst.parse_statement(s + "\n") for s in head]
            parsed[0] = parsed[0].with_changes(leading_lines=statement.leading_lines)
            new_body = new_body[:at] + parsed + rest[:-1] + [
                rest[-1].with_changes(body=[cst.parse_statement(tail + "\n").body[0]])]
            self.lines.append(line)
            break  # one early return per function: the rest now starts with the selection
        return updated.with_changes(body=updated.body.with_changes(body=new_body))


def _test_refusal(test: cst.BaseExpression, torch: str) -> str | None:
    inner = test.expression if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) else test
    for node in descendants(inner):
        if isinstance(node, cst.BooleanOperation):
            return "`and`/`or` in the test reads a tensor as a Python bool"
        if isinstance(node, cst.Comparison) and len(node.comparisons) > 1:
            return "a chained comparison in the test reads a tensor as a Python bool"
    return _value_refusal(inner, set(), torch)


def _assignments(block: cst.BaseSuite) -> dict[str, cst.BaseExpression] | str:
    """name → value for an arm of only `name = value`, or why not."""
    values: dict[str, cst.BaseExpression] = {}
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in lines:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return "an arm holds a compound statement"
        for small in line.body:
            if isinstance(small, cst.Pass):
                continue
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)):
                return f"an arm does more than assign names (`{_code(small)}`)"
            name = small.targets[0].target.value
            if name in values or _names(small.value) & set(values):
                return f"an arm reads or rebinds its own `{name}`"
            values[name] = small.value
    return values


def _value_refusal(value: cst.BaseExpression, test_names: set[str], torch: str,
                   differentiable: bool = False) -> str | None:
    """Why evaluating `value` on every call may not do what the branch did, or None."""
    for node in descendants(value):
        if isinstance(node, cst.Subscript):
            return f"`{_code(value)}` indexes (the branch may guard the index)"
        if isinstance(node, (cst.Lambda, cst.Await, cst.Yield, cst.NamedExpr, cst.BaseComp, cst.BaseString)):
            return f"`{_code(value)}` is not a plain tensor expression"
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Divide, cst.FloorDivide,
                                                                                cst.Modulo)):
            nonzero = isinstance(node.right, (cst.Integer, cst.Float)) and node.right.evaluated_value != 0
            tested = isinstance(node.operator, cst.Divide) and not differentiable and _names(node.right) & test_names
            if not (nonzero or tested):
                return f"`{_code(node)}` divides by a value that may be zero on the arm not taken"
        if differentiable and isinstance(node, cst.Call) and _callee_name(node) in _SINGULAR:
            return f"`{_code(node)}` has an infinite gradient somewhere: NaN through the arm not taken"
        if differentiable and isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power) \
                and not isinstance(node.right, cst.Integer):
            return f"`{_code(node)}` has an infinite gradient somewhere: NaN through the arm not taken"
        if isinstance(node, cst.Call):
            name = _callee_name(node)
            func = node.func
            torch_call = isinstance(func, cst.Attribute) and _root(func) == torch
            method = isinstance(func, cst.Attribute) and not torch_call and name in _TENSOR_METHODS
            if name.endswith("_") or not (torch_call or method) or any(a.star for a in node.args):
                return f"`{_code(node)}` is a call that may do more than compute a value"
    return None


def _rest_refusal(rest: list[cst.BaseStatement], test_names: set[str], torch: str,
                  differentiable: bool = False) -> str | None:
    if not rest:
        return "nothing follows it"
    last = rest[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return)
            and last.body[0].value is not None):
        return "the function does not end in one `return` of a value"
    for statement in rest[:-1]:
        if not isinstance(statement, cst.SimpleStatementLine):
            return f"`{_code(statement).strip().splitlines()[0]}` after it is not a plain assignment"
        for small in statement.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)):
                return f"`{_code(small)}` after it is not an assignment of a name"
            why = _value_refusal(small.value, test_names | _bound_names(rest), torch, differentiable)
            if why:
                return why
    return _value_refusal(last.body[0].value, test_names | _bound_names(rest), torch, differentiable)


def _bound_names(statements) -> set[str]:
    """Names the rest binds from selections (`_select_*`, `where`): tensors."""
    names = set()
    for statement in statements:
        for small in getattr(statement, "body", []):
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
                    _callee_name(small.value) in ("where", "type_as"):
                names |= {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
    return names


def _bound_before(function: cst.FunctionDef, positions, line: int) -> set[str]:
    """Parameters and names assigned on a line before `line` in the function."""
    bound = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    for node in descendants(function.body):
        targets = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, cst.For):
            targets = [node.target]
        if targets and positions[node].start.line < line:
            for target in targets:
                bound |= {n.value for n in descendants(target) if isinstance(n, cst.Name)}
    return bound


def _only_return(block: cst.BaseSuite) -> cst.BaseExpression | None:
    lines = block.body if isinstance(block, cst.IndentedBlock) else [block]
    if len(lines) == 1 and isinstance(lines[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) \
            and len(lines[0].body) == 1 and isinstance(lines[0].body[0], cst.Return):
        return lines[0].body[0].value
    return None


def _callee_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _root(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def select_left_branches(diagnostics, sources, *, differentiable: bool = False) -> tuple[list[str], list[str]]:
    """The GS201 `if` statements still listed, as selections, in the scratch files
    (callee_state.Sources): (one line per file rewritten, one line per `if` refused, with why).
    `differentiable`: the region runs a backward pass (see the module's docstring)."""
    wanted: dict[str, tuple[str, set]] = {}
    for d in diagnostics:
        if d.code == "GS201":
            entry = wanted.setdefault(str(sources.resolve(d.path)), (d.path, set()))
            entry[1].update((u.start.line, u.start.column) for u in (d, *d.also))
    changed, refused = [], []
    for resolved, (shown, branches) in sorted(wanted.items()):
        path = sources.resolve(resolved)
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        selected = select_branches(text, branches, differentiable=differentiable)
        refused += [f"{shown}:{line}: {why}" for line, why in selected.refused]
        if selected.source is not None:
            path.write_bytes(selected.source.encode("utf-8"))
            sources.forget(path)
            changed.append(f"{shown}:{', '.join(map(str, selected.lines))}: a branch on a tensor as a selection of "
                           "both outcomes (torch.where)")
    return changed, refused
