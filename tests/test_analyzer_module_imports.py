"""The analyzer's layers import one way: the call graph uses the return-kind solver's pending-id
prefixes, never the reverse (issue 18 point 5: no import cycle)."""

import ast
from pathlib import Path

import graphsafe.analyzer

ANALYZER = Path(graphsafe.analyzer.__file__).parent


def _imported_modules(name: str) -> set[str]:
    """Every graphsafe module `analyzer/<name>.py` imports, at module level or inside a function."""
    tree = ast.parse((ANALYZER / f"{name}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphsafe"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_returns_does_not_import_the_call_graph():
    assert "graphsafe.analyzer.callgraph" not in _imported_modules("returns")


def test_call_graph_does_not_import_returns():
    assert "graphsafe.analyzer.returns" not in _imported_modules("callgraph")


def test_pending_id_prefixes_import_nothing_of_the_analyzer():
    assert not {m for m in _imported_modules("pids") if m.startswith("graphsafe")}
