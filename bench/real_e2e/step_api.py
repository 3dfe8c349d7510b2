"""What a step module of bench/real_e2e/steps/ gives the harness (bench/real_e2e/run.py).

Each step module defines PACKAGE (a PyPI name pinned in bench/real/labels), KIND ("decode",
"train", "solver" or "metric"), REGION (what a user would pass to `graphsafe check/fix --region`),
EXTRA (other pinned wheels it needs: [(name, version, sha256), ...]) and `build(device, seed)`
returning a `Built`. Two builds with the same seed give identical state.

torch is imported only inside functions: the harness's parent process loads step modules'
metadata without torch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

KINDS = ("decode", "train", "solver", "metric")
STEPS_DIR = Path(__file__).resolve().parent / "steps"


@dataclass
class Built:
    """step(*inputs(i)) is one step a user would graph (it may mutate model/optimizer state in
    place); inputs(i) gives fresh arguments that change with i (tensors on the step's device,
    Python numbers only where the real API takes a number per step); state() the tensors to
    compare after each step (parameters, buffers, caches; empty for a pure function)."""

    step: Callable[..., Any]
    inputs: Callable[[int], tuple]
    state: Callable[[], "dict[str, Any]"]


@dataclass(frozen=True)
class StepInfo:
    """A step module's declarations, read from its source without importing it."""

    name: str
    package: str
    kind: str
    region: str
    extra: tuple[tuple[str, str, str], ...]
    path: Path


class StepModuleError(Exception):
    """A step module lacks a declaration or declares something malformed."""


def step_names(steps_dir: Path = STEPS_DIR) -> list[str]:
    """Every step module (files starting with `_` are helpers, not steps)."""
    return sorted(p.stem for p in steps_dir.glob("*.py") if not p.stem.startswith("_"))


def read_step_info(name: str, steps_dir: Path = STEPS_DIR) -> StepInfo:
    """PACKAGE, KIND, REGION and EXTRA of a step module, from its top-level assignments (literals only)."""
    path = steps_dir / f"{name}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as error:
        raise StepModuleError(f"{path}: {error}") from None
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            key = node.targets[0].id
            if key in ("PACKAGE", "KIND", "REGION", "EXTRA"):
                try:
                    found[key] = ast.literal_eval(node.value)
                except ValueError:
                    raise StepModuleError(f"{path}:{node.lineno}: {key} must be a literal") from None
    missing = [k for k in ("PACKAGE", "KIND", "REGION") if not isinstance(found.get(k), str)]
    if missing:
        raise StepModuleError(f"{path}: no string {', '.join(missing)}")
    if found["KIND"] not in KINDS:
        raise StepModuleError(f"{path}: KIND must be one of {', '.join(KINDS)}, got {found['KIND']!r}")
    extra = found.get("EXTRA", [])
    if not (isinstance(extra, list) and all(isinstance(e, tuple) and len(e) == 3 and all(isinstance(s, str) for s in e)
                                            for e in extra)):
        raise StepModuleError(f"{path}: EXTRA must be a list of (name, version, sha256) tuples")
    return StepInfo(name, found["PACKAGE"], found["KIND"], found["REGION"], tuple(extra), path)
