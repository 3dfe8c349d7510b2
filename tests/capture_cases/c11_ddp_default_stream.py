# family: collectives
# report: pytorch/pytorch#89546
# expect: GS704
# check: static
"""DDP constructed on the default stream and warmed up three times before a whole-step capture."""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def capture(model: torch.nn.Module, x: torch.Tensor):
    model = DDP(model)
    for _ in range(3):
        model(x).sum().backward()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x).sum().backward()
    return g
