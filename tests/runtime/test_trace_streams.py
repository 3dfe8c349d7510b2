"""The tracer recognises issue 23's causes at run time, at the user's line: side streams not
joined back (GS902), collectives (GS901) and async handles not waited (GS903), tensors on another
CUDA device (GS904), cuDNN benchmark's first shapes (GS711), Triton autotuning's first run (GS710).

Streams: on a machine without CUDA, torch.cuda.Stream and Event cannot be built. The `streams`
fixture then gives torch's own Python classes a no-op C base (what the CPU build's dummy base
lacks), so torch's real `wait_stream`, `record_event`, `wait_event`, `Event.record/wait` and
`torch.cuda.stream()` run and go through the tracer's hooks; with CUDA the same tests use real
streams. Collectives run on a gloo process group of one rank. Triton is a fake module (it is not
installed here) whose Autotuner fills its cache on a first run, as Triton's does.
Lines are found by their `# L:name` markers.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import types
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from graphsafe.runtime import TraceReport, trace
from graphsafe.runtime import trace_streams
from graphsafe.runtime.trace_streams import COLLECTIVES, other_devices

SOURCE = inspect.getsource(sys.modules[__name__]).splitlines()


def line_of(marker: str) -> int:
    hits = [i for i, text in enumerate(SOURCE, 1) if re.search(rf"# L:{re.escape(marker)}\b", text)]
    assert len(hits) == 1, f"marker L:{marker} found {len(hits)} times"
    return hits[0]


def found(report: TraceReport, code: str) -> list[tuple[str, int]]:
    return [(f.filename, f.line) for f in report.findings if f.code == code]


def at(marker: str) -> list[tuple[str, int]]:
    return [(__file__, line_of(marker))]


# --- streams ------------------------------------------------------------------------------------


@pytest.fixture
def streams(monkeypatch):
    """A side stream: real with CUDA; without it, torch's Stream/Event classes on a no-op base."""
    if torch.cuda.is_available():
        return torch.cuda.Stream()
    stream_base, event_base = torch.cuda.Stream.__bases__[0], torch.cuda.Event.__bases__[0]
    if torch.backends.cuda.is_built() or not stream_base.__name__.startswith("_Cuda"):
        pytest.skip("CUDA build without a GPU: its stream classes cannot be stood in for")
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)  # Stream.__new__ asks
    for base in (stream_base, event_base):  # the dummy base raises in __new__/__init__
        monkeypatch.setattr(base, "__new__", staticmethod(lambda cls, *args, **kwargs: object.__new__(cls)))
        monkeypatch.setattr(base, "__init__", lambda self, *args, **kwargs: None)
    for name in ("__enter__", "__exit__"):  # torch._C.Stream is a context manager on CUDA builds
        monkeypatch.setattr(stream_base, name, lambda self, *args: None, raising=False)
    for name in ("record", "wait"):
        monkeypatch.setattr(event_base, name, lambda self, stream: None, raising=False)
    main = torch.cuda.Stream()
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: main)
    return torch.cuda.Stream()


def fork_unjoined(x, side):
    side.wait_stream(torch.cuda.current_stream())  # L:fork
    with torch.cuda.stream(side):
        y = x * 2
    return y


def fork_joined(x, side):
    current = torch.cuda.current_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        y = x * 2
    current.wait_stream(side)
    return y


def side_work_unjoined(x, side):
    with torch.cuda.stream(side):  # L:side-work
        y = x + 1
    done = torch.cuda.Event()
    done.record(side)  # recorded, but the step's stream never waits on it
    return y


def side_work_event_waited(x, side):
    with torch.cuda.stream(side):
        y = x + 1
    done = torch.cuda.Event()
    done.record(side)
    torch.cuda.current_stream().wait_event(done)
    return y


def work_after_the_join(x, side):
    with torch.cuda.stream(side):
        y = x + 1
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.stream(side):  # L:after-join
        z = y * 2
    return z


def work_after_the_waited_event(x, side):
    with torch.cuda.stream(side):
        y = x + 1
    done = side.record_event()
    with torch.cuda.stream(side):  # L:after-event
        z = y * 2
    torch.cuda.current_stream().wait_event(done)  # waits for the first block only
    return z


