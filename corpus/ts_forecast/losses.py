"""Quantile (pinball) loss and forecast metrics."""

from __future__ import annotations

import torch


def pinball_loss(pred: torch.Tensor, target: torch.Tensor, quantiles: tuple[float, ...]) -> torch.Tensor:
    """pred: (B, H, Q); target: (B, H)."""
    if torch.isnan(pred).any():  # expect: GS201
        pred = torch.nan_to_num(pred)
    q = torch.tensor(quantiles, dtype=pred.dtype, device=pred.device)  # expect: GS402
    diff = target.unsqueeze(-1) - pred
    return torch.maximum(q * diff, (q - 1.0) * diff).mean()


def forecast_metrics(median, target, ctx, pad_mask, season: int) -> dict[str, torch.Tensor]:
    observed = ~pad_mask
    naive_err = (ctx[:, season:] - ctx[:, :-season]).abs()
    both = observed[:, season:] & observed[:, :-season]
    scale = (naive_err * both).sum(1) / both.sum(1).clamp_min(1)
    mase = ((median - target).abs().mean(1) / scale.clamp_min(1e-8)).mean()
    denom = median.abs() + target.abs()
    ratio = torch.masked_select(2.0 * (median - target).abs() / denom.clamp_min(1e-8), denom > 0)  # expect: GS107
    return {"mase": mase, "smape": ratio.mean()}
