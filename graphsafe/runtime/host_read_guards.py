"""Host reads of device data inside a graphed region, baked with a guard checked on the device.

Library code branches on device data where a user cannot reach: gpytorch's kernel does
`x1_eq_x2 = torch.equal(x1, x2)` (a sync) inside the lazy evaluation a loss region triggers. Such a
read often gives the same value on every call (there x1 and x2 hold the same points), but nothing
static proves it. A graph cannot sync, so graphed() bakes the value and checks it on the device:

- warm-up (eager): each read that decides a branch, `torch.equal` / `torch.allclose` (functions or
  methods), `__bool__` of a tensor of at most SMALL elements (an `if t.any():`) and `.item()` of a
  bool tensor, is recorded per call site: the caller's file and line and the read's occurrence
  number at that line within the call. Reads of numbers (`.item()` of a loss, `int(n)`, `.tolist()`)
  are data that changes from call to call: baked, nearly every replay would be thrown away, so they
  stay capture errors with their line;
- capture: the read returns the value the warm-up calls gave (every one the same) instead of
  syncing, and adds to a device flag (made inside the graph, so each replay starts it at False)
  whether this replay's tensors would have given another value: `torch.equal` as torch computes it
  (same shape and `(a == b).all()`, so a NaN is never equal), `torch.allclose` as
  `isclose(...).all()` with its tolerances, the other reads by comparing the
  tensor with the warm-up's (NaN equal to NaN; `__bool__` by truth value);
- after each replay graphed() reads the flag (one device-to-host read of one byte per call, which
  waits for the replay to finish; with the guard's few small kernels, the cost); when it is set, the replay's results are thrown away and the call runs eagerly
  (`stats["fallbacks"]`, and a RuntimeWarning naming the baked reads the first time), so a call
  returns what an eager call returns.

Not baked: a read whose value differed between the warm-up calls, or that the capture reaches
without a warm-up call having reached it (another path): capture fails with HostReadNotBaked
naming the line (classify.py gives it the read's rule: GS109 for `torch.equal`, GS101 for `.item()`). Guards are refused (graphed() raises with the lines) for regions that write state
in place (a training step, a buffer updated, an argument mutated), where a replay thrown away would
already have changed what the eager call reads. Reads of CPU tensors are not device reads and are
left alone; reads of larger tensors (data, not a branch) stay capture errors.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from torch.overrides import TorchFunctionMode

SMALL = 16  # elements: a read of a bigger tensor is data handed to the host, not a branch

_READS = {torch.equal: "torch.equal", torch.Tensor.equal: "torch.equal", torch.allclose: "torch.allclose",
          torch.Tensor.allclose: "torch.allclose", torch.Tensor.item: ".item()", torch.Tensor.__bool__: "bool()"}
_PAIRS = ("torch.equal", "torch.allclose")  # reads of two tensors
_OWN_FILES = (os.path.normcase(__file__), os.path.normcase(torch.overrides.__file__))


class HostReadNotBaked(RuntimeError):
    """A host read of device data while capturing whose value the warm-up did not pin down."""


@dataclass
class _Site:
    """One read site: what the warm-up calls saw there."""

    where: str  # "path:line"
    read: str  # which read ("torch.equal")
    values: list = field(default_factory=list)  # the Python value of each warm-up call
    tensor: torch.Tensor | None = None  # the last warm-up's tensor (item-like reads): the guard's reference

    def agreed(self) -> bool:
        return bool(self.values) and all(_same_python(v, self.values[0]) for v in self.values)


class HostReadGuards(TorchFunctionMode):
    """Entered around each warm-up and capture call of a region (`with guards.call():`); see the
    module docstring. `simulated=True` (CPU tests, graphed(backend="eager")): every tensor stands
    for device data and the capture phase is the one `capture_begins()` starts; each simulated
    replay runs the region again in that phase, reads returning the baked values."""

    def __init__(self, simulated: bool = False, active: bool = True) -> None:
        super().__init__()
        self.simulated = simulated
        self.active = active  # off: every read runs as written (a training step: see graphed.py)
        self.sites: dict[tuple, _Site] = {}
        self.baked: list[str] = []  # "path:line (read)" of each site the capture baked
        self.flag: torch.Tensor | None = None  # set on the device when a baked value would differ
        self.fallbacks = 0
        self._simulated_capture = False
        self._counts: dict[tuple[str, int], int] = {}

    def call(self) -> "HostReadGuards":
        """One call of the region: occurrence numbers start again (use as a context manager)."""
        self._counts = {}
        if self._capturing():
            self.flag = None  # the capture makes it anew (a simulated replay too)
            self.baked = []
        return self

    def capture_begins(self) -> None:
        self._simulated_capture = True

    def fired(self) -> bool:
        """After a replay: would a baked read have given another value? (reads the flag: a sync)"""
        if self.flag is None:
            return False
        if bool(self.flag):  # the mode is not entered here: this read is graphed()'s own
            if not self.fallbacks:
                warnings.warn(f"graphed: a host read baked into the graph ({', '.join(sorted(set(self.baked)))}) "
                              "would read another value on this call: the replay was thrown away and the call ran "
                              "eagerly (counted in .stats['fallbacks']); a read that changes often costs a "
                              "replay and an eager call each time", RuntimeWarning, stacklevel=3)
            self.fallbacks += 1
            return True
        return False

    def _capturing(self) -> bool:
        return self._simulated_capture if self.simulated else torch.cuda.is_current_stream_capturing()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        read = _READS.get(func) if self.active else None
        if read is None or not self._guarded(read, args):
            return func(*args, **kwargs)
        site = self._site(read)
        if not self._capturing():
            value = func(*args, **kwargs)
            site.values.append(value)
            if read not in _PAIRS:
                site.tensor = args[0].detach().clone()
            return value
        if not site.agreed():
            seen = ", ".join(_short(v) for v in site.values) or "never reached by a warm-up call"
            raise HostReadNotBaked(
                f"graphed: {read} at {site.where} reads device data while capturing, and the warm-up calls gave "
                f"{'no single value' if site.values else 'no value'} ({seen}): it cannot be baked into the graph "
                "with a guard; compute the branch on the device (torch.where) or move the read out of the region")
        if site.tensor is not None and site.tensor.numel() != args[0].numel():
            raise HostReadNotBaked(f"graphed: {read} at {site.where} reads a tensor of another size while capturing "
                                   "than in the warm-up calls: it cannot be baked into the graph with a guard")
        value = site.values[0]
        self._add(self._differs(read, args, kwargs, value, site.tensor))
        self.baked.append(f"{site.where} ({read})")
        return value

    def _guarded(self, read: str, args: tuple) -> bool:
        pair = read in _PAIRS
        tensors = args[:2] if pair else args[:1]
        if len(tensors) != (2 if pair else 1) or not all(isinstance(t, torch.Tensor) for t in tensors):
            return False
        if not self.simulated and all(t.device.type == "cpu" for t in tensors):
            return False  # host data: no sync
        if pair:
            a, b = tensors
            same_shape = a.shape == b.shape or read == "torch.allclose"  # allclose broadcasts
            return same_shape and a.dtype == b.dtype and a.device == b.device  # else decided by metadata
        if read == ".item()" and tensors[0].dtype != torch.bool:
            return False  # a number: data, not a branch (see the module docstring)
        return tensors[0].numel() <= SMALL and not tensors[0].is_complex()

    def _site(self, read: str) -> _Site:
        frame = sys._getframe(1)
        while frame is not None and os.path.normcase(frame.f_code.co_filename) in _OWN_FILES:
            frame = frame.f_back
        where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)
        occurrence = self._counts.get(where, 0)
        self._counts[where] = occurrence + 1
        key = (*where, occurrence, read)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = _Site(f"{where[0]}:{where[1]}", read)
        return site

    def _differs(self, read: str, args: tuple, kwargs: dict, value: Any,
                 reference: torch.Tensor | None) -> torch.Tensor:
        """A 0-dim bool tensor: this call's tensors would have given another value than `value`."""
        if read in _PAIRS:
            if read == "torch.equal":
                equal = (args[0] == args[1]).all()  # NaN != NaN, as torch.equal
            else:  # torch.allclose is isclose(...).all(), with the same tolerances and equal_nan
                equal = torch.isclose(*args, **kwargs).all()
            return ~equal if value else equal
        tensor = args[0].detach().reshape(-1)
        if read == "bool()":
            return (tensor != 0).reshape(()) != bool(value)
        reference = reference.reshape(-1)
        same = tensor == reference
        if tensor.is_floating_point():
            same = same | (tensor.isnan() & reference.isnan())
        return ~same.all()

    def _add(self, differs: torch.Tensor) -> None:
        if self.flag is None:
            self.flag = differs.clone()
        else:
            self.flag.logical_or_(differs)


