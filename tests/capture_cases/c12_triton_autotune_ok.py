# family: lazy-init
# report: triton-lang/triton#10596
# expect: -
# codes: GS710
# check: static
"""The twin of c12: one eager launch before capture caches the tuned config."""
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
    add_kernel[grid](x, y, out, n)  # warm-up: autotunes outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        add_kernel[grid](x, y, out, n)
    return g
