"""pyro_svi's graph variant through graphed(train=True, backend="eager") on the CPU, against the
original package run eagerly: the worker's wiring (graph_method on SVI.step_core), N steps with the
inputs changing, the returned losses and the parameter store compared after each. Pyro's store is
process-global, so the two runs are one after the other (same seed), not side by side.
Shows the optimizers PyroOptim builds on the first step being found after the warm-up (capturable
needs a GPU) and the state that warm-up made undone.

    PYTHONPATH=$PWD python bench/real_e2e/pyro_graphed_cpu.py GRAPH_TREE ORIG_TREE [--steps 6]

GRAPH_TREE and ORIG_TREE: OUT/scratch/pyro_svi/{graph,orig} of `run.py --device cpu --steps pyro_svi`.
Each run is a fresh process (the two trees are the same package names).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CACHE = os.path.expanduser("~/.cache/graphsafe-real")


def run(tree: str, steps: int, graph: bool) -> dict:
    sys.path[:0] = [tree, f"{CACHE}/cpu-site-py311"]
    import torch

    from bench.real_e2e.steps import pyro_svi

    wired = None
    if graph:
        from pyro.infer.svi import SVI

        from graphsafe.runtime.graphed import graph_method

        wired = graph_method(SVI, "step_core", train=True, backend="eager")
    from graphsafe.runtime.graphed import GraphedInputError

    built = pyro_svi.build("cpu", 0)
    losses, states = [], []
    try:
        for i in range(steps):
            losses.append(built.step(*built.inputs(i)))
            states.append({k: v.flatten().tolist() for k, v in built.state().items()})
    except GraphedInputError as error:  # graphed() refused the step: what it said is the result
        return {"refused": str(error)}
    out = {"losses": losses, "states": states}
    if wired is not None:
        held = next(g for _, g in wired._graphed.values())
        out["stats"] = held.stats
        out["optimizers"] = [f"{type(o).__name__} capturable={o.param_groups[0].get('capturable')}"
                             for o in held.optimizers]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph_tree")
    parser.add_argument("orig_tree")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--one", choices=["graph", "orig"], help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        tree = options.graph_tree if options.one == "graph" else options.orig_tree
        print(json.dumps(run(tree, options.steps, options.one == "graph")))
        return 0
    results = {}
    for which in ("graph", "orig"):
        done = subprocess.run([sys.executable, __file__, options.graph_tree, options.orig_tree, "--steps",
                               str(options.steps), "--one", which], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{which} run failed:\n{done.stderr[-3000:]}")
            return 2
        results[which] = json.loads(done.stdout.strip().splitlines()[-1])
    graph, orig = results["graph"], results["orig"]
    if "refused" in graph:
        print(f"graphed refused the step: {graph['refused']}")
        return 1
    equal = True
    for i, (a, b) in enumerate(zip(graph["losses"], orig["losses"])):
        same_loss, same_state = a == b, graph["states"][i] == orig["states"][i]
        equal &= same_loss and same_state
        print(f"step {i}: loss {a!r} eager {b!r} ({'bitwise' if same_loss else 'DIFFERENT'}); "
              f"parameters {'bitwise' if same_state else 'DIFFERENT'}")
    print("graphed stats", graph["stats"], "optimizers found:", len(graph["optimizers"]),
          sorted(set(graph["optimizers"])))
    return 0 if equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
