"""The torch side of graphsafe: run-time tracing, trial capture and graphed regions.

This is the only package of graphsafe that imports torch. Submodules are imported lazily so
`import graphsafe.runtime` stays cheap until a function is used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "trace": "graphsafe.runtime.tracer",
    "TraceReport": "graphsafe.runtime.tracer",
    "Finding": "graphsafe.runtime.tracer",
    "trial_capture": "graphsafe.runtime.capture",
    "CaptureReport": "graphsafe.runtime.capture",
    "graphed": "graphsafe.runtime.graphed",
    "graph_method": "graphsafe.runtime.graphed",
    "GraphedInputError": "graphsafe.runtime.graphed",
    "GraphedCaptureError": "graphsafe.runtime.graphed",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphsafe.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = sorted(_EXPORTS)
