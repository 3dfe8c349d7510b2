import random

import torch


def freq_mask(feats: torch.Tensor, width: int) -> torch.Tensor:
    f0 = random.randint(0, feats.shape[-1] - width)  # expect: GS502
    keep = torch.ones(feats.shape[-1], device=feats.device)
    keep[f0 : f0 + width] = 0.0  # expect: GS301 (the drawn start, frozen as a slice bound)
    return feats * keep


def time_mask(feats: torch.Tensor, starts: torch.Tensor, widths: torch.Tensor) -> torch.Tensor:
    t = torch.arange(feats.shape[1], device=feats.device)[None, :]
    hit = (t >= starts[:, None]) & (t < (starts + widths)[:, None])
    return feats.masked_fill(hit[..., None], 0.0)


def padding_mask(lengths: torch.Tensor, total: int) -> torch.Tensor:
    return torch.arange(total, device=lengths.device)[None, :] < lengths[:, None]


def normalise(feats: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if mask.sum() == 0:  # expect: GS201
        return feats
    m = mask[..., None].float()
    mean = (feats * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1.0)
    return (feats - mean) * m
