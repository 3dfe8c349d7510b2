"""A name that host work reads and later tensor work rebinds gets a new name from the rebinding on
(`graphsafe graph`, before the split):

    y_pred, y = output[0].detach(), output[1].detach()
    self._num_examples += y_pred.shape[0]             (host work: a Python counter)
    y_pred = torch.argmax(y_pred, dim=1).flatten() →  y_pred_1 = torch.argmax(y_pred, dim=1).flatten()
    ... y_pred ...                                    ... y_pred_1 ...

The split moves host work after the core only where it commutes with the core statements after
it; a later rebinding of a name it reads does not. With the later versions renamed it commutes,
and the wrapper reads the value the host work read (the core returns it).

The same program: a local name is renamed from a straight-line assignment at the top level of
the function's body on, every later occurrence alike (loads, stores, augmented assignments), so
every read sees the value it saw. Refused for a name declared `global`/`nonlocal`, deleted,
assigned between the host work and the rebinding, or named inside a nested function, lambda or
class from the rebinding on (a closure would see another variable). Keeps the line count."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.rewriters.boundary import HOST_CODES, _find, _names_in


def rename_rebound(source: str, qualname: str, host_lines: dict[int, set[str]]) -> str | None:
    """The source with the later versions of such names renamed in `qualname`, or None."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = _find(module, qualname)
    if found is None or not isinstance(found[1].body, cst.IndentedBlock):
        return None
    function = found[1]
    body = list(function.body.body)
    declared = _declared(function)
    taken = _names_in(module)
    renames: dict[int, dict[str, str]] = {}  # statement index -> {old: new} from there on
    targets_only: dict[int, dict[str, str]] = {}  # the rebinding itself: its target only
    for h, statement in enumerate(body):
        where = positions[statement]
        codes = set().union(*(host_lines.get(line, set()) for line in range(where.start.line, where.end.line + 1)))
        if not codes or not codes <= HOST_CODES:
            continue
        for name in sorted(_reads(statement) - declared):
            r = next((i for i in range(h + 1, len(body)) if _rebinds(body[i], name)), None)
            if r is None or any(_stores(body[i], name) for i in range(h + 1, r)) or \
                    any(_in_nested_scope(body[i], name) or _deletes(body[i], name) for i in range(r, len(body))) or \
                    any(name in m for m in (*renames.values(), *targets_only.values())):
                continue
            fresh = _fresh(name, taken)
            taken.add(fresh)
            targets_only.setdefault(r, {})[name] = fresh
            for i in range(r + 1, len(body)):
                renames.setdefault(i, {})[name] = fresh
    if not targets_only:
        return None
    new_body = []
    for i, statement in enumerate(body):
        if i in targets_only:
            small = statement.body[0]
            target = small.targets[0].with_changes(target=cst.Name(targets_only[i][small.targets[0].target.value]))
            statement = statement.with_changes(body=[small.with_changes(targets=[target])])
        if i in renames:
            statement = statement.visit(_Rename(renames[i]))
        new_body.append(statement)
    new_function = function.with_changes(body=function.body.with_changes(body=new_body))
    return module.deep_replace(function, new_function).code


class _Rename(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        return updated.with_changes(attr=original.attr)  # `y.shape`: the `y`, not the `shape`

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg):
        return updated.with_changes(keyword=original.keyword)  # `f(y=...)`: a keyword, not the name

    def leave_Name(self, original: cst.Name, updated: cst.Name):
        return updated.with_changes(value=self.names.get(original.value, original.value))


def _plain_names(node: cst.CSTNode) -> list[cst.Name]:
    """Names that are variables: not an attribute's `.attr`, not a keyword argument's name."""
    found: list[cst.Name] = []

    class _Collect(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)
            return False

        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(_Collect())
    return found


def _reads(statement: cst.CSTNode) -> set[str]:
    return {n.value for n in _plain_names(statement)}


def _rebinds(statement: cst.BaseStatement, name: str) -> bool:
    """`name = value` alone on a top-level line."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return isinstance(small, cst.Assign) and len(small.targets) == 1 and \
        isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name


def _stores(statement: cst.CSTNode, name: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            nonlocal found
            found = found or any(n.value == name for n in _plain_names(node.target) if _is_store(node.target, n))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            nonlocal found
            found = found or (isinstance(node.target, cst.Name) and node.target.value == name)

        def visit_For(self, node: cst.For) -> None:
            nonlocal found
            found = found or any(n.value == name for n in _plain_names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            nonlocal found
            found = found or (isinstance(node.target, cst.Name) and node.target.value == name)

        def visit_WithItem(self, node: cst.WithItem) -> None:
            nonlocal found
            found = found or (node.asname is not None and any(n.value == name for n in _plain_names(node.asname)))

    statement.visit(_Find())
    return found


def _is_store(target: cst.BaseExpression, name: cst.Name) -> bool:
    """Whether `name` in an assignment target is bound (`y` in `y, z = ...`), not read (`y[i] = ...`)."""
    if target is name:
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_is_store(e.value, name) for e in target.elements)
    if isinstance(target, cst.StarredElement):
        return _is_store(target.value, name)
    return False


def _in_nested_scope(statement: cst.CSTNode, name: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def _scope(self, node) -> bool:
            nonlocal found
            found = found or any(n.value == name for n in _plain_names(node))
            return False

        visit_FunctionDef = visit_Lambda = visit_ClassDef = _scope

    statement.visit(_Find())
    return found


def _deletes(statement: cst.CSTNode, name: str) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Del(self, node: cst.Del) -> None:
            nonlocal found
            found = found or any(n.value == name for n in _plain_names(node))

    statement.visit(_Find())
    return found


def _declared(function: cst.FunctionDef) -> set[str]:
    found: set[str] = set()

    class _Find(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            found.update(n.name.value for n in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            found.update(n.name.value for n in node.names)

    function.visit(_Find())
    return found


def _fresh(name: str, taken: set[str]) -> str:
    k = 1
    while f"{name}_{k}" in taken:
        k += 1
    return f"{name}_{k}"
