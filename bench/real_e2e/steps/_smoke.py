"""Local check of the step modules: each builds and runs, deterministically.

    PYTHONPATH=<site with the steps' deps> python -m bench.real_e2e.steps._smoke [--device cuda] [name ...]

For each step: fetch and unpack its pinned package (bench/real/score.py's cache), put it on
sys.path, build(device, 0) twice, run 3 steps eagerly on each with the same inputs, and check
that outputs and state are bitwise equal, that inputs change with the step number and that
the state moves (or, for a stateless step, the outputs). Prints one line per step; a step
whose package does not import here (torchaudio/torchvision built for another torch) is SKIP;
exit 1 if any fails.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from pathlib import Path

import torch

from bench.real import score
from bench.real_e2e.step_api import read_step_info, step_names

STEPS = 3


def flat_tensors(value, prefix="out") -> dict[str, torch.Tensor]:
    """Every tensor inside nested tuples/lists/dicts, by path (numbers as 0-d tensors)."""
    if isinstance(value, torch.Tensor):
        return {prefix: value.detach().cpu()}
    if isinstance(value, (int, float, bool)):
        return {prefix: torch.tensor(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    found: dict[str, torch.Tensor] = {}
    for key, item in items:
        found.update(flat_tensors(item, f"{prefix}.{key}"))
    return found


def state_copy(built) -> dict[str, torch.Tensor]:
    return {f"state.{k}": v.detach().cpu().clone() for k, v in built.state().items()}


def run_eagerly(module, device: str, seed: int) -> list[dict[str, torch.Tensor]]:
    """The state before the first step, then each step's outputs and state."""
    built = module.build(device, seed)
    trace = [state_copy(built)]
    for i in range(STEPS):
        out = built.step(*built.inputs(i))
        trace.append({**flat_tensors(out), **state_copy(built)})
    return trace


def differences(a: list[dict], b: list[dict]) -> list[str]:
    found = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x.keys() != y.keys():
            found.append(f"step {i}: keys differ {sorted(x.keys() ^ y.keys())[:3]}")
        found += [f"step {i}: {k} differs" for k in sorted(x.keys() & y.keys())
                  if x[k].shape != y[k].shape or not torch.equal(x[k], y[k])]
    return found


def moved(before: dict, after: dict) -> bool:
    after = {k: v for k, v in after.items() if k.startswith("state.")}
    return before.keys() != after.keys() or any(not torch.equal(before[k], after[k]) for k in before)


def metadata_problems(info, root: Path) -> list[str]:
    """What read_step_info (KIND, EXTRA's shape) leaves unchecked: the region's file, the hashes."""
    problems = []
    if not (root / info.region.split("::")[0]).is_file():
        problems.append(f"REGION {info.region}: no such file under {root}")
    problems += [f"EXTRA {entry!r}: the sha256 is not 64 hex digits" for entry in info.extra
                 if not re.fullmatch(r"[0-9a-f]{64}", entry[2])]
    return problems


def check(name: str, device: str, cache: Path) -> str:
    info = read_step_info(name)
    root = score.fetch(score.packages_of("all")[info.package], cache)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    problems = metadata_problems(info, root)
    top = info.region.split("/")[0]
    try:
        importlib.import_module(top)
    except Exception as error:  # e.g. torchaudio's C part built for another torch
        return f"SKIP {name}: {top} does not import here: {type(error).__name__}: {str(error).splitlines()[0]}"
    module = importlib.import_module(f"bench.real_e2e.steps.{name}")
    first, second = run_eagerly(module, device, 0), run_eagerly(module, device, 0)
    problems += differences(first, second)
    built = module.build(device, 0)
    inputs = [flat_tensors(built.inputs(i)) for i in (0, 1)]
    if inputs[0] and not differences(inputs[:1], inputs[1:]):
        problems.append("inputs(0) == inputs(1)")
    if first[0] and not moved(first[0], first[-1]):
        problems.append("state never changes")
    if not first[0] and not differences(first[1:2], first[2:3]):
        problems.append("stateless, and the outputs never change")
    states = sum(k.startswith("state.") for k in first[-1])
    summary = f"{states} state tensors, {len(first[-1]) - states} outputs"
    return f"FAIL {name}: {'; '.join(problems)}" if problems else f"ok   {name} ({info.kind}): {summary}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=step_names())
    parser.add_argument("--device", default="cpu", help="build the steps there (cpu, cuda)")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")))
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    verdicts = []
    for name in args.names:
        try:
            line = check(name, args.device, args.cache)
        except Exception:  # one broken step must not hide the others
            line = f"FAIL {name}: {traceback.format_exc(limit=-3)}"
        verdicts.append(line.split()[0])
        print(line, flush=True)
    print(f"{verdicts.count('ok')} ok, {verdicts.count('SKIP')} skipped (package does not import here), "
          f"{verdicts.count('FAIL')} failed")
    return 1 if "FAIL" in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
