"""What `graphsafe fix` would change on the real-code packages: every hunk, safe and unsafe.

    python bench/real/fix_hunks.py [--part dev|test|all] [--json OUT] [--show safe|unsafe|all]

For each package of bench/real (downloaded and verified as by score.py), runs `fix` without
writing, once with safe fixes only and once with `--unsafe-fixes`, on the labelled regions,
and counts the fixes applied per rule and applicability. `--show safe` prints every safe hunk
(the ones `graphsafe fix` applies by default: each must keep eager behaviour) with its file,
line and diff, for review and for the differential checks in bench/real/differential.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from score import fetch, packages_of  # noqa: E402

from graphsafe.config import Settings  # noqa: E402
from graphsafe.fixer import fix_paths, unified_diff  # noqa: E402


# Names of functions a user captures as a step, for `--wide` (explicit patterns: they keep fixes).
WIDE = ["*forward", "*step", "*_step", "*update", "*sample", "*_sample", "*train", "*train_*", "*decode*",
        "*__call__", "*loss*", "*predict*", "*generate*", "*integrate*", "*backward"]


def hunks(root: Path, regions: list[str], unsafe: bool) -> list[dict]:
    """One record per fix applied (rounds included) in a run of `fix` that writes nothing."""
    saved = os.getcwd()
    os.chdir(root)
    try:
        result = fix_paths([Path(".")], Settings(root=root, regions=tuple(regions)), unsafe=unsafe, write=False,
                           use_cache=False)
    finally:
        os.chdir(saved)
    found = []
    for outcome in result.outcomes:
        for d in outcome.applied:
            found.append({"path": Path(d.path).as_posix(), "line": d.start.line, "code": d.code,
                          "applicability": d.fix.applicability.value, "title": d.fix.title,
                          "error": outcome.error, "diff": unified_diff(outcome) if outcome.error is None else ""})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show", choices=("safe", "unsafe", "all"))
    parser.add_argument("--wide", action="store_true",
                        help="also every method named like a step (forward, step, update, sample, ...): more hunks")
    args = parser.parse_args()
    packages = packages_of(args.part)
    names = sorted(packages)
    records = []
    for name in names:
        package = packages[name]
        root = fetch(package, args.cache)
        regions = package.regions + (WIDE if args.wide else [])
        safe = hunks(root, regions, unsafe=False)
        unsafe = hunks(root, regions, unsafe=True)
        for r in safe:
            r["run"] = "safe"
        for r in unsafe:
            r["run"] = "unsafe"
        for r in safe + unsafe:
            r["package"] = name
        records += safe + unsafe
        print(f"{name}: {len(safe)} fixes applied by `fix`, {len(unsafe)} by `fix --unsafe-fixes`", flush=True)
    # The unsafe run applies every fix (safe ones too): it is the set of hunks `fix` can produce.
    every = [r for r in records if r["run"] == "unsafe"]
    by_rule = Counter((r["code"], r["applicability"]) for r in every)
    print(f"\nhunks `fix --unsafe-fixes` produces: {len(every)} "
          f"({sum(r['applicability'] == 'safe' for r in every)} safe, {sum(r['applicability'] == 'unsafe' for r in every)} unsafe)")
    for (code, applicability), count in sorted(by_rule.items()):
        print(f"  {code} {applicability}: {count}")
    errors = sorted({(r["package"], r["path"], r["error"]) for r in records if r["error"]})
    for package, path, error in errors:
        print(f"  not written: {package} {path}: {error}")
    if args.show:
        for r in every:
            if args.show in ("all", r["applicability"]):
                print(f"\n== {r['package']} {r['path']}:{r['line']} {r['code']} ({r['applicability']}): {r['title']}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
