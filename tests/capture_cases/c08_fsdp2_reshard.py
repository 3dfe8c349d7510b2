# family: collectives
# report: pytorch/torchtitan#4143
# expect: GS905
# check: static
"""FSDP2 with its default reshard_after_forward=True, then a captured training step: parameters
are freed after forward and re-gathered in backward, with FSDP state recorded outside capture."""
import torch
from torch.distributed.fsdp import fully_shard


def build_and_capture(model: torch.nn.Module, x: torch.Tensor):
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = model(x).sum()
        loss.backward()
    return g, loss
