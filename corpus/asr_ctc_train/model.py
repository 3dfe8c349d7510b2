import torch
from torch import nn


class CTCModel(nn.Module):
    def __init__(self, n_feats: int, dim: int, vocab: int):
        super().__init__()
        self.sub = nn.Conv1d(n_feats, dim, kernel_size=3, stride=2, padding=1)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        x = self.sub(feats.transpose(1, 2)).transpose(1, 2).relu()
        x, _ = self.rnn(x)
        return self.head(x).log_softmax(-1)
