"""Which missed positives the call graph causes: is the function holding each missed line
reached from its label's region? Dev part only (split.json); run from the worktree root:

    PYTHONPATH=$PWD python bench/real/score.py --part dev --show-misses > misses.txt
    PYTHONPATH=$PWD python bench/real/reach_census.py misses.txt [package ...]

Prints REACHED / UNREACHED / NOUNIT per missed label (packages unpacked by score.py's cache)."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from graphsafe.analyzer.callgraph import Project  # noqa: E402
from graphsafe.analyzer.engine import collect_facts, discover_files  # noqa: E402
from graphsafe.config import Settings  # noqa: E402


def enclosing_function(source: str, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def main() -> None:
    missed = Path(sys.argv[1]).read_text()
    dev = json.loads((HERE / "split.json").read_text())["dev"]
    cache = Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")) / "src"
    for name in sys.argv[2:] or dev:
        if name not in dev:
            sys.exit(f"{name}: not a dev-part package")
        root = next(cache.glob(f"{name}-*"))
        labels = [json.loads(raw) for raw in (HERE / "labels" / f"{name}.jsonl").read_text().splitlines() if raw.strip()]
        here = os.getcwd()
        os.chdir(root)
        try:
            facts, _ = collect_facts(discover_files([root], dataclasses.replace(Settings(), root=root)), root, jobs=1)
        finally:
            os.chdir(here)
        project = Project(facts)
        units_by_path: dict[str, list] = {}
        for located in project.units.values():
            units_by_path.setdefault(located.path, []).append(located.unit)
        reaches = {}
        for label in labels:
            if f"{name} {label['path']}:{label['line']} {label['kind']}" not in missed:
                continue
            region = label["region"]
            if region not in reaches:
                reaches[region] = project.reach(project.regions((region,), root, marked=False))
            function = enclosing_function((root / label["path"]).read_text(), label["line"])
            units = [u for u in units_by_path.get(label["path"], [])
                     if function is not None and u.is_function and u.key.endswith("." + function.name)]
            tag = "NOUNIT" if not units else "REACHED" if any(u.key in reaches[region].parent for u in units) else "UNREACHED"
            print(tag, name, f"{label['path']}:{label['line']}", label["kind"],
                  function.name if function else "-", "region=" + region)


if __name__ == "__main__":
    main()
