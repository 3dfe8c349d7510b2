"""SI-SNR objective and voice-activity weighting."""

from __future__ import annotations

import torch


def si_snr(est: torch.Tensor, ref: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    est = est - est.mean(-1, keepdim=True)
    ref = ref - ref.mean(-1, keepdim=True)
    proj = (est * ref).sum(-1, keepdim=True) * ref / (ref.pow(2).sum(-1, keepdim=True) + eps)
    noise = est - proj
    ratio = proj.pow(2).sum(-1) / (noise.pow(2).sum(-1) + eps)
    return 10 * torch.log10(ratio + eps)


def vad_weights(energy: torch.Tensor, threshold: float) -> torch.Tensor:
    active = energy > threshold
    voiced_energy = energy[active]  # expect: GS108
    n_voiced = int(active.sum())  # expect: GS105
    floor = voiced_energy.mean() if n_voiced > 0 else energy.mean()
    weights = active.float() + 0.1 * (energy / (floor + 1e-8)).clamp(max=1.0)
    return weights / max(n_voiced, 1)


def weighted_si_snr_loss(est: torch.Tensor, ref: torch.Tensor, frame_w: torch.Tensor) -> torch.Tensor:
    utt_w = frame_w.mean(-1)
    return -(si_snr(est, ref) * utt_w).sum() / utt_w.sum().clamp_min(1e-6)