def with_stream_unjoined(x, side):
    with side:  # L:with-side
        y = x * 3
    return y


def test_work_forked_to_a_side_stream_and_not_joined_is_gs902_at_the_fork(streams):
    report = trace(fork_unjoined, torch.ones(3), streams, steps=2)
    assert found(report, "GS902") == at("fork")
    [finding] = report.by_code("GS902")
    assert finding.name == "unjoined-side-stream" and finding.hits == 2
    assert "made to wait" in finding.details[0]


def test_a_side_stream_joined_back_with_wait_stream_is_not_reported(streams):
    assert found(trace(fork_joined, torch.ones(3), streams, steps=2), "GS902") == []


def test_an_event_recorded_on_the_side_stream_but_never_waited_is_gs902(streams):
    report = trace(side_work_unjoined, torch.ones(3), streams)
    assert found(report, "GS902") == at("side-work")
    assert "torch.cuda.stream()" in report.by_code("GS902")[0].details[0]


def test_the_step_stream_waiting_on_the_side_event_joins_it(streams):
    assert found(trace(side_work_event_waited, torch.ones(3), streams), "GS902") == []


def test_work_put_on_the_side_stream_after_the_join_is_reported_where_it_began(streams):
    assert found(trace(work_after_the_join, torch.ones(3), streams), "GS902") == at("after-join")


def test_waiting_on_an_event_recorded_before_later_side_work_does_not_join_that_work(streams):
    assert found(trace(work_after_the_waited_event, torch.ones(3), streams), "GS902") == at("after-event")


def test_a_stream_used_as_a_context_manager_counts_as_side_work(streams):
    if not callable(getattr(torch.cuda.Stream, "__enter__", None)):
        pytest.skip("this torch's Stream is not a context manager")
    assert found(trace(with_stream_unjoined, torch.ones(3), streams), "GS902") == at("with-side")


def no_stream(x):
    with torch.cuda.stream(None):  # device-agnostic code: no stream where there is no CUDA
        return x * 2


def test_entering_no_stream_is_not_side_work_and_needs_no_cuda():
    assert found(trace(no_stream, torch.ones(2)), "GS902") == []


def test_stream_hooks_are_removed_after_a_step_that_raises(streams):
    originals = (torch.cuda.StreamContext.__enter__, torch.cuda.StreamContext.__exit__, torch.cuda.Event.record,
                 torch.cuda.Event.wait)

    def failing(x, side):
        with torch.cuda.stream(side):
            raise ValueError("boom")

    with pytest.raises(ValueError):
        trace(failing, torch.ones(1), streams)
    assert (torch.cuda.StreamContext.__enter__, torch.cuda.StreamContext.__exit__, torch.cuda.Event.record,
            torch.cuda.Event.wait) == originals


# --- collectives --------------------------------------------------------------------------------


@pytest.fixture
def process_group():
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def all_reduce_step(x):
    dist.all_reduce(x)  # L:all-reduce
    return x


def async_not_waited(x, handles):
    handles.append(dist.all_reduce(x, async_op=True))  # L:async
    return x


def async_waited(x):
    work = dist.all_reduce(x, async_op=True)  # L:waited-async
    work.wait()
    return x


def broadcast_step(x):
    dist.broadcast(x, 0)  # L:broadcast
    return x


def test_a_collective_in_the_step_is_gs901_at_its_line(process_group):
    report = trace(all_reduce_step, torch.ones(2), steps=2)
    assert found(report, "GS901") == at("all-reduce")
    [finding] = report.by_code("GS901")
    assert finding.hits == 2 and finding.details == ("torch.distributed.all_reduce",)
    assert found(report, "GS903") == []


def test_an_async_collective_not_waited_in_the_step_is_gs903(process_group):
    handles: list = []
    report = trace(async_not_waited, torch.ones(2), handles)
    for work in handles:
        work.wait()
    assert found(report, "GS903") == at("async")
    assert found(report, "GS901") == at("async")


def test_an_async_collective_waited_in_the_step_is_not_gs903(process_group):
    report = trace(async_waited, torch.ones(2), steps=2)
    assert found(report, "GS903") == []
    assert found(report, "GS901") == at("waited-async")


