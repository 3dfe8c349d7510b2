"""The static half of a real step: `graphsafe check` on the package as shipped, `graphsafe fix`
(safe fixes, then separately with --unsafe-fixes) on copies, in a scratch directory.

    scratch/<step>/orig/     the package's source tree as shipped (checked, never rewritten)
    scratch/<step>/fixed/    the same after `graphsafe fix --region REGION`
    scratch/<step>/unsafe/   the same after `graphsafe fix --region REGION --unsafe-fixes`
    scratch/<step>/graph/    the same after `graphsafe graph --region REGION` (the one path: split,
                             fixes in the core's reach, the wiring for graphed())
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("orig", "fixed", "unsafe", "graph")
FIX_OPTIONS = {"fixed": (), "unsafe": ("--unsafe-fixes",)}


@dataclass
class StaticResult:
    diagnostics: int = 0
    codes: dict[str, int] = field(default_factory=dict)   # code -> count, on the shipped package
    fixable: dict[str, int] = field(default_factory=dict)  # applicability -> diagnostics that offer a fix
    fixed: dict[str, int | None] = field(default_factory=dict)   # variant -> fixes applied (None: unknown)
    changed_files: dict[str, list[str]] = field(default_factory=dict)  # variant -> files the fix rewrote
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(vars(self))


def _graphsafe(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return subprocess.run([sys.executable, "-m", "graphsafe", *args, "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def make_variants(unpacked: Path, step_dir: Path) -> dict[str, Path]:
    """orig/, fixed/ and unsafe/ copies of an unpacked source tree."""
    roots = {}
    for variant in VARIANTS:
        root = step_dir / variant
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(unpacked, root, symlinks=True)
        roots[variant] = root
    return roots


def check_and_fix(region: str, roots: dict[str, Path], timeout: float = 300.0) -> StaticResult:
    """Diagnostics on orig/, then the fixes applied to fixed/ and unsafe/."""
    result = StaticResult()
    try:
        done = _graphsafe(["check", ".", "--region", region, "--output-format", "json", "--exit-zero",
                           "--unsafe-fixes"], roots["orig"], timeout)
    except subprocess.TimeoutExpired:
        result.errors.append(f"graphsafe check did not finish in {timeout:g} s")
        return result
    if done.returncode != 0:
        result.errors.append(f"graphsafe check exited {done.returncode}: {_last_line(done.stderr)}")
        return result
    try:
        diagnostics = json.loads(done.stdout or "[]")
    except ValueError as error:
        result.errors.append(f"graphsafe check printed no JSON ({error})")
        return result
    result.diagnostics = len(diagnostics)
    result.codes = dict(sorted(Counter(d["code"] for d in diagnostics).items()))
    result.fixable = dict(Counter((d.get("fix") or {}).get("applicability", "none") for d in diagnostics
                                  if d.get("fix")))
    for variant, options in FIX_OPTIONS.items():
        offered = result.fixable.get("safe", 0) + (result.fixable.get("unsafe", 0) if variant == "unsafe" else 0)
        if not offered:  # nothing to apply: the copy stays as shipped (saves a whole analysis)
            result.fixed[variant], result.changed_files[variant] = 0, []
            continue
        try:
            done = _graphsafe(["fix", ".", "--region", region, *options], roots[variant], timeout)
        except subprocess.TimeoutExpired:
            result.errors.append(f"graphsafe fix ({variant}) did not finish in {timeout:g} s")
            continue
        if done.returncode not in (0, 1):  # 1: hazards remain
            result.errors.append(f"graphsafe fix ({variant}) exited {done.returncode}: {_last_line(done.stderr)}")
            continue
        counted = re.search(r"\((\d+) fixed, \d+ remaining\)", done.stdout + done.stderr)
        result.fixed[variant] = int(counted.group(1)) if counted else None
        result.changed_files[variant] = changed_files(roots["orig"], roots[variant])
    return result


def graph_variant(region: str, roots: dict[str, Path], timeout: float = 300.0, facts: Path | None = None) -> dict:
    """`graphsafe graph --region REGION --json` on graph/ (with `--facts FILE` from a traced run
    when given): its summary (core, wiring options, what still blocks) and the files it changed;
    {"error": ...} when it could not run."""
    extra = ["--facts", str(facts)] if facts is not None else []
    try:
        done = _graphsafe(["graph", ".", "--region", region, "--json", *extra], roots["graph"], timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"graphsafe graph did not finish in {timeout:g} s"}
    if done.returncode not in (0, 1):
        return {"error": f"graphsafe graph exited {done.returncode}: {_last_line(done.stderr)}"}
    try:
        summary = json.loads(done.stdout)
    except ValueError as error:
        return {"error": f"graphsafe graph printed no JSON ({error})"}
    summary["changed_files"] = changed_files(roots["orig"], roots["graph"])
    return summary


def changed_files(a: Path, b: Path) -> list[str]:
    """Relative paths of the files that differ between two trees."""
    changed = []
    for path in sorted(b.rglob("*.py")):
        rel = path.relative_to(b)
        other = a / rel
        if not other.is_file() or not filecmp.cmp(other, path, shallow=False):
            changed.append(rel.as_posix())
    return changed


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no message)"
