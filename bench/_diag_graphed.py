"""One-off GPU diagnostic: where the time of a make_graphed_callables step goes (finished moe_router).

    PYTHONPATH=. python3 bench/_diag_graphed.py

Times forward+backward eagerly and through make_graphed_callables, host and device separately
(CPU wall time per call with a sync every call vs. back-to-back CUDA events), to tell a host-bound
step (Python/autograd overhead the graph cannot remove) from a launch-bound one.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.finish import finished_copy  # noqa: E402
from tests.golden import CORPUS  # noqa: E402


def timed(fn, n=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    host = (time.perf_counter() - t0) / n * 1e3
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n, host


def main() -> None:
    root = Path(tempfile.mkdtemp())
    folder = finished_copy(CORPUS / "moe_router", root)
    sys.path.insert(0, str(folder))
    import capture  # noqa: E402

    target = capture.make("cuda")
    model, args = target["step"], target["args"]
    leaves = [args[0]] + list(model.parameters())

    def step(fn):
        def run():
            for leaf in leaves:
                leaf.grad = None
            out, aux = fn(*args)
            torch.autograd.backward([out, aux], [torch.ones_like(out), torch.ones_like(aux)])
        return run

    def forward_only(fn):
        def run():
            with torch.no_grad():
                fn(*args)
        return run

    print("eager fwd+bwd: device %.3f ms/call, host %.3f ms/call" % timed(step(model)))
    print("eager fwd (no grad): device %.3f, host %.3f" % timed(forward_only(model)))
    graphed = torch.cuda.make_graphed_callables(model, args, num_warmup_iters=3)
    print("graphed fwd+bwd: device %.3f ms/call, host %.3f ms/call" % timed(step(graphed)))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step(graphed)()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    print(f"graphed step: {len(kernels)} device events, {sum(e.device_time for e in kernels) / 1e3:.3f} ms device time")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step(model)()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    print(f"eager step: {len(kernels)} device events, {sum(e.device_time for e in kernels) / 1e3:.3f} ms device time")


if __name__ == "__main__":
    main()
