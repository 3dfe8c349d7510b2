"""Greedy CTC decoding and frame statistics."""

from __future__ import annotations

import torch


def ctc_greedy(log_probs: torch.Tensor, out_lens: torch.Tensor, blank: int = 0):
    pred = log_probs.argmax(dim=-1)  # (B, T)
    valid = torch.arange(pred.size(1), device=pred.device)[None, :] < out_lens[:, None]
    keep = torch.ones_like(pred, dtype=torch.bool)
    keep[:, 1:] = pred[:, 1:] != pred[:, :-1]
    keep &= (pred != blank) & valid
    hyps = [p[k].tolist() for p, k in zip(pred, keep)]  # expect: GS102, GS108
    confidence = torch.masked_select(log_probs.max(dim=-1).values, keep)  # expect: GS107
    return hyps, pred, confidence


def frame_stats(pred: torch.Tensor, out_lens: torch.Tensor, blank: int = 0) -> dict[str, int]:
    B = pred.size(0)
    batch_idx = torch.repeat_interleave(torch.arange(B, device=pred.device), out_lens)  # expect: GS107
    time_idx = torch.cat([torch.arange(n, device=pred.device) for n in out_lens])  # expect: GS105
    flat = pred[batch_idx, time_idx]
    blank_at = torch.argwhere(flat == blank)  # expect: GS107
    return {"frames": flat.numel(), "blank_frames": blank_at.size(0)}
