"""torchdiffeq's `odeint()` with the solver's step core wired by graph_method: every call builds a new
solver, and all of them share one graph (runtime/shared_method.py). Compares each solve with the
eager one and counts probes, captures, replays, and the solvers still alive after gc.

    # TREE: a torchdiffeq tree `graphsafe graph` split, e.g. OUT/scratch/torchdiffeq_dopri5/graph
    # (its RKAdaptiveStepsizeODESolver has _adaptive_step_core); on the CPU, CUDA graphs are
    # simulated (tests/runtime/cpu_graph.py) and numpy/scipy come from the real_e2e CPU site
    PYTHONPATH=$PWD:~/.cache/graphsafe-real/cpu-site-py311 python bench/real_e2e/odeint_shared_method.py TREE
    python bench/real_e2e/odeint_shared_method.py TREE --device cuda
    # wired as `graphsafe graph --region torchdiffeq/_impl/odeint.py::odeint --facts ... --json` printed it
    # (OUT/results.json of run.py, the torchdiffeq_odeint row's "graph"): its class, core and options
    python bench/real_e2e/odeint_shared_method.py OUT/scratch/torchdiffeq_odeint/graph --wiring OUT/results.json
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import weakref


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", help="a directory holding the torchdiffeq package to run")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--wiring", help="graph's --json summary, or run.py's results.json: wire what it names")
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    import torch

    if args.device == "cpu":
        import pytest

        from tests.runtime.cpu_graph import simulate_cuda_graphs

        simulate_cuda_graphs(pytest.MonkeyPatch())
    import torchdiffeq
    from torchdiffeq import odeint
    from torchdiffeq._impl.rk_common import RKAdaptiveStepsizeODESolver

    from bench.real_e2e.steps.torchdiffeq_odeint import BATCH, DIM, ODEFunc
    from graphsafe.runtime.graphed import graph_method

    print("torchdiffeq from", torchdiffeq.__file__)
    if args.wiring:
        owner, core, options = wiring_from(args.wiring)
        print(f"wired as graph printed: graph_method({owner.__qualname__}, {core!r}, **{options})")
        installed = graph_method(owner, core, nvtx_ranges=args.device != "cpu", **options)
    else:
        core = "_adaptive_step_core" if "_adaptive_step_core" in vars(RKAdaptiveStepsizeODESolver) else "_adaptive_step"
        installed = graph_method(RKAdaptiveStepsizeODESolver, core, batched=[], nvtx_ranges=False, shared=True)
    solvers: list = []
    built = RKAdaptiveStepsizeODESolver.__init__

    def noting(self, *a, **k):
        built(self, *a, **k)
        solvers.append(weakref.ref(self))

    RKAdaptiveStepsizeODESolver.__init__ = noting
    torch.manual_seed(0)
    func = ODEFunc().to(args.device)
    t = torch.linspace(0.0, 1.0, 5, device=args.device)

    def y0(i: int):
        return torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(i)).to(args.device)

    def timed(run) -> tuple:
        if args.device != "cpu":
            torch.cuda.synchronize()
        started = time.perf_counter()
        out = run()
        if args.device != "cpu":
            torch.cuda.synchronize()
        return out, (time.perf_counter() - started) * 1000

    worst = 0.0
    eager_ms, graph_ms = [], []
    with torch.no_grad():
        for i in range(args.calls):
            with installed.eagerly():
                want, ms = timed(lambda: odeint(func, y0(i), t, rtol=1e-5, atol=1e-6))
            eager_ms.append(ms)
            got, ms = timed(lambda: odeint(func, y0(i), t, rtol=1e-5, atol=1e-6))
            graph_ms.append(ms)
            difference = float((got - want).abs().max())
            worst = max(worst, difference)
            print(f"call {i}: max abs vs eager {difference:.3g}, eager {eager_ms[-1]:.1f} ms, graphed {ms:.1f} ms")
    gc.collect()
    graphs = installed.graphs()
    print(f"{core}: {installed.stats}; captures {sum(len(g.capture_seconds) for g in graphs)}; "
          f"replays {sum(g.stats['replays'] for g in graphs)}; solvers alive {sum(r() is not None for r in solvers)} "
          f"of {len(solvers)}; median ms after the first 2 calls: eager {statistics.median(eager_ms[2:] or eager_ms):.1f}, "
          f"graphed {statistics.median(graph_ms[2:] or graph_ms):.1f}")
    return 0 if worst <= 1e-4 else 1


def wiring_from(path: str) -> tuple:
    """(class, core name, options) from graph's JSON summary or run.py's results (the odeint row)."""
    import importlib
    import json

    data = json.load(open(path))
    if "rows" in data:
        data = next(r["graph"] for r in data["rows"] if r["step"] == "torchdiffeq_odeint")
    wire = data["wire"]
    owner = importlib.import_module(wire["module"])
    for part in wire["owner"].split(".") if wire["owner"] else ():
        owner = getattr(owner, part)
    return owner, wire["name"], data.get("options", {})


if __name__ == "__main__":
    raise SystemExit(main())
