"""`graphsafe trace --save-facts`: what the traced steps saw, as facts the static side reads.

For every user function called inside a traced region (the region itself and what it calls),
each parameter, each `self.attr` holding a number or a tensor, and each entry of a dict
parameter or attribute (`cfg['lr']`): its kind, a tensor's device, dtype and 0-dim-ness, and
whether it changed between traced steps (a number's value; a tensor's storage or shape). The
n-th call of a function in one step is compared with its n-th call in the next, so the layers
of a model called in turn are not taken for one value changing. Branches on tensors and custom
generators come from the tracer's findings. The format is analyzer/run_facts.py's.
"""

from __future__ import annotations

import itertools
import json
import numbers
import os
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable

import torch

from graphsafe.analyzer import run_facts
from graphsafe.runtime.trace_report import Finding

MAX_CALLS_PER_STEP = 16  # calls of one function looked at per step (a layer stack: its first layers)
MAX_VALUES = 64  # values looked at per call
MAX_CALL_EDGES = 20_000  # caller → callee pairs recorded per run
BRANCH_CODES = frozenset({"GS201"})
HOST_COPY_CODES = frozenset({"GS402"})  # a copy of host memory to the device the run made
GENERATOR_CODES = frozenset({"GS601"})


def _describe(value: Any) -> tuple | None:
    """A value as compared between steps; None for what is not recorded (modules, objects)."""
    if isinstance(value, torch.Tensor):
        try:
            storage = value.untyped_storage().data_ptr()
        except Exception:  # sparse and other storage-less tensors
            storage = None
        return ("tensor", str(value.device), str(value.dtype).replace("torch.", ""), value.dim() == 0,
                tuple(value.shape), storage)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, numbers.Real):
        return ("number", value)
    if value is None:
        return ("none",)
    return None


class _Value:
    """What one name held across a function's calls."""

    __slots__ = ("kind", "device", "dtype", "zero_dim", "changed", "shape_changed", "values")

    def __init__(self, seen: tuple) -> None:
        self.kind = seen[0]
        self.device = self.dtype = self.zero_dim = None
        if seen[0] == "tensor":
            self.device, self.dtype, self.zero_dim = seen[1], seen[2], seen[3]
        self.changed = self.shape_changed = False
        self.values: list[str] = [_short(seen[1])] if seen[0] in ("number", "bool") else []

    def update(self, seen: tuple, before: tuple | None) -> None:
        if seen[0] != self.kind:
            self.kind = "mixed"  # `mask=None` on one call, a tensor on another
        if before is None or before[0] != seen[0] or self.kind == "mixed":
            return
        if seen[0] in ("number", "bool") and seen[1] != before[1] and not (seen[1] != seen[1] and before[1] != before[1]):
            if not self.changed:
                self.values = [_short(before[1]), _short(seen[1])]
            self.changed = True
        elif seen[0] == "tensor":
            if seen[4] != before[4]:
                self.changed = self.shape_changed = True
            elif seen[5] != before[5]:
                self.changed = True

    def to_json(self) -> dict:
        entry: dict = {"kind": self.kind, "changed": self.changed}
        if self.kind == "tensor":
            entry.update(device=self.device, dtype=self.dtype, zero_dim=self.zero_dim, shape_changed=self.shape_changed)
        if self.values:
            entry["values"] = self.values[:2]
        return entry


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


