# family: collectives
# report: pytorch/pytorch#127225
# expect: GS905
# check: static
"""FSDP (FULL_SHARD by default) handed to make_graphed_callables."""
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def graphed(model: torch.nn.Module, x: torch.Tensor):
    model = FSDP(model)
    return torch.cuda.make_graphed_callables(model, (x,))
