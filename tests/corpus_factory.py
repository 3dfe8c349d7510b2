"""Runs a corpus program's `capture.py` factory step through a simulated trial on the CPU
(warm-up, capture, replays and the eager reference, all eager), then drops the program's modules:
the programs share module names (`model`, `train`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def simulated_trial(capture_py: Path, program: str):
    from graphsafe.runtime import trial_capture
    from graphsafe.runtime.capture import _SimulatedBackend

    folder = str(capture_py.parent)
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location(f"corpus_capture_{program}", capture_py)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        target = module.make("cpu")
        mode = "graphed_callables" if program == "moe_router" else "graph"
        return trial_capture(target["step"], target.get("args", ()), mode=mode, timing=False,
                             _backend=_SimulatedBackend())
    finally:
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(folder):
                del sys.modules[name]
        while folder in sys.path:
            sys.path.remove(folder)
