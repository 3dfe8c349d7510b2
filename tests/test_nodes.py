"""The fast node tests in analyzer/nodes.py agree with isinstance."""

import inspect
from pathlib import Path

import libcst as cst

from graphsafe.analyzer.nodes import children, code_fields, node_types

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _all_nodes(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def test_concrete_node_classes_have_no_subclasses():
    # `type(x) is cst.Name` stands for `isinstance(x, cst.Name)` in hot paths: only exact while
    # libcst's concrete node classes are never subclassed.
    concrete = [c for c in vars(cst).values()
                if inspect.isclass(c) and issubclass(c, cst.CSTNode) and not inspect.isabstract(c)]
    assert len(concrete) > 100
    assert [c.__name__ for c in concrete if c.__subclasses__()] == []


def test_node_types_match_isinstance_on_the_corpus():
    bases = (cst.BaseStatement, cst.BaseCompoundStatement, cst.BaseSuite, cst.BaseExpression)
    sets = {base: node_types(base) for base in bases}
    seen = 0
    for path in sorted(CORPUS.rglob("*.py"))[:20]:
        for node in _all_nodes(cst.parse_module(path.read_text())):
            seen += 1
            for base, types in sets.items():
                assert (type(node) in types) == isinstance(node, base), (type(node), base)
    assert seen > 1000


def test_children_match_an_isinstance_traversal():
    source = "def f(a, *b, c=1):\n    x = [y for y in a if y]  # c\n    return g(x, k=c)[0].h if a else None\n"
    checked = 0
    for node in _all_nodes(cst.parse_module(source)):
        expected = []
        for name in code_fields(type(node)):
            value = getattr(node, name)
            items = value if type(value) in (tuple, list) else (value,)
            expected.extend(i for i in items if isinstance(i, cst.CSTNode))
        found = list(children(node))
        assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected))
        checked += bool(found)
    assert checked > 10


def test_leaf_types_hold_no_code():
    import typing

    from graphsafe.analyzer.walker import LEAF_TYPES

    for leaf in LEAF_TYPES:
        hints = typing.get_type_hints(leaf)
        assert all(hints[name] in (str, bool) for name in code_fields(leaf)), leaf
