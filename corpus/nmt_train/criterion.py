from __future__ import annotations

import torch


def label_smoothed_nll(lprobs: torch.Tensor, target: torch.Tensor, smoothing: float, pad: int):
    if (target == pad).all():  # expect: GS201
        zero = lprobs.sum() * 0.0
        return zero, zero
    target = target.unsqueeze(-1)
    nll = -lprobs.gather(-1, target).squeeze(-1)
    smooth = -lprobs.sum(-1)
    non_pad = target.squeeze(-1) != pad
    nll = nll[non_pad]  # expect: GS108
    smooth = smooth[non_pad]  # expect: GS108
    eps_i = smoothing / lprobs.size(-1)
    loss = (1.0 - smoothing - eps_i) * nll.sum() + eps_i * smooth.sum()  # expect: GS301
    return loss, nll.sum()
