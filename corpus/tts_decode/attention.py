import logging

import torch

logger = logging.getLogger(__name__)


def location_attention(query: torch.Tensor, memory: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
    scores = torch.einsum("bd,btd->bt", query, memory) / memory.shape[-1] ** 0.5
    return torch.softmax(scores + prior, dim=-1)


def monotonic_peak(attn: torch.Tensor, prev_peak: torch.Tensor) -> torch.Tensor:
    peak = torch.maximum(attn.argmax(-1), prev_peak)
    assert (peak >= prev_peak).all(), "attention moved backwards"  # expect: GS201
    return peak


def describe_alignment(peak: torch.Tensor) -> None:
    logger.info(f"alignment peak {peak}")  # expect: GS104, GS501


def stop_probability(stop_logit: torch.Tensor) -> float:
    return float(torch.sigmoid(stop_logit).max())  # expect: GS105
