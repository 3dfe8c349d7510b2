# family: collectives
# report: pytorch/pytorch#196919
# expect: -
# codes: GS903
# check: static
"""The twin of c06: the handle is waited inside the capture."""
import torch
import torch.distributed as dist


def capture(g: torch.cuda.CUDAGraph, grad: torch.Tensor, x: torch.Tensor):
    with torch.cuda.graph(g):
        work = dist.all_reduce(grad, async_op=True)
        out = x * 2
        work.wait()
    return out
