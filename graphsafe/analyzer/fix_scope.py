"""Fixes only where capture can happen.

A hazard reported through `--region '*'` (an audit of every function) or through a constructor
that a pattern happens to match is still reported, but its fix is withdrawn: nothing shows that
such code is ever captured, and a fix there changes code that runs eagerly for good (`.item()`
kept as a tensor in `__init__`, `capturable=True` on an optimizer nobody captures). Regions that
the code or the user names (capture blocks, graphed callables, `# graphsafe: region`, an explicit
`--region Class.step`) keep their fixes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from graphsafe.analyzer.callgraph import matches_pattern
from graphsafe.model import Diagnostic, RegionKind

# Code that builds objects rather than stepping them: a region root of this name is setup.
SETUP_FUNCTIONS = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__",
                             "__setstate__"})


def fix_in_scope(diagnostic: Diagnostic, patterns: tuple[str, ...], root: Path | None) -> bool:
    region = diagnostic.region
    if region is None or region.kind is not RegionKind.PATTERN:
        return True  # found by the code itself (a capture block, a graphed callable, a mark)
    if region.display.rpartition(".")[2] in SETUP_FUNCTIONS:
        return False
    if region.receiver is not None:
        return True  # `Sub.step` with `step` inherited: only a pattern that names the class finds it
    named = tuple(p for p in patterns if p != "*")
    return matches_pattern(named, region.display, region.path, root) if "*" in patterns else True


def without_out_of_scope_fixes(diagnostics: list[Diagnostic], patterns: tuple[str, ...], root: Path | None
                               ) -> list[Diagnostic]:
    return [d if d.fix is None or fix_in_scope(d, patterns, root) else dataclasses.replace(d, fix=None)
            for d in diagnostics]
