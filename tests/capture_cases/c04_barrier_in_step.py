# family: collectives
# report: none cited
# expect: GS901
# check: static
"""A barrier inside the captured step keeps ranks in lock-step: it waits on the host."""
import torch
import torch.distributed as dist


def train_step(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    loss = model(x).sum()
    loss.backward()
    dist.barrier()
    return loss
