"""`graph` on a function whose solve loop is in what it calls: a solver class picked from a dict
and built per call (torchdiffeq's odeint), its `_advance` looping `while t > self.t1:` (device
data). The method the loop body calls is graphed on its class with graph_method (graph_loop.py:
plan_callee_loop); which solver runs comes from the run-time facts. The program wired as
printed, on the CPU stand-in for CUDA graphs, solves as the original over several calls."""

from __future__ import annotations

import gc
import importlib
import json
import re
import sys
import textwrap
import weakref

import pytest
import torch

from graphsafe.cli import main as graphsafe_main
from graphsafe.runtime.trace_cli import main as trace_main
from tests.runtime.cpu_graph import simulate_cuda_graphs

pytestmark = pytest.mark.usefixtures("cpu_only_tracer")

SOLVERS = textwrap.dedent('''\
    import torch


    class AdaptiveSolver:
        def __init__(self, func, y0, rtol):
            self.func = func
            self.y0 = y0
            self.rtol = rtol

        def integrate(self, t):
            solution = torch.empty(len(t), *self.y0.shape, dtype=self.y0.dtype)
            solution[0] = self.y0
            self.state = (self.y0, t[0], torch.full_like(t[0], 0.05))
            for i in range(1, len(t)):
                solution[i] = self._advance(t[i])
            return solution

        def _advance(self, next_t):
            n_steps = 0
            while next_t > self.state[1]:
                assert n_steps < 10000, "too many steps"
                self.state = self._step(self.state)
                n_steps += 1
            return self.state[0]

        def _step(self, state):
            y, t0, dt = state
            k = self.func(t0, y)
            error = (self.func(t0 + dt, y + dt * k) - k).abs().amax() * dt
            accept = error <= self.rtol
            y1 = torch.where(accept, y + dt * k, y)
            t1 = torch.where(accept, t0 + dt, t0)
            dt_next = torch.where(accept, dt * 1.5, dt * 0.5).clamp(1e-3, 0.2)
            return y1, t1, dt_next


    class EventSolver(AdaptiveSolver):
        def integrate(self, t):
            y = torch.as_tensor(self.y0)
            while y.norm() < 10:
                y = self._event_step(y)
            return y[None]

        def _event_step(self, y):
            return y * 1.1
''')

ODEINT = textwrap.dedent('''\
    from .solvers import AdaptiveSolver, EventSolver

    SOLVERS = {"adaptive": AdaptiveSolver, "event": EventSolver}


    def odeint(func, y0, t, rtol=1e-3, method="adaptive"):
        solver = SOLVERS[method](func=func, y0=y0, rtol=rtol)
        return solver.integrate(t)
''')

RUN = textwrap.dedent('''\
    import torch

    from odepkg.odeint import odeint


    class Field(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))

        def forward(self, t, y):
            return self.net(y) - 0.5 * y


    def solves(calls):
        func = Field()
        t = torch.linspace(0.0, 1.0, 4)
        with torch.no_grad():
            return [odeint(func, torch.randn(5, 3, generator=torch.Generator().manual_seed(i)), t)
                    for i in range(calls)]


    if __name__ == "__main__":
        solves(3)
''')

REGION = "odepkg/odeint.py::odeint"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    package = tmp_path / "odepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "solvers.py").write_text(SOLVERS)
    (package / "odeint.py").write_text(ODEINT)
    (tmp_path / "run.py").write_text(RUN)
    yield tmp_path
    for name in [m for m in sys.modules if m == "odepkg" or m.startswith("odepkg.") or m == "run"]:
        del sys.modules[name]


