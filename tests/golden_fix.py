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

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from graphsafe.config import Settings
from graphsafe.fixer import fix_paths, unified_diff
from tests.golden import ROOT, programs

VARIANTS = {"safe": "expected_fix.diff", "unsafe": "expected_fix_unsafe.diff"}


def fix_diff(root: Path, name: str, unsafe: bool, write: bool = False, ignore: tuple[str, ...] = ()) -> str:
    """`graphsafe fix [--diff] [--unsafe-fixes] [--ignore ...] corpus/<name>` run in `root`; the diff text."""
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
    return "".join(unified_diff(o) for o in result.outcomes if o.fixed != o.original)


# Runs `run.py`'s run() of one program folder in a fresh interpreter (sibling modules such as
# `model` share names across programs) and prints its dict as JSON (floats exactly: repr).
_RUNNER = """
import importlib.util, json, os, sys
folder = sys.argv[1]
import torch
torch.set_num_threads(1)
sys.path.insert(0, folder)
os.chdir(folder)
spec = importlib.util.spec_from_file_location("corpus_run", os.path.join(folder, "run.py"))
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("RESULT " + json.dumps({k: float(v) for k, v in module.run(steps=2).items()}))
"""


def run_program(folder: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(folder)], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise AssertionError(f"{folder.name}: run() failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


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
