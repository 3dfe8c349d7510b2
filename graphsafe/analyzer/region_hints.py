"""What to tell a user whose check reached no code: region patterns that match nothing (with
the closest function names), and the functions that look like the step they capture.

Without a region graphsafe checks nothing reachable, and a silent "All checks passed!" on a
file full of `.item()` is the worst first impression it can give; a typo in `--region` is the
same trap.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from graphsafe.analyzer.callgraph import Project, matches_pattern
from graphsafe.analyzer.engine import _display_path
from graphsafe.analyzer.facts import FileFacts
from graphsafe.lines import split_lines

# Names of the functions people capture: a training or decoding step, a model's forward.
_STEP_NAMES = ("train_step", "training_step", "step", "decode_step", "sample_step", "forward", "decode", "sample",
               "generate", "update", "predict", "__call__")


def functions(facts: list[FileFacts]) -> list[tuple[str, str, int]]:
    """(display, path, line) of every def the check saw (line 0 where the analysis kept none:
    it computes positions only for what it reports; see `def_line`)."""
    return [(u.display, f.path, u.line) for f in facts for u in f.units if u.is_function]


def def_line(path: str, display: str) -> int:
    """The line of `def name` for `Class.method` in `path` (0 if not found): read only for the
    few functions a message names, off the analysis's hot path."""
    *owners, name = display.split(".")
    try:
        lines = split_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return 0
    start = 0
    for owner in owners:  # `class Owner` (or `def owner` for nested functions) first
        pattern = re.compile(rf"\s*(class|def|async\s+def)\s+{re.escape(owner)}\b")
        start = next((i for i in range(start, len(lines)) if pattern.match(lines[i])), start)
    pattern = re.compile(rf"\s*(async\s+)?def\s+{re.escape(name)}\s*\(")
    return next((i + 1 for i in range(start, len(lines)) if pattern.match(lines[i])), 0)


def unmatched(patterns: tuple[str, ...], facts: list[FileFacts], root: Path | None) -> dict[str, list[str]]:
    """Each pattern (other than `*`) that matches no function → the closest function names."""
    defs = functions(facts)
    missing: dict[str, list[str]] = {}
    project = None
    for pattern in patterns:
        if pattern == "*" or any(matches_pattern((pattern,), display, path, root) for display, path, _ in defs):
            continue
        project = project or Project(facts)
        if project.inherited_regions((pattern,), root):  # `Sub.forward` with `forward` defined by a base
            continue
        name = pattern.partition("::")[2] or pattern
        displays = sorted({display for display, _, _ in defs})
        close = difflib.get_close_matches(name, displays, n=3, cutoff=0.5)
        # `step` for `Trainer.step`: the last part of a dotted name too
        tails = {d.rpartition(".")[2]: d for d in displays}
        close += [tails[t] for t in difflib.get_close_matches(name.rpartition(".")[2], list(tails), n=3, cutoff=0.6)
                  if tails[t] not in close]
        missing[pattern] = close[:3]
    return missing


def step_candidates(facts: list[FileFacts], root: Path, limit: int = 5) -> list[str]:
    """`path::Class.method (line N)` for functions named like a captured step, best first."""
    found = []
    for display, path, line in functions(facts):
        name = display.rpartition(".")[2]
        if name in _STEP_NAMES or name.endswith("_step"):
            rank = _STEP_NAMES.index(name) if name in _STEP_NAMES else 0
            found.append((rank, path, display, line))
    shown = []
    for _, path, display, line in sorted(found)[:limit]:
        shown.append(f"{_display_path(Path(path), root)}::{display} (line {line or def_line(path, display)})")
    return shown


_TOP_LOOP = re.compile(r"(for|while)\b[^#]*:\s*(#.*)?$")
_STEP_WORK = re.compile(r"\.backward\(|\.step\(|\.zero_grad\(")


def loop_candidates(facts: list[FileFacts], root: Path, limit: int = 3) -> list[str]:
    """`path:N `while True:`` for a script's module-level loops that run a training step (the
    body calls `.backward()`, `.step()` or `.zero_grad()`): a script has no function to name,
    and the comment on the loop makes its body the region. Read only when no region was found."""
    shown = []
    for f in facts:
        if any(u.is_function and u.display.rpartition(".")[2] in _STEP_NAMES for u in f.units):
            continue  # a file with a step function: that is the hint
        try:
            lines = split_lines(Path(f.path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        for number, text in enumerate(lines):
            if not _TOP_LOOP.match(text):
                continue
            body = []
            for line in lines[number + 1:]:
                if line.strip() and not line[0].isspace():
                    break
                body.append(line)
            if any(_STEP_WORK.search(line) for line in body):
                shown.append(f"{_display_path(Path(f.path), root)}:{number + 1} `{text.split('#')[0].strip()}`")
                if len(shown) >= limit:
                    return shown
    return shown