def graph(capsys, *extra: str) -> tuple[int, dict, str]:
    """`graph --json` without writing: (exit code, its summary, the patch)."""
    code = graphsafe_main(["graph", ".", "--region", REGION, "--no-cache", "--json", "--diff", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, json.loads(err), out


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(SOLVERS.splitlines(), 1) if text in line)


def test_without_facts_two_solver_loops_are_refused_naming_both(project, capsys):
    _, summary, _ = graph(capsys)
    refusal = next(n for n in summary["notes"] if "loops that exit on device data" in n)
    assert f"AdaptiveSolver._advance (odepkg/solvers.py:{line_of('while next_t')})" in refusal
    assert f"EventSolver.integrate (odepkg/solvers.py:{line_of('while y.norm()')})" in refusal
    assert "--facts" in refusal
    assert summary["core"] != "AdaptiveSolver._step"


def test_a_loop_body_calling_two_functions_is_refused_naming_them(project, capsys):
    two = SOLVERS.replace("self.state = self._step(self.state)", "self.state = self._step(self._warm(self.state))")
    two = two.replace("    def _step(self, state):", "    def _warm(self, state):\n        return state\n\n    def _step(self, state):")
    (project / "odepkg" / "solvers.py").write_text(two)
    (project / "odepkg" / "odeint.py").write_text(ODEINT.replace(', "event": EventSolver', ""))
    _, summary, _ = graph(capsys)
    refusal = next(n for n in summary["notes"] if "not one function to graph" in n)
    assert "AdaptiveSolver._advance exits on device data" in refusal
    assert "its body calls AdaptiveSolver._step, AdaptiveSolver._warm" in refusal \
        or "its body calls AdaptiveSolver._warm, AdaptiveSolver._step" in refusal


def test_with_one_solver_the_loop_is_found_without_facts(project, capsys):
    (project / "odepkg" / "odeint.py").write_text(ODEINT.replace(', "event": EventSolver', ""))
    _, summary, _ = graph(capsys)
    assert summary["wire"] == {"module": "odepkg.solvers", "owner": "AdaptiveSolver", "name": "_step"}
    assert not any("the traced run saw" in n for n in summary["notes"])
    assert any("odeint reaches a loop in AdaptiveSolver._advance" in n for n in summary["notes"])


def test_with_facts_the_loop_the_run_took_is_found_and_its_body_method_wired_on_its_class(project, capsys):
    trace_main(["--save-facts", "--region", REGION, "run.py"])
    capsys.readouterr()
    code = graphsafe_main(["graph", ".", "--region", REGION, "--no-cache"])
    text, _ = capsys.readouterr()
    loop = line_of("while next_t")
    assert f"odeint reaches a loop in AdaptiveSolver._advance that exits on device data (line {loop})" in text
    assert "the traced run saw it exit on the device" in text
    assert "AdaptiveSolver._step, which its body calls, is graphed" in text
    assert f"the rest of its body (line {loop + 1}, {loop + 2}, {loop + 3}) run eagerly" in text
    assert "graph_method(AdaptiveSolver, '_step', shared=True)" in text
    assert code == 0


def test_the_program_wired_as_printed_solves_as_the_original_over_several_calls(project, capsys, monkeypatch):
    trace_main(["--save-facts", "--region", REGION, "run.py"])
    capsys.readouterr()
    _, summary, _ = graph(capsys)
    wire = summary["wire"]
    assert (wire["module"], wire["owner"], wire["name"]) == ("odepkg.solvers", "AdaptiveSolver", "_step")
    graphsafe_main(["graph", ".", "--region", REGION, "--no-cache"])  # writes the files, prints the wiring
    wiring = re.search(r"graph_method\((\w+), '(\w+)'", capsys.readouterr()[0])
    assert wiring.groups() == ("AdaptiveSolver", "_step")
    for name in [m for m in sys.modules if m.startswith("odepkg")]:
        del sys.modules[name]
    run = importlib.import_module("run")
    want = run.solves(4)

    simulate_cuda_graphs(monkeypatch)
    from graphsafe.runtime.graphed import graph_method

    solvers = importlib.import_module(wire["module"])
    installed = graph_method(getattr(solvers, wire["owner"]), wire["name"], nvtx_ranges=False,  # no NVTX on the CPU
                             **summary["options"])
    built, alive = solvers.AdaptiveSolver.__init__, []

    def noting(self, *args, **kwargs):
        built(self, *args, **kwargs)
        alive.append(weakref.ref(self))

    monkeypatch.setattr(solvers.AdaptiveSolver, "__init__", noting)
    got = run.solves(4)
    for a, b in zip(want, got):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    graphs = installed.graphs()
    assert sum(len(g.capture_seconds) for g in graphs) == 1  # one graph for every solver of the 4 calls
    assert sum(g.stats["replays"] for g in graphs) > 8
    gc.collect()
    assert len(alive) == 4 and not any(r() is not None for r in alive)

