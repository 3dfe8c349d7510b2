"""gpytorch_svgp's loss region through graphed(backend="eager") on the CPU, against an eager twin:
the GPU worker's wiring (graph_method on the region's class, the twin's instance left eager), 6 steps
with the inputs changing, loss, state and CPU RNG compared bitwise after each; then the host reads
the simulated capture baked (runtime/host_read_guards.py) and the guards' fallbacks.

    PYTHONPATH=$PWD python bench/real_e2e/gpytorch_graphed_cpu.py [--steps 6]

Needs the CPU site and sources bench/real_e2e/run.py unpacks (~/.cache/graphsafe-real).
"""

from __future__ import annotations

import argparse
import os
import sys

CACHE = os.path.expanduser("~/.cache/graphsafe-real")
sys.path[:0] = [f"{CACHE}/src/gpytorch-1.15.2", f"{CACHE}/cpu-site-py311"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    options = parser.parse_args()
    import torch
    from gpytorch.mlls._approximate_mll import _ApproximateMarginalLogLikelihood as Region

    from bench.real_e2e.steps import gpytorch_svgp
    from graphsafe.runtime.graphed import graph_method

    installed = graph_method(Region, "forward", backend="eager")
    a, b = gpytorch_svgp.build("cpu", 0), gpytorch_svgp.build("cpu", 0)
    for cell in b.step.__closure__:
        if isinstance(cell.cell_contents, Region):
            installed.eager(cell.cell_contents)
    equal = True
    for i in range(options.steps):
        (xa, ya), (xb, yb) = a.inputs(i), b.inputs(i)
        rng = torch.get_rng_state()
        loss_a, rng_a = a.step(xa, ya), torch.get_rng_state()
        torch.set_rng_state(rng)
        loss_b, rng_b = b.step(xb, yb), torch.get_rng_state()
        state_a, state_b = a.state(), b.state()
        same = (torch.equal(loss_a, loss_b) and torch.equal(rng_a, rng_b)
                and all(torch.equal(state_a[k], state_b[k]) for k in state_a))
        equal &= same
        print(f"step {i}: loss {loss_a.item():.6f} eager {loss_b.item():.6f} {'bitwise' if same else 'DIFFERENT'}")
    graphed_region = installed.graphs()[0]
    print("stats", graphed_region.stats, "layouts", len(graphed_region._autograd_layouts))
    for graphs in graphed_region._autograd_layouts.values():
        for site in graphs.guards.sites.values():
            print(f"  baked {site.read} at {site.where}: warm-up values {site.values}")
    return 0 if equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
