"""Golden outputs of `graphsafe fix --diff` on the corpus, and a runner for the programs.

Each corpus program keeps two snapshots, both the exact output of `graphsafe fix --diff` run
from the repository root on `corpus/<name>`:

    expected_fix.diff         safe fixes only (what `graphsafe fix` applies by default)
    expected_fix_unsafe.diff  safe and unsafe fixes (`graphsafe fix --unsafe-fixes`)

An empty file means "no fix offered". tests/test_corpus_fix.py applies both variants to a
copy of each program, compares with these files, runs the copies on CPU, re-checks them and
fixes them again (idempotence).

Regenerate after a reviewed change:  python -m tests.golden_fix --update
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from graphsafe.config import Settings
from graphsafe.fixer import fix_paths, unified_diff
from tests import program_runner
from tests.golden import ROOT, programs

VARIANTS = {"safe": "expected_fix.diff", "unsafe": "expected_fix_unsafe.diff"}


def fix_result(root: Path, name: str, unsafe: bool, write: bool = False, ignore: tuple[str, ...] = ()):
    """`graphsafe fix [--unsafe-fixes] [--ignore ...] corpus/<name>` run in `root`: its FixResult
    (an outcome per file fixed, and every diagnostic its check of the project left)."""
    saved = os.getcwd()
    os.chdir(root)
    try:
        result = fix_paths([Path("corpus") / name], Settings(root=root, ignore=ignore), unsafe=unsafe, write=write,
                           jobs=1, use_cache=False)
    finally:
        os.chdir(saved)
    errors = [f"{o.path}: {o.error}" for o in result.outcomes if o.error]
    if errors:
        raise AssertionError("fix refused to write: " + "; ".join(errors))
    return result


def diff_of(outcomes) -> str:
    return "".join(unified_diff(o) for o in outcomes if o.fixed != o.original)


def fix_diff(root: Path, name: str, unsafe: bool, write: bool = False, ignore: tuple[str, ...] = ()) -> str:
    """`graphsafe fix [--diff] [--unsafe-fixes] [--ignore ...] corpus/<name>` run in `root`; the diff text."""
    return diff_of(fix_result(root, name, unsafe, write, ignore).outcomes)


def run_program(folder: Path) -> dict[str, float]:
    """run(steps=2) of `run.py` in a program folder, in a process of its own (sibling modules such as
    `model` share names across programs): {output name: float}."""
    return program_runner.run_program(folder)


def different_numbers(expected: dict[str, float], got: dict[str, float], rel: float, abs_: float) -> list[str]:
    """Outputs of run() that changed beyond the tolerance (NaN equals NaN), and new outputs."""
    bad = [k for k in expected if k not in got or not (
        expected[k] == got[k] or (math.isnan(expected[k]) and math.isnan(got[k]))
        or math.isclose(expected[k], got[k], rel_tol=rel, abs_tol=abs_))]
    return [f"{k}: {expected[k]!r} -> {got.get(k)!r}" for k in bad] + [f"new key {k}" for k in set(got) - set(expected)]


def main(argv: list[str]) -> int:
    if "--update" not in argv:
        print(__doc__)
        return 2
    for program in programs():
        for variant, filename in VARIANTS.items():
            (program / filename).write_text(fix_diff(ROOT, program.name, unsafe=variant == "unsafe"), encoding="utf-8")
            print(f"wrote {program.relative_to(ROOT)}/{filename}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
