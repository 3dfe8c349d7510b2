"""Trial capture: does a step capture, does its replay compute what eager computes, and how fast?

    report = graphsafe.runtime.trial_capture(train_step, (x, y), state=(model, optimizer))
    print(report.to_text())

Flow (one call, on the user's own objects, which are put back bit-for-bit at the end):

1. snapshot the mutated state (params, grads, buffers, optimizer state, tensors, RNG states);
2. warm up on a side stream (`warmup` steps; 11 when a DDP module is involved);
3. capture, with Python's cyclic GC collected first and paused meanwhile (`collector_paused`):
   `torch.cuda.graph` around the whole step (mode "graph", optimizer included),
   `torch.cuda.make_graphed_callables` (mode "graphed_callables": forward+backward only), or
   `torch.compile(mode="reduce-overhead")` (mode "compile", for comparison);
4. from the post-capture state, replay `replays` steps, then restore that state and run the same
   number of eager steps on the same inputs; compare every output of every step and every
   mutated tensor at the end (plus RNG states and Python attributes of modules) under `tolerance`;
5. time eager steps and replays with CUDA events (median of `repeats` samples of `inner` calls),
   take the kernel-only floor from torch.profiler (union of the device intervals of eager steps),
   and the graph pool's memory from the allocator's segments that belong to the graph's pool;
6. on failure, classify the error (graphsafe.runtime.classify): rule code, CUDA error class,
   plain-language cause, the user's file:line.

A failed capture can leave the process unable to draw CUDA random numbers ("Offset increment
outside graph capture encountered unexpectedly"). In-process, `trial_capture` captures a tiny
graph afterwards to take the generators out of capture mode and reports whether the process is
still usable (`report.process_usable`); `graphsafe capture` runs every trial in a fresh
subprocess and never has to rely on that.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import torch

from graphsafe.runtime.capture_report import (
    STATUSES,
    CaptureReport,
    Comparison,
    PoolMemory,
    Timings,
    Tolerance,
)
from graphsafe.runtime.classify import classify_exception
from graphsafe.runtime.snapshot import (
    Snapshot,
    Tracked,
    clone_tree,
    compare_values,
    is_ddp,
    leaves_with_names,
    merge_step_comparisons,
    read_state,
    resolve_state,
)

__all__ = [
    "trial_capture", "CaptureReport", "CaptureTarget", "Comparison", "Timings", "PoolMemory", "Tolerance", "MODES",
    "STATUSES", "as_target",
]

MODES = ("graph", "graphed_callables", "compile")
DEFAULT_WARMUP = 3
DDP_WARMUP = 11  # DDP's reducer needs 11 eager iterations before capture (torch docs)


# --- what a factory returns ---------------------------------------------------------------------


@dataclass
class CaptureTarget:
    """A step and its inputs, as a `graphsafe capture module:factory` factory returns it. A factory
    may also return `(step, args)`, `(step, args, state)` or a dict with these keys."""

    step: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    state: Any = None
    generators: tuple = ()


def as_target(value: Any) -> CaptureTarget:
    if isinstance(value, CaptureTarget):
        target = value
    elif isinstance(value, dict):
        unknown = set(value) - {"step", "args", "kwargs", "state", "generators"}
        if unknown or "step" not in value:
            raise TypeError(f"a factory's dict needs 'step' and may hold args, kwargs, state, generators; "
                            f"got keys {sorted(value)}")
        target = CaptureTarget(value["step"], value.get("args", ()), value.get("kwargs") or {}, value.get("state"),
                               tuple(value.get("generators", ())))
    elif isinstance(value, tuple) and len(value) in (2, 3) and callable(value[0]):
        target = CaptureTarget(value[0], value[1], {}, value[2] if len(value) == 3 else None)
    elif callable(value):
        target = CaptureTarget(value)
    else:
        raise TypeError("a factory must return CaptureTarget(step, args, ...), (step, args), (step, args, state) or "
                        f"a dict with 'step'; got {type(value).__name__}")
    if not callable(target.step):
        raise TypeError(f"step is not callable: {type(target.step).__name__}")
    target.args = _as_args(target.args)
    if not isinstance(target.kwargs, dict):
        raise TypeError(f"kwargs must be a dict, got {type(target.kwargs).__name__}")
    return target


def _as_args(args: Any) -> tuple:
    if args is None:
        return ()
    if isinstance(args, tuple):
        return args
    if isinstance(args, list):
        return tuple(args)
    return (args,)


# --- the report ---------------------------------------------------------------------------------


# --- backends -----------------------------------------------------------------------------------


class _CudaBackend:
    simulated = False

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.name = torch.cuda.get_device_name(device)

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def side_stream(self):
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            yield
        torch.cuda.current_stream(self.device).wait_stream(stream)

    def new_pool(self):
        return torch.cuda.graph_pool_handle()

    def capture(self, fn: Callable[[], Any], pool, generators: Iterable[torch.Generator]):
        graph = torch.cuda.CUDAGraph()
        for generator in generators:
            _register_generator(graph, generator)
        stream = torch.cuda.Stream(self.device)
        # The outer stream context puts the current stream back even when capture_end raises
        # (torch.cuda.graph.__exit__ then skips its own stream restore).
        with torch.cuda.device(self.device), torch.cuda.stream(stream):
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                output = fn()
        return graph, output

    def replay(self, graph) -> None:
        graph.replay()

    def time_ms(self, fn: Callable[[], Any], samples: int, inner: int) -> list[float]:
        for _ in range(2):
            fn()
        self.sync()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
        for start, end in events:
            start.record()
            for _ in range(inner):
                fn()
            end.record()
        self.sync()
        return [start.elapsed_time(end) / inner for start, end in events]

    def pool_memory(self, pool_ids: set[tuple[int, int]] | None, before: set[tuple[int, int]] | None = None
                    ) -> PoolMemory | None:
        """Segments of the graph's private pool (`segment_pool_id`), from the allocator's snapshot;
        with `pool_ids=None`, every private pool that did not exist in `before`."""
        try:
            segments = torch.cuda.memory._snapshot()["segments"]
        except Exception:
            return None
        if segments and "segment_pool_id" not in segments[0]:
            return PoolMemory(None, None, 0, "this torch's allocator snapshot has no segment_pool_id")
        chosen = []
        for segment in segments:
            pid = tuple(segment.get("segment_pool_id") or (0, 0))
            if pool_ids is not None and pid in pool_ids:
                chosen.append(segment)
            elif pool_ids is None and pid != (0, 0) and pid not in (before or set()):
                chosen.append(segment)
        return PoolMemory(
            reserved_bytes=sum(int(s.get("total_size", 0)) for s in chosen),
            active_bytes=sum(int(s.get("active_size", s.get("allocated_size", 0))) for s in chosen),
            segments=len(chosen),
            source="torch.cuda.memory._snapshot() segments of the graph's private pool",
        )

    def private_pools(self) -> set[tuple[int, int]]:
        try:
            return {tuple(s.get("segment_pool_id") or (0, 0)) for s in torch.cuda.memory._snapshot()["segments"]}
        except Exception:
            return set()

    def kernel_floor_ms(self, fn: Callable[[], Any], steps: int) -> float | None:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        fn()
        self.sync()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(steps):
                    fn()
                self.sync()
        # device activity only: kernels, memcpy, memset. GPU user annotations (the
        # "Optimizer.step#AdamW.step" range, record_function spans) are device-side events too,
        # but they span the gaps between kernels and would count launch overhead as busy time.
        intervals = [(e.time_range.start, e.time_range.end) for e in prof.events()
                     if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)
                     and e.time_range.end > e.time_range.start]
        if not intervals:
            return None
        return busy_time(intervals) / steps / 1000.0

    def recover(self, generators: Iterable[torch.Generator]) -> bool:
        """After a failed capture: take the generators out of capture mode with a tiny capture
        (its prologue and epilogue reset them), then check that CUDA and its RNG still work."""
        gc.collect()
        with contextlib.suppress(Exception):
            self.sync()
        with contextlib.suppress(Exception):
            scratch = torch.zeros(1, device=self.device)
            graph = torch.cuda.CUDAGraph()
            for generator in generators:
                with contextlib.suppress(Exception):
                    graph.register_generator_state(generator)
            stream = torch.cuda.Stream(self.device)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.cuda.device(self.device), torch.cuda.stream(stream):
                    with torch.cuda.graph(graph, stream=stream):
                        scratch.add_(1)
            del graph
        if self._probe():
            return True
        # Second way out: give each default generator a fresh state object (not in capture mode)
        # holding the same seed and offset.
        with contextlib.suppress(Exception):
            for index in range(torch.cuda.device_count()):
                default = torch.cuda.default_generators[index]
                fresh = torch.Generator(device=f"cuda:{index}")
                fresh.set_state(default.get_state())
                default.graphsafe_set_state(fresh)
        return self._probe()

    def _probe(self) -> bool:
        try:
            probe = torch.rand(8, device=self.device) @ torch.ones(8, device=self.device)  # a 0-dim tensor
            probe.add_(torch.randn((), device=self.device))  # same shape: add_ cannot broadcast into it
            self.sync()
            return True
        except Exception:
            return False


def _register_generator(graph, generator: torch.Generator) -> None:
    if not hasattr(graph, "register_generator_state"):
        raise RuntimeError(f"torch {torch.__version__} cannot register custom generators with a CUDA graph "
                           "(CUDAGraph.register_generator_state needs torch >= 2.4)")
    graph.register_generator_state(generator)


class _SimulatedGraph:
    def __init__(self, fn: Callable[[], Any], output: Any) -> None:
        self.fn = fn
        self.output = output


class _SimulatedBackend:
    """CPU stand-in for tests of the flow (snapshot, compare, report, worker protocol): "capture"
    calls the step once and keeps its outputs as the static ones; "replay" calls it again and
    copies the new outputs into them. It cannot show what a real graph does differently."""

    simulated = True

    def __init__(self) -> None:
        self.device = torch.device("cpu")
        self.name = "cpu (simulated capture: no CUDA graph)"

    def sync(self) -> None:
        pass

    @contextlib.contextmanager
    def side_stream(self):
        yield

    def new_pool(self):
        return None

    def capture(self, fn, pool, generators):
        output = fn()
        return _SimulatedGraph(fn, output), output

    def replay(self, graph: _SimulatedGraph) -> None:
        import torch.utils._pytree as pytree

        fresh = pytree.tree_leaves(graph.fn())
        for static, new in zip(pytree.tree_leaves(graph.output), fresh):
            if isinstance(static, torch.Tensor):
                with torch.no_grad():
                    static.copy_(new)

    def time_ms(self, fn, samples: int, inner: int) -> list[float]:
        out = []
        for _ in range(samples):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            out.append((time.perf_counter() - start) * 1000 / inner)
        return out

    def pool_memory(self, pool_ids, before=None):
        return None

    def private_pools(self):
        return set()

    def kernel_floor_ms(self, fn, steps):
        return None

    def recover(self, generators) -> bool:
        return True


def busy_time(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals (device busy time, overlapping streams once)."""
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def _pick_backend(tracked: Tracked, args: tuple, kwargs: dict):
    devices = set()
    for _, tensor in tracked.tensors():
        devices.add(tensor.device)
    for _, module in tracked.modules():
        for p in module.parameters():
            devices.add(p.device)
            break
    cuda = sorted((d for d in devices if d.type == "cuda"), key=str)
    if not torch.cuda.is_available():
        raise RuntimeError("trial_capture needs a CUDA device (torch.cuda.is_available() is False)")
    if not cuda:
        raise ValueError("trial_capture: the step's inputs and state hold no CUDA tensors; move them to the GPU first "
                         "(found devices: " + (", ".join(sorted(map(str, devices))) or "none") + ")")
    device = cuda[0]
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return _CudaBackend(device)