def test_a_collective_that_calls_another_is_one_hit(process_group, monkeypatch):
    def broadcast(tensor, src):  # as all_gather_object calls all_gather: through the module
        return dist.distributed_c10d.all_reduce(tensor)

    monkeypatch.setattr(dist, "broadcast", broadcast)
    [finding] = trace(broadcast_step, torch.ones(1), steps=2).by_code("GS901")
    assert (finding.line, finding.hits) == (line_of("broadcast"), 2)
    assert finding.details == ("torch.distributed.broadcast",)


def test_collectives_are_wrapped_during_a_step_and_restored_after(process_group):
    original = dist.all_reduce
    seen = []
    trace(lambda x: seen.append(dist.all_reduce is original) or x, torch.ones(1), steps=1)
    assert seen == [False] and dist.all_reduce is original


def test_without_a_process_group_collectives_are_not_wrapped():
    original = dist.all_reduce
    seen = []
    trace(lambda x: seen.append(dist.all_reduce is original) or x, torch.ones(1), steps=1)
    assert seen == [True]


def test_the_tracer_and_the_static_rule_know_the_same_collectives_torch_2_13s_new_names_included():
    from graphsafe.rules.streams import DISTRIBUTED_CALLS, collective_name

    assert set(COLLECTIVES) == set(DISTRIBUTED_CALLS)
    assert {"all_gather_single", "reduce_scatter_single"} <= set(COLLECTIVES)
    assert collective_name("torch.distributed.all_gather_single") == "all_gather_single"  # GS901 statically too


# --- devices ------------------------------------------------------------------------------------


def test_other_devices_names_cuda_tensors_off_the_current_device():
    devices = [("x", torch.device("cuda", 1)), ("y", torch.device("cuda", 0)), ("z", torch.device("cpu"))]
    assert other_devices(devices, current=0) == ["x on cuda:1 (current device cuda:0)"]
    assert other_devices(devices, current=1) == ["y on cuda:0 (current device cuda:1)"]


def double(x):  # L:double
    return x * 2


def test_a_step_on_another_cuda_device_is_gs904_at_its_def_line():
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices: a tensor on a device other than the current one")
    report = trace(double, torch.ones(2, device="cuda:1"))
    assert found(report, "GS904") == at("double")
    assert report.by_code("GS904")[0].details[0] == "x on cuda:1 (current device cuda:0)"
    with torch.cuda.device(1):
        assert found(trace(double, torch.ones(2, device="cuda:1")), "GS904") == []


# --- lazy initialisation: cuDNN benchmark, Triton autotune ---------------------------------------


@pytest.fixture
def cudnn_benchmark():
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    yield
    torch.backends.cudnn.benchmark = before


def conv_step(conv, x):
    with torch.no_grad():
        return conv(x)  # L:conv


def test_new_convolution_shapes_with_cudnn_benchmark_are_one_gs711_warning(cudnn_benchmark, cpu_only_tracer):
    conv = torch.nn.Conv2d(3, 4, 3)
    shapes = [(1, 3, 8, 8), (1, 3, 8, 8), (1, 3, 10, 10)]
    report = trace(conv_step, steps=3, args_factory=lambda step: (conv, torch.ones(shapes[step])))
    assert found(report, "GS711") == at("conv")
    [finding] = report.by_code("GS711")
    assert finding.hits == 2  # two shapes seen for the first time, one finding
    assert finding.message.startswith("warning:") and "(1, 3, 10, 10)" in finding.details[1]


def test_convolutions_without_cudnn_benchmark_are_not_gs711(cpu_only_tracer):
    assert torch.backends.cudnn.benchmark is False
    assert found(trace(conv_step, torch.nn.Conv2d(3, 4, 3), torch.ones(1, 3, 8, 8)), "GS711") == []


