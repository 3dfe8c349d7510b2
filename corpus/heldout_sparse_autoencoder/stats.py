"""Feature density statistics: firing counts, steps since each latent last fired, L0."""

from __future__ import annotations

import torch


class FeatureDensity:
    def __init__(self, d_sae: int, dead_after: int, device: torch.device):
        self.dead_after = dead_after
        self.fire_counts = torch.zeros(d_sae, device=device)
        self.steps_since_fired = torch.zeros(d_sae, dtype=torch.long, device=device)
        self.density_trace = torch.zeros(0, d_sae, device=device)
        self.ema_l0 = torch.zeros((), device=device)
        self.tokens_seen = 0
        self.dead_fraction = 0.0

    def dead_mask(self) -> torch.Tensor:
        return self.steps_since_fired > self.dead_after

    @torch.no_grad()
    def update(self, latents: torch.Tensor, indices: torch.Tensor) -> None:
        fired = (latents > 0).float()
        if fired.sum() == 0:  # expect: GS201
            return
        self.fire_counts.add_(fired.sum(0))
        self.tokens_seen = self.tokens_seen + latents.shape[0]  # expect: GS302
        self.steps_since_fired.add_(1)
        alive = torch.unique(indices)  # expect: GS107
        self.steps_since_fired.index_fill_(0, alive, 0)
        self.density_trace = torch.cat([self.density_trace, fired.mean(0, keepdim=True)])  # expect: GS404
        self.ema_l0 = 0.99 * self.ema_l0 + 0.01 * fired.sum(-1).mean()  # expect: GS401
        self.dead_fraction = self.dead_mask().float().mean().item()  # expect: GS101

    def log_density(self) -> torch.Tensor:
        return (self.fire_counts / max(self.tokens_seen, 1) + 1e-10).log10()