# --- runners: one per mode ----------------------------------------------------------------------


class _Runner:
    def __init__(self, backend, step: Callable, args: tuple, kwargs: dict, warmup: int,
                 generators: tuple, pool) -> None:
        self.backend = backend
        self.step = step
        self.args = args
        self.kwargs = kwargs
        self.warmup_steps = warmup
        self.generators = generators
        self.pool = pool
        self.pool_ids: set[tuple[int, int]] | None = {tuple(pool)} if pool is not None else None
        self.pools_before: set[tuple[int, int]] = set()
        self.notes: list[str] = []

    def call_eager(self) -> Any:
        return self.step(*self.args, **self.kwargs)

    def warmup(self) -> None:
        with self.backend.side_stream():
            for _ in range(self.warmup_steps):
                self.call_eager()
        self.backend.sync()

    def run_eager(self) -> Any:
        return clone_tree(self.call_eager())

    def close(self) -> None:
        pass


class _GraphRunner(_Runner):
    phase = "capture"

    def capture(self) -> None:
        self.graph, self.static_output = self.backend.capture(self.call_eager, self.pool, self.generators)

    def call_captured(self) -> None:
        self.backend.replay(self.graph)

    def run_captured(self) -> Any:
        self.call_captured()
        return clone_tree(self.static_output)

    def close(self) -> None:
        self.graph = self.static_output = None


