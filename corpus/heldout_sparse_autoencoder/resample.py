"""Dead-latent resampling: re-initialise dead latents towards badly reconstructed inputs."""

from __future__ import annotations

import torch

from sae import TopKSAE
from stats import FeatureDensity


@torch.no_grad()
def resample_dead_latents(
    sae: TopKSAE, opt: torch.optim.Optimizer, density: FeatureDensity, acts: torch.Tensor, scale: float
) -> int:
    dead = density.dead_mask()
    dead_idx = dead.nonzero().squeeze(-1)
    n_dead = int(dead_idx.numel())
    if n_dead == 0:
        return 0
    errors = (sae(acts).recon - acts).pow(2).sum(-1)
    picks = torch.multinomial(errors / errors.sum(), n_dead, replacement=True)
    directions = acts[picks] - sae.b_dec
    directions = directions / directions.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    sae.W_dec[dead_idx] = directions
    sae.W_enc[:, dead_idx] = directions.t() * scale
    sae.b_enc[dead_idx] = 0.0
    for p in (sae.W_dec, sae.W_enc, sae.b_enc):
        state = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq"):
            if key in state:
                state[key].zero_()
    density.steps_since_fired[dead_idx] = 0
    return n_dead
