"""Issue 23's causes at run time: side streams not joined (GS902), collectives (GS901) and their
async handles not waited (GS903), tensors on another CUDA device (GS904), cuDNN benchmark's first
shapes (GS711) and Triton autotuning's first run (GS710), each at the user's line.

The tracer's modes see aten ops, not streams, process groups or Triton launches, so these are
seen by wrapping a few Python entry points while a step runs (restored after it):
`StreamContext.__enter__/__exit__` and `torch.cuda.Stream.__enter__/__exit__` (which stream is
current), `torch.cuda.Event.record/wait` (every `Stream.wait_stream/record_event/wait_event`
goes through them), torch.distributed's collectives and `Work.wait` (only while a process group
exists), `Autotuner.run` (only when Triton is already imported). Nothing else is wrapped: the
normal path of a step pays a few attribute swaps per call.

A call the user bound before tracing (`from torch.distributed import all_reduce`) is not seen.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import torch

from graphsafe.rules.streams import DISTRIBUTED_CALLS
from graphsafe.runtime.classify import RULE_NAMES
from graphsafe.runtime.codes import RuntimeRule
from graphsafe.runtime.trace_report import Recorder, Site

if TYPE_CHECKING:
    from graphsafe.runtime.tracer import Tracer

COLLECTIVE_IN_STEP = "GS901"
UNJOINED_SIDE_STREAM = "GS902"
ASYNC_NOT_WAITED = "GS903"
OTHER_DEVICE = "GS904"
AUTOTUNE_FIRST_RUN = "GS710"
WARMUP_NEEDED = "GS711"

_MESSAGES = {
    COLLECTIVE_IN_STEP: "a collective runs in the step: capture needs its process group warmed up by eager steps "
                        "(NCCL sets up on first use), and host-waiting collectives (barrier, *_object, send/recv) "
                        "cannot be captured",
    UNJOINED_SIDE_STREAM: "work went to a side stream in the step and the step's stream did not wait for it again "
                          "before the step ended: capture fails (capturing stream has unjoined work); join with "
                          "`torch.cuda.current_stream().wait_stream(side)`",
    ASYNC_NOT_WAITED: "an async collective's handle was not waited before the step ended: its stream is never joined "
                      "into the capture; call `work.wait()` inside the step",
    OTHER_DEVICE: "a tensor of the step lives on a CUDA device other than the current one: a capture on the current "
                  "device does not record its work; capture inside `with torch.cuda.device(...)`",
    AUTOTUNE_FIRST_RUN: "a Triton autotuned kernel benchmarked its configs in the step (its first run for these "
                        "arguments): launch it eagerly with the capture's shapes before capturing",
    WARMUP_NEEDED: "warning: `torch.backends.cudnn.benchmark` is on and the step ran convolutions with shapes not "
                   "seen before: cuDNN searches algorithms on first use, so capture must follow warm-up steps with "
                   "the same shapes",
}

# The tracer's messages for these codes; names are the static rules' (classify.RULE_NAMES).
RULES: dict[str, RuntimeRule] = {code: RuntimeRule(code, RULE_NAMES[code], text) for code, text in _MESSAGES.items()}

# torch.distributed's collectives and point-to-point calls: the static rule GS901's own list.
COLLECTIVES = tuple(sorted(DISTRIBUTED_CALLS))

# aten ops whose first run with a shape makes cuDNN benchmark algorithms when cudnn.benchmark is on.
CONVOLUTIONS = frozenset({"aten::convolution", "aten::convolution_backward", "aten::_convolution"})


# --- streams ------------------------------------------------------------------------------------


@dataclass
class _SideStream:
    stream: Any
    generation: int = 0  # work put on it so far in this step
    joined: int = 0  # the generation the step's stream last waited for
    marked: int = 0  # the generation when an event was last recorded on it (a join can only reach one)
    starts: list[tuple[int, Site | None, str]] = field(default_factory=list)  # (generation, where, how)

    def first_unjoined(self) -> tuple[Site | None, str]:
        for generation, site, how in self.starts:
            if generation > self.joined:
                return site, how
        return None, ""


@dataclass
class StreamLedger:
    """Which side streams got work in this step and whether the step's stream waited for each again.
    Streams compare with `==` (torch makes a new Python object per `current_stream()` call)."""

    current_stream: Callable[[], Any]  # asked once, on first need: the stream current when the step began
    entered: list[Any] = field(default_factory=list)  # streams made current inside the step (None: unchanged)
    sides: list[_SideStream] = field(default_factory=list)
    events: dict[int, tuple[Any, Any, int]] = field(default_factory=dict)  # id -> (event, stream, generation)
    _base: Any = None

    @property
    def base(self) -> Any:
        if self._base is None:
            try:
                self._base = self.current_stream()
            except Exception:  # no CUDA (device-agnostic code entering `torch.cuda.stream(None)`)
                self._base = _NO_STREAM
        return self._base

    def current(self) -> Any:
        for stream in reversed(self.entered):
            if stream is not None:
                return stream
        return self.base

    def is_base(self, stream: Any) -> bool:
        return stream is None or _same(stream, self.base)

    def touch(self, stream: Any, how: str, where: Callable[[], Site | None]) -> None:
        """Work goes to `stream` (entered, recorded on, made to wait): a side stream forks here."""
        if self.is_base(stream):
            return
        side = self._side(stream)
        # Where work begins that a later join may not cover: the first since a join or an event.
        if not side.starts or side.generation in (side.joined, side.marked):
            side.starts.append((side.generation + 1, where(), how))
        side.generation += 1

    def recorded(self, event: Any, stream: Any) -> None:
        side = None if self.is_base(stream) else self._side(stream)
        if side is not None:
            side.marked = side.generation
        self.events[id(event)] = (event, stream, side.generation if side else 0)

    def waited(self, event: Any, waiter: Any) -> None:
        """`waiter` waits for `event`: the step's stream waiting joins the stream the event was recorded on."""
        known = self.events.get(id(event))
        if known is None or known[0] is not event or not self.is_base(waiter) or self.is_base(known[1]):
            return
        side = self._side(known[1])
        side.joined = max(side.joined, known[2])
        side.starts = [start for start in side.starts if start[0] > side.joined]

    def unjoined(self) -> list[_SideStream]:
        return [side for side in self.sides if side.generation > side.joined]

    def _side(self, stream: Any) -> _SideStream:
        for side in self.sides:
            if _same(side.stream, stream):
                return side
        side = _SideStream(stream)
        self.sides.append(side)
        return side