class FactsRecorder:
    """Collects the facts of each user function called while a region is traced."""

    def __init__(self, is_library: Callable[[str], bool]) -> None:
        self._is_library = is_library
        self._skip: dict[CodeType, bool] = {}
        self._nth: dict[CodeType, int] = {}  # calls of each function in the current step
        self._last: dict[tuple[CodeType, int], dict[str, tuple]] = {}  # (function, nth call) → values
        self.functions: dict[CodeType, dict[str, _Value]] = {}
        # (caller, callee) between user functions, library frames in between skipped: the calls
        # a run made through dynamic dispatch (`self.layers[i](x)`, a loss passed in, callbacks)
        self.calls: set[tuple[CodeType, CodeType]] = set()

    def begin_step(self) -> None:
        self._nth.clear()

    def observe(self, frame: FrameType) -> None:
        """Record a function's inputs as it is entered. Never raises: it runs in a profile hook,
        where an exception would land in the user's code; what cannot be looked at is left out."""
        try:
            self._observe(frame)
        except Exception:
            pass

    def _observe(self, frame: FrameType) -> None:
        code = frame.f_code
        if self._skipped(code):
            return
        if len(self.calls) < MAX_CALL_EDGES:
            caller = frame.f_back
            while caller is not None and self._skipped(caller.f_code):
                caller = caller.f_back  # nn.Module.__call__ and other library frames in between
            if caller is not None:
                self.calls.add((caller.f_code, code))
        nth = self._nth.get(code, 0)
        if nth >= MAX_CALLS_PER_STEP:
            return
        self._nth[code] = nth + 1
        current = self._values(frame)
        before = self._last.get((code, nth), {})
        record = self.functions.setdefault(code, {})
        for name, seen in current.items():
            value = record.get(name)
            if value is None:
                record[name] = _Value(seen)
            else:
                value.update(seen, before.get(name))
        self._last[(code, nth)] = current

    def _skipped(self, code: CodeType) -> bool:
        skip = self._skip.get(code)
        if skip is None:
            skip = self._skip[code] = code.co_name.startswith("<") or self._is_library(code.co_filename)
        return skip

    def _values(self, frame: FrameType) -> dict[str, tuple]:
        from graphsafe.runtime.trace_cli import frame_inputs

        named, owner = frame_inputs(frame)
        out: dict[str, tuple] = {}
        for name, value in named:
            _add(out, name, value, entries=True)
        if owner is not None:
            self_value = owner[1]
            attributes = dict(getattr(self_value, "__dict__", {}))
            if isinstance(self_value, torch.nn.Module):  # registered tensors live outside __dict__
                attributes.update(itertools.chain(self_value._parameters.items(), self_value._buffers.items()))
            for attr, value in itertools.islice(attributes.items(), MAX_VALUES):
                if not attr.startswith("_"):
                    _add(out, f"self.{attr}", value, entries=True)
        return out

    def to_json(self, root: Path, findings: list[Finding], previous: dict | None = None) -> dict:
        """The facts file's content: these functions' facts over `previous`'s (an earlier run's
        facts of other functions stay)."""
        files: dict = {}
        if previous is not None:
            files = {path: {"functions": dict(entry["functions"])} for path, entry in previous.get("files", {}).items()}
        texts: dict[str, dict] = {}
        for code, values in self.functions.items():
            path = os.path.realpath(code.co_filename)
            rel = _relative(path, root)
            if rel is None:
                continue
            if path not in texts:
                texts[path] = _hashes_of(path)
            qualname = getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")
            digest = texts[path].get((qualname, code.co_firstlineno))
            if digest is None:
                continue  # not found in the file as it is now (edited during the run)
            entry = {"source_hash": digest, "line": code.co_firstlineno,
                     "values": {name: value.to_json() for name, value in values.items()}}
            files.setdefault(rel, {"functions": {}})["functions"][qualname] = entry
        for caller, callee in sorted(self.calls, key=lambda pair: (pair[0].co_filename, pair[0].co_firstlineno,
                                                                    pair[1].co_filename, pair[1].co_firstlineno)):
            where = [_function_of(code, root, texts) for code in (caller, callee)]
            if None in where:
                continue
            (caller_rel, caller_name), (callee_rel, callee_name) = where
            entry = files.get(caller_rel, {}).get("functions", {}).get(caller_name)
            if entry is not None:
                found = entry.setdefault("calls", [])
                if f"{callee_rel}::{callee_name}" not in found:
                    found.append(f"{callee_rel}::{callee_name}")
        for finding in findings:
            key = ("branches" if finding.code in BRANCH_CODES else "host_copies" if finding.code in HOST_COPY_CODES
                   else "generators" if finding.code in GENERATOR_CODES else None)
            rel = _relative(os.path.realpath(finding.filename), root) if key else None
            function = files.get(rel, {}).get("functions", {}).get(finding.function) if rel else None
            if function is not None:
                function.setdefault(key, []).append({"line": finding.line, "code": finding.code,
                                                     "details": list(finding.details)})
        return {"version": run_facts.VERSION, "root": ".", "files": files}


def _function_of(code: CodeType, root: Path, texts: dict[str, dict]) -> tuple[str, str] | None:
    """(path relative to root, qualname) of a function whose source is in the file as it is now."""
    path = os.path.realpath(code.co_filename)
    rel = _relative(path, root)
    if rel is None:
        return None
    if path not in texts:
        texts[path] = _hashes_of(path)
    qualname = getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")
    return (rel, qualname) if (qualname, code.co_firstlineno) in texts[path] else None


def _add(out: dict, name: str, value: Any, entries: bool) -> None:
    seen = _describe(value)
    if seen is not None:
        out[name] = seen
    elif entries and isinstance(value, dict):  # `cfg['lr']`, `self.state['step']`
        for key, item in itertools.islice(value.items(), MAX_VALUES):
            if isinstance(key, str):
                _add(out, f"{name}[{key!r}]", item, entries=False)


def _relative(path: str, root: Path) -> str | None:
    try:
        rel = Path(os.path.relpath(path, root))
    except ValueError:
        return None
    return None if rel.parts[:1] == ("..",) else rel.as_posix()


def _hashes_of(path: str) -> dict:
    try:
        text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return {}
    return run_facts.def_hashes(text)


def project_root(start: Path | None = None) -> Path:
    """The folder of the nearest pyproject.toml with [tool.graphsafe] (where `check` looks),
    else the working directory: facts are keyed by paths relative to it."""
    from graphsafe.config import ConfigError, find_config

    start = start or Path.cwd()
    try:
        config = find_config(start)
    except ConfigError:
        config = None
    return (config.parent if config is not None else start).resolve()


def save(recorder: FactsRecorder, findings: list[Finding], path: Path | None, root: Path | None = None) -> str | None:
    """Write the facts file (default `<project root>/.graphsafe/facts.json`) atomically, merged
    over an earlier one that is still valid; None on success, else why it was not written."""
    from graphsafe.writing import write_new

    root = root or project_root()
    path = Path(path).absolute() if path is not None else root / run_facts.DEFAULT_PATH
    previous = None
    if path.is_file():
        try:
            if run_facts.load(path).root == root:  # only a valid file about the same tree is merged
                previous = json.loads(path.read_bytes())
        except (ValueError, OSError, run_facts.FactsError):
            previous = None
    data = recorder.to_json(root, findings, previous)
    data["root"] = os.path.relpath(root, path.parent)
    return write_new(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
