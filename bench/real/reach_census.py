"""Which missed positives the call graph causes: is the function holding each missed line
reached from its label's region? Dev part only (split.json); run from the worktree root:

    PYTHONPATH=$PWD python bench/real/score.py --part dev --show-misses > misses.txt
    PYTHONPATH=$PWD python bench/real/reach_census.py misses.txt [package ...]

Prints REACHED / UNREACHED / NOUNIT per missed label (packages unpacked by score.py's cache).
With `--part test` (a test-part score's misses) it prints only the counts per kind: the test part
is never read line by line."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import score  # noqa: E402
from graphsafe.analyzer.callgraph import Project  # noqa: E402
from graphsafe.analyzer.engine import collect_facts, discover_files  # noqa: E402
from graphsafe.config import Settings  # noqa: E402


def enclosing_function(source: str, line: int) -> str | None:
    """`Class.method` (or `function`, `outer.inner`) of the innermost function holding `line`."""
    best: str | None = None

    def walk(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.lineno <= line <= child.end_lineno:
                    best = prefix + child.name
                walk(child, prefix + child.name + ".")

    walk(ast.parse(source), "")
    return best


def census(name: str, package: score.Package, missed: str) -> list[tuple[str, str, str, str, str]]:
    """(tag, where, kind, function, region) for each of `package`'s labels named in `missed`."""
    root = score.fetch(package, score.default_cache())
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
    rows = []
    for label in package.labels:
        where = f"{label['path']}:{label['line']}"
        if label["label"] != "positive" or f"{name} {where} {label['kind']}" not in missed:
            continue
        region = label["region"]
        if region not in reaches:
            reaches[region] = project.reach(project.regions((region,), root, marked=False))
        function = enclosing_function((root / label["path"]).read_text(), label["line"])
        # the unit of that very function (`Class.method`), not a namesake in another class
        units = [u for u in units_by_path.get(label["path"], [])
                 if function is not None and u.is_function and (u.key == function or u.key.endswith("." + function))]
        tag = "NOUNIT" if not units else "REACHED" if any(u.key in reaches[region].parent for u in units) else "UNREACHED"
        rows.append((tag, where, label["kind"], function or "-", region))
    return rows


def main() -> None:
    arguments = sys.argv[1:]
    part = "dev"
    if arguments[:1] == ["--part"]:
        part, arguments = arguments[1], arguments[2:]
    missed = Path(arguments[0]).read_text()
    packages = score.packages_of(part)
    counts: Counter[tuple[str, str]] = Counter()
    for name in arguments[1:] or sorted(packages):
        if name not in packages:
            sys.exit(f"{name}: not a {part}-part package")
        for tag, where, kind, function, region in census(name, packages[name], missed):
            if part == "dev":
                print(tag, name, where, kind, function, "region=" + region)
            counts[(kind, tag)] += 1
    for (kind, tag), count in sorted(counts.items()):
        print(f"{count:5d} {kind} {tag}")


if __name__ == "__main__":
    main()
