from __future__ import annotations

import torch


def pad_histories(histories: list[list[int]], device: torch.device) -> torch.Tensor:
    max_len = max(len(h) for h in histories)
    rows = [[item + 1 for item in h] + [0] * (max_len - len(h)) for h in histories]
    padded = torch.zeros(len(histories), max_len, dtype=torch.long, device=device)  # expect: GS408
    padded.copy_(torch.as_tensor(rows))  # expect: GS402
    return padded
