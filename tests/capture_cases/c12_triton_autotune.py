# family: lazy-init
# report: triton-lang/triton#10596
# expect: GS710
# check: static runtime
# error: AcceleratorError: CUDA error: operation failed due to a previous error during capture | AcceleratorError: CUDA error: operation not permitted when stream is capturing
# at: add_kernel[grid](x, y, out, n)
# frames: triton/runtime/jit.py::JITFunction.run triton/runtime/autotuner.py::Autotuner.run triton/runtime/autotuner.py::Autotuner._bench triton/testing.py::do_bench_cudagraph torch/cuda/__init__.py::synchronize
"""An autotuned Triton kernel launched for the first time inside the capture: the autotuner
benchmarks its configs and synchronizes."""
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def capture(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor, n: int):
    grid = (triton.cdiv(n, 64),)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        add_kernel[grid](x, y, out, n)
    return g