@pytest.fixture
def fake_triton(monkeypatch, tmp_path):
    """`triton.runtime.autotuner.Autotuner` whose run() fills its cache on a new key (Triton
    benchmarks there), launched through a file inside the fake triton package (the launcher)."""
    package = tmp_path / "triton"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "jit.py").write_text("def launch(tuner, *args):\n    return tuner.run(*args)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    import triton.jit  # the fake package

    class Autotuner:
        def __init__(self, fn):
            self.fn, self.cache = fn, {}

        def run(self, *args):
            key = tuple(tuple(a.shape) for a in args)
            if key not in self.cache:
                self.cache[key] = "BLOCK=64"  # Triton benchmarks its configs here
            return self.fn(*args)

    runtime, autotuner = types.ModuleType("triton.runtime"), types.ModuleType("triton.runtime.autotuner")
    autotuner.Autotuner = Autotuner
    monkeypatch.setitem(sys.modules, "triton.runtime", runtime)
    monkeypatch.setitem(sys.modules, "triton.runtime.autotuner", autotuner)
    yield Autotuner, triton.jit.launch
    # the fake package's own modules, imported above, must not outlive the test: a later
    # torch.compile in the same worker would import `triton.language` from it and fail
    for name in ("triton", "triton.jit"):
        sys.modules.pop(name, None)


def add_kernel(x):
    return x + 1


def autotuned_step(tuner, launch, x):
    return launch(tuner, x)  # L:launch


def test_an_autotuned_kernel_first_run_in_the_step_is_gs710_at_the_launch(fake_triton):
    autotuner, launch = fake_triton
    report = trace(autotuned_step, autotuner(add_kernel), launch, torch.ones(4), steps=3)
    assert found(report, "GS710") == at("launch")  # not the launcher's line inside triton
    [finding] = report.by_code("GS710")
    assert finding.hits == 1 and finding.details == ("add_kernel: Autotuner.run benchmarked its configs",)


def test_an_autotuned_kernel_warmed_up_before_the_trace_is_not_gs710(fake_triton):
    autotuner, launch = fake_triton
    tuner = autotuner(add_kernel)
    launch(tuner, torch.ones(4))  # warm-up with the step's shapes
    assert found(trace(autotuned_step, tuner, launch, torch.ones(4), steps=2), "GS710") == []
    assert autotuner.run.__name__ == "run" and "graphsafe" not in autotuner.run.__code__.co_filename


# --- issue 23's re-created cases (tests/capture_cases, docs/cases.md's tracer column) ------------------

CASES = Path(__file__).parent.parent / "capture_cases"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"capture_cases_{name}", CASES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _case_line(name: str, text: str) -> tuple[str, int]:
    lines = (CASES / f"{name}.py").read_text().splitlines()
    [line] = [i for i, source in enumerate(lines, 1) if text in source and not source.startswith("#")]
    return str(CASES / f"{name}.py"), line


# (case file, region function, its inputs, the code, the line the tracer names; None: nothing)
STREAM_CASES = [
    ("c01_side_stream_unjoined", "dispatch", lambda: (torch.ones(4),), "GS902", "side.wait_stream("),
    ("c01_side_stream_unjoined_ok", "dispatch", lambda: (torch.ones(4),), "GS902", None),
    ("c02_side_event_not_waited", "reduce_grads", lambda: (torch.ones(4),), "GS902", "rs_stream.wait_stream("),
    ("c02_side_event_not_waited_ok", "reduce_grads", lambda: (torch.ones(4),), "GS902", None),
]
COLLECTIVE_CASES = [
    ("c04_barrier_in_step", "train_step", lambda: (torch.nn.Linear(2, 1), torch.ones(3, 2)), "GS901",
     "dist.barrier()"),
    ("c07_async_handle_returned", "step", lambda: (torch.zeros(4), torch.ones(4)), "GS903", "handle = dist."),
    ("c10_expert_all_to_all", "dispatch", lambda: (torch.ones(4), torch.tensor([4])), "GS901",
     "dist.all_to_all_single("),
]


@pytest.mark.parametrize("case", STREAM_CASES, ids=lambda c: c[0])
def test_the_tracer_names_each_stream_case_at_its_line(case, streams):
    name, function, inputs, code, text = case
    report = trace(getattr(_load(name), function), *inputs(), steps=1)
    assert found(report, code) == ([_case_line(name, text)] if text else [])


@pytest.mark.parametrize("case", COLLECTIVE_CASES, ids=lambda c: c[0])
def test_the_tracer_names_each_collective_case_at_its_line(case, process_group):
    name, function, inputs, code, text = case
    report = trace(getattr(_load(name), function), *inputs(), steps=1)
    for work in report.result if isinstance(report.result, list) else [report.result]:
        if isinstance(work, dist.Work):
            work.wait()
    assert found(report, code) == [_case_line(name, text)]
