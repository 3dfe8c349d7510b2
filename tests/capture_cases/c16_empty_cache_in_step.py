# family: memory
# report: none cited
# expect: GS405
# check: static
"""Freeing the cache inside the captured step to fight fragmentation: it runs once at capture."""
import torch


def step(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:  # graphsafe: region
    out = model(x)
    torch.cuda.empty_cache()
    return out
