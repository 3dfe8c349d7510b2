"""STFT helpers and mixture synthesis."""

from __future__ import annotations

import torch


def stft(x: torch.Tensor, n_fft: int, hop: int, window: torch.Tensor) -> torch.Tensor:
    return torch.stft(x, n_fft, hop, window=window, return_complex=True)


def istft(spec: torch.Tensor, n_fft: int, hop: int, window: torch.Tensor, length: int) -> torch.Tensor:
    return torch.istft(spec, n_fft, hop, window=window, length=length)


def mix_at_snr(clean: torch.Tensor, noise: torch.Tensor, snr_db: torch.Tensor) -> torch.Tensor:
    clean_pow = clean.pow(2).mean(-1, keepdim=True)
    noise_pow = noise.pow(2).mean(-1, keepdim=True).clamp_min(1e-8)
    scale = torch.sqrt(clean_pow / (noise_pow * torch.pow(10.0, snr_db / 10.0)))
    return clean + scale * noise


def frame_energy(x: torch.Tensor, hop: int) -> torch.Tensor:
    frames = x.unfold(-1, hop, hop)
    return frames.pow(2).mean(-1)
