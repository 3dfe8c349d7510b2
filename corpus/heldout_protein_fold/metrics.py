"""pLDDT confidence tracking."""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger("fold.confidence")


class ConfidenceMonitor:
    def __init__(self, low_conf: float, confident_at: float = 70.0):
        self.low_conf = low_conf
        self.confident_at = confident_at
        self.plddt_history: list[float] = []

    def expected_plddt(self, plddt_logits: torch.Tensor) -> torch.Tensor:
        n_bins = plddt_logits.shape[-1]
        centers = (torch.arange(n_bins, device=plddt_logits.device) + 0.5) * (100.0 / n_bins)
        return (plddt_logits.softmax(-1) * centers).sum(-1)

    def observe(self, plddt_logits: torch.Tensor):
        plddt = self.expected_plddt(plddt_logits.detach())
        weight = 0.5 if plddt.mean() < self.low_conf else 1.0  # expect: GS201
        mean_plddt = plddt.mean().item()  # expect: GS101
        self.plddt_history.append(mean_plddt)  # expect: GS503
        n_confident = int((plddt > self.confident_at).sum())  # expect: GS105
        logger.info("pLDDT %.1f, %d confident residues", mean_plddt, n_confident)  # expect: GS501
        return plddt, weight

    def summary(self) -> float:
        recent = torch.tensor(self.plddt_history[-5:])
        return recent.mean().item() if len(self.plddt_history) else 0.0
