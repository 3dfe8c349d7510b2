# family: collectives
# report: NVIDIA/Megatron-LM#4663
# expect: GS903
# check: static
"""The captured step starts the parameter all-gather for the next step and hands its handle to
the training loop, which waits on it outside the graph."""
import torch
import torch.distributed as dist


def step(params: torch.Tensor, shard: torch.Tensor):  # graphsafe: region
    shard.mul_(0.9)
    handle = dist.all_gather_into_tensor(params, shard, async_op=True)
    return handle
