"""Run a step under torch's function and dispatch modes and report what would break CUDA-graph
capture, attributed to the first frame in user code.

Two levels, because each sees what the other cannot (DESIGN.md, measured facts): the
TorchFunctionMode sees `tolist`, `repr`, `f"{t}"`, `numpy`, `bool(t)` as the user wrote them;
the TorchDispatchMode sees aten ops (`nonzero`, `index.Tensor` with a bool mask, `_to_copy`,
`_local_scalar_dense`) whoever called them. A function-level hazard *claims* the aten ops it runs,
so one user operation is one hit under its most specific code. On CUDA the real
`set_sync_debug_mode("warn")` runs alongside and confirms (or adds to) what the modes saw; on a
CPU-only machine every tensor stands in for a device tensor, so the same step reports the
would-be syncs (`simulate`).

Between calls, `InputWatcher` compares what the step receives: shapes, storages, Python scalars.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import numbers
import os
import re
import sys
import sysconfig
import threading
import time
import warnings
from types import FrameType
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import graphsafe
from graphsafe.runtime import codes, trace_streams
from graphsafe.runtime.trace_report import Finding, Recorder, Site, StackFrame, TraceReport

__all__ = ["trace", "StepTracer", "Tracer", "TraceReport", "Finding", "InputWatcher", "definition_site"]

MAX_STACK = 6  # user frames kept per finding
_MISSING = object()


# --- attribution: which frame is the user's -----------------------------------------------------


class _CodeFilter:
    """Tells library frames (torch, graphsafe, Triton, the stdlib) from user frames; cached per file."""

    def __init__(self) -> None:
        self._torch_root = _dir_prefix(torch.__file__)
        self._library_roots = (self._torch_root, _dir_prefix(graphsafe.__file__))
        paths = sysconfig.get_paths()
        self._stdlib_roots = tuple({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")})
        self._library: dict[str, bool] = {}
        self._torch: dict[str, bool] = {}

    def is_library(self, filename: str) -> bool:
        known = self._library.get(filename)
        if known is None:
            known = self._library[filename] = self._classify(filename)
        return known

    def is_torch(self, filename: str) -> bool:
        known = self._torch.get(filename)
        if known is None:
            known = self._torch[filename] = os.path.realpath(filename).startswith(self._torch_root)
        return known

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<"):  # <frozen ...>, <string> from dataclasses, fx's <eval_with_key>
            return filename != "<stdin>"
        path = os.path.realpath(filename)
        if path.startswith(self._library_roots):
            return True
        # Triton's launcher and autotuner: what they do (benchmark, synchronize) is the launch's, a
        # user line. Looked up here: Triton is often imported after the tracer starts.
        triton_file = getattr(sys.modules.get("triton"), "__file__", None)
        if triton_file and path.startswith(_dir_prefix(triton_file)):
            return True
        # site-packages often lives under the stdlib directory: it is not the stdlib.
        parts = path.split(os.sep)
        return path.startswith(self._stdlib_roots) and "site-packages" not in parts and "dist-packages" not in parts


def _dir_prefix(module_file: str) -> str:
    return os.path.realpath(os.path.dirname(module_file)) + os.sep


def _origin_table() -> dict[str, list[tuple[str, str]]]:
    by_name: dict[str, list[tuple[str, str]]] = {}
    for (suffix, function), code in codes.TORCH_ORIGINS.items():
        by_name.setdefault(function, []).append((suffix.replace("/", os.sep), code))
    return by_name


def _column(frame: FrameType) -> int:
    """1-based column of the instruction the frame is executing (3.11+ positions), else 1."""
    try:
        position = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
    except (AttributeError, ValueError):
        return 1
    if position is None or position[2] is None or position[0] != frame.f_lineno:
        return 1
    return position[2] + 1


def _calls_bool(frame: FrameType) -> bool:
    """Is the frame running a `bool(...)` call written in its source (rather than testing a
    value's truth: `if t:`, `not t`, `t and u`)? Read from the source span of the instruction
    it is executing (3.11+ positions; columns are UTF-8 byte offsets)."""
    try:
        position = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
    except (AttributeError, ValueError):
        return False
    if position is None or position[0] is None or position[2] is None:
        return False
    line = linecache.getline(frame.f_code.co_filename, position[0]).encode("utf-8", "surrogateescape")
    return _BOOL_CALL.match(line[position[2]:].decode("utf-8", "replace")) is not None


_BOOL_CALL = re.compile(r"(?:builtins\.)?bool\s*\(")


def _function_name(frame: FrameType) -> str:
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")


# --- the tracer ---------------------------------------------------------------------------------


class Tracer:
    """Holds what one tracing session records; `activate`/`deactivate` put the modes, the sync
    wrappers and the sync-debug hook in place around a step, and take them all away again."""

    def __init__(self, simulate: bool | None = None) -> None:
        self.recorder = Recorder(trace_streams.RULES)
        # On a CPU-only machine every tensor stands for a device tensor: report would-be syncs.
        self.simulate = (not torch.cuda.is_available()) if simulate is None else simulate
        self.claims = 0  # >0 while a function-level hazard runs: its aten ops are the same hit
        self.last_op: Any = None  # the aten op running, to name what a sync-debug warning is about
        self._open_key: tuple | None = None  # the finding the running op was recorded under
        self._debug_only: set[tuple] = set()  # findings only the sync debug mode saw: they count hits
        self._filter = _CodeFilter()
        self._origins = _origin_table()
        self._stop: FrameType | None = None
        self._thread = threading.get_ident()
        self._undo: list[Callable[[], None]] = []
        self.function_handlers = self._build_function_handlers()
        self.dispatch_checks: dict[Any, Callable | None] = {}  # aten overload -> its check, or None
        self.watch = trace_streams.StepWatch(self)  # streams, collectives, lazy initialisation
        _import_mode_machinery()

    # -- recording

    def record_here(self, code: str, detail: str | None, source: str) -> tuple:
        """Record a hit at the first user frame of the current stack; returns its key."""
        frame, origin = self._user_frame(sys._getframe(1))
        if origin is not None:
            code = origin
        if frame is None:
            return self.recorder.record(code, "<unknown>", 0, lambda: Site("<unknown>", 0, 1, "?"), detail=detail,
                                        source=source)
        return self.recorder.record(code, frame.f_code.co_filename, frame.f_lineno, lambda: self._site(frame),
                                    detail=detail, source=source)

    def user_site(self) -> Site | None:
        """The first user frame of the current stack as a Site, built now (the frame moves on)."""
        frame, _ = self._user_frame(sys._getframe(1))
        return None if frame is None else self._site(frame)

    def record_at(self, code: str, site: Site | None, detail: str | None, source: str) -> tuple:
        """Record a hit at a site taken earlier (`user_site`): what a step left open is reported
        where it began."""
        if site is None:
            site = Site("<unknown>", 0, 1, "?")
        return self.recorder.record(code, site.filename, site.line, lambda: site, detail=detail, source=source)

    def _user_frame(self, frame: FrameType | None) -> tuple[FrameType | None, str | None]:
        found, origin = self._walk(frame)
        if found is None and threading.get_ident() != self._thread:
            # autograd runs CUDA backward on its own threads: the user frame is the traced
            # thread's, blocked in `loss.backward()`.
            found, origin2 = self._walk(sys._current_frames().get(self._thread))
            origin = origin or origin2
        return found, origin

    def _walk(self, frame: FrameType | None) -> tuple[FrameType | None, str | None]:
        origin = None
        stop = self._stop
        is_library = self._filter.is_library
        while frame is not None and frame is not stop:
            filename = frame.f_code.co_filename
            if not is_library(filename):
                return frame, origin
            if origin is None and frame.f_code.co_name in self._origins:
                origin = self._origin_of(frame)
            frame = frame.f_back
        return None, origin

    def _origin_of(self, frame: FrameType) -> str | None:
        filename = frame.f_code.co_filename
        if not self._filter.is_torch(filename):
            return None
        for suffix, code in self._origins[frame.f_code.co_name]:
            if filename.endswith(suffix):
                return code
        return None

    def _site(self, frame: FrameType) -> Site:
        stack: list[StackFrame] = []
        current: FrameType | None = frame
        while current is not None and current is not self._stop and len(stack) < MAX_STACK:
            if not self._filter.is_library(current.f_code.co_filename):
                stack.append(StackFrame(current.f_code.co_filename, current.f_lineno, _function_name(current)))
            current = current.f_back
        stack.reverse()
        return Site(frame.f_code.co_filename, frame.f_lineno, _column(frame), _function_name(frame), tuple(stack))

    def run_claimed(self, code: str, detail: str, source: str, func: Callable, args: tuple, kwargs: dict) -> Any:
        """Record a hazard, then run it with its inner aten ops attributed to this one hit."""
        key = self.record_here(code, detail, source)
        previous, self._open_key = self._open_key, key
        self.claims += 1
        try:
            return func(*args, **kwargs)
        finally:
            self.claims -= 1
            self._open_key = previous

    def run_quietly(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """Run an op whose inner aten ops are host work only on CPU (one_hot's range check)."""
        self.claims += 1
        try:
            return func(*args, **kwargs)
        finally:
            self.claims -= 1

    def on_sync_warning(self) -> None:
        """A `set_sync_debug_mode("warn")` warning: confirm the finding of the op that raised it,
        or of the same line, or report what the modes missed."""
        if self._open_key is not None:
            self.recorder.confirm(self._open_key, "sync-debug")
            return
        frame, _ = self._user_frame(sys._getframe(1))
        if frame is not None:
            key = self.recorder.key_at(frame.f_code.co_filename, frame.f_lineno)
            if key is not None and key not in self._debug_only:
                self.recorder.confirm(key, "sync-debug")
                return
        op = f"during {self.last_op}" if self.last_op is not None else "synchronizing CUDA operation"
        self._debug_only.add(self.record_here(codes.SYNC_DEBUG_FALLBACK, f"{op} (set_sync_debug_mode)", "sync-debug"))

    def is_library_file(self, filename: str) -> bool:
        """torch, graphsafe and the stdlib: frames the tracer looks through to the user's."""
        return self._filter.is_library(filename)

    def is_device_like(self, value: Any) -> bool:
        """Would reading this tensor on the host wait for a device?"""
        if not isinstance(value, torch.Tensor):
            return False
        return self.simulate or value.device.type != "cpu"

    # -- activation

    def activate(self, stop_frame: FrameType | None) -> None:
        """Start tracing; frames from `stop_frame` outwards are not the step's (not attributed)."""
        if self._undo:
            raise RuntimeError("graphsafe tracer is already active")
        self._stop = stop_frame
        self._thread = threading.get_ident()
        try:
            self._enter(_FunctionMode(self))
            self._enter(_DispatchMode(self))
            self._wrap_explicit_syncs()
            self.watch.install()
            if torch.cuda.is_available():
                self._start_sync_debug()
        except BaseException:
            self.deactivate()
            raise

    def deactivate(self) -> None:
        """Undo everything `activate` did, newest first; safe to call twice."""
        errors = []
        if self._undo:
            try:
                self.watch.finish()  # what the step left open: side streams, async handles
            except Exception as error:  # still undo everything below
                errors.append(error)
        while self._undo:
            undo = self._undo.pop()
            try:
                undo()
            except Exception as error:  # keep undoing: a left-over mode would trace the whole program
                errors.append(error)
        self._stop = None
        self._open_key = None
        self.claims = 0
        if errors:
            raise errors[0]

    @property
    def active(self) -> bool:
        return bool(self._undo)

    def _enter(self, mode) -> None:
        mode.__enter__()
        self._undo.append(lambda: mode.__exit__(None, None, None))

    def patch(self, owner: Any, attr: str, replacement: Any) -> None:
        """Set `owner.attr` for this step; `deactivate` restores it (or removes an inherited one)."""
        original = getattr(owner, attr)
        own = attr in getattr(owner, "__dict__", {})
        setattr(owner, attr, replacement)
        self._undo.append(_restorer(owner, attr, original, own))

    def _wrap_explicit_syncs(self) -> None:
        for owner_path, attr in codes.EXPLICIT_SYNCS:
            owner = _resolve(owner_path)
            original = getattr(owner, attr, None)
            if owner is None or original is None:
                continue
            self.patch(owner, attr, _explicit_sync_wrapper(self, original, f"{owner_path}.{attr}"))

    def _start_sync_debug(self) -> None:
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("warn")
        self._undo.append(lambda: torch.cuda.set_sync_debug_mode(previous))
        catcher = warnings.catch_warnings()
        catcher.__enter__()
        self._undo.append(lambda: catcher.__exit__(None, None, None))
        # torch warns once per location by default: every sync must reach the hook.
        warnings.filterwarnings("always", message=".*" + codes.SYNC_DEBUG_MESSAGE)
        show = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if codes.SYNC_DEBUG_MESSAGE in str(message):
                self.on_sync_warning()
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

    # -- function-level handlers

    def _build_function_handlers(self) -> dict[Any, Callable]:
        handlers: dict[Any, Callable] = {}
        for name, code in codes.FUNCTION_SYNCS.items():
            func = _resolve_function(name)
            if func is not None:
                handlers[func] = functools.partial(self._host_read, code, name)
        truth = _resolve_function("Tensor.__bool__")
        if truth is not None:
            handlers[truth] = self._truth_read
        for name in codes.HOST_DATA_FACTORIES:
            func = _resolve_function(name)
            if func is not None:
                handlers[func] = functools.partial(self._host_data_factory, name)
        one_hot = _resolve_function(codes.ONE_HOT)
        if one_hot is not None:
            handlers[one_hot] = self._one_hot
        if self.simulate:  # on a real device the dispatch mode sees these as _to_copy
            for name, code in codes.FUNCTION_HOST_COPIES.items():
                func = _resolve_function(name)
                if func is not None:
                    handlers[func] = functools.partial(self._host_read, code, name)
            handlers[torch.Tensor.to] = self._simulated_to
            handlers[torch.Tensor.cuda] = self._simulated_cuda
        return handlers

    def _host_read(self, code: str, name: str, func, args, kwargs):
        if not (args and self.is_device_like(args[0])):
            return func(*args, **kwargs)
        return self.run_claimed(code, name, "torch-function", func, args, kwargs)

    def _truth_read(self, func, args, kwargs):
        """`Tensor.__bool__`: named as the static rules name the construct the user wrote: GS105
        for an explicit `bool(t)`, GS201 for a branch on the tensor (`if t:`, `not t`, `t and u`)."""
        if not (args and self.is_device_like(args[0])):
            return func(*args, **kwargs)
        frame, _ = self._user_frame(sys._getframe(1))
        code = codes.EXPLICIT_BOOL if frame is not None and _calls_bool(frame) else codes.FUNCTION_SYNCS["Tensor.__bool__"]
        return self.run_claimed(code, "Tensor.__bool__", "torch-function", func, args, kwargs)

    def _host_data_factory(self, name: str, func, args, kwargs):
        device = kwargs.get("device")
        if device is None and name == "torch.as_tensor" and len(args) > 2:
            device = args[2]
        data = args[0] if args else kwargs.get("data", kwargs.get("obj"))
        if device is None or isinstance(data, torch.Tensor):
            return func(*args, **kwargs)
        # Simulating, any explicit device stands for the accelerator (`device=device` on CPU CI).
        if self.simulate or torch.device(device).type != "cpu":
            return self.run_claimed(codes.HOST_DATA_TENSOR, f"{name}(..., device={device!s})", "torch-function",
                                    func, args, kwargs)
        return func(*args, **kwargs)

    def _one_hot(self, func, args, kwargs):
        num_classes = kwargs.get("num_classes", args[1] if len(args) > 1 else -1)
        if not (args and self.is_device_like(args[0])):
            return func(*args, **kwargs)
        if num_classes is None or num_classes < 0:
            return self.run_claimed(codes.DYNAMIC_SHAPE_OP, "one_hot without num_classes", "torch-function",
                                    func, args, kwargs)
        return self.run_quietly(func, args, kwargs)  # CPU checks the range on the host; CUDA does not

    def _simulated_to(self, func, args, kwargs):
        target = args[1] if len(args) > 1 else kwargs.get("device", kwargs.get("other"))
        if target is None or isinstance(target, (torch.Tensor, torch.dtype)):
            return func(*args, **kwargs)  # `.to(other)`, `.to(dtype)`: no device named
        try:
            device = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
        except Exception:  # let torch raise its own error for bad arguments
            return func(*args, **kwargs)
        if device is None:
            return func(*args, **kwargs)
        if device.type == "cpu":
            if not isinstance(target, str):
                # `.to(x.device)` in device-agnostic code is a no-op on the GPU; `.to("cpu")` is not.
                return func(*args, **kwargs)
            return self.run_claimed(codes.HOST_COPY, f"Tensor.to({device})", "torch-function", func, args, kwargs)
        return self.run_claimed(codes.HOST_DATA_TENSOR, f"Tensor.to({device})", "torch-function", func, args, kwargs)

    def _simulated_cuda(self, func, args, kwargs):
        return self.run_claimed(codes.HOST_DATA_TENSOR, "Tensor.cuda", "torch-function", func, args, kwargs)

    # -- dispatch-level checks

    def dispatch_check(self, func) -> Callable | None:
        """The check for one aten overload, or None when it is harmless (cached by the mode)."""
        schema = getattr(func, "_schema", None)
        if schema is None:  # not an aten overload (a higher-order op): nothing to check
            return None
        name = schema.name
        code = codes.DISPATCH_SYNCS.get(name)
        if code is not None:
            return functools.partial(self._dispatch_sync, code)
        if name == codes.REPEAT_INTERLEAVE and func._overloadname == "Tensor":
            return self._repeat_interleave
        if name == codes.INDEX:
            return self._bool_index
        if name in codes.INDEX_PUT:
            return self._bool_index_put
        if name == "aten::_to_copy":
            return self._to_copy
        if name == "aten::copy_":
            return self._copy
        if name in trace_streams.CONVOLUTIONS:
            return self.watch.convolution
        if any(argument.name == "generator" for argument in schema.arguments):
            return self._generator
        return None

    def _dispatch_hit(self, code: str, detail: str, func, args, kwargs):
        return self.run_claimed(code, detail, "dispatch", func, args, kwargs)

    def _dispatch_sync(self, code: str, func, args, kwargs):
        if not (args and self.is_device_like(args[0])):
            return func(*args, **kwargs)
        return self._dispatch_hit(code, _op_name(func), func, args, kwargs)

    def _repeat_interleave(self, func, args, kwargs):
        if kwargs.get("output_size") is None and args and self.is_device_like(args[0]):
            return self._dispatch_hit(codes.DYNAMIC_SHAPE_OP, "repeat_interleave without output_size",
                                      func, args, kwargs)
        return func(*args, **kwargs)

    def _bool_index(self, func, args, kwargs):
        if len(args) > 1 and self.is_device_like(args[0]) and _has_bool_index(args[1]):
            return self._dispatch_hit(codes.BOOL_MASK_INDEX, "x[mask] read", func, args, kwargs)
        return func(*args, **kwargs)

    def _bool_index_put(self, func, args, kwargs):
        if len(args) > 2 and self.is_device_like(args[0]) and _has_bool_index(args[1]):
            values, accumulate = args[2], (args[3] if len(args) > 3 else kwargs.get("accumulate", False))
            # `x[mask] = 0.0` becomes masked_fill_ with a host scalar: graph-safe. Anything else
            # counts the mask on the host.
            fillable = isinstance(values, torch.Tensor) and values.numel() == 1 and values.device.type == "cpu"
            if accumulate or not fillable:
                return self._dispatch_hit(codes.BOOL_MASK_INDEX, "x[mask] = tensor", func, args, kwargs)
        return func(*args, **kwargs)

    def _to_copy(self, func, args, kwargs):
        target = kwargs.get("device")
        if not args or target is None:
            return func(*args, **kwargs)
        return self._check_copy(args[0], torch.device(target), bool(kwargs.get("non_blocking")), func, args, kwargs)

    def _copy(self, func, args, kwargs):
        if len(args) < 2 or not isinstance(args[1], torch.Tensor):
            return func(*args, **kwargs)
        non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
        return self._check_copy(args[1], args[0].device, bool(non_blocking), func, args, kwargs)

    def _check_copy(self, source: torch.Tensor, target: torch.device, non_blocking: bool, func, args, kwargs):
        source_type = source.device.type
        if source_type == "cpu" and target.type not in ("cpu", "meta") and not source.is_pinned():
            return self._dispatch_hit(codes.HOST_DATA_TENSOR, f"pageable copy to {target.type}", func, args, kwargs)
        if source_type not in ("cpu", "meta") and target.type == "cpu":
            detail = "non_blocking copy to the host: the data is not ready" if non_blocking else "copy to the host"
            return self._dispatch_hit(codes.HOST_COPY, detail, func, args, kwargs)
        return func(*args, **kwargs)

    def _generator(self, func, args, kwargs):
        generator = kwargs.get("generator")
        if generator is not None and _is_custom_generator(generator, self.simulate):
            self.record_here(codes.UNREGISTERED_GENERATOR, f"{_op_name(func)}(generator=...)", "dispatch")
        return func(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def _import_mode_machinery() -> None:
    """The first mode entered imports torch._dynamo (over a second): do it before the first step
    so that it is not counted as the step's time."""
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # an optional part of torch: the modes import what they need themselves
        pass


def _op_name(func) -> str:
    return str(func).split(".default")[0]


def _has_bool_index(indices) -> bool:
    if not isinstance(indices, (list, tuple)):
        return False
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


def _is_custom_generator(generator: torch.Generator, simulate: bool) -> bool:
    if generator.device.type == "cuda":
        return all(generator is not default for default in getattr(torch.cuda, "default_generators", ()))
    # Simulating, a custom CPU generator stands for the CUDA one the script makes on a GPU.
    return simulate and generator is not torch.default_generator


def _resolve(path: str) -> Any:
    """`torch.cuda.Stream` -> the object, or None when this torch lacks it."""
    parts = path.split(".")
    obj: Any = torch
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _resolve_function(name: str) -> Any:
    """A FUNCTION_SYNCS name (`Tensor.item`, `torch.equal`, `torch.nn.functional.one_hot`) -> object."""
    owner, _, attr = name.rpartition(".")
    target = torch.Tensor if owner == "Tensor" else _resolve(owner)
    func = getattr(target, attr, None)
    if func is None or func is getattr(object, attr, None):  # e.g. Tensor.__str__ is object's
        return None
    return func


def _explicit_sync_wrapper(tracer: Tracer, original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    def explicit_sync(*args, **kwargs):
        return tracer.run_claimed(codes.EXPLICIT_SYNC_CODE, name, "explicit-sync", original, args, kwargs)

    return explicit_sync


def _restorer(owner, attr: str, original, own: bool) -> Callable[[], None]:
    def restore():
        if own:
            setattr(owner, attr, original)
        else:
            delattr(owner, attr)

    return restore


class _FunctionMode(TorchFunctionMode):
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self._handlers = tracer.function_handlers

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        try:
            handler = self._handlers.get(func)
        except TypeError:  # an unhashable callable: not one of ours
            handler = None
        if handler is None:
            return func(*args, **kwargs)
        return handler(func, args, kwargs)


class _DispatchMode(TorchDispatchMode):
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()
        self._tracer = tracer
        self._checks = tracer.dispatch_checks  # kept across steps: resolved once per overload

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        tracer = self._tracer
        tracer.last_op = func
        if tracer.claims:
            return func(*args, **kwargs)
        check = self._checks.get(func, _MISSING)
        if check is _MISSING:
            check = self._checks[func] = tracer.dispatch_check(func)
        if check is None:
            return func(*args, **kwargs)
        return check(func, args, kwargs)


# --- between calls ------------------------------------------------------------------------------

MAX_CONTAINER = 64  # elements looked at in a list/tuple/dict argument
MAX_MODULES = 1000  # submodules looked at in an nn.Module argument


class InputWatcher:
    """Compares what a step receives on each call with the previous call: tensor shape, dtype,
    device and storage (GS403, GS401) and Python scalars, including numeric attributes of
    modules, optimizers' param groups and `self` (GS301). Reported at the step's `def` line."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.calls = 0
        self.check_devices = torch.cuda.is_available()  # GS904: tensors on a CUDA device not current
        self._previous: dict[str, tuple] | None = None
        self._described: set[tuple[str, str]] = set()  # (code, path): the first change names it

    def observe(self, recorder: Recorder, named_inputs: list[tuple[str, Any]], owner: tuple[str, Any] | None = None):
        current: dict[str, tuple] = {}
        for name, value in named_inputs:
            _observe_safely(_observe, name, value, current, 3)
        if owner is not None:
            _observe_safely(_observe_owner, owner[0], owner[1], current)
        self.calls += 1
        if self.check_devices:
            devices = [(path, fact[3]) for path, fact in current.items() if fact[0] == "tensor"]
            trace_streams.record_other_devices(recorder, self.site, devices)
        if self._previous is not None:
            self._compare(recorder, self._previous, current)
        self._previous = current

    def _compare(self, recorder: Recorder, before: dict, now: dict) -> None:
        counted: set[str] = set()
        for path, seen in now.items():
            old = before.get(path)
            if old is None or old == seen or _both_nan(old, seen):
                continue
            code, detail, subject = _drift(path, old, seen)
            if code is None:
                continue
            if subject in self._described:  # `lr: 0.1 → 0.05` once, not every later change too
                detail = None
            self._described.add(subject)
            recorder.record(code, self.site.filename, self.site.line, lambda: self.site, detail=detail,
                            source="inputs", count=code not in counted)
            counted.add(code)


def _observe_safely(observe: Callable, *args: Any) -> None:
    # A half-built object (a module inside its own __init__) or an odd container must not stop
    # the trace: what cannot be looked at is not compared.
    try:
        observe(*args)
    except Exception:
        pass


def _observe(path: str, value: Any, out: dict, depth: int) -> None:
    if isinstance(value, torch.Tensor):
        out[path] = _tensor_fact(value)
    elif isinstance(value, numbers.Real):  # bool, int, float, numpy scalars (a Tensor is not Real)
        out[path] = ("scalar", value)
    elif value is None:
        out[path] = ("none",)
    elif depth <= 0:
        return
    elif isinstance(value, torch.nn.Module):
        _observe_module(path, value, out)
    elif isinstance(value, torch.optim.Optimizer):
        for i, group in enumerate(value.param_groups):
            for key, setting in group.items():
                if key != "params":
                    _observe(f"{path}.param_groups[{i}][{key!r}]", setting, out, 0)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value[:MAX_CONTAINER]):
            _observe(f"{path}[{i}]", item, out, depth - 1)
    elif isinstance(value, dict):
        for key, item in itertools.islice(value.items(), MAX_CONTAINER):
            if isinstance(key, (str, int)):
                _observe(f"{path}[{key!r}]", item, out, depth - 1)


def _observe_module(path: str, module: torch.nn.Module, out: dict) -> None:
    for name, sub in itertools.islice(module.named_modules(), MAX_MODULES):
        prefix = f"{path}.{name}" if name else path
        for attr, value in vars(sub).items():
            if isinstance(value, numbers.Real):
                out[f"{prefix}.{attr}"] = ("scalar", value)
    for name, tensor in itertools.chain(module.named_parameters(), module.named_buffers()):
        out[f"{path}.{name}"] = _tensor_fact(tensor)


def _observe_owner(path: str, owner: Any, out: dict) -> None:
    """`self` of a traced method: its numeric attributes and the tensors, modules and optimizers
    it holds."""
    if isinstance(owner, (torch.nn.Module, torch.optim.Optimizer)):
        _observe(path, owner, out, depth=1)
        return
    for attr, value in list(getattr(owner, "__dict__", {}).items()):
        _observe_safely(_observe, f"{path}.{attr}", value, out, 1)


def _tensor_fact(tensor: torch.Tensor) -> tuple:
    try:
        storage = tensor.untyped_storage().data_ptr()
    except Exception:  # sparse, nested and other storage-less tensors
        storage = None
    return ("tensor", tuple(tensor.shape), tensor.dtype, tensor.device, storage)


def _both_nan(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] == "scalar" and a[1] != a[1] and b[1] != b[1]


def _drift(path: str, old: tuple, new: tuple) -> tuple[str | None, str, tuple]:
    """(code, detail, subject): the subject says which change a detail describes."""
    if old[0] != new[0]:
        return codes.INPUT_SHAPE_DRIFT, f"{path}: {_kind(old)} → {_kind(new)}", (path, "kind")
    if new[0] == "scalar":
        return codes.SCALAR_DRIFT, f"{path}: {_short(old[1])} → {_short(new[1])}", (path, "value")
    if new[0] == "tensor":
        changed = [
            (what, a, b)
            for what, a, b in (("shape", old[1], new[1]), ("dtype", old[2], new[2]), ("device", old[3], new[3]))
            if a != b
        ]
        if changed:
            detail = ", ".join(f"{what} {_short(a)} → {_short(b)}" for what, a, b in changed)
            return codes.INPUT_SHAPE_DRIFT, f"{path}: {detail}", (path, *(what for what, _, _ in changed))
        if old[4] != new[4]:
            return codes.INPUT_REBINDING, path, (path, "storage")
    return None, "", ()


def _kind(fact: tuple) -> str:
    return {"tensor": "Tensor", "scalar": "Python scalar", "none": "None"}[fact[0]]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


# --- the step: trace() --------------------------------------------------------------------------


def definition_site(fn: Callable) -> Site:
    """Where between-call findings of `fn` are reported: its `def` line."""
    target = getattr(fn, "forward", fn) if isinstance(fn, torch.nn.Module) else fn
    target = getattr(target, "__func__", target)
    code = getattr(_unwrap(target), "__code__", None)
    if code is None:
        name = getattr(fn, "__qualname__", type(fn).__qualname__)
        return Site("<unknown>", 0, 1, name)
    line = def_line(code)
    name = getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")
    return Site(code.co_filename, line, 1, name, (StackFrame(code.co_filename, line, name),))


def def_line(code) -> int:
    """The `def` line of a function (co_firstlineno is its first decorator's line)."""
    import linecache

    for offset in range(50):
        text = linecache.getline(code.co_filename, code.co_firstlineno + offset).lstrip()
        if not text:
            break
        if text.startswith(("def ", "async def ")):
            return code.co_firstlineno + offset
    return code.co_firstlineno


def _unwrap(fn: Callable) -> Callable:
    import inspect

    try:
        return inspect.unwrap(fn)
    except ValueError:  # a __wrapped__ cycle
        return fn


def named_inputs(fn: Callable, args: tuple, kwargs: dict) -> tuple[list[tuple[str, Any]], tuple[str, Any] | None]:
    """Argument names for the values of one call, and the `self` a bound method or module has."""
    import inspect

    owner = None
    if isinstance(fn, torch.nn.Module):
        owner, signature_of = ("self", fn), fn.forward
    else:
        bound_self = getattr(fn, "__self__", None)
        if bound_self is not None and not isinstance(bound_self, type(torch)):  # not a module's builtin
            owner = ("self", bound_self)
        signature_of = fn
    try:
        bound = inspect.signature(signature_of).bind(*args, **kwargs)
    except (TypeError, ValueError):  # no signature (builtins) or it will fail anyway: positions
        return [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items()), owner
    named: list[tuple[str, Any]] = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named.extend((f"{name}[{i}]", v) for i, v in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.extend(value.items())
        else:
            named.append((name, value))
    return named, owner


def step_inputs(produced: Any) -> tuple[tuple, dict]:
    """A factory's result -> (args, kwargs): `(args, kwargs)`, an args tuple/list, or one value."""
    if (
        isinstance(produced, tuple) and len(produced) == 2 and isinstance(produced[0], (tuple, list))
        and isinstance(produced[1], dict)
    ):
        return tuple(produced[0]), dict(produced[1])
    if isinstance(produced, (tuple, list)):
        return tuple(produced), {}
    return (produced,), {}


class StepTracer:
    """Traces successive calls of one step function: the modes around each call, the inputs
    compared between calls. `trace()` is this in a loop; the CLI uses it to keep what was
    found when a step raises."""

    def __init__(self, fn: Callable, simulate: bool | None = None) -> None:
        self.fn = fn
        self.tracer = Tracer(simulate)
        self.watcher = InputWatcher(definition_site(fn))
        self.steps = 0
        self.seconds = 0.0
        self.result: Any = None

    def step(self, args: tuple, kwargs: dict) -> Any:
        start = time.perf_counter()
        try:
            named, owner = named_inputs(self.fn, args, kwargs)
            self.watcher.observe(self.tracer.recorder, named, owner)
            self.steps += 1
            self.result = run_traced(self.tracer, self.fn, args, kwargs)
            if self.watcher.check_devices:
                outputs = trace_streams.tensor_devices("output", self.result)
                trace_streams.record_other_devices(self.tracer.recorder, self.watcher.site, outputs)
            return self.result
        finally:
            self.seconds += time.perf_counter() - start

    def report(self) -> TraceReport:
        return TraceReport(self.tracer.recorder.findings(), self.steps, self.seconds, self.result,
                           {self.watcher.site.function: self.steps})


def trace(
    fn: Callable, *args: Any, steps: int = 3, args_factory: Callable[[int], Any] | None = None, **kwargs: Any
) -> TraceReport:
    """Run `fn` `steps` times under the tracer and report what would break CUDA-graph capture.

    Inputs are `args`/`kwargs` on every step, or `args_factory(step)` -> `(args, kwargs)` (or an
    args tuple). The step runs unchanged; any exception it raises propagates, with every mode
    and wrapper removed.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if args_factory is not None and (args or kwargs):
        raise ValueError("give the step's inputs either as arguments or through args_factory, not both")
    stepper = StepTracer(fn)
    for step in range(steps):
        call_args, call_kwargs = step_inputs(args_factory(step)) if args_factory is not None else (args, kwargs)
        stepper.step(call_args, call_kwargs)
    return stepper.report()


def run_traced(tracer: Tracer, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """One traced call; this frame bounds the attribution (frames outside it are not the step)."""
    tracer.activate(stop_frame=sys._getframe())
    try:
        return fn(*args, **kwargs)
    finally:
        tracer.deactivate()
