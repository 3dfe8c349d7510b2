"""Every fix `graphsafe fix` offers on the real-code packages, checked differentially.

    python bench/real/differential.py [--part dev|test|all] [--wide | --all-functions] [--json OUT] [--show changed|all]

For each package of bench/real (downloaded and verified as by score.py): check it with the
labelled regions (`--wide`: also every method named like a step, as in fix_hunks.py), take
every diagnostic that carries a fix, apply that fix alone to the original file, cut out the
statement it rewrote (before and after), and run both on generated inputs with
`graphsafe.runtime.differential.compare`. Prints, per rule and applicability, how many fixes
change behaviour on some input the original accepts. A safe fix that does is a bug.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from fix_hunks import WIDE  # noqa: E402
from score import fetch, packages_of  # noqa: E402

from graphsafe.analyzer.engine import check_paths  # noqa: E402
from graphsafe.config import Settings  # noqa: E402
from graphsafe.fixes import apply_fixes  # noqa: E402
from graphsafe.runtime.differential import compare  # noqa: E402

# Modules whose names a rewritten statement may use as they are (importable here).
_IMPORTABLE = ("torch", "math")


def module_names(tree: ast.Module) -> dict:
    """`import torch as th`, `import torch.nn.functional as F`, `from torch import nn`: the
    module-level names bound to importable modules (anything else becomes an input)."""
    names = {}
    for node in tree.body:
        try:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in _IMPORTABLE:
                        names[alias.asname or alias.name.split(".")[0]] = importlib.import_module(
                            alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _IMPORTABLE:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if hasattr(module, alias.name):
                        names[alias.asname or alias.name] = getattr(module, alias.name)
        except ImportError:
            continue
    return names


def statement_span(tree: ast.Module, first: int, last: int) -> tuple[int, int] | None:
    """The innermost statement holding lines first..last (1-based, inclusive)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= first and node.end_lineno >= last:
            if best is None or node.end_lineno - node.lineno < best[1] - best[0]:
                best = (node.lineno, node.end_lineno)
    return best


def changed_lines(before: list[str], after: list[str]) -> tuple[int, int] | None:
    """First and last line of `before` (1-based) that the change touches."""
    top = 0
    while top < min(len(before), len(after)) and before[top] == after[top]:
        top += 1
    bottom = 0
    while bottom < min(len(before), len(after)) - top and before[-1 - bottom] == after[-1 - bottom]:
        bottom += 1
    if top == len(before) == len(after):
        return None
    return top + 1, max(top + 1, len(before) - bottom)


def hunk_cases(root: Path, regions: list[str]) -> list[dict]:
    saved = os.getcwd()
    os.chdir(root)
    try:
        result = check_paths([Path(".")], Settings(root=root, regions=tuple(regions)), use_cache=False)
    finally:
        os.chdir(saved)
    cases = []
    texts: dict[str, tuple[str, ast.Module, dict]] = {}
    for d in result.diagnostics:
        if d.fix is None or not d.fix.edits:
            continue
        path = (root / d.path).resolve()
        if d.path not in texts:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            texts[d.path] = (text, tree, module_names(tree))
        text, tree, modules = texts[d.path]
        fixed = apply_fixes(text, [d], unsafe=True).text
        before, after = text.splitlines(), fixed.splitlines()
        touched = changed_lines(before, after)
        span = statement_span(tree, *touched) if touched else None
        case = {"path": Path(d.path).as_posix(), "line": d.start.line, "code": d.code,
                "applicability": d.fix.applicability.value, "title": d.fix.title}
        if span is None:
            case["verdict"] = "not isolated"
        else:
            grown = len(after) - len(before)
            case["before"] = "\n".join(before[span[0] - 1: span[1]])
            case["after"] = "\n".join(after[span[0] - 1: span[1] + grown])
            case["modules"] = modules
        cases.append(case)
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--wide", action="store_true", help="also every method named like a step (see fix_hunks.py)")
    parser.add_argument("--all-functions", action="store_true",
                        help="every function named as a region (`--region '?*'`; constructors still get no fixes): "
                             "every fix `fix` can produce on the package")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show", choices=("changed", "all"))
    args = parser.parse_args()
    packages = packages_of(args.part)
    names = sorted(packages)
    results = []
    for name in names:
        package = packages[name]
        root = fetch(package, args.cache)
        cases = hunk_cases(root, package.regions + (WIDE if args.wide else []) + (["?*"] if args.all_functions else []))
        for case in cases:
            case["package"] = name
            if "before" in case:
                try:
                    verdict = compare(case["before"], case["after"], case.pop("modules"))
                except SyntaxError:
                    case["verdict"] = "not isolated"
                    continue
                case.update(verdict="changes behaviour" if verdict.changed else
                            "no difference found" if verdict.accepted else "no input accepted",
                            tried=verdict.tried, accepted=verdict.accepted, example=verdict.example)
        results += cases
        print(f"{name}: {len(cases)} fixes", flush=True)
    table = Counter((r["code"], r["applicability"], r["verdict"]) for r in results)
    print(f"\nfixes offered: {len(results)} ({sum(r['applicability'] == 'safe' for r in results)} safe)")
    print("| rule | applicability | changes behaviour | no difference found | no input accepted | not isolated |")
    print("|---|---|---|---|---|---|")
    for code, applicability in sorted({(r["code"], r["applicability"]) for r in results}):
        row = [table[(code, applicability, v)] for v in
               ("changes behaviour", "no difference found", "no input accepted", "not isolated")]
        print(f"| {code} | {applicability} | " + " | ".join(map(str, row)) + " |")
    bad = [r for r in results if r["applicability"] == "safe" and r["verdict"] == "changes behaviour"]
    print(f"\nsafe fixes that change behaviour: {len(bad)}")
    if args.show:
        for r in results:
            if args.show == "all" or r["verdict"] == "changes behaviour":
                print(f"\n== {r['package']} {r['path']}:{r['line']} {r['code']} ({r['applicability']}) {r['verdict']}"
                      f"\n{r.get('example', '')}\n-- before\n{r.get('before', '')}\n-- after\n{r.get('after', '')}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
