"""Our sparse positions agree with libcst's PositionProvider on every call and name."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.analyzer.positions import node_ranges

TRICKY = '''\
# leading comment
import torch  ; import os


@decorator(arg.item())
# between
@other
def f(x, y=z.item()):  # trailing
    """doc
    string"""
    if x.item():
        pass
    elif y.tolist():  # comment
        a = b.cpu()
    else:
        c = [d.item() for d in e]
    try:
        g.item()
    except Exception as err:
        h.item()
    finally:
        i.item()
    with j.k() as l: m.item()
    while n.item(): o.item(); p.item()
    s = """multi
line""" + q.item()
    return (
        r.item()
    )


class C:
\tdef m(self):
\t\tif self.a.item():
\t\t\treturn "é".join(t.item())


match v.item():
    case 1:
        w.item()
'''


def _targets(module: cst.Module):
    """(node, innermost statement) for every Call and Name, as the walker anchors them: what
    an `elif` condition holds to the `if` that starts the chain (an `elif` is no member of a
    statement list, so the walker never makes it the current statement)."""
    found = []

    def visit(node, statement, parent=None):
        if isinstance(node, cst.BaseStatement) and not (type(parent) is cst.If and parent.orelse is node):
            statement = node
        if isinstance(node, (cst.Call, cst.Name)) and not getattr(node, "lpar", ()):
            found.append((node, statement))
        for child in node.children:
            visit(child, statement, node)

    visit(module, None)
    return found


def _layout(module: cst.Module):
    """indent_of and owner_of for node_ranges, as the walker records them."""
    indents: dict[int, str] = {}
    owners: dict[int, cst.CSTNode | None] = {}

    def visit(node, statement, indent):
        if isinstance(node, cst.BaseStatement):
            statement = node
        if isinstance(node, cst.IndentedBlock):
            indent += node.indent if node.indent is not None else module.default_indent
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            # only members of statement lists: an `elif` generated alone would read `if`
            for member in node.body:
                indents[id(member)], owners[id(member)] = indent, statement
        for child in node.children:
            visit(child, statement, indent)

    visit(module, None, "")
    return (lambda s: indents.get(id(s))), (lambda s: owners.get(id(s)))


def _check(source: str, search: bool = False) -> int:
    module = cst.parse_module(source)
    targets = _targets(module)
    ours = node_ranges(module, source, targets, *(_layout(module) if search else ()))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    theirs = wrapper.resolve(PositionProvider)
    for node, _ in targets:
        expected = theirs[node]
        start, end = ours[id(node)]
        assert (start.line, start.column) == (expected.start.line, expected.start.column), cst.Module([]).code_for_node(node)
        assert (end.line, end.column) == (expected.end.line, expected.end.column)
    return len(targets)


@pytest.mark.parametrize("search", [False, True], ids=["ast-lines", "text-search"])
def test_tricky_layout(search):
    assert _check(TRICKY, search) > 50


@pytest.mark.parametrize("ending", ["\r", "\r\n"], ids=["cr", "crlf"])
@pytest.mark.parametrize("search", [False, True], ids=["ast-lines", "text-search"])
def test_tricky_layout_with_other_line_endings(search, ending):
    # "\r" and "\r\n" end lines as "\n" does, inside strings and continuations too
    assert _check(TRICKY.replace("\n", ending), search) > 50


def test_repeated_statements_are_placed_by_their_enclosing_statement():
    source = (
        "def f(x):\n    if x:\n        return x.item()\n    return x.item()\n\n\n"
        "def g(x):\n    if x:\n        return x.item()\n    return x.item()\n"
        "\n\nreturn_value = 1\nreturn_value = 1\n"
    )
    assert _check(source, search=True) > 10


def test_repeated_statements_are_placed_at_their_ast_line_without_generating_enclosing_ones(monkeypatch):
    import graphsafe.analyzer.positions as positions

    source = "def f(x):\n    if x:\n        return x.item()\n    return x.item()\n"
    generated = []
    original = positions._generate

    def recording(root, targets, state, cursor, **codegen):
        generated.append(type(root).__name__)
        return original(root, targets, state, cursor, **codegen)

    monkeypatch.setattr(positions, "_generate", recording)
    assert _check(source, search=True) > 5
    # `return x.item()` occurs twice: its line comes from ast, not from generating the `if` or the
    # `def` around it (each is generated once, for what it holds itself)
    assert generated.count("FunctionDef") == 1 and generated.count("If") == 1


def test_elif_conditions_are_placed_without_generating_the_branches_above(monkeypatch):
    import graphsafe.analyzer.positions as positions

    source = (
        "def f(x, y):\n    if x.any():\n        y = y.sum()\n        y = y.sum()\n"
        "    # why\n    elif (y > 0).all():\n        pass\n    elif y.item():\n        pass\n"
        "    else:\n        y = y.cpu()\n"
        "\n\ndef g(y):\n    if y:\n        pass\n    elif y.item():\n        pass\n"
    )
    generated = []
    original = positions._generate

    def recording(root, targets, state, cursor, **codegen):
        generated.append((type(root).__name__, codegen))
        return original(root, targets, state, cursor, **codegen)

    monkeypatch.setattr(positions, "_generate", recording)
    assert _check(source, search=True) > 15
    # each of the three elif conditions is generated by itself first (the two `elif y.item():`
    # lines are alike, so those two are then placed from their chain's `if`, as before)
    assert generated.count(("If", {"is_elif": True})) == 3


def test_search_without_ast(monkeypatch):
    # The text search needs no ast parse when each statement is found once.
    import graphsafe.analyzer.positions as positions

    def no_ast(*args):
        raise AssertionError("ast parse not expected")

    monkeypatch.setattr(positions, "statement_lines", no_ast)
    assert _check("import torch\n\n\ndef f(x):\n    y = x.item()\n    return torch.sin(y)\n", search=True) > 3


def test_module_without_ast_falls_back():
    # A file ast cannot parse but libcst can would use the whole-module path; simulate by
    # passing anchors of None.
    source = "x = a.item()\n"
    module = cst.parse_module(source)
    call = module.body[0].body[0].value
    start, end = node_ranges(module, source, [(call, None)])[id(call)]
    assert (start.line, start.column, end.line, end.column) == (1, 4, 1, 12)


@pytest.mark.parametrize("search", [False, True], ids=["ast-lines", "text-search"])
@pytest.mark.parametrize("name", ["_tensor.py", "nn/modules/module.py", "optim/adamw.py"])
def test_real_files(name, search):
    torch_dir = Path(pytest.importorskip("torch").__file__).parent
    path = torch_dir / name
    if not path.exists():
        pytest.skip(f"{name} not in this torch")
    assert _check(path.read_text(encoding="utf-8"), search) > 100
