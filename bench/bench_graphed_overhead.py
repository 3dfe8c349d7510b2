"""graphed()'s per-call cost on the host: input checks, copies into the static buffers, output
clones — everything but the replay (CPU seconds per call; the replay itself is replaced by a no-op,
so this runs on any machine).

    python bench/bench_graphed_overhead.py [--calls 20000]

Shapes: a decode-like call (3 tensors and a per-step number), a training-like call (2 batched
tensors), a call with a dict of tensors (a KV cache); each against a plain Python call of the same
function (the floor of any wrapper).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from graphsafe.runtime import graphed


def _cases():
    x, y, cache = torch.randn(8, 16), torch.randn(8, 16), torch.zeros(8, 16)

    def decode(tokens, hidden, kv, temperature):
        return tokens

    def train(inputs, targets):
        return inputs.sum()

    def with_dict(inputs, state):
        return inputs

    return [
        ("decode: 3 tensors + numbers=", decode, (x, y, cache, 1.0), {"numbers": [3]}, (x, y, cache, 0.5)),
        ("train: 2 batched tensors", train, (x, y), {"pad": False}, (x, y)),
        ("dict of 4 tensors", with_dict, (x, {"k": cache, "v": cache.clone(), "pos": torch.zeros(8, 1),
                                              "mask": torch.ones(8, 16)}), {}, None),
    ]


def per_call_us(fn, args, calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        fn(*args)
    return (time.process_time() - started) / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    rows = []
    for name, fn, sample, options, call in _cases():
        call = call or sample
        g = graphed(fn, sample, backend="eager", **options)
        for entry in g.graphs.values():
            entry.graph.replay = lambda: None  # time the input/output handling only
        per_call_us(g, call, 200)  # warm
        rows.append({"case": name, "graphed_us": round(per_call_us(g, call, args.calls), 2),
                     "plain_us": round(per_call_us(fn, call, args.calls), 2)})
    print(json.dumps({"torch": torch.__version__, "calls": args.calls, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
