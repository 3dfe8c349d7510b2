"""CPU time of graph_method's per-call layout check (shared_method.instance_state) on torchdiffeq's
solver, as odeint() builds it: the attributes its step reads, walked on every call of the step.

    # TREE: a directory holding torchdiffeq (e.g. ~/.cache/graphsafe-real/src/torchdiffeq-0.2.5);
    # numpy/scipy from the real_e2e CPU site. Compare two checkouts back to back (same machine load):
    PYTHONPATH=$PWD:~/.cache/graphsafe-real/cpu-site-py311 python bench/real_e2e/shared_layout_cost.py TREE
"""
from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    import torch
    from torchdiffeq._impl.misc import _check_inputs
    from torchdiffeq._impl.odeint import SOLVERS

    from bench.real_e2e.steps.torchdiffeq_odeint import BATCH, DIM, ODEFunc
    from graphsafe.runtime.shared_method import attribute_reads, instance_state

    torch.manual_seed(0)
    y0, t = torch.randn(BATCH, DIM), torch.linspace(0, 1, 5)
    _, func, y0, t, rtol, atol, method, options, _, _ = _check_inputs(ODEFunc(), y0, t, 1e-5, 1e-6, None, None, None,
                                                                      SOLVERS)
    solver = SOLVERS[method](func=func, y0=y0, rtol=rtol, atol=atol, **options)
    solver._before_integrate(t)
    with attribute_reads(solver) as reads:  # the layout is what the step reads, as the probe records it
        solver._adaptive_step(solver.rk_state)
    only = frozenset(reads & set(vars(solver)))
    for _ in range(200):
        instance_state(solver, only=only)
    rounds = []
    for _ in range(args.rounds):  # the least loaded round: other processes only ever add time
        started = time.process_time()
        for _ in range(args.calls):
            instance_state(solver, only=only)
        rounds.append((time.process_time() - started) / args.calls * 1e6)
    print(f"layout check on {type(solver).__name__} ({len(only)} attributes read): {min(rounds):.1f} us CPU per call "
          f"(least of {args.rounds} rounds of {args.calls})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