def state_tensors(tracked: Any, extra: Iterable[Any] = ()) -> list[torch.Tensor]:
    """Tensors a region could write in place: those of the state graphed() tracks (snapshot.Tracked:
    the step's modules' parameters and buffers, its optimizers' state, tensors among its arguments,
    closure cells, globals and their plain objects) and `extra` (its static inputs)."""
    found: dict[int, torch.Tensor] = {}
    tensors = [t for _, t in tracked.tensors()] + list(extra)
    for _, module in tracked.modules():
        tensors += [*module.parameters(), *module.buffers()]
    for _, optimizer in tracked.optimizers():
        tensors += [v for state in optimizer.state.values() for v in state.values()]
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            found.setdefault(id(tensor), tensor)
    return list(found.values())


def versions(tensors: list[torch.Tensor]) -> list[int]:
    return [t._version for t in tensors]


def refuse_if_writing(name: str, baked: list[str], tensors: list[torch.Tensor], before: list[int],
                      writes: bool = False) -> None:
    """Guards need a replay that can be thrown away: none of `tensors` written since `before` (and
    no other write the caller knows of, `writes`)."""
    if not baked:
        return
    if writes or any(t._version != v for t, v in zip(tensors, before)):
        raise ValueError(
            f"graphed {name}: the region reads device data on the host ({', '.join(sorted(set(baked)))}) and "
            "writes state in place: a replay whose baked read turned out wrong could not be thrown away, so the "
            "read cannot be baked with a guard; compute the branch on the device (torch.where) or move the "
            "read out of the region")


def _same_python(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_python(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."
