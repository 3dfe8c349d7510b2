# family: shapes
# report: pytorch/pytorch#188150
# expect: GS408
# check: static
"""Each batch padded to its own longest sequence inside the graphed step: a new shape (a new
graph) almost every batch."""
import torch
from torch.nn.utils.rnn import pad_sequence


def step(model: torch.nn.Module, seqs: list[torch.Tensor]) -> torch.Tensor:  # graphsafe: region
    batch = pad_sequence(seqs, batch_first=True)
    return model(batch)