def _backward_outputs(output: Any) -> None:
    import torch.utils._pytree as pytree

    leaves = [t for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
    if leaves:
        torch.autograd.backward(leaves, [torch.ones_like(t) for t in leaves])


class _GraphedCallablesRunner(_Runner):
    """`torch.cuda.make_graphed_callables`: graphs of the forward and the backward; each step here
    is forward, then backward with ones as the output gradient. It warms up by itself."""

    phase = "capture"

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        bad = [i for i, a in enumerate(self.args) if not isinstance(a, torch.Tensor)]
        if bad or self.kwargs:
            raise TypeError("mode 'graphed_callables' takes tensor positional arguments only (make_graphed_callables "
                            f"cannot take {'kwargs' if self.kwargs else f'args[{bad[0]}]'}); use mode 'graph'")
        if not isinstance(self.step, torch.nn.Module):
            self.notes.append("make_graphed_callables graphs gradients for the arguments and, for a Module, its own "
                              "parameters: a plain function's closure parameters get no gradients from the graph")
        # Each step starts from no gradients (zero_grad(set_to_none=True) between steps, as training
        # with graphed callables does): autograd may hand the graph's static gradient buffers to
        # `.grad` itself, so accumulating across replays is not what a user would run.
        self.grad_leaves = [a for a in self.args if a.is_leaf and a.requires_grad]
        if isinstance(self.step, torch.nn.Module):
            self.grad_leaves += [p for p in self.step.parameters() if p.requires_grad]

    def _clear_grads(self) -> None:
        for leaf in self.grad_leaves:
            leaf.grad = None

    def call_eager(self) -> Any:
        self._clear_grads()
        output = self.step(*self.args)
        _backward_outputs(output)
        return output

    def warmup(self) -> None:
        pass  # make_graphed_callables warms up on its own side stream

    def capture(self) -> None:
        if self.backend.simulated:
            self.graphed = self.step
            return
        import inspect

        kwargs = {"num_warmup_iters": self.warmup_steps}
        if "pool" in inspect.signature(torch.cuda.make_graphed_callables).parameters:
            kwargs["pool"] = self.pool
        else:
            self.pool_ids = None
        self.pools_before = self.backend.private_pools()
        module = self.step if isinstance(self.step, torch.nn.Module) else None
        forward_before = module.__dict__.get("forward", _NO_FORWARD) if module is not None else None
        self.graphed = torch.cuda.make_graphed_callables(self.step, self.args, **kwargs)
        if module is not None:
            # make_graphed_callables swaps the module's `forward` in place: without putting it back
            # the eager reference and eager timing would replay the graph too, and the user's module
            # would leave the trial changed. The graphed forward is installed only around replays.
            self.graphed_forward = module.forward
            _set_forward(module, forward_before)

    def call_captured(self) -> Any:
        self._clear_grads()
        if getattr(self, "graphed_forward", None) is not None:
            with _forward_installed(self.step, self.graphed_forward):
                output = self.step(*self.args)
        else:
            output = self.graphed(*self.args)
        _backward_outputs(output)
        return output

    def run_captured(self) -> Any:
        return clone_tree(self.call_captured())

    def close(self) -> None:
        self.graphed = self.graphed_forward = None


_NO_FORWARD = object()


def _set_forward(module: torch.nn.Module, forward: Any) -> None:
    if forward is _NO_FORWARD:
        module.__dict__.pop("forward", None)
    else:
        module.forward = forward


@contextlib.contextmanager
def _forward_installed(module: torch.nn.Module, forward: Callable) -> Iterator[None]:
    before = module.__dict__.get("forward", _NO_FORWARD)
    module.forward = forward
    try:
        yield
    finally:
        _set_forward(module, before)


class _CompileRunner(_Runner):
    """`torch.compile(mode="reduce-overhead")` (CUDA graph trees), for comparison."""

    phase = "compile"

    def capture(self) -> None:
        self.pool_ids = None
        self.pools_before = self.backend.private_pools()
        if self.backend.simulated:
            self.compiled = self.step
            return
        counters = _inductor_counters()
        skips_before = counters.get("cudagraph_skips", 0) if counters is not None else 0
        self.compiled = torch.compile(self.step, mode="reduce-overhead")
        for _ in range(max(self.warmup_steps, 3)):  # warm-up run, recording run, first replay
            self.call_captured()
        self.backend.sync()
        counters = _inductor_counters()
        if counters is not None and counters.get("cudagraph_skips", 0) > skips_before:
            self.notes.append("torch.compile skipped CUDA graphs for part of the step (set TORCH_LOGS=perf_hints to "
                              "see why): its replay time includes eager kernels")

    def call_captured(self) -> Any:
        mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
        if mark is not None and not self.backend.simulated:
            mark()
        return self.compiled(*self.args, **self.kwargs)

    def run_captured(self) -> Any:
        return clone_tree(self.call_captured())

    def close(self) -> None:
        self.compiled = None
        with contextlib.suppress(Exception):
            torch._dynamo.reset()


def _inductor_counters() -> dict | None:
    try:
        from torch._dynamo.utils import counters
    except Exception:
        return None
    return counters.get("inductor", {})


_RUNNERS = {"graph": _GraphRunner, "graphed_callables": _GraphedCallablesRunner, "compile": _CompileRunner}


# --- the trial ----------------------------------------------------------------------------------


def _check_arguments(step, mode, warmup, replays, repeats, inner) -> None:
    if not callable(step):
        raise TypeError(f"step must be callable, got {type(step).__name__}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    for name, value, low in (("warmup", warmup, 0), ("replays", replays, 1), ("repeats", repeats, 1),
                             ("inner", inner, 1)):
        if value is None and name == "warmup":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def step_name(step: Callable) -> str:
    import functools

    while isinstance(step, functools.partial):
        step = step.func
    if isinstance(step, torch.nn.Module):
        return f"{type(step).__name__}.forward"
    name = getattr(step, "__qualname__", None) or getattr(step, "__name__", None) or type(step).__name__
    return name.replace("<locals>.", "")


def trial_capture(
    step: Callable,
    args: Any = (),
    *,
    kwargs: dict | None = None,
    mode: str = "graph",
    warmup: int | None = None,
    replays: int = 5,
    tolerance: Any = None,
    state: Any = None,
    generators: Iterable[torch.Generator] = (),
    timing: bool = True,
    repeats: int = 15,
    inner: int = 10,
    profile: bool = True,
    _backend: Any = None,
) -> CaptureReport:
    """Capture `step(*args, **kwargs)`, replay it, compare with eager, time it.

    mode: "graph" (`torch.cuda.graph` around the whole step, optimizer included),
        "graphed_callables" (`make_graphed_callables`: forward+backward; args must be tensors),
        "compile" (`torch.compile(mode="reduce-overhead")`, for comparison).
    warmup: eager steps on a side stream before capture (default 3; 11 with a DDP module).
    replays: steps replayed and compared with as many eager steps from the same state.
    tolerance: None (rtol=1e-4, atol=1e-5), "bitwise"/0, a number (both), (rtol, atol) or a dict.
        The report always says whether every value was bitwise equal.
    state: what the step mutates: a module, optimizer, tensor, generator, a callable returning live
        tensors, or a tuple/list/dict of those. Default: found from the arguments, the step itself,
        its closure and the globals it names. Argument tensors are always tracked.
    generators: custom CUDA generators the step draws from (registered with the graph).
    timing/repeats/inner/profile: step times (medians of `repeats` samples of `inner` calls) and
        the profiler's kernel-only floor.

    The user's objects are put back as they were (values, gradients, optimizer state, RNG).
    Argument errors raise; everything that goes wrong in the step is in the report.
    """
    kwargs = dict(kwargs or {})
    args = _as_args(args)
    _check_arguments(step, mode, warmup, replays, repeats, inner)
    tol = Tolerance.parse(tolerance)
    generators = tuple(generators)
    tracked = resolve_state(state, step, args, kwargs)
    for name, generator in tracked.generators():
        if generator.device.type == "cuda" and generator not in generators:
            generators += (generator,)
    backend = _backend if _backend is not None else _pick_backend(tracked, args, kwargs)
    if warmup is None:
        warmup = DDP_WARMUP if is_ddp(tracked) else DEFAULT_WARMUP
    report = CaptureReport(
        target=step_name(step), mode=mode, status="error", device=backend.name,
        torch_version=torch.__version__, warmup=warmup, replays=replays,
        tolerance={"rtol": tol.rtol, "atol": tol.atol}, state=tracked.summary(),
    )
    if is_ddp(tracked) and warmup < DDP_WARMUP:
        report.notes.append(f"DDP needs {DDP_WARMUP} warm-up steps before capture; warmup={warmup} (GS704)")
    if backend.simulated:
        report.notes.append("simulated on the CPU: no CUDA graph was captured (a test of the trial's flow only)")

    original = Snapshot(tracked)
    try:
        pool = backend.new_pool() if mode != "compile" else None
        runner = _RUNNERS[mode](backend, step, args, kwargs, warmup, generators, pool)
        failed_capture = _run_trial(report, runner, tracked, tol, backend, timing, repeats, inner, profile)
        report.notes.extend(runner.notes)
        runner.close()
        runner = None
        if failed_capture and not backend.simulated:
            report.process_usable = backend.recover(generators)
    finally:
        original.restore()
        with contextlib.suppress(Exception):
            backend.sync()
        gc.collect()
    if report.failure is not None and report.failure.code is None and report.status == "failed":
        report.notes.append("no rule describes this failure; the error message is above")
    return report


def _run_trial(report: CaptureReport, runner: _Runner, tracked: Tracked, tol: Tolerance, backend, timing: bool,
               repeats: int, inner: int, profile: bool) -> bool:
    """Warm-up, capture, compare, time; fills the report. True when it failed past warm-up (the
    process may need `recover`)."""
    phase = "warmup"
    try:
        with torch.cuda.device(backend.device) if not backend.simulated else contextlib.nullcontext():
            runner.warmup()
            phase = runner.phase
            started = time.perf_counter()
            with collector_paused():
                runner.capture()
            backend.sync()
            capture_s = time.perf_counter() - started
            phase = "replay"
            _compare(report, runner, tracked, tol, backend)
            report.memory = backend.pool_memory(runner.pool_ids, runner.pools_before)
            report.timings = Timings(capture_s=capture_s)
            if timing:
                phase = "timing"
                _time(report.timings, runner, backend, repeats, inner, profile)
            report.status = "ok" if report.match is not False else "mismatch"
            return False
    except Exception as error:  # the step's failure is the report's subject
        report.failure = classify_exception(error, phase)
        report.status = "error" if phase == "warmup" else "failed"
        _drop_tracebacks(error)  # their frames hold the failed graph: free it before recovering
        return phase != "warmup"


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Collect, then keep Python's cyclic GC off while capturing. A collection during capture can
    finalize another CUDAGraph or a Triton kernel whose destructor makes CUDA calls, which
    invalidates the capture (pytorch/pytorch#161037; torch >= 2.9 no longer collects before
    capture itself). The collector's previous state is restored."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def recover_after_failed_capture(device: torch.device, generators: Iterable[torch.Generator] = (),
                                 error: BaseException | None = None) -> bool:
    """After a capture that raised (`error`, whose frames are freed first: they hold the failed
    graph): take the generators out of capture mode; whether CUDA and its RNG work again."""
    _drop_tracebacks(error)
    return _CudaBackend(device).recover(generators)


