"""Host work that keeps host state and makes a core input (rewriters/host_inputs.py, HOST_STATE):
a stateful noise object called in a solver step (per-query host numbers, a history list, a
counter, a generator seeded per query on the host) moves to the wrapper; the run-time call edge
that reaches it names the line of its call (analyzer/callgraph.py); the rewritten step computes
what the original computed, step after step, also through graphed()'s static buffers (CPU,
backend="eager"); what cannot move says which line and why."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import torch

from graphsafe.analyzer.callgraph import _observed_call_line
from graphsafe.analyzer.engine import check_paths
from graphsafe.analyzer.facts import CallRef
from graphsafe.analyzer.run_facts import function_hashes
from graphsafe.config import Settings
from graphsafe.rewriters.boundary import split_region
from graphsafe.rewriters.host_inputs import host_inputs
from tests.helpers import run_cli

NOISE = textwrap.dedent('''\
    import warnings

    import torch


    class Brownian:
        def __init__(self, size, seed):
            self.size = size
            self.seed = seed
            self.history = []
            self.queries = 0

        def __call__(self, ta, tb):
            ta = float(ta)
            tb = float(tb)
            if self.history and ta < self.history[-1][1]:
                warnings.warn("a query before the last one")
            self.queries += 1
            self.history.append((ta, tb))
            generator = torch.Generator().manual_seed(self.seed + self.queries)
            return torch.randn(self.size, generator=generator) * (tb - ta) ** 0.5
''')

SOLVER = textwrap.dedent('''\
    import torch


    class Solver:
        def __init__(self, weight, bm):
            self.weight = weight
            self.bm = bm

        def drift(self, y):
            return torch.tanh(y @ self.weight)

        def step(self, t0, t1, y0):
            dt = t1 - t0
            dw = self.bm(t0, t1)
            return y0 + self.drift(y0) * dt + dw
''')
NOISE_LINE = SOLVER.splitlines().index("        dw = self.bm(t0, t1)") + 1
REACHED = {NOISE_LINE: {"GS301", "GS302", "GS501", "GS503"}}  # what the noise object's __call__ reports


def _project(root: Path, solver: str = SOLVER) -> Path:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "noise.py").write_text(NOISE)
    (root / "pkg" / "solver.py").write_text(solver)
    digest = sorted(function_hashes(solver)["Solver.step"])[0]
    facts = root / "facts.json"  # what `graphsafe trace --save-facts` records: the call the run saw
    facts.write_text(json.dumps({"version": 1, "root": ".", "files": {"pkg/solver.py": {"functions": {"Solver.step": {
        "line": 12, "source_hash": digest, "values": {}, "calls": ["pkg/noise.py::Brownian.__call__"]}}}}}))
    return facts


def _run(solver_source: str, steps: int = 6, wrap=None) -> tuple[list[torch.Tensor], list]:
    noise: dict = {"__name__": "noise"}
    exec(compile(NOISE, "<noise>", "exec"), noise)
    solver_ns: dict = {"__name__": "solver"}
    exec(compile(solver_source, "<solver>", "exec"), solver_ns)
    bm = noise["Brownian"]((4, 3), seed=7)
    solver = solver_ns["Solver"](torch.randn(3, 3, generator=torch.Generator().manual_seed(1)), bm)
    if wrap is not None:
        wrap(solver)
    y = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    outputs = []
    for i in range(steps):  # the times change every step, as a solver's loop passes them
        y = solver.step(torch.tensor(i * 0.1), torch.tensor((i + 1) * 0.1), y)
        outputs.append(y.clone())
    return outputs, list(bm.history)


def test_a_run_time_call_edge_names_the_line_of_the_call_static_analysis_left_open(tmp_path):
    facts = _project(tmp_path)
    settings = Settings(root=tmp_path, regions=("pkg/solver.py::Solver.step",), pattern_regions_only=True,
                        facts_file=facts)
    result = check_paths([tmp_path], settings, use_cache=False)
    reached = {d.code: d.call_sites[0].line for d in result.diagnostics if len(d.chain) > 1}
    assert reached == {"GS501": NOISE_LINE, "GS302": NOISE_LINE, "GS503": NOISE_LINE}


def test_an_observed_call_two_open_calls_could_be_names_no_line():
    sites = [(CallRef("self", "bm"), 14, []), (CallRef("self", "drift"), 15, [])]
    assert _observed_call_line("pkg.noise.Brownian.__call__", sites) == 0
    assert _observed_call_line("pkg.noise.Brownian.__call__", sites[:1]) == 14
    # an abstract base's method that static analysis found, overridden by the class the run saw
    based = [(CallRef("self", "bm"), 14, ["pkg.base.Base.__call__"]), (CallRef("prop", "sde"), 15, [])]
    assert _observed_call_line("pkg.noise.Brownian.__call__", based) == 14
    assert _observed_call_line("pkg.noise.Brownian.sample", based) == 0


def test_a_stateful_host_sampler_moves_to_the_wrapper_and_the_core_takes_its_value():
    result = host_inputs(SOLVER, "Solver.step", {}, REACHED)
    assert set(result.producers) == {NOISE_LINE} and not result.refused
    assert result.moved[0][0] == NOISE_LINE and "keeps host state" in result.moved[0][1]
    split = split_region(result.source, "Solver.step", dict(result.producers), {}, REACHED, result.producers)
    wrapper, core = split.source.split("def step_core")
    assert "dw = self.bm(t0, t1)\n        _result = self.step_core(t0, t1, y0, dw)" in wrapper
    assert "self.bm" not in core and split.core_parameters == ["t0", "t1", "y0", "dw"]


def test_the_moved_sampler_draws_what_the_original_drew_step_after_step_through_graphed_buffers():
    from graphsafe.runtime.graphed import graphed

    result = host_inputs(SOLVER, "Solver.step", {}, REACHED)
    split = split_region(result.source, "Solver.step", dict(result.producers), {}, REACHED, result.producers)
    before, history = _run(SOLVER)
    plain, plain_history = _run(split.source)
    graphed_outputs, graphed_history = _run(split.source, wrap=lambda s: setattr(
        s, "step_core", graphed(s.step_core, backend="eager")))
    assert all(torch.equal(a, b) for a, b in zip(before, plain)) and plain_history == history
    assert all(torch.equal(a, b) for a, b in zip(before, graphed_outputs)) and graphed_history == history
    assert not torch.equal(before[0], before[1])  # the noise changes every step


def test_graph_with_the_run_time_call_edge_moves_the_sampler_and_lists_nothing(tmp_path, capsys, monkeypatch):
    facts = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "graph", ".", "--region", "pkg/solver.py::Solver.step", "--facts", str(facts),
                           "--no-cache")
    text = (tmp_path / "pkg" / "solver.py").read_text()
    assert code == 0, out
    assert f"pkg/solver.py:{NOISE_LINE}: the value made here by host work that keeps host state" in out
    assert "nothing static blocks capture any more" in out and "step_core = graphed(" in out
    before, history = _run(SOLVER)
    after, after_history = _run(text)
    assert all(torch.equal(a, b) for a, b in zip(before, after)) and after_history == history


def test_host_state_after_a_call_in_the_core_stays_and_says_which_line():
    source = SOLVER.replace("        dt = t1 - t0\n", "        dt = self.drift(y0)\n")
    result = host_inputs(source, "Solver.step", {}, REACHED)
    assert not result.producers and result.source == source
    assert result.refused == [(NOISE_LINE, f"host work that keeps host state stays in the core: line {NOISE_LINE - 1} "
                                           "calls `self.drift` before it in the core; the wrapper would run this "
                                           "first, and random draws of the two from one stream would come in the "
                                           "other order")]


def test_host_state_in_a_region_with_a_backward_stays():
    trained = "        out = y0 + self.drift(y0) * dt + dw\n        out.sum().backward()\n        return out\n"
    source = SOLVER.replace("        return y0 + self.drift(y0) * dt + dw\n", trained)
    result = host_inputs(source, "Solver.step", {}, REACHED)
    assert not result.producers and "the region runs a backward" in result.refused[0][1]


def test_host_state_beside_tensor_work_in_its_reach_stays_with_the_code():
    result = host_inputs(SOLVER, "Solver.step", {}, {NOISE_LINE: {"GS503", "GS201"}})
    assert not result.producers
    assert result.refused == [(NOISE_LINE, "host work that keeps host state stays in the core: what it reaches also "
                                           "has GS201: tensor work, which the core keeps")]


def test_a_counter_alone_is_left_to_the_callee_state_rewrite():
    result = host_inputs(SOLVER, "Solver.step", {}, {NOISE_LINE: {"GS302", "GS301"}})
    assert not result.producers and not result.refused and result.source == SOLVER


def test_a_core_that_deletes_a_parameter_takes_it_as_a_parameter():
    source = SOLVER.replace("        dt = t1 - t0\n", "        del extra\n        dt = t1 - t0\n").replace(
        "def step(self, t0, t1, y0):", "def step(self, t0, t1, y0, extra):")
    result = host_inputs(source, "Solver.step", {}, {NOISE_LINE + 1: REACHED[NOISE_LINE]})
    split = split_region(result.source, "Solver.step", dict(result.producers), {}, {}, result.producers)
    assert split.core_parameters == ["t0", "t1", "y0", "extra", "dw"]
