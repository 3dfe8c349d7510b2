# family: collectives
# report: pytorch/pytorch#196919
# expect: GS903
# check: static
"""An async all-reduce captured in the graph but waited after the capture block: NCCL's stream is
a fork the capture never joins."""
import torch
import torch.distributed as dist


def capture(g: torch.cuda.CUDAGraph, grad: torch.Tensor, x: torch.Tensor):
    with torch.cuda.graph(g):
        work = dist.all_reduce(grad, async_op=True)
        out = x * 2
    work.wait()
    return out
