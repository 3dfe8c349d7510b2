"""The subprocess side of `graphsafe capture`: one trial in a fresh process.

    python -m graphsafe.runtime._capture_worker REQUEST.json RESULT.json

REQUEST holds {"target": "module:factory", "mode", "warmup", "replays", "tolerance", "repeats",
"inner", "timing", "profile"}. The worker imports the factory, calls it, runs `trial_capture` and
writes RESULT atomically: {"protocol": 1, "report": {...}} or {"protocol": 1, "error": {"kind":
"usage"|"internal", "message": ...}}. Whatever the user's code prints goes to this process's
stdout/stderr, which the parent keeps only to show when the worker dies without a result.

A failed capture can poison the process (DESIGN.md); this process exits right after the trial.
GRAPHSAFE_CAPTURE_BACKEND=simulated runs the CPU stand-in (tests of this protocol only).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
from typing import Any

PROTOCOL = 1
SIMULATED_ENV = "GRAPHSAFE_CAPTURE_BACKEND"


class TargetError(Exception):
    """The target cannot be loaded or its factory fails: a message for the user."""


def load_object(spec: str) -> Any:
    """`package.module:factory` or `path/to/file.py:factory` (attribute paths allowed)."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(f"expected module:factory or path/to/file.py:factory, got {spec!r}")
    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            module = _import_file(module_name)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # like `python -m`: modules of the working directory
            module = importlib.import_module(module_name)
    except TargetError:
        raise
    except Exception as error:
        raise TargetError(f"cannot import {module_name!r}: {type(error).__name__}: {error}") from None
    obj: Any = module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"{module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TargetError(f"{spec!r} is not callable")
    return obj


def _import_file(path: str):
    if not os.path.isfile(path):
        raise TargetError(f"no such file: {path}")
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        name = f"_graphsafe_capture_{name}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_request(request: dict[str, Any]) -> dict[str, Any]:
    from graphsafe.runtime.capture import _SimulatedBackend, as_target, trial_capture

    factory = load_object(request["target"])
    try:
        target = as_target(factory())
    except TypeError as error:
        raise TargetError(f"{request['target']}: {error}") from None
    except Exception as error:
        where = _user_line(error)
        raise TargetError(f"the factory {request['target']} raised {type(error).__name__}: {error}{where}") from None
    backend = _SimulatedBackend() if os.environ.get(SIMULATED_ENV) == "simulated" else None
    options = {k: request[k] for k in ("mode", "warmup", "replays", "tolerance", "repeats", "inner", "timing",
                                       "profile") if request.get(k) is not None}
    try:
        report = trial_capture(target.step, target.args, kwargs=target.kwargs, state=target.state,
                               generators=target.generators, _backend=backend, **options)
    except (TypeError, ValueError, RuntimeError) as error:  # argument errors: nothing ran yet
        raise TargetError(str(error)) from None
    return report.to_json()


def _user_line(error: BaseException) -> str:
    from graphsafe.runtime.classify import LibraryFilter

    is_library = LibraryFilter()
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not is_library(frame.filename) and not frame.filename.endswith("_capture_worker.py"):
            return f" (at {frame.filename}:{frame.lineno})"
    return ""


def _write(path: str, payload: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m graphsafe.runtime._capture_worker REQUEST.json RESULT.json\n")
        return 2
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    if request.get("cwd"):
        os.chdir(request["cwd"])
    try:
        payload = {"protocol": PROTOCOL, "report": run_request(request)}
    except TargetError as error:
        payload = {"protocol": PROTOCOL, "error": {"kind": "usage", "message": str(error)}}
    except Exception as error:
        payload = {"protocol": PROTOCOL, "error": {"kind": "internal", "message": f"{type(error).__name__}: {error}",
                                                   "traceback": traceback.format_exc()}}
    _write(result_path, payload)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: destructors of a poisoned CUDA context can hang or abort, and the
    # result is already written.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
