# family: collectives
# report: pytorch/torchtitan#4143
# expect: -
# codes: GS905
# check: static
"""The twin of c08: parameters stay gathered after forward."""
import torch
from torch.distributed.fsdp import fully_shard


def build_and_capture(model: torch.nn.Module, x: torch.Tensor):
    for block in model.layers:
        fully_shard(block, reshard_after_forward=False)
    fully_shard(model, reshard_after_forward=False)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = model(x).sum()
        loss.backward()
    return g, loss
