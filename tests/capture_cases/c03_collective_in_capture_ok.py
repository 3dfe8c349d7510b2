# family: collectives
# report: ROCm/rccl#2022
# expect: -
# codes: GS901
# check: static
"""The twin of c03: the collective stays out of the graph and runs after each replay."""
import torch
import torch.distributed as dist


def step(g: torch.cuda.CUDAGraph, x: torch.Tensor) -> torch.Tensor:
    g.replay()
    dist.all_reduce(x)
    return x
