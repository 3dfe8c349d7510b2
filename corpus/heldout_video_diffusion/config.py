"""Configuration for the toy video diffusion trainer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class VideoDiffusionConfig:
    frames: int = 4
    channels: int = 3
    size: int = 4
    hidden: int = 32
    heads: int = 4
    depth: int = 2
    vocab: int = 50
    caption_len: int = 5
    text_dim: int = 32
    timesteps: int = 50
    batch_size: int = 2
    lr: float = 2e-4
    warmup_steps: int = 4
    frame_drop_prob: float = 0.25
    cond_drop_prob: float = 0.1
    snr_gamma: float = 5.0
    ema_max: float = 0.999
    preview_every: int = 2
    preview_steps: int = 3
    grad_clip: float = 1.0
    loss_weights: tuple[float, float] = (1.0, 0.1)
    checkpoint_blocks: bool = True
    profile: bool = False
    seed: int = 0
