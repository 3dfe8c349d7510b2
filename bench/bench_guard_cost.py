"""What a baked host read costs per call (runtime/host_read_guards.py): the same graphed region with
and without a `torch.equal` branch, on a CUDA device. The guard adds a few kernels to the graph
and one device-to-host read of its flag after each replay (which waits for the replay to finish).

    python bench/bench_guard_cost.py [--calls 2000] [--ops 20] [--size 256]

Prints milliseconds per call (wall clock, synchronized at the end of each timing loop) for: the
region without the read, the region with the guarded read, and the eager region with the read.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from graphsafe.runtime import graphed


def _region(ops: int, read: bool):
    def region(x1, x2):
        same = torch.equal(x1, x2) if read else True  # gpytorch's kernel.py:340
        y = x1
        for _ in range(ops):
            y = torch.tanh(y * 1.01 + 0.1)
        return y if same else y + x2

    return region


def _ms_per_call(fn, args, calls: int) -> float:
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - started) / calls * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    x = torch.randn(args.size, args.size, device="cuda")
    plain = graphed(_region(args.ops, False), batched=[])
    guarded = graphed(_region(args.ops, True), batched=[])
    rows = {
        "graphed, no read": _ms_per_call(plain, (x, x), args.calls),
        "graphed, guarded torch.equal": _ms_per_call(guarded, (x, x), args.calls),
        "eager, torch.equal": _ms_per_call(_region(args.ops, True), (x, x), args.calls),
    }
    assert guarded.stats["fallbacks"] == 0, guarded.stats
    print(json.dumps({"ms_per_call": {k: round(v, 4) for k, v in rows.items()}, "ops": args.ops,
                      "size": args.size, "calls": args.calls, "device": torch.cuda.get_device_name()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
