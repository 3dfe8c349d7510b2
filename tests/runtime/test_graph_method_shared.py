"""graph_method on a class whose instances are built per call (a solver per `odeint()`): instances
whose state has one layout share one graph (runtime/shared_method.py). On the CPU stand-in for
torch.cuda.graph (tests/runtime/cpu_graph.py), and on a GPU (cuda-marked)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from graphsafe.runtime.graphed import GraphedCallable, graph_method
from graphsafe.runtime.shared_method import MAX_LAYOUTS
from tests.runtime.cpu_graph import simulate_cuda_graphs


class Field(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    def forward(self, y):
        return self.net(y)


class Wrapped(torch.nn.Module):
    """A module built around the same model on every call (torchdiffeq's _PerturbFunc)."""

    def __init__(self, base) -> None:
        super().__init__()
        self.base = base

    def forward(self, y):
        return self.base(y)


class Solver:
    """State as a solver keeps it: tensors made per instance, a Python number, a wrapper module, a
    buffer the step writes in place (`steps`), an attribute it rebinds (`last`)."""

    def __init__(self, func, y0, rtol, order=5):
        self.func = Wrapped(func)
        self.y0 = y0
        self.rtol = torch.as_tensor(rtol, device=y0.device)
        self.scale = y0.abs() + 1.0
        self.order = order
        self.steps = torch.zeros((), device=y0.device)
        self.last = None

    def step_core(self, y, dt):
        k = self.func(y)
        y1 = y + dt * k * self.scale / self.order
        self.steps.add_(1)
        self.last = (y1 - y).abs().amax() * self.rtol
        return y1


@torch.no_grad()
def solve(func, y0, rtol, n=3, order=5):
    """What `odeint()` does: a new solver per call, stepped n times through the graphed method."""
    solver = Solver(func, y0, rtol, order)
    y = y0
    for _ in range(n):
        y = solver.step_core(y, torch.tensor(0.1, device=y0.device))
    return y, solver


def _inputs(i: int) -> tuple[torch.Tensor, float]:
    generator = torch.Generator().manual_seed(100 + i)
    return torch.randn(4, 3, generator=generator), 1e-3 * (1 + i % 3)


@pytest.fixture
def fresh_solver_class(monkeypatch):
    """Solver.step_core graphed for this test only (graph_method replaces it on the class)."""
    monkeypatch.setattr(Solver, "step_core", Solver.__dict__["step_core"])
    return Solver


def _eager_twin(installed, func, y0, rtol):
    """A solver that runs the method eagerly (kept out of the shared graph) for the same 3 steps."""
    twin = Solver.__new__(Solver)
    installed.eager(twin)
    Solver.__init__(twin, func, y0, rtol)
    y = y0
    with torch.no_grad():
        for _ in range(3):
            y = twin.step_core(y, torch.tensor(0.1, device=y0.device))
    return twin, y


def _captures(installed) -> int:
    return sum(len(g.capture_seconds) for g in installed.graphs())


@pytest.mark.parametrize("backend", ["eager", "cuda"])
def test_instances_built_per_call_share_one_graph_and_equal_eager(fresh_solver_class, monkeypatch, backend):
    if backend == "cuda":
        simulate_cuda_graphs(monkeypatch)
    func = Field()
    installed = graph_method(Solver, "step_core", shared=True, batched=[], backend=backend, nvtx_ranges=False)
    for i in range(6):
        y0, rtol = _inputs(i)
        got, solver = solve(func, y0, rtol)
        twin, y = _eager_twin(installed, func, y0, rtol)
        assert torch.allclose(got, y, atol=1e-6), i
        assert type(solver) is Solver and float(solver.steps) == float(twin.steps) == 3.0  # written in place, here
        assert torch.allclose(solver.last, twin.last, atol=1e-7)  # rebound, onto this call's solver
    # one layout (the method never reads `last`, which a fresh solver holds as None): the first call
    # probes it (eager), the second captures, every later solver replays
    assert len(installed.graphs()) == 1 and _captures(installed) == 1
    assert installed.stats["probes"] == 1 and installed.stats["replays"] == 6 * 3 - 1
    assert installed.graphs()[0].stats["replays"] == 6 * 3 - 1


def test_state_goes_back_into_the_instance_that_was_called(fresh_solver_class, monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    func = Field()
    graph_method(Solver, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    a, b = Solver(func, torch.ones(4, 3), 1e-3), Solver(func, torch.full((4, 3), 2.0), 2e-3)
    y = torch.ones(4, 3)
    for _ in range(2):
        a.step_core(y, torch.tensor(0.1))  # the probe, then the capture
    for _ in range(3):
        b.step_core(y, torch.tensor(0.1))
    a.step_core(y, torch.tensor(0.1))
    assert (float(a.steps), float(b.steps)) == (3.0, 3.0)
    assert a.last is not b.last and not torch.equal(a.last, b.last)  # b's scale and rtol, not a's
    eager = Solver(func, torch.full((4, 3), 2.0), 2e-3)
    assert torch.allclose(b.last, Solver.__dict__["step_core"].function(eager, y, torch.tensor(0.1)).sub(y)
                          .abs().amax() * eager.rtol, atol=1e-7)


def test_another_layout_gets_its_own_graph(fresh_solver_class, monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    func = Field()
    installed = graph_method(Solver, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    for order in (5, 5, 4, 3, 2):  # a Python number read by the method is baked: another value, another graph
        solve(func, torch.ones(4, 3), 1e-3, order=order)
    assert len(installed.graphs()) == MAX_LAYOUTS == 4 and installed.stats["probes"] == 4
    with pytest.warns(RuntimeWarning, match="MAX_LAYOUTS"):  # another shape of the state (`scale`): past the limit
        got, _ = solve(func, torch.ones(2, 3), 1e-3)
    assert len(installed.graphs()) == MAX_LAYOUTS and installed.stats["eager"] == 3
    eager = Solver(func, torch.ones(2, 3), 1e-3)
    installed.eager(eager)
    y = torch.ones(2, 3)
    with torch.no_grad():
        for _ in range(3):
            y = eager.step_core(y, torch.tensor(0.1))
    assert torch.allclose(got, y, atol=1e-6)


def test_a_method_that_changes_a_python_value_runs_eagerly(monkeypatch):
    simulate_cuda_graphs(monkeypatch)

    class Counter:
        def __init__(self):
            self.k = torch.ones(2)
            self.n = 0

        def step_core(self, x):
            self.n += 1  # a replay would not count
            return x * self.k

    installed = graph_method(Counter, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    counters = [Counter() for _ in range(3)]
    for c in counters:
        for _ in range(2):
            c.step_core(torch.ones(2))
    assert [c.n for c in counters] == [2, 2, 2] and installed.graphs() == []


def test_a_module_method_gets_a_graph_of_its_own_kept_on_the_instance(monkeypatch):
    simulate_cuda_graphs(monkeypatch)

    class Scaled(torch.nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = torch.nn.Parameter(torch.tensor(float(k)), requires_grad=False)

        def step_core(self, x):
            return x * self.k

    installed = graph_method(Scaled, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    a, b = Scaled(2), Scaled(3)
    x = torch.arange(3.0)
    assert torch.equal(a.step_core(x), x * 2) and torch.equal(b.step_core(x), x * 3)
    assert len(installed.graphs()) == 2 and installed.stats["own_graphs"] == 2
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None and len(installed.graphs()) == 1


def test_dropped_instances_are_not_kept_alive(fresh_solver_class, monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    func = Field()
    installed = graph_method(Solver, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    refs = []
    for i in range(4):
        _, solver = solve(func, _inputs(i)[0], 1e-3)
        refs.append(weakref.ref(solver))
        installed.eager(Solver(func, _inputs(i)[0], 1e-3))  # an eager twin, dropped at once
        del solver
    gc.collect()
    assert all(r() is None for r in refs) and installed._eager == {}
    assert _captures(installed) == 1


def test_tensors_sharing_memory_that_the_method_writes_run_eagerly(monkeypatch):
    simulate_cuda_graphs(monkeypatch)

    class Views:
        def __init__(self):
            base = torch.zeros(2)
            self.a, self.b = base[0], base[0]  # two views of one element (torchdiffeq's `t[0]` twice)

        def step_core(self, x):
            self.a.add_(x)
            return self.b + 0

    installed = graph_method(Views, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    for v in (Views(), Views()):
        outs = [float(v.step_core(torch.tensor(1.0))) for _ in range(3)]
        assert outs == [1.0, 2.0, 3.0]
    assert installed.graphs() == []


@pytest.mark.cuda
def test_instances_built_per_call_share_one_cuda_graph(fresh_solver_class):
    func = Field().cuda()
    installed = graph_method(Solver, "step_core", shared=True, batched=[])
    for i in range(5):
        y0, rtol = (v.cuda() if isinstance(v, torch.Tensor) else v for v in _inputs(i))
        got, solver = solve(func, y0, rtol)
        twin, y = _eager_twin(installed, func, y0, rtol)
        torch.testing.assert_close(got, y)
        assert float(solver.steps) == 3.0
    assert isinstance(installed.graphs()[0], GraphedCallable) and _captures(installed) == 1


def test_one_instance_called_again_reads_what_it_holds_now(fresh_solver_class, monkeypatch):
    """The buffers are not filled again for the instance last replayed, unless its tensors changed:
    written in place (a version counter) or rebound."""
    simulate_cuda_graphs(monkeypatch)
    func = Field()
    installed = graph_method(Solver, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    solver, twin = Solver(func, torch.ones(4, 3), 1e-3), Solver(func, torch.ones(4, 3), 1e-3)
    installed.eager(twin)
    y, y_twin, dt = torch.ones(4, 3), torch.ones(4, 3), torch.tensor(0.1)
    changes = [lambda s: None, lambda s: s.scale.mul_(2.0), lambda s: None,
               lambda s: setattr(s, "scale", torch.full((4, 3), 0.5)), lambda s: None]
    with torch.no_grad():
        for change in changes:
            change(solver), change(twin)
            y, y_twin = solver.step_core(y, dt), twin.step_core(y_twin, dt)
            assert torch.allclose(y, y_twin, atol=1e-6)
    assert installed.stats["replays"] == len(changes) - 1 and float(solver.steps) == len(changes)


def test_eagerly_runs_every_instance_eagerly(fresh_solver_class, monkeypatch):
    simulate_cuda_graphs(monkeypatch)
    installed = graph_method(Solver, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    with installed.eagerly():
        for i in range(3):
            solve(Field(), _inputs(i)[0], 1e-3)
    assert installed.stats["probes"] == 0 and installed.graphs() == []


def test_an_attribute_read_on_another_path_widens_the_layout(monkeypatch):
    """The layout is what the probes saw read; an instance whose call reads more (another branch on a
    Python value) drops the layouts made without it, so no graph replays without copying it."""
    simulate_cuda_graphs(monkeypatch)

    class Mixer:
        def __init__(self, mode, seed):
            generator = torch.Generator().manual_seed(seed)
            self.mode, self.x, self.y = mode, torch.randn(3, generator=generator), torch.randn(3, generator=generator)

        def step_core(self, v):
            return v * self.x if self.mode == "x" else v + self.y

    installed = graph_method(Mixer, "step_core", shared=True, batched=[], backend="cuda", nvtx_ranges=False)
    raw = Mixer.__dict__["step_core"].function
    for seed, mode in enumerate("xxyyxxyx"):
        m = Mixer(mode, seed)
        for _ in range(2):
            assert torch.allclose(m.step_core(torch.ones(3)), raw(Mixer(mode, seed), torch.ones(3)))
    assert installed.shared.reads == {"mode", "x", "y"} and len(installed.graphs()) == 2