def _drop_tracebacks(error: BaseException | None) -> None:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        error.__traceback__ = None
        error = error.__cause__ or error.__context__


def _compare(report: CaptureReport, runner: _Runner, tracked: Tracked, tol: Tolerance, backend) -> None:
    start = Snapshot(tracked)
    replayed_outputs = []
    for _ in range(report.replays):
        replayed_outputs.append(runner.run_captured())
    backend.sync()
    replayed_state = read_state(tracked)
    start.restore()
    eager_outputs = []
    for _ in range(report.replays):
        eager_outputs.append(runner.run_eager())
    backend.sync()
    eager_state = read_state(tracked)
    start.restore()

    per_step = []
    for replayed, eager in zip(replayed_outputs, eager_outputs):
        a = {name: ("output", value) for name, value in leaves_with_names(replayed)}
        b = {name: ("output", value) for name, value in leaves_with_names(eager)}
        per_step.append(compare_values(a, b, tol))
    report.comparisons = merge_step_comparisons(per_step) + compare_values(replayed_state, eager_state, tol)
    for c in report.comparisons:  # outputs that are Python values: baked in at capture
        if c.kind == "output" and not c.ok and c.max_abs is None and c.code is None:
            c.code = "GS301"


def _time(timings: Timings, runner: _Runner, backend, repeats: int, inner: int, profile: bool) -> None:
    eager = backend.time_ms(runner.call_eager, repeats, inner)
    replay = backend.time_ms(runner.call_captured, repeats, inner)
    timings.eager_ms = statistics.median(eager)
    timings.replay_ms = statistics.median(replay)
    timings.eager_range_ms = (min(eager), max(eager))
    timings.replay_range_ms = (min(replay), max(replay))
    timings.samples, timings.inner = repeats, inner
    if profile:
        try:
            floor = backend.kernel_floor_ms(runner.call_eager, inner)
        except Exception as error:  # the profiler is optional: report without the floor
            runner.notes.append(f"kernel-only floor not measured: {type(error).__name__}: {error}")
            floor = None
        timings.floor_ms = floor
        if floor is None and not backend.simulated:
            runner.notes.append("the profiler recorded no device kernels: no kernel-only floor")


def median_or_none(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None
