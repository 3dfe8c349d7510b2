"""Linear-chain CRF: forward-algorithm negative log-likelihood and Viterbi decoding."""

from __future__ import annotations

import torch
from torch import nn


class CRF(nn.Module):
    def __init__(self, num_tags: int):
        super().__init__()
        self.num_tags = num_tags
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))

    def forward(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if emissions.dim() != 3:
            raise ValueError(f"emissions must be (batch, seq, tags), got {tuple(emissions.shape)}")
        assert mask[:, 0].all(), "the first timestep of every sentence must be unmasked"  # expect: GS201
        numerator = self._score(emissions, tags, mask)
        denominator = self._partition(emissions, mask)
        return (denominator - numerator).mean()

    def _score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        seq_len = tags.size(1)
        maskf = mask.to(emissions.dtype)
        score = self.start_transitions[tags[:, 0]] + emissions[:, 0].gather(1, tags[:, :1]).squeeze(1)
        for t in range(1, seq_len):
            step = self.transitions[tags[:, t - 1], tags[:, t]] + emissions[:, t].gather(1, tags[:, t : t + 1]).squeeze(1)
            score = score + step * maskf[:, t]
        seq_ends = mask.long().sum(dim=1) - 1
        last_tags = tags.gather(1, seq_ends[:, None]).squeeze(1)
        return score + self.end_transitions[last_tags]

    def _partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        alpha = self.start_transitions + emissions[:, 0]
        for t in range(1, emissions.size(1)):
            nxt = torch.logsumexp(alpha[:, :, None] + self.transitions + emissions[:, t, None, :], dim=1)
            alpha = torch.where(mask[:, t, None], nxt, alpha)
        return torch.logsumexp(alpha + self.end_transitions, dim=1)

    def viterbi_decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        batch, seq_len, _ = emissions.shape
        score = self.start_transitions + emissions[:, 0]
        history = []
        for t in range(1, seq_len):
            nxt, idx = (score[:, :, None] + self.transitions + emissions[:, t, None, :]).max(dim=1)
            score = torch.where(mask[:, t, None], nxt, score)
            history.append(idx)
        score = score + self.end_transitions
        seq_ends = mask.long().sum(dim=1) - 1
        best_paths = []
        for b in range(batch):
            seq_end = int(seq_ends[b])  # expect: GS105
            best_last = score[b].argmax().item()  # expect: GS101
            path = [best_last]
            for hist in reversed(history[:seq_end]):  # expect: GS301
                path.append(hist[b][path[-1]].item())  # expect: GS101
            path.reverse()
            best_paths.append(path)
        return best_paths