_NO_STREAM = object()


def _current_stream() -> Any:
    return torch.cuda.current_stream()  # looked up per call: tests replace it on a CPU-only machine


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # a stream of another kind that cannot be compared: not the same
        return False


def _stream_name(stream: Any) -> str:
    return f"stream 0x{stream.cuda_stream:x}" if isinstance(getattr(stream, "cuda_stream", None), int) else "a side stream"


# --- the watcher --------------------------------------------------------------------------------


@dataclass
class _Started:
    work: Any
    site: Site | None
    name: str


class StepWatch:
    """The entry-point wrappers of one tracer: `install` puts them in place for a step (through
    `tracer.patch`, undone by `deactivate`), `finish` reports what the step left open. Shapes
    seen by convolutions and autotuners' state last across the steps of a trace."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.ledger = StreamLedger(_current_stream)
        self.started: list[_Started] = []
        self._collective_depth = 0
        self._conv_shapes: set[tuple] = set()
        self._conv_site: Site | None = None
        self._tuned: set[int] = set()  # autotuners without a cache seen running (by id)

    # -- per step

    def install(self) -> None:
        self.ledger = StreamLedger(_current_stream)
        self.started = []
        self._collective_depth = 0
        self._wrap_streams()
        distributed = getattr(torch, "distributed", None)
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            self._wrap_collectives(distributed)
        autotuner = sys.modules.get("triton.runtime.autotuner")
        if autotuner is not None:
            self._wrap_autotuner(autotuner)

    def finish(self) -> None:
        """At the end of a step: side streams not joined (GS902), async handles not waited (GS903)."""
        for side in self.ledger.unjoined():
            site, how = side.first_unjoined()
            self.tracer.record_at(UNJOINED_SIDE_STREAM, site, f"{how} ({_stream_name(side.stream)}) never waited "
                                  "for by the step's stream", "streams")
        for started in self.started:
            self.tracer.record_at(ASYNC_NOT_WAITED, started.site, f"torch.distributed.{started.name}: handle not "
                                  "waited in the step", "distributed")
        self.ledger = StreamLedger(_current_stream)
        self.started = []

    # -- streams

    def _wrap_streams(self) -> None:
        cuda = torch.cuda
        context = getattr(cuda, "StreamContext", None)
        if context is not None:
            self._wrap_context(context, lambda manager: getattr(manager, "stream", None), "torch.cuda.stream()")
        stream_class = getattr(cuda, "Stream", None)
        if stream_class is not None and callable(getattr(stream_class, "__enter__", None)):
            self._wrap_context(stream_class, lambda stream: stream, "`with stream:`")
        event = getattr(cuda, "Event", None)
        if event is not None:
            self._wrap_event(event)

    def _wrap_context(self, owner: type, stream_of: Callable[[Any], Any], how: str) -> None:
        enter, leave = owner.__enter__, owner.__exit__

        def __enter__(manager):
            stream = stream_of(manager)
            ledger = self.ledger
            ledger.entered.append(stream)
            ledger.touch(stream, how, self.tracer.user_site)
            return enter(manager)

        def __exit__(manager, *exc):
            ledger = self.ledger
            if ledger.entered:
                ledger.entered.pop()
            return leave(manager, *exc)

        self.tracer.patch(owner, "__enter__", __enter__)
        self.tracer.patch(owner, "__exit__", __exit__)

    def _wrap_event(self, event_class: type) -> None:
        record, wait = event_class.record, event_class.wait

        def record_event(event, stream=None):
            ledger = self.ledger
            target = ledger.current() if stream is None else stream
            ledger.touch(target, "an event recorded on it", self.tracer.user_site)
            ledger.recorded(event, target)
            return record(event, stream)

        def wait_event(event, stream=None):
            ledger = self.ledger
            waiter = ledger.current() if stream is None else stream
            if ledger.is_base(waiter):
                ledger.waited(event, waiter)
            else:  # a side stream waits: it joins the step's work, and work on it will follow
                ledger.touch(waiter, "made to wait (wait_stream/wait_event)", self.tracer.user_site)
            return wait(event, stream)

        self.tracer.patch(event_class, "record", record_event)
        self.tracer.patch(event_class, "wait", wait_event)

    # -- collectives

    def _wrap_collectives(self, distributed) -> None:
        modules = [distributed, getattr(distributed, "distributed_c10d", None)]
        for module in modules:
            if module is None:
                continue
            for name in COLLECTIVES:
                original = module.__dict__.get(name)
                if callable(original):
                    self.tracer.patch(module, name, self._collective(original, name))
        work = getattr(distributed, "Work", None)
        if work is not None and callable(getattr(work, "wait", None)):
            self.tracer.patch(work, "wait", self._work_wait(work.wait))

    def _collective(self, original: Callable, name: str) -> Callable:
        def collective(*args, **kwargs):
            if self._collective_depth:  # a collective inside another (all_gather_object's all_gather)
                return original(*args, **kwargs)
            site = self.tracer.user_site()
            self.tracer.record_at(COLLECTIVE_IN_STEP, site, f"torch.distributed.{name}", "distributed")
            self._collective_depth += 1
            try:
                result = original(*args, **kwargs)
            finally:
                self._collective_depth -= 1
            self.started.extend(_Started(work, site, name) for work in _works(result))
            return result

        collective.__wrapped__ = original
        return collective

    def _work_wait(self, original: Callable) -> Callable:
        def wait(work, *args, **kwargs):
            self.started = [started for started in self.started if started.work is not work]
            return original(work, *args, **kwargs)

        return wait

    # -- lazy initialisation

    def convolution(self, func, args, kwargs):
        """Dispatch check of a convolution: with cudnn.benchmark on, a new shape means a search."""
        if args and torch.backends.cudnn.benchmark and self.tracer.is_device_like(args[0]):
            shapes = tuple(tuple(a.shape) for a in args[:3] if isinstance(a, torch.Tensor))
            key = (func, shapes, args[0].dtype)
            if key not in self._conv_shapes:
                self._conv_shapes.add(key)
                self._new_conv_shape(f"{str(func).split('.default')[0]} {shapes[0] if shapes else ''}")
        return func(*args, **kwargs)

    def _new_conv_shape(self, detail: str) -> None:
        # Once per trace: the first new shape's line holds the finding, later new shapes count as hits.
        if self._conv_site is None:
            self._conv_site = self.tracer.user_site() or Site("<unknown>", 0, 1, "?")
        site = self._conv_site
        self.tracer.recorder.record(WARMUP_NEEDED, site.filename, site.line, lambda: site, detail=detail,
                                    source="cudnn-benchmark")

    def _wrap_autotuner(self, module) -> None:
        tuner_class = getattr(module, "Autotuner", None)
        original = getattr(tuner_class, "run", None)
        if original is None:
            return
        def run(tuner, *args, **kwargs):
            cache = getattr(tuner, "cache", None)
            before = len(cache) if isinstance(cache, dict) else None
            result = original(tuner, *args, **kwargs)
            if before is not None:
                tuned = len(cache) > before
            else:  # no cache to look at: its first run in the trace
                tuned = id(tuner) not in self._tuned
                self._tuned.add(id(tuner))
            if tuned:
                self.tracer.record_at(AUTOTUNE_FIRST_RUN, self.tracer.user_site(),
                                      f"{_kernel_name(tuner)}: Autotuner.run benchmarked its configs", "triton")
            return result

        self.tracer.patch(tuner_class, "run", run)


def _works(result: Any) -> list:
    work_type = getattr(torch.distributed, "Work", None)
    if work_type is None:
        return []
    items = result if isinstance(result, (list, tuple)) else (result,)
    return [item for item in items if isinstance(item, work_type)]


def _kernel_name(tuner: Any) -> str:
    fn = tuner
    for _ in range(4):  # Autotuner.fn -> JITFunction.fn -> the Python function
        name = getattr(fn, "__name__", None)
        if isinstance(name, str):
            return name
        fn = getattr(fn, "fn", None)
        if fn is None:
            break
    return "an autotuned kernel"


# --- devices ------------------------------------------------------------------------------------


def other_devices(devices: Iterable[tuple[str, torch.device]], current: int) -> list[str]:
    """`path on cuda:N` for each CUDA device that is not the current one."""
    return [f"{path} on {device} (current device cuda:{current})" for path, device in devices
            if device.type == "cuda" and device.index is not None and device.index != current]


def record_other_devices(recorder: Recorder, site: Site, devices: list[tuple[str, torch.device]]) -> None:
    """GS904 at `site` (the step's `def` line) for tensors on a CUDA device that is not current."""
    if not any(device.type == "cuda" for _, device in devices):
        return  # no CUDA tensor: do not touch (or initialise) CUDA
    for index, detail in enumerate(other_devices(devices, torch.cuda.current_device())):
        recorder.record(OTHER_DEVICE, site.filename, site.line, lambda: site, detail=detail, source="devices",
                        count=index == 0)


def tensor_devices(path: str, value: Any, depth: int = 1) -> list[tuple[str, torch.device]]:
    """(path, device) of a tensor, or of the tensors in a list, tuple or dict (one level down)."""
    if isinstance(value, torch.Tensor):
        return [(path, value.device)]
    found: list[tuple[str, torch.device]] = []
    if depth > 0 and isinstance(value, (list, tuple)):
        for i, item in enumerate(value[:64]):
            found.extend(tensor_devices(f"{path}[{i}]", item, depth - 1))
    elif depth > 0 and isinstance(value, dict):
        for key, item in list(value.items())[:64]:
            found.extend(tensor_devices(f"{path}[{key!r}]", item, depth - 1))
    return found
