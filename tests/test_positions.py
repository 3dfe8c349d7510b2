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
    """(node, innermost statement) for every Call and Name, as the walker anchors them."""
    found = []

    def visit(node, statement):
        if isinstance(node, cst.BaseStatement):
            statement = node
        if isinstance(node, (cst.Call, cst.Name)) and not getattr(node, "lpar", ()):
            found.append((node, statement))
        for child in node.children:
            visit(child, statement)

    visit(module, None)
    return found


def _check(source: str) -> int:
    module = cst.parse_module(source)
    targets = _targets(module)
    ours = node_ranges(module, source, targets)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    theirs = wrapper.resolve(PositionProvider)
    for node, _ in targets:
        expected = theirs[node]
        start, end = ours[id(node)]
        assert (start.line, start.column) == (expected.start.line, expected.start.column), cst.Module([]).code_for_node(node)
        assert (end.line, end.column) == (expected.end.line, expected.end.column)
    return len(targets)


def test_tricky_layout():
    assert _check(TRICKY) > 50


def test_module_without_ast_falls_back():
    # A file ast cannot parse but libcst can would use the whole-module path; simulate by
    # passing anchors of None.
    source = "x = a.item()\n"
    module = cst.parse_module(source)
    call = module.body[0].body[0].value
    start, end = node_ranges(module, source, [(call, None)])[id(call)]
    assert (start.line, start.column, end.line, end.column) == (1, 4, 1, 12)


@pytest.mark.parametrize("name", ["_tensor.py", "nn/modules/module.py", "optim/adamw.py"])
def test_real_files(name):
    torch_dir = Path(pytest.importorskip("torch").__file__).parent
    path = torch_dir / name
    if not path.exists():
        pytest.skip(f"{name} not in this torch")
    assert _check(path.read_text(encoding="utf-8")) > 100
